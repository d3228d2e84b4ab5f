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

// projectResolver sends every session to the browser at url, in the
// project named by the session id's part before "-" ("a-1": project a).
type projectResolver struct {
	url     string
	forward bool
}

func (p projectResolver) Resolve(_ context.Context, req Request) (Target, error) {
	project, _, _ := strings.Cut(req.SessionID, "-")
	return Target{URL: p.url, Forward: p.forward, Project: project}, nil
}

// TestProxyMaxConnsPerProject: project a fills its share of connections
// over two sessions; its next one, to either, is answered 429 with
// Retry-After before the upgrade, while project b still connects; a
// closed connection gives its place back; and a process forwarding to
// the owner passes the owner's project 429 on with its message.
func TestProxyMaxConnsPerProject(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	browser := "ws" + strings.TrimPrefix(echoBrowser(t).URL, "http")
	owner := httptest.NewServer(NewProxyWith(projectResolver{url: browser}, ProxyOptions{Logger: log, Projects: NewProjectConns(3)}))
	t.Cleanup(owner.Close)
	dial := func(u string) (*websocket.Conn, *http.Response, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, u, nil)
		if err == nil {
			t.Cleanup(func() { c.CloseNow() })
			return c, resp, ""
		}
		if resp == nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return nil, resp, string(b)
	}
	check := func(what string, resp *http.Response, body string) {
		t.Helper()
		var e struct {
			StatusCode int    `json:"statusCode"`
			Error      string `json:"error"`
			Message    string `json:"message"`
		}
		if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil || e.StatusCode != 429 || e.Error != "Too Many Requests" ||
			!strings.Contains(e.Message, "at most 3 ") || !strings.Contains(e.Message, MaxConnsPerProjectSetting) {
			t.Fatalf("%s: %d %s, want 429 in Browserbase's shape naming 3 and %s", what, resp.StatusCode, body, MaxConnsPerProjectSetting)
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: 429 without Retry-After", what)
		}
	}

	var held []*websocket.Conn
	for _, s := range []string{"a-1", "a-1", "a-2"} {
		c, resp, body := dial(owner.URL + "/cdp/" + s)
		if c == nil {
			t.Fatalf("project a, session %s: %d %s", s, resp.StatusCode, body)
		}
		held = append(held, c)
	}
	for _, s := range []string{"a-2", "a-3", "a-1/page/T1"} {
		_, resp, body := dial(owner.URL + "/cdp/" + s)
		check("project a's 4th connection, to "+s, resp, body)
	}
	if code, body := dialStatus(t, owner.URL+"/cdp/b-1"); code != http.StatusSwitchingProtocols {
		t.Fatalf("project b with a's share taken: %d %s", code, body)
	}

	// A connection of a's that ends gives its place back.
	held[0].Close(websocket.StatusNormalClosure, "")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, resp, body := dial(owner.URL + "/cdp/a-3")
		if c != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("project a after closing one connection: %d %s", resp.StatusCode, body)
		}
	}

	// Another process forwards a's clients to the owner, which counts them.
	fwd := httptest.NewServer(NewProxyWith(projectResolver{url: "ws" + strings.TrimPrefix(owner.URL, "http") + "/cdp/a-1", forward: true}, ProxyOptions{Logger: log}))
	t.Cleanup(fwd.Close)
	_, resp, body := dial(fwd.URL + "/cdp/a-1")
	check("project a through another process", resp, body)
}
