package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNastyBodyIDs is TestNastyIDs for the IDs (and other key parts) that
// arrive in JSON bodies: a context, project or company ID too long for
// DynamoDB's keys, or with NUL or invalid UTF-8, is a 4xx in the system's
// error shape, never a 5xx.
func TestNastyBodyIDs(t *testing.T) {
	t.Parallel()
	s := startHostileServer(t)
	s.mustCLI(t, "wallcrawler", "project", "create", "--name", "NastyBody", "--id", "project_nastybody")
	wcKey := s.mustCLI(t, "wallcrawler", "key", "create", "--project", "project_nastybody")
	eeKey := s.mustCLI(t, "eecar", "company", "create", "--name", "NastyBody")
	other := s.mustCLI(t, "eecar", "company", "create", "--name", "NastyBody Other")
	// The other company's ID: `company create` prints the key; /me tells the id.
	req, _ := http.NewRequest("GET", "http://"+s.api+"/eecar/me", nil)
	req.Header.Set("Authorization", "Bearer "+other)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me struct {
		ID string `json:"companyId"`
	}
	json.NewDecoder(res.Body).Decode(&me)
	res.Body.Close()
	if me.ID == "" {
		t.Fatal("no companyId from /eecar/me")
	}

	type route struct {
		system, method, path string
		body                 string // with %s for the id (a JSON string's content)
	}
	routes := []route{
		{"wallcrawler", "POST", "/wallcrawler/v1/sessions", `{"projectId":"%s"}`},
		{"wallcrawler", "POST", "/wallcrawler/v1/sessions", `{"projectId":"project_nastybody","browserSettings":{"context":{"id":"%s"}}}`},
		{"wallcrawler", "POST", "/wallcrawler/v1/sessions", `{"projectId":"project_nastybody","extensionId":"%s"}`},
		{"wallcrawler", "POST", "/wallcrawler/v1/contexts", `{"projectId":"%s"}`},
		{"eecar", "POST", "/eecar/proposals", `{"toCompanyId":"%s","proposalType":"buy","partIds":["p1"]}`},
		{"eecar", "POST", "/eecar/proposals", `{"toCompanyId":"` + me.ID + `","proposalType":"buy","partIds":["%s"]}`},
		{"eecar", "POST", "/eecar/watches", `{"criteria":{"category":"%s"}}`},
		{"eecar", "POST", "/eecar/parts", `{"name":"x","category":"%s","price":1}`},
	}
	ids := []struct{ name, id string }{
		{"1025 bytes", strings.Repeat("a", 1025)},
		{"2049 bytes", strings.Repeat("b", 2049)},
		{"3000 bytes of multibyte UTF-8", strings.Repeat("é", 1500)},
		{"NUL", `a\u0000b`},
		{"lone surrogate", `\ud800`},
		{"100 KB", strings.Repeat("d", 100<<10)},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, rt := range routes {
		for _, id := range ids {
			name := rt.method + " " + strings.ReplaceAll(rt.path, "/", "_") + " " + strings.SplitN(rt.body, "%s", 2)[0] + " " + id.name
			t.Run(name, func(t *testing.T) {
				req, err := http.NewRequest(rt.method, "http://"+s.api+rt.path, strings.NewReader(fmt.Sprintf(rt.body, id.id)))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				switch rt.system {
				case "wallcrawler":
					req.Header.Set("X-BB-API-Key", wcKey)
				case "eecar":
					req.Header.Set("Authorization", "Bearer "+eeKey)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				if resp.StatusCode >= 500 || resp.StatusCode < 400 {
					t.Fatalf("%d %s, want a 4xx", resp.StatusCode, b)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil || m["error"] == nil {
					t.Fatalf("%d %q: not the system's JSON error", resp.StatusCode, b)
				}
			})
		}
	}
}
