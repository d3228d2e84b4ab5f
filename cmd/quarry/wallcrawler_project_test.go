package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWallcrawlerProjectUpdate changes a project's ownerId, billingTier
// and status with `quarry wallcrawler project update` while `quarry
// serve` runs: the API shows the owner, and once the project is INACTIVE
// a session create is refused with 403 in Browserbase's error shape; made
// ACTIVE again, the key works again.
func TestWallcrawlerProjectUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	api, store := freeAddr(t), freeAddr(t)
	env := func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", api, "--ddb-listen", store, "--data-dir", dir}, env, &logs, &logs)
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, "listeners", func() bool { return strings.Contains(logs.String(), "listening on "+store) })

	cli := func(wantCode int, args ...string) string {
		t.Helper()
		var out, errs syncBuffer
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		if code := run(context.Background(), args, env, &out, &errs); code != wantCode {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, wantCode, errs.String())
		}
		return strings.TrimSpace(out.String() + errs.String())
	}
	cli(0, "wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme")
	key := cli(0, "wallcrawler", "key", "create", "--project", "project_acme")
	key, _, _ = strings.Cut(key, "\n") // the raw key (stdout) comes first

	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+api+"/wallcrawler"+path, strings.NewReader(body))
		req.Header.Set("X-BB-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return resp.StatusCode, m
	}

	tests := []struct {
		name     string
		args     []string
		wantOut  []string
		wantCode int // of GET /v1/projects/project_acme
		owner    any
		create   int // of POST /v1/sessions; 0: not tried
	}{
		{"owner and tier", []string{"--owner", "owner_42", "--tier", "pro"}, []string{"ACTIVE", "owner owner_42", "billing tier pro"}, 200, "owner_42", 0},
		{"inactive", []string{"--status", "INACTIVE"}, []string{"INACTIVE", "owner owner_42"}, 403, nil, 403},
		{"active again, owner removed", []string{"--status", "active", "--owner", ""}, []string{"ACTIVE", "billing tier pro"}, 200, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := cli(0, append([]string{"wallcrawler", "project", "update", "--id", "project_acme"}, tt.args...)...)
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
			code, body := call("GET", "/v1/projects/project_acme", "")
			if code != tt.wantCode {
				t.Fatalf("GET project: %d %v, want %d", code, body, tt.wantCode)
			}
			if code == 200 && body["ownerId"] != tt.owner {
				t.Errorf("ownerId %v, want %v", body["ownerId"], tt.owner)
			}
			if tt.create != 0 {
				code, body := call("POST", "/v1/sessions", `{}`)
				if code != tt.create || body["statusCode"] != float64(tt.create) || body["error"] != "Forbidden" || body["message"] == "" {
					t.Errorf("create: %d %v, want %d in Browserbase's error shape", code, body, tt.create)
				}
			}
		})
	}
	if out := cli(1, "wallcrawler", "project", "update", "--id", "project_acme", "--status", "PAUSED"); !strings.Contains(out, "PAUSED") {
		t.Errorf("a bad status: %q", out)
	}
	if out := cli(1, "wallcrawler", "project", "update", "--id", "project_none", "--tier", "x"); !strings.Contains(out, "project_none") {
		t.Errorf("an unknown project: %q", out)
	}
}
