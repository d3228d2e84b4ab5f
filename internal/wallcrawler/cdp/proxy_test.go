package cdp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeResolver sends every session to target.
type fakeResolver struct{ target Target }

func (f fakeResolver) Resolve(context.Context, Request) (Target, error) { return f.target, nil }

// echoBrowser is a WebSocket server echoing messages, standing for a
// browser target.
func echoBrowser(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			c.Write(context.Background(), typ, b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// dialStatus dials u and returns the handshake's status and, when it was
// refused, its body; an accepted connection stays open until the test ends.
func dialStatus(t *testing.T, u string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, nil)
	if err == nil {
		t.Cleanup(func() { c.CloseNow() })
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), "Browser.getVersion") {
			t.Fatalf("relay: %s %v", b, err)
		}
		return resp.StatusCode, ""
	}
	if resp == nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func check429(t *testing.T, code int, body string, max string) {
	t.Helper()
	var e struct {
		StatusCode int    `json:"statusCode"`
		Error      string `json:"error"`
		Message    string `json:"message"`
	}
	if code != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil || e.StatusCode != 429 || e.Error != "Too Many Requests" ||
		!strings.Contains(e.Message, "at most "+max+" ") || !strings.Contains(e.Message, MaxClientsSetting) {
		t.Fatalf("over the cap: %d %s, want 429 in shape naming %s and %s", code, body, max, MaxClientsSetting)
	}
}

// TestProxyMaxClients: one session's clients past the cap are answered
// 429 before the upgrade, another session keeps its share, and a process
// forwarding to the session's owner passes the owner's 429 on.
func TestProxyMaxClients(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	browser := echoBrowser(t)
	owner := httptest.NewServer(NewProxyWith(fakeResolver{Target{URL: "ws" + strings.TrimPrefix(browser.URL, "http")}}, ProxyOptions{Logger: log, MaxClients: 2}))
	t.Cleanup(owner.Close)
	for i := range 2 {
		if code, body := dialStatus(t, owner.URL+"/cdp/s1"); code != http.StatusSwitchingProtocols {
			t.Fatalf("client %d: %d %s", i+1, code, body)
		}
	}
	code, body := dialStatus(t, owner.URL+"/cdp/s1")
	check429(t, code, body, "2")
	code, body = dialStatus(t, owner.URL+"/cdp/s1/page/T1") // a page's client is the session's
	check429(t, code, body, "2")
	if code, body := dialStatus(t, owner.URL+"/cdp/s2"); code != http.StatusSwitchingProtocols {
		t.Fatalf("another session: %d %s", code, body)
	}

	// Another process forwards s1's clients to the owner, which counts them.
	fwd := httptest.NewServer(NewProxyWith(fakeResolver{Target{URL: "ws" + strings.TrimPrefix(owner.URL, "http") + "/cdp/s1", Forward: true}}, ProxyOptions{Logger: log, MaxClients: 2}))
	t.Cleanup(fwd.Close)
	code, body = dialStatus(t, fwd.URL+"/cdp/s1")
	check429(t, code, body, "2")
}
