package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// eecarServer is a running `quarry serve` on a data directory.
type eecarServer struct {
	api, store string
	stop       func()
}

// startEECARServe starts `quarry serve` on dir at free ports; stop shuts
// it down and checks the exit code.
func startEECARServe(t *testing.T, dir string) *eecarServer {
	t.Helper()
	s := &eecarServer{api: freeAddr(t), store: freeAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", s.api, "--ddb-listen", s.store, "--data-dir", dir}, noEnv, &logs, &logs)
	}()
	stopped := false
	s.stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d: %s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not shut down")
		}
	}
	t.Cleanup(s.stop)
	waitFor(t, "listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+s.api) && strings.Contains(logs.String(), "listening on "+s.store)
	})
	return s
}

// eecarCLI runs `quarry eecar ARGS` against the running server's store.
func (s *eecarServer) cli(dir string, args ...string) (code int, stdout, stderr string) {
	var out, errs syncBuffer
	args = append(append([]string{"eecar"}, args...), "--data-dir", dir, "--ddb-listen", s.store)
	code = run(context.Background(), args, noEnv, &out, &errs)
	return code, strings.TrimSpace(out.String()), errs.String()
}

// call sends a JSON request to /eecar with a key and decodes the answer.
func (s *eecarServer) call(t *testing.T, method, path, key string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, "http://"+s.api+"/eecar"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %q: %v", method, path, data, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("%s %s = %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode
}

type eecarSearch struct {
	Results []struct {
		PartID string `json:"partId"`
		Part   struct {
			Name string `json:"name"`
		} `json:"part"`
	} `json:"results"`
	Cached bool `json:"cached"`
}

// searchTop searches with key and returns the ids of the results, best
// first.
func (s *eecarServer) searchTop(t *testing.T, key, query string) ([]string, bool) {
	t.Helper()
	var res eecarSearch
	if code := s.call(t, http.MethodPost, "/search", key, map[string]any{"query": query, "topK": 5}, &res); code != http.StatusOK {
		t.Fatalf("search %q = %d", query, code)
	}
	var ids []string
	for _, r := range res.Results {
		ids = append(ids, r.PartID)
	}
	return ids, res.Cached
}

// TestEECARCommandsAndRestart creates companies and keys with the CLI while
// `quarry serve` runs, uses a key to register and find a part, and finds
// the part again after a restart on the same data directory.
func TestEECARCommandsAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startEECARServe(t, dir)
	companyID := regexp.MustCompile(`co_[0-9a-f]{24}`)

	var key, company string
	t.Run("company create", func(t *testing.T) {
		code, out, errs := s.cli(dir, "company", "create", "--name", "Seoul EV Recycling", "--industry", "recycling")
		if code != 0 || !strings.HasPrefix(out, "ek_") || strings.ContainsAny(out, " \n") {
			t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
		}
		if company = companyID.FindString(errs); company == "" || !strings.Contains(errs, "Seoul EV Recycling") {
			t.Fatalf("stderr %q does not name the company", errs)
		}
		key = out
	})
	if key == "" {
		t.FailNow()
	}
	t.Run("invalid commands fail", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			word string
		}{
			{"company create without --name", []string{"company", "create"}, "name"},
			{"company create with a blank --name", []string{"company", "create", "--name", "  "}, "name"},
			{"key create for an unknown company", []string{"key", "create", "--company", "co_000000000000000000000000"}, "co_000000000000000000000000"},
			{"unknown subcommand", []string{"company", "delete"}, "usage"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, out, errs := s.cli(dir, tc.args...)
				if code == 0 || strings.HasPrefix(out, "ek_") || !strings.Contains(strings.ToLower(errs), tc.word) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want a failure mentioning %q", code, out, errs, tc.word)
				}
			})
		}
	})
	var key2 string
	t.Run("key create", func(t *testing.T) {
		code, out, errs := s.cli(dir, "key", "create", "--company", company)
		if code != 0 || !strings.HasPrefix(out, "ek_") || out == key {
			t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
		}
		key2 = out
		for _, k := range []string{key, key2} {
			var me struct {
				ID   string `json:"companyId"`
				Name string `json:"name"`
			}
			if code := s.call(t, http.MethodGet, "/me", k, nil, &me); code != http.StatusOK || me.ID != company || me.Name != "Seoul EV Recycling" {
				t.Fatalf("GET /me = %d %+v, want %s", code, me, company)
			}
		}
		if code := s.call(t, http.MethodGet, "/me", "ek_not-a-key", nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("GET /me with a wrong key = %d", code)
		}
	})
	if key2 == "" {
		t.FailNow()
	}

	// Another company's parts, so that search has to rank.
	code, other, errs := s.cli(dir, "company", "create", "--name", "Daegu Motors")
	if code != 0 {
		t.Fatalf("second company: exit %d: %s", code, errs)
	}
	parts := []map[string]any{
		{"name": "Tesla Model 3 battery module NCA", "category": "battery", "manufacturer": "Tesla", "condition": "used", "price": 3000000,
			"description": "Long range module", "specs": map[string]any{"chemicalProps": map[string]any{"cathode": "NCA", "soh": 88}}},
		{"name": "현대 아이오닉 5 인버터", "category": "inverter", "manufacturer": "Hyundai", "condition": "중고", "price": 1200000, "description": "800V SiC 인버터"},
		{"name": "Kia EV6 front door panel", "category": "body-door", "manufacturer": "Kia", "condition": "new", "price": 400000},
	}
	var partIDs []string
	for i, p := range parts {
		k := key2
		if i > 0 {
			k = other
		}
		var created struct {
			ID string `json:"partId"`
		}
		if code := s.call(t, http.MethodPost, "/parts", k, p, &created); code != http.StatusCreated || created.ID == "" {
			t.Fatalf("register %v = %d", p["name"], code)
		}
		partIDs = append(partIDs, created.ID)
	}
	tesla := partIDs[0]
	for _, q := range []string{"테슬라 배터리 모듈", "Tesla battery"} {
		if ids, _ := s.searchTop(t, key, q); len(ids) == 0 || ids[0] != tesla {
			t.Fatalf("search %q before the restart ranks %v, want %s first", q, ids, tesla)
		}
	}

	s.stop()
	s = startEECARServe(t, dir)
	t.Run("after a restart", func(t *testing.T) {
		// A query never asked before, so the answer comes from the index
		// rebuilt at start, not from the result cache.
		ids, cached := s.searchTop(t, key2, "NCA 배터리 모듈 테슬라 중고")
		if cached || len(ids) == 0 || ids[0] != tesla {
			t.Fatalf("search after the restart ranks %v (cached %v), want %s first from the index", ids, cached, tesla)
		}
		if ids, _ := s.searchTop(t, key, "Hyundai inverter"); len(ids) == 0 || ids[0] != partIDs[1] {
			t.Fatalf("search after the restart ranks %v, want %s first", ids, partIDs[1])
		}
		var p struct {
			ID string `json:"partId"`
		}
		if code := s.call(t, http.MethodGet, "/parts/"+tesla, key, nil, &p); code != http.StatusOK || p.ID != tesla {
			t.Fatalf("GET the part after the restart = %d", code)
		}
	})
	t.Run("parts registered after the restart are found", func(t *testing.T) {
		var created struct {
			ID string `json:"partId"`
		}
		body := map[string]any{"name": "BYD blade LFP battery pack", "category": "battery", "manufacturer": "BYD", "condition": "재생", "price": 2500000}
		if code := s.call(t, http.MethodPost, "/parts", key, body, &created); code != http.StatusCreated {
			t.Fatalf("register after the restart = %d", code)
		}
		if ids, _ := s.searchTop(t, key2, "BYD blade LFP"); len(ids) == 0 || ids[0] != created.ID {
			t.Fatalf("search ranks %v, want %s first", ids, created.ID)
		}
	})
}
