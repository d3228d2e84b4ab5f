package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestScanTop(t *testing.T) {
	for _, tc := range []struct {
		name, msg   string
		session     string // the sessionId read
		without     string // msg without its sessionId member
		withSession string // without, then with sessionId "S"
		err         bool
	}{
		{name: "none", msg: `{"id":1,"method":"A.b"}`, without: `{"id":1,"method":"A.b"}`, withSession: `{"sessionId":"S","id":1,"method":"A.b"}`},
		{name: "last", msg: `{"id":1,"result":{},"sessionId":"X"}`, session: "X", without: `{"id":1,"result":{}}`, withSession: `{"sessionId":"S","id":1,"result":{}}`},
		{name: "first", msg: `{"sessionId":"X","id":1}`, session: "X", without: `{"id":1}`, withSession: `{"sessionId":"S","id":1}`},
		{name: "only", msg: `{ "sessionId" : "X" }`, session: "X", without: `{  }`, withSession: `{"sessionId":"S"  }`},
		{name: "empty", msg: `{}`, without: `{}`, withSession: `{"sessionId":"S"}`},
		{name: "nested is not top", msg: `{"params":{"sessionId":"Y","s":"\"sessionId\":\"Z\""},"method":"Target.attachedToTarget"}`,
			without:     `{"params":{"sessionId":"Y","s":"\"sessionId\":\"Z\""},"method":"Target.attachedToTarget"}`,
			withSession: `{"sessionId":"S","params":{"sessionId":"Y","s":"\"sessionId\":\"Z\""},"method":"Target.attachedToTarget"}`},
		{name: "escaped key", msg: `{"id":1,"session\u0049d":"X"}`, session: "X", without: `{"id":1}`, withSession: `{"sessionId":"S","id":1}`},
		{name: "escaped value", msg: `{"id":1,"sessionId":"A\"B"}`, session: `A"B`, without: `{"id":1}`, withSession: `{"sessionId":"S","id":1}`},
		{name: "two sessionIds", msg: `{"sessionId":"X","id":1,"sessionId":"Y"}`, err: true},
		{name: "array", msg: `[1]`, err: true},
		{name: "trailing", msg: `{"id":1} {}`, err: true},
		{name: "unterminated", msg: `{"id":1,"method":"A`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := scanTop([]byte(tc.msg))
			if tc.err {
				if err == nil {
					t.Fatalf("scanTop(%s) succeeded", tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := top.sessionID(); got != tc.session {
				t.Errorf("sessionID = %q, want %q", got, tc.session)
			}
			without := top.without([]byte(tc.msg))
			if string(without) != tc.without {
				t.Errorf("without = %s, want %s", without, tc.without)
			}
			if got := withSession(without, "S"); string(got) != tc.withSession {
				t.Errorf("withSession = %s, want %s", got, tc.withSession)
			}
			if !json.Valid(without) {
				t.Errorf("without is not JSON: %s", without)
			}
		})
	}
}

// cdpClient is a raw DevTools client of a browser's endpoint.
type cdpClient struct {
	t    *testing.T
	conn *websocket.Conn
	id   int64
}

func dialDevtools(t *testing.T, b Browser, url string) *cdpClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: b.HTTPClient()})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &cdpClient{t: t, conn: conn}
}

// reply is a DevTools reply as a client sees it.
type reply struct {
	ID        int64           `json:"id"`
	SessionID *string         `json:"sessionId"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// raw sends msg (with "id" set to the next id) and returns the reply to
// it, skipping events; ok is false when none came within the timeout.
func (c *cdpClient) raw(msg string, timeout time.Duration) (reply, bool) {
	c.t.Helper()
	c.id++
	msg = fmt.Sprintf(`{"id":%d,%s`, c.id, strings.TrimPrefix(msg, "{"))
	ctx, cancel := context.WithTimeout(c.t.Context(), timeout)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		c.t.Fatalf("write %s: %v", msg, err)
	}
	for {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return reply{}, false
			}
			c.t.Fatalf("read reply to %s: %v", msg, err)
		}
		var r reply
		if err := json.Unmarshal(data, &r); err != nil {
			c.t.Fatalf("reply %s: %v", data, err)
		}
		if r.ID == c.id {
			return r, true
		}
	}
}

// call sends msg and fails the test unless it succeeds.
func (c *cdpClient) call(msg string) json.RawMessage {
	c.t.Helper()
	r, ok := c.raw(msg, 10*time.Second)
	if !ok || r.Error != nil {
		c.t.Fatalf("%s: no result (%+v)", msg, r.Error)
	}
	return r.Result
}

// TestDevtoolsClientsAreIsolated plays a DevTools client that names
// another client's session, or quarry's own root session, on the
// browser's pipe: its messages are answered with an error and never run,
// while its own session, page endpoints and disconnect behave as
// Chromium's own WebSocket endpoint does.
func TestDevtoolsClientsAreIsolated(t *testing.T) {
	c, _ := newTestProvider(t)
	b := launch(t, c, LaunchOptions{})
	a := dialDevtools(t, b, b.WebSocketURL())
	x := dialDevtools(t, b, b.WebSocketURL())

	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	if err := json.Unmarshal(a.call(`{"method":"Target.getTargets"}`), &targets); err != nil {
		t.Fatal(err)
	}
	var page string
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			page = ti.TargetID
		}
	}
	if page == "" {
		t.Fatalf("no page: %+v", targets)
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(a.call(fmt.Sprintf(`{"method":"Target.attachToTarget","params":{"targetId":%q,"flatten":true}}`, page)), &att)
	if att.SessionID == "" {
		t.Fatal("attachToTarget gave no session")
	}
	a.call(fmt.Sprintf(`{"sessionId":%q,"method":"Runtime.evaluate","params":{"expression":"window.mark = 'a'"}}`, att.SessionID))

	for _, key := range []string{`"sessionId"`, `"session\u0049d"`} {
		r, ok := x.raw(fmt.Sprintf(`{%s:%q,"method":"Runtime.evaluate","params":{"expression":"window.mark = 'x'"}}`, key, att.SessionID), 10*time.Second)
		if !ok || r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("another client's session named by %s: %+v (ok %v), want error -32001", key, r, ok)
		}
	}
	// An empty sessionId goes to the client's own session: the reply
	// comes, without a sessionId (the root session's would never reach it).
	r, ok := x.raw(`{"sessionId":"","method":"Target.getTargets"}`, 10*time.Second)
	if !ok || r.Error != nil || r.SessionID != nil {
		t.Errorf("empty sessionId: %+v (ok %v), want a reply of the client's own session", r, ok)
	}
	var mark struct {
		Result struct{ Value string } `json:"result"`
	}
	_ = json.Unmarshal(a.call(fmt.Sprintf(`{"sessionId":%q,"method":"Runtime.evaluate","params":{"expression":"window.mark","returnByValue":true}}`, att.SessionID)), &mark)
	if mark.Result.Value != "a" {
		t.Errorf("window.mark = %q: another client's command ran in the page", mark.Result.Value)
	}

	// The page's own endpoint: a session on that page, sessionIds hidden.
	p := dialDevtools(t, b, b.PageWebSocketURL(page))
	_ = json.Unmarshal(p.call(`{"method":"Runtime.evaluate","params":{"expression":"window.mark","returnByValue":true}}`), &mark)
	if mark.Result.Value != "a" {
		t.Errorf("page endpoint evaluated %q, want the page's mark", mark.Result.Value)
	}
	if _, _, err := websocket.Dial(t.Context(), b.PageWebSocketURL("0123456789ABCDEF0123456789ABCDEF"), &websocket.DialOptions{HTTPClient: b.HTTPClient()}); err == nil {
		t.Error("an unknown page's endpoint accepted a client")
	}

	// A browser context its client asked to dispose on detach is disposed
	// when the client leaves, as when it closes its own WebSocket to
	// Chromium.
	var bc struct{ BrowserContextID string }
	_ = json.Unmarshal(x.call(`{"method":"Target.createBrowserContext","params":{"disposeOnDetach":true}}`), &bc)
	_ = x.conn.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ctxs struct{ BrowserContextIDs []string }
		_ = json.Unmarshal(a.call(`{"method":"Target.getBrowserContexts"}`), &ctxs)
		if !strings.Contains(strings.Join(ctxs.BrowserContextIDs, " "), bc.BrowserContextID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("browser context %s outlived its client", bc.BrowserContextID)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// No other client reaches the endpoints.
	if _, err := http.Get("http://" + devtoolsHost + "/json/version"); err == nil {
		t.Error("the DevTools endpoint answered a client of its own")
	}
}
