package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/testenv"
)

// TestWallcrawlerFairShare: with --max-conns 40 and --max-upgraded-conns
// 80, tenant A holds 40 CDP WebSockets over two sessions (32, the
// per-session cap, and 8): its 33rd to the first session is answered 429
// naming the per-session cap. 40 is its project's share (by default half
// of the upgraded pool): a flood of 100 more upgrades to its second
// session is answered 429 naming the per-project cap, every one, and
// tenant B still creates and lists sessions, reads /healthz and drives
// its own browser over CDP.
func TestWallcrawlerFairShare(t *testing.T) {
	s := startWallcrawlerServer(t, "--max-conns", "40", "--max-upgraded-conns", "80")
	keys := map[string]string{}
	for _, p := range []string{"a", "b"} {
		s.cli("wallcrawler", "project", "create", "--name", p, "--id", "project_"+p, "--concurrency", "2")
		k := s.cli("wallcrawler", "key", "create", "--project", "project_"+p)
		keys[p], _, _ = strings.Cut(k, "\n")
	}
	a1, a2 := s.createSession(keys["a"]), s.createSession(keys["a"])
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond) // let the server see them closed

	var held []*cdpClient
	for range 32 {
		held = append(held, dialCDP(t, a1.ConnectURL))
	}
	held[0].must("", "Browser.getVersion", nil)
	held[31].must("", "Browser.getVersion", nil)
	code, body := testenv.RawUpgrade(t, a1.ConnectURL)
	var e struct {
		StatusCode int    `json:"statusCode"`
		Error      string `json:"error"`
		Message    string `json:"message"`
	}
	if code != http.StatusTooManyRequests || json.Unmarshal(body, &e) != nil || e.StatusCode != 429 || e.Error != "Too Many Requests" ||
		!strings.Contains(e.Message, "32") || !strings.Contains(e.Message, "--wallcrawler-max-cdp-clients") {
		t.Fatalf("tenant A's 33rd connection to one session: %d %s, want 429 naming the cap and its setting", code, body)
	}

	for range 8 {
		held = append(held, dialCDP(t, a2.ConnectURL))
	}
	held[39].must("", "Browser.getVersion", nil)

	// A's flood, past its project's share: 429 to A, not 503 to everyone.
	for i := range 100 {
		code, body := testenv.RawUpgrade(t, a2.ConnectURL)
		if code != http.StatusTooManyRequests || json.Unmarshal(body, &e) != nil || e.StatusCode != 429 ||
			!strings.Contains(e.Message, "at most 40 ") || !strings.Contains(e.Message, "--wallcrawler-max-conns-per-project") {
			t.Fatalf("tenant A's upgrade %d past its project's 40: %d %s, want 429 naming the cap and its setting", i+1, code, body)
		}
	}

	// Tenant B, with all of A's sockets held.
	var b wcSession
	if code := s.call(keys["b"], "POST", "/v1/sessions", map[string]any{}, &b); code != http.StatusCreated || b.ConnectURL == "" {
		t.Fatalf("tenant B create session with A's 40 sockets held and its flood refused: %d, want 201", code)
	}
	var list []wcSession
	if code := s.call(keys["b"], "GET", "/v1/sessions", nil, &list); code != http.StatusOK || len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("tenant B list sessions: %d %+v, want 200 with its session", code, list)
	}
	resp, err := http.Get("http://" + s.api + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with A's sockets held: %d", resp.StatusCode)
	}
	var v struct{ Product string }
	if err := json.Unmarshal(dialCDP(t, b.ConnectURL).must("", "Browser.getVersion", nil), &v); err != nil || !strings.Contains(v.Product, "Chrome") {
		t.Fatalf("tenant B Browser.getVersion: %q %v", v.Product, err)
	}
	// A's sockets still work.
	held[20].must("", "Browser.getVersion", nil)
}
