package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// importCLI runs `quarry checks import ARGS` against the running
// server's store.
func (s *checksServer) importCLI(args ...string) (code int, stdout, stderr string) {
	var out, errs syncBuffer
	args = append(append([]string{"checks", "import"}, args...), "--data-dir", s.dir, "--ddb-listen", s.store, "--checks-min-interval", "1s")
	code = run(context.Background(), args, noEnv, &out, &errs)
	return code, out.String(), errs.String()
}

// listChecks returns the user's checks by name, as GET /v1/checks
// answers them.
func (s *checksServer) listChecks(token string) map[string]map[string]any {
	s.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.api+"/checks/v1/checks", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		s.t.Fatalf("GET /v1/checks: %v", err)
	}
	byName := map[string]map[string]any{}
	for _, c := range list {
		byName[c["name"].(string)] = c
	}
	return byName
}

// TestChecksImport imports a Gatus configuration and an Uptime Kuma backup
// with the CLI while quarry serve runs: a dry run creates nothing; the
// network policy refuses loopback targets unless --allow-networks allows
// them; the checks created are the API's, with what the files said; what
// cannot be carried over is reported; the import stops at the FREE tier's
// limit of 5 and says which checks it did not create.
func TestChecksImport(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	token := s.createUser("imp@example.com")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "all healthy") }))
	t.Cleanup(site.Close)
	hostPort := strings.TrimPrefix(site.URL, "http://")
	dir := t.TempDir()
	gatus := filepath.Join(dir, "gatus.yaml")
	writeFile(t, gatus, `endpoints:
  - name: site
    group: web
    url: "`+site.URL+`/health"
    interval: 500ms
    conditions:
      - "[STATUS] == 200"
      - "[BODY] == pat(*healthy*)"
      - "[RESPONSE_TIME] < 2000"
      - "[IP] == 127.0.0.1"
  - name: port
    url: "tcp://`+hostPort+`"
    interval: 1m
    conditions:
      - "[CONNECTED] == true"
  - name: ping
    url: "icmp://127.0.0.1"
    conditions:
      - "[CONNECTED] == true"
`)

	t.Run("dry run", func(t *testing.T) {
		code, out, errs := s.importCLI("--user", "imp@example.com", "--from", "gatus", "--dry-run", "--allow-networks", "all", gatus)
		for _, want := range []string{`would create (dry run)  endpoint "site"`, `would create (dry run)  endpoint "port"`,
			`endpoint "site": interval 500ms is below the minimum 1s: rounded up to 1s`,
			`endpoint "site": condition "[IP] == 127.0.0.1" not carried over`,
			`not imported  endpoint "ping": url "icmp://127.0.0.1": its type is not supported`,
			"2 created, 0 refused, 1 not imported (dry run: nothing was created)"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if got := s.listChecks(token); len(got) != 0 {
			t.Fatalf("a dry run created %v", got)
		}
	})

	t.Run("policy", func(t *testing.T) {
		code, out, errs := s.importCLI("--user", "imp@example.com", "--from", "gatus", "--dry-run", gatus)
		if code != 0 || !strings.Contains(out, `refused  endpoint "site" ("site"): url: 127.0.0.1:`) || !strings.Contains(out, "0 created, 2 refused") {
			t.Fatalf("dry run: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
		}
		code, out, errs = s.importCLI("--user", "imp@example.com", "--from", "gatus", gatus)
		if code != 0 || !strings.Contains(out, `refused  endpoint "site" ("site"): url: 127.0.0.1:`+strings.Split(hostPort, ":")[1]+` is a loopback address`) ||
			!strings.Contains(out, "--allow-networks") || !strings.Contains(out, "0 created, 2 refused, 1 not imported") {
			t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
		}
		if got := s.listChecks(token); len(got) != 0 {
			t.Fatalf("refused targets created %v", got)
		}
	})

	t.Run("gatus", func(t *testing.T) {
		code, out, errs := s.importCLI("--user", "imp@example.com", "--from", "gatus", "--allow-networks", "all", gatus)
		if code != 0 || !strings.Contains(out, "2 created, 0 refused, 1 not imported") || !strings.Contains(out, `created chk_`) {
			t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
		}
		got := s.listChecks(token)
		site, port := got["site"], got["port"]
		if site == nil || port == nil {
			t.Fatalf("checks after the import: %v", got)
		}
		if site["checkType"] != "AVAILABILITY" || site["url"] != "http://"+hostPort+"/health" || site["delayMs"] != 1000.0 ||
			!reflect.DeepEqual(site["tags"], []any{"web"}) ||
			!reflect.DeepEqual(site["attributes"], map[string]any{"expectedStatus": 200.0, "keyword": "healthy", "maxResponseMs": 1999.0}) {
			t.Errorf("site = %v", site)
		}
		if port["checkType"] != "TCP" || port["url"] != "tcp://"+hostPort || port["delayMs"] != 60000.0 || port["status"] != "ACTIVE" {
			t.Errorf("port = %v", port)
		}
	})

	t.Run("kuma stops at the limit", func(t *testing.T) {
		kuma := filepath.Join(dir, "kuma.json")
		var mons []string
		for i := range 4 {
			mons = append(mons, fmt.Sprintf(`{"name":"k%d","type":"keyword","url":%q,"interval":60,"keyword":"healthy","active":true,"tags":[{"name":"kuma","value":""}]}`, i, site.URL))
		}
		writeFile(t, kuma, `{"version":"1.23.16","monitorList":[`+strings.Join(mons, ",")+`,{"name":"push","type":"push","active":true}]}`)
		code, out, errs := s.importCLI("--user", "imp@example.com", "--from", "uptime-kuma", "--allow-networks", "all", "--dry-run", kuma)
		if code == 0 || !strings.Contains(out, `stopped  monitor "k3": the user's tier limit is reached`) || len(s.listChecks(token)) != 2 {
			t.Fatalf("dry run: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
		}
		code, out, errs = s.importCLI("--user", "imp@example.com", "--from", "uptime-kuma", "--allow-networks", "all", kuma)
		for _, want := range []string{`created chk_`, `not imported  monitor "push": type "push" is not supported`,
			`stopped  monitor "k3": checks: check limit reached: 5 of 5 checks (tier FREE)`, `not created  monitor "k3" ("k3")`,
			"3 created, 0 refused, 1 not imported; stopped at the limit with 1 not created"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if code == 0 || !strings.Contains(errs, "stopped at the user's check limit") {
			t.Fatalf("exit %d, stderr %s", code, errs)
		}
		got := s.listChecks(token)
		if len(got) != 5 || got["k0"] == nil || got["k3"] != nil || got["k0"]["attributes"].(map[string]any)["keyword"] != "healthy" {
			t.Fatalf("checks after the import: %v", got)
		}
	})

	t.Run("usage", func(t *testing.T) {
		if code, _, errs := s.importCLI("--user", "imp@example.com", "--from", "nagios", gatus); code == 0 || !strings.Contains(errs, "want gatus or uptime-kuma") {
			t.Errorf("--from nagios: exit %d, stderr %s", code, errs)
		}
		if code, _, errs := s.importCLI("--user", "nobody@example.com", "--from", "gatus", gatus); code == 0 || !strings.Contains(errs, "nobody@example.com") {
			t.Errorf("unknown user: exit %d, stderr %s", code, errs)
		}
		if code, _, _ := s.importCLI("--from", "gatus", gatus); code != 2 {
			t.Errorf("no --user: exit %d, want 2", code)
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
