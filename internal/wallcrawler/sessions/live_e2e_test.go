package sessions_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// liveSite serves /button (a static page whose button counts clicks in
// document.title) and /anim (a page redrawn on every animation frame).
func liveSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/button":
			fmt.Fprint(w, `<!doctype html><html><head><title>ready</title></head><body style="margin:0">
<button id="b" style="position:absolute;left:0;top:0;width:200px;height:100px">Click</button><p id="n" style="margin-top:120px">0</p>
<script>var n=0;document.getElementById("b").onclick=function(){n++;document.title="clicked "+n;document.getElementById("n").textContent=n;document.body.style.background=n%2?"#fc0":"#0cf";};</script></body></html>`)
		case "/anim":
			fmt.Fprint(w, `<!doctype html><html><head><title>anim</title></head><body><p id="n" style="font-size:40px">0</p>
<script>var n=0;function f(){document.getElementById("n").textContent=++n;requestAnimationFrame(f);}requestAnimationFrame(f);</script></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// liveMsg is one message a viewer socket received.
type liveMsg struct {
	binary bool
	data   []byte
	at     time.Time
}

// liveViewer is a Go client of the live view's WebSocket.
type liveViewer struct {
	c      *websocket.Conn
	msgs   chan liveMsg
	closed chan error
}

func openViewer(t *testing.T, pageURL string) *liveViewer {
	t.Helper()
	u, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path += "/ws"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u.String(), nil)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial live view: %d %v", code, err)
	}
	c.SetReadLimit(-1)
	v := &liveViewer{c: c, msgs: make(chan liveMsg, 4096), closed: make(chan error, 1)}
	go func() {
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				v.closed <- err
				close(v.msgs)
				return
			}
			select {
			case v.msgs <- liveMsg{binary: typ == websocket.MessageBinary, data: b, at: time.Now()}:
			default: // the test is not reading: drop
			}
		}
	}()
	t.Cleanup(func() { c.CloseNow() })
	return v
}

// frame waits for the next JPEG frame.
func (v *liveViewer) frame(t *testing.T, within time.Duration) liveMsg {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-v.msgs:
			if !ok {
				t.Fatal("live view closed while waiting for a frame")
			}
			if m.binary {
				return m
			}
		case <-deadline:
			t.Fatalf("no frame within %v", within)
		}
	}
}

// drain drops the messages received so far.
func (v *liveViewer) drain() {
	for {
		select {
		case _, ok := <-v.msgs:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func (v *liveViewer) click(t *testing.T, x, y float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		m := map[string]any{"t": "mouse", "type": typ, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1}
		if err := wsjson.Write(ctx, v.c, m); err != nil {
			t.Fatal(err)
		}
	}
}

func pageTitle(t *testing.T, ctx context.Context) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(cctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func waitTitle(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := pageTitle(t, ctx)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("title %q, want %q", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLiveView(t *testing.T) {
	st := newStack(t, 2, sessions.Options{})
	web := liveSite(t)
	s := st.create(t, nil)
	ctx := connect(t, s.ConnectURL)
	if got := title(t, ctx, web.URL+"/button"); got != "ready" {
		t.Fatalf("title %q", got)
	}

	type pageJSON struct{ ID, URL, DebuggerURL, DebuggerFullscreenURL, DebuggerViewOnlyURL string }
	var dbg struct {
		DebuggerURL, DebuggerFullscreenURL, DebuggerViewOnlyURL string
		Pages                                                   []pageJSON
	}
	if code := st.call(t, "GET", "/v1/sessions/"+s.ID+"/debug", nil, &dbg); code != 200 {
		t.Fatalf("debug: %d", code)
	}
	var pg pageJSON
	for _, p := range dbg.Pages {
		if strings.HasSuffix(p.URL, "/button") {
			pg = p
		}
	}
	prefix := st.srv.URL + "/wallcrawler/live/" + s.ID + "/"
	if !strings.HasPrefix(pg.DebuggerURL, prefix+pg.ID+"?token=") || pg.DebuggerFullscreenURL != pg.DebuggerURL ||
		!strings.HasSuffix(pg.DebuggerViewOnlyURL, "&mode=view") || !strings.HasPrefix(dbg.DebuggerFullscreenURL, prefix) {
		t.Fatalf("debug %+v", dbg)
	}

	// The page: embeddable anywhere, strict CSP otherwise, no caching.
	resp, err := http.Get(pg.DebuggerURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || resp.Header.Get("X-Frame-Options") != "" || !strings.Contains(csp, "frame-ancestors *") ||
		!strings.Contains(csp, "script-src 'self'") || !bytes.Contains(body, []byte(`src="../viewer.js"`)) {
		t.Fatalf("live page: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if resp, err := http.Get(st.srv.URL + "/wallcrawler/live/viewer.js"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("viewer.js: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Frames arrive, and a click through the viewer reaches the page.
	v := openViewer(t, pg.DebuggerURL)
	if f := v.frame(t, 15*time.Second); !bytes.HasPrefix(f.data, []byte{0xff, 0xd8}) {
		t.Fatalf("frame is not a JPEG: % x", f.data[:min(8, len(f.data))])
	}
	var lat []time.Duration
	for i := 1; i <= 5; i++ {
		time.Sleep(300 * time.Millisecond) // let the page settle
		v.drain()
		sent := time.Now()
		v.click(t, 100, 50)
		f := v.frame(t, 5*time.Second)
		lat = append(lat, f.at.Sub(sent))
		waitTitle(t, ctx, fmt.Sprintf("clicked %d", i))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("input-to-frame latency over %d clicks: min %v, median %v, max %v", len(lat), lat[0], lat[len(lat)/2], lat[len(lat)-1])

	// A second viewer, view-only: it sees frames, its input is ignored.
	vo := openViewer(t, pg.DebuggerViewOnlyURL)
	vo.frame(t, 15*time.Second)
	vo.click(t, 100, 50)
	time.Sleep(500 * time.Millisecond)
	if got := pageTitle(t, ctx); got != "clicked 5" {
		t.Fatalf("a view-only viewer's click reached the page: title %q", got)
	}

	// An animated page, seen by both viewers at once: frames keep coming
	// and show the animation (distinct pictures). How many per second is
	// a benchmark's question, not this test's; it is logged.
	if got := title(t, ctx, web.URL+"/anim"); got != "anim" {
		t.Fatalf("title %q", got)
	}
	v.frame(t, 10*time.Second)
	v.drain()
	vo.drain()
	distinct := map[string]bool{}
	var first, last time.Time
	n := 0
	for deadline := time.After(30 * time.Second); len(distinct) < 5; {
		select {
		case m := <-v.msgs:
			if !m.binary {
				continue
			}
			if n == 0 {
				first = m.at
			}
			n++
			last = m.at
			distinct[string(m.data)] = true
			continue
		case <-deadline:
		}
		t.Fatalf("an animated page gave %d frames, %d distinct, in 30 s: want 5 distinct", n, len(distinct))
	}
	t.Logf("animated page: %d frames (%d distinct) in %v", n, len(distinct), last.Sub(first))
	vo.frame(t, 5*time.Second)

	// Bad tokens: forged, expired, another session's, another page's, a signingKey.
	live := func(id, page, token string) int {
		u := st.srv.URL + "/wallcrawler/live/" + id
		if page != "" {
			u += "/" + page
		}
		resp, err := http.Get(u + "?token=" + url.QueryEscape(token))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	forged, _ := sessions.NewTokens([]byte("another secret, another secret!!"), nil).SignLive(s.ID, pg.ID, false, time.Now().Add(time.Hour))
	expired, _ := st.tokens.SignLive(s.ID, pg.ID, false, st.clock.now().Add(-time.Minute))
	other, _ := st.tokens.SignLive("wc_other", pg.ID, false, st.clock.now().Add(time.Hour))
	whole, _ := st.tokens.SignLive(s.ID, "", false, st.clock.now().Add(time.Hour))
	for _, c := range []struct {
		name, page, token string
		want              int
	}{
		{"none", pg.ID, "", 401}, {"forged", pg.ID, forged, 401}, {"expired", pg.ID, expired, 401},
		{"signingKey", pg.ID, s.SigningKey, 401}, {"other session", pg.ID, other, 403}, {"other page", pg.ID, whole, 403},
	} {
		if got := live(s.ID, c.page, c.token); got != c.want {
			t.Errorf("%s token: %d, want %d", c.name, got, c.want)
		}
	}

	// Release: both sockets close.
	st.release(t, s.ID)
	for _, x := range []*liveViewer{v, vo} {
		select {
		case err := <-x.closed:
			t.Logf("viewer closed: %v", err)
		case <-time.After(15 * time.Second):
			t.Fatal("viewer socket still open after release")
		}
	}
}
