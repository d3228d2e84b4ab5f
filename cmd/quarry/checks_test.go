package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitLong is waitFor with a longer deadline, for the scheduler's caches.
func waitLong(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quiet returns a condition that holds once hits has not moved for d.
func quiet(hits *atomic.Int64, d time.Duration) func() bool {
	last, since := hits.Load(), time.Now()
	return func() bool {
		if n := hits.Load(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= d
	}
}

// checksServer is a running `quarry serve` with Checks allowed to reach
// loopback targets at periods down to 1 s.
type checksServer struct {
	t          *testing.T
	api, store string
	dir        string
}

func startChecksServer(t *testing.T) *checksServer {
	t.Helper()
	s := &checksServer{t: t, dir: t.TempDir(), api: freeAddr(t), store: freeAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", s.api, "--ddb-listen", s.store, "--data-dir", s.dir,
			"--allow-networks", "all", "--checks-min-interval", "1s"}, noEnv, &logs, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d: %s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	waitFor(t, "listeners", func() bool {
		return strings.Contains(logs.String(), "listening on "+s.api) && strings.Contains(logs.String(), "listening on "+s.store)
	})
	return s
}

func noEnv(string) string { return "" }

// cli runs `quarry checks user ARGS` against the running server's store.
func (s *checksServer) cli(args ...string) (code int, stdout, stderr string) {
	var out, errs syncBuffer
	args = append(append([]string{"checks", "user"}, args...), "--data-dir", s.dir, "--ddb-listen", s.store)
	code = run(context.Background(), args, noEnv, &out, &errs)
	return code, strings.TrimSpace(out.String()), errs.String()
}

// do calls the Checks API with a token and decodes the JSON object answered.
func (s *checksServer) do(method, path, token string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+s.api+"/checks"+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// createUser runs `checks user create` and returns the printed token.
func (s *checksServer) createUser(email string) string {
	s.t.Helper()
	code, token, errs := s.cli("create", "--email", email)
	if code != 0 || !strings.HasPrefix(token, "chk_") || strings.Contains(token, "\n") {
		s.t.Fatalf("user create: exit %d, stdout %q, stderr %s", code, token, errs)
	}
	if !strings.Contains(errs, email) || !strings.Contains(errs, "FREE") {
		s.t.Errorf("user create stderr %q does not describe the user", errs)
	}
	return token
}

// TestChecksUserCommands administers a Checks user with the CLI while
// `quarry serve` runs (the CLI then goes through its DynamoDB endpoint) and
// uses the tokens it prints against the server's API.
func TestChecksUserCommands(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	token := s.createUser("a@example.com")
	if code, me := s.do("GET", "/v1/me", token, nil); code != 200 || me["email"] != "a@example.com" || me["status"] != "ACTIVE" || me["tier"] != "FREE" {
		t.Fatalf("GET /v1/me with the printed token = %d %v", code, me)
	}

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name    string
			args    []string
			code    int
			mention string
		}{
			{"duplicate email", []string{"create", "--email", "a@example.com"}, 1, "a@example.com"},
			{"duplicate email in another case", []string{"create", "--email", "A@Example.COM"}, 1, "a@example.com"},
			{"invalid email", []string{"create", "--email", "not-an-address"}, 1, "not-an-address"},
			{"unknown tier", []string{"create", "--email", "b@example.com", "--tier", "GOLD"}, 1, "GOLD"},
			{"no email", []string{"suspend"}, 1, "--email is required"},
			{"unknown user", []string{"suspend", "--email", "nobody@example.com"}, 1, "nobody@example.com"},
			{"unknown subcommand", []string{"frobnicate", "--email", "a@example.com"}, 2, "usage"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, out, errs := s.cli(tt.args...)
				if code != tt.code || !strings.Contains(errs, tt.mention) {
					t.Fatalf("exit %d (want %d), stderr %q (want it to mention %q)", code, tt.code, errs, tt.mention)
				}
				if out != "" {
					t.Fatalf("stdout %q, want nothing (no token)", out)
				}
			})
		}
	})

	t.Run("suspend, token, activate, tier", func(t *testing.T) {
		// A valid check (loopback is allowed); only the suspended user tries
		// to create it, so the scheduler never has a check to run here.
		create := map[string]any{"url": "http://127.0.0.1:9/", "checkType": "AVAILABILITY", "delayMs": 60000}
		for _, tt := range []struct {
			args       []string
			out        string // in stdout
			status     string // GET /v1/me afterwards
			tier       string
			createCode int // POST /v1/checks afterwards; 0: not tried
		}{
			{[]string{"suspend", "--email", "a@example.com"}, "SUSPENDED", "SUSPENDED", "FREE", http.StatusForbidden},
			{[]string{"activate", "--email", "a@example.com"}, "ACTIVE", "ACTIVE", "FREE", 0},
			{[]string{"tier", "--email", "a@example.com", "--tier", "PRO"}, "checkLimit 100", "ACTIVE", "PRO", 0},
		} {
			t.Run(tt.args[0], func(t *testing.T) {
				code, out, errs := s.cli(tt.args...)
				if code != 0 || !strings.Contains(out, tt.out) {
					t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
				}
				if code, me := s.do("GET", "/v1/me", token, nil); code != 200 || me["status"] != tt.status || me["tier"] != tt.tier {
					t.Fatalf("GET /v1/me = %d %v, want %s %s", code, me, tt.status, tt.tier)
				}
				if tt.createCode != 0 {
					if code, body := s.do("POST", "/v1/checks", token, create); code != tt.createCode {
						t.Fatalf("create = %d %v, want %d", code, body, tt.createCode)
					}
				}
			})
		}
		code, token2, errs := s.cli("token", "--email", "a@example.com")
		if code != 0 || !strings.HasPrefix(token2, "chk_") || token2 == token {
			t.Fatalf("token: exit %d, stdout %q, stderr %s", code, token2, errs)
		}
		for _, tok := range []string{token, token2} {
			if code, me := s.do("GET", "/v1/me", tok, nil); code != 200 || me["email"] != "a@example.com" {
				t.Fatalf("GET /v1/me = %d %v", code, me)
			}
		}
		if code, _ := s.do("GET", "/v1/me", "chk_bogus", nil); code != http.StatusUnauthorized {
			t.Fatalf("bogus token = %d", code)
		}
	})
}

// TestChecksMonitorEndToEnd watches the server's scheduler monitor a
// loopback site for a user created with the CLI, and stop when the CLI
// suspends the user.
func TestChecksMonitorEndToEnd(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "<html><body>Open for business</body></html>")
	}))
	defer site.Close()
	s := startChecksServer(t)
	token := s.createUser("a@example.com")

	code, check := s.do("POST", "/v1/checks", token, map[string]any{
		"url": site.URL + "/", "checkType": "AVAILABILITY", "delayMs": 1000,
		"attributes": map[string]any{"keyword": "open for business"},
	})
	if code != http.StatusCreated {
		t.Fatalf("create check = %d %v", code, check)
	}
	id, _ := check["id"].(string)
	lastResult := func() map[string]any {
		code, c := s.do("GET", "/v1/checks/"+id, token, nil)
		if code != 200 {
			t.Fatalf("GET check = %d %v", code, c)
		}
		r, _ := c["lastResult"].(map[string]any)
		return r
	}
	waitFor(t, "the check to run and report UP", func() bool { return lastResult()["status"] == "UP" })
	if hits.Load() == 0 {
		t.Fatal("the check is UP but the site was never hit")
	}
	if r := lastResult(); r["keywordFound"] != true || r["httpStatus"] != float64(200) {
		t.Fatalf("lastResult %v, want keywordFound and httpStatus 200", r)
	}
	waitFor(t, "repeated runs at delayMs 1000", func() bool { return hits.Load() >= 3 })

	code, out, errs := s.cli("suspend", "--email", "a@example.com")
	if code != 0 || !strings.Contains(out, "SUSPENDED") {
		t.Fatalf("suspend: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	// The scheduler caches users for 5 s; then the runs stop.
	waitLong(t, "the runs to stop after the suspension", 15*time.Second, quiet(&hits, 2500*time.Millisecond))
	if c := lastResult(); c["status"] != "UP" {
		t.Fatalf("lastResult after suspension %v", c)
	}

	// Reactivated, the check runs again.
	if code, out, errs := s.cli("activate", "--email", "a@example.com"); code != 0 || !strings.Contains(out, "ACTIVE") {
		t.Fatalf("activate: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	before := hits.Load()
	waitLong(t, "runs to resume after reactivation", 15*time.Second, func() bool { return hits.Load() > before })
}

// TestChecksAlertDeliveryWiring: quarry serve without --checks-smtp
// refuses an alert email, and a webhook delivery failure is shown on the
// user and the check (the dispatcher's outcomes are recorded in the store).
func TestChecksAlertDeliveryWiring(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer site.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
	}))
	defer hook.Close()
	s := startChecksServer(t)
	token := s.createUser("a@example.com")

	code, body := s.do("PUT", "/v1/me/alerts", token, map[string]any{"email": "ops@example.com"})
	if msg, _ := body["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "--checks-smtp") {
		t.Fatalf("PUT email without SMTP = %d %v, want 400 naming --checks-smtp", code, body)
	}
	if code, body := s.do("PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": hook.URL + "/"}); code != 200 {
		t.Fatalf("PUT webhook = %d %v", code, body)
	}
	code, check := s.do("POST", "/v1/checks", token, map[string]any{"url": site.URL + "/", "checkType": "AVAILABILITY", "delayMs": 1000})
	if code != http.StatusCreated {
		t.Fatalf("create check = %d %v", code, check)
	}
	for _, path := range []string{"/v1/me", "/v1/checks/" + check["id"].(string)} {
		waitFor(t, "lastAlertError on "+path, func() bool {
			_, got := s.do("GET", path, token, nil)
			msg, _ := got["lastAlertError"].(string)
			return strings.Contains(msg, "webhook") && strings.Contains(msg, "410") && got["lastAlertErrorAt"] != nil
		})
	}
}
