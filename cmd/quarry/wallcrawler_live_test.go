package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// wcServer is a `quarry serve` with Wallcrawler, started by a test.
type wcServer struct {
	t               *testing.T
	dir, api, store string
	logs            *syncBuffer
}

// startWallcrawlerServer starts `quarry serve` on free loopback ports with
// extra flags, and stops it when the test ends.
func startWallcrawlerServer(t *testing.T, extra ...string) *wcServer {
	t.Helper()
	testenv.Chromium(t)
	s := &wcServer{t: t, dir: t.TempDir(), api: freeAddr(t), store: freeAddr(t), logs: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args := append([]string{"serve", "--listen", s.api, "--ddb-listen", s.store, "--data-dir", s.dir}, extra...)
	go func() { done <- run(ctx, args, noEnv, s.logs, s.logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("quarry serve did not stop within 60s")
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", s.logs.String())
		}
	})
	waitFor(t, "listeners", func() bool {
		return strings.Contains(s.logs.String(), "listening on "+s.api) && strings.Contains(s.logs.String(), "listening on "+s.store)
	})
	return s
}

// cli runs a quarry command against the server's data directory.
func (s *wcServer) cli(args ...string) string {
	s.t.Helper()
	var out, errs syncBuffer
	args = append(args, "--data-dir", s.dir, "--ddb-listen", s.store)
	if code := run(context.Background(), args, noEnv, &out, &errs); code != 0 {
		s.t.Fatalf("%v: exit %d: %s", args, code, errs.String())
	}
	return strings.TrimSpace(out.String())
}

// call makes one Wallcrawler API request with key and decodes the answer
// into out (when not nil); it returns the status.
func (s *wcServer) call(key, method, path string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+s.api+"/wallcrawler"+path, rd)
	req.Header.Set("X-BB-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// wcSession is the part of a session answer the tests read.
type wcSession struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	ConnectURL string `json:"connectUrl"`
}

func (s *wcServer) createSession(key string) wcSession {
	s.t.Helper()
	return s.createSessionWith(key, map[string]any{})
}

// createSessionWith creates a session with the given request body.
func (s *wcServer) createSessionWith(key string, body map[string]any) wcSession {
	s.t.Helper()
	var x wcSession
	if code := s.call(key, "POST", "/v1/sessions", body, &x); code != http.StatusCreated || x.ConnectURL == "" {
		s.t.Fatalf("create session: %d %+v", code, x)
	}
	return x
}

// liveFixture is the site a session shows: /button is one button filling
// the page, which counts clicks in document.title and turns the page from
// green to orange (odd counts) or blue (even counts).
func liveFixture(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/button":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><head><title>ready</title><style>
html,body{margin:0;height:100%}button{display:block;width:100%;height:100%;border:0;background:#00c000;font-size:40px}
</style></head><body><button id="b">Click me</button><script>
var n=0,b=document.getElementById("b");b.onclick=function(){n++;document.title="clicked "+n;b.style.background=n%2?"#ffc000":"#00c0ff";};
</script></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// embedder serves a page of another site holding the iframes set with
// set, each 480×270: the first at (0, 0), the second at (500, 0), the
// third at (0, 300).
type embedder struct {
	*httptest.Server
	mu     sync.Mutex
	frames []string
}

func newEmbedder(t *testing.T) *embedder {
	e := &embedder{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>embedder</title><style>body{margin:0;background:#fff}iframe{position:absolute;border:0;width:480px;height:270px}</style></head><body>`)
		pos := []string{"left:0;top:0", "left:500px;top:0", "left:0;top:300px"}
		for i, u := range e.frames {
			fmt.Fprintf(w, `<iframe id="f%d" style="%s" src="%s"></iframe>`, i, pos[i%3], html.EscapeString(u))
		}
		fmt.Fprint(w, `</body></html>`)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *embedder) set(urls ...string) {
	e.mu.Lock()
	e.frames = urls
	e.mu.Unlock()
}

// origin is the embedder's origin as the test's browser loads it:
// localhost, another site than quarry's 127.0.0.1.
func (e *embedder) origin() string {
	_, port, _ := net.SplitHostPort(e.Listener.Addr().String())
	return "http://localhost:" + port
}

// rgb is a colour.
type rgb struct{ r, g, b uint8 }

// share is the fraction of the pixels of the rectangle (x0, y0)–(x1, y1)
// of a PNG screenshot close to c.
func share(t *testing.T, shot []byte, x0, y0, x1, y1 int, c rgb) float64 {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -40 && d < 40 }
	n, hit := 0, 0
	for y := y0; y < y1; y += 4 {
		for x := x0; x < x1; x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			n++
			if near(r, c.r) && near(g, c.g) && near(b, c.b) {
				hit++
			}
		}
	}
	return float64(hit) / float64(n)
}

// TestLiveViewEmbedded drives the live view as an application embeds it:
// a page of another site (localhost, while quarry is 127.0.0.1) frames
// debuggerFullscreenUrl and debuggerViewOnlyUrl in iframes, allowed by
// --wallcrawler-live-frame-ancestors. The frames of the session's page
// (the fixture site's green button) are painted in both; a click on the
// interactive iframe clicks the button (its title, read through the
// session's own CDP connection, changes, and the new colour is painted),
// a click on the view-only one does nothing; expired, tampered and
// view-only-upgraded tokens are refused.
func TestLiveViewEmbedded(t *testing.T) {
	t.Parallel()
	site := liveFixture(t)
	emb := newEmbedder(t)
	s := startWallcrawlerServer(t, "--allow-networks", site.Listener.Addr().String(),
		"--wallcrawler-live-frame-ancestors", "'self' "+emb.origin())
	s.cli("wallcrawler", "project", "create", "--name", "Live", "--id", "project_live")
	key := s.cli("wallcrawler", "key", "create", "--project", "project_live")
	x := s.createSession(key)
	c := dialCDP(t, x.ConnectURL)
	cs, _ := c.attachPage()
	c.must(cs, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 800, "height": 450, "deviceScaleFactor": 1, "mobile": false})
	if got := c.navigate(cs, site.URL+"/button"); !strings.Contains(got, "Click me") {
		t.Fatalf("fixture page: %q", got)
	}

	var dbg struct {
		DebuggerFullscreenURL string `json:"debuggerFullscreenUrl"`
		DebuggerViewOnlyURL   string `json:"debuggerViewOnlyUrl"`
		Pages                 []struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"pages"`
	}
	if code := s.call(key, "GET", "/v1/sessions/"+x.ID+"/debug", nil, &dbg); code != 200 || dbg.DebuggerFullscreenURL == "" {
		t.Fatalf("debug: %d %+v", code, dbg)
	}
	// The framing policy is the flag's.
	res, err := http.Get(dbg.DebuggerFullscreenURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors 'self' "+emb.origin()) {
		t.Fatalf("live view CSP %q", csp)
	}

	// The third frame is the view-only URL without its mode=view: the
	// token alone keeps it view-only.
	emb.set(dbg.DebuggerFullscreenURL, dbg.DebuggerViewOnlyURL, strings.TrimSuffix(dbg.DebuggerViewOnlyURL, "&mode=view"))
	ctx := consoleBrowser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(emb.origin()+"/")); err != nil {
		t.Fatal(err)
	}
	screenshot := func() []byte {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Inner rectangles of the three iframes (the 800×450 page fills
	// their 480×270 exactly).
	interactive, viewOnly, upgraded := [4]int{20, 20, 460, 250}, [4]int{520, 20, 960, 250}, [4]int{20, 320, 460, 550}
	painted := func(rect [4]int, c rgb) bool {
		return share(t, screenshot(), rect[0], rect[1], rect[2], rect[3], c) > 0.6
	}
	green, blue := rgb{0, 0xc0, 0}, rgb{0, 0xc0, 0xff}
	waitFor(t, "the fixture page painted in both live views", func() bool {
		return painted(interactive, green) && painted(viewOnly, green) && painted(upgraded, green)
	})
	if os.Getenv("QUARRY_CONSOLE_SCREENSHOTS") != "" {
		_ = os.WriteFile(filepath.Join("..", "..", "docs", "img", "wallcrawler-live-embedded.png"), screenshot(), 0o644)
	}

	title := func() string { return c.eval(cs, "document.title") }
	click := func(x, y float64) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.MouseClickXY(x, y)); err != nil {
			t.Fatal(err)
		}
	}
	// Clicks in the view-only frames are ignored; then one in the
	// interactive frame reaches the page, once.
	for i, want := range []string{"clicked 1", "clicked 2"} {
		click(740, 135)
		click(240, 435)
		click(240, 135)
		waitFor(t, "click "+fmt.Sprint(i+1)+" to reach the page", func() bool { return title() == want })
	}
	waitFor(t, "the new colour painted in every live view", func() bool {
		return painted(interactive, blue) && painted(viewOnly, blue) && painted(upgraded, blue)
	})
	if got := title(); got != "clicked 2" {
		t.Fatalf("title %q after two clicks in the interactive frame and four in view-only ones", got)
	}
	// viewer.js sends nothing when view-only; a hostile viewer holding the
	// view-only token sends clicks on the raw socket anyway, before one
	// more click in the interactive frame.
	voURL := strings.TrimSuffix(dbg.DebuggerViewOnlyURL, "&mode=view")
	vu, _ := url.Parse(voURL)
	vu.Scheme, vu.Path = "ws", vu.Path+"/ws"
	dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	raw, _, err := websocket.Dial(dctx, vu.String(), nil)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.CloseNow()
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		m, _ := json.Marshal(map[string]any{"t": "mouse", "type": typ, "x": 400, "y": 225, "button": "left", "buttons": 1, "clickCount": 1})
		if err := raw.Write(context.Background(), websocket.MessageText, m); err != nil {
			t.Fatal(err)
		}
	}
	click(240, 135)
	waitFor(t, "the third click", func() bool { return strings.HasPrefix(title(), "clicked ") && title() != "clicked 2" })
	if got := title(); got != "clicked 3" {
		t.Fatalf("title %q: the view-only socket's click reached the page", got)
	}

	// Tokens: tampered, expired, another session's, the signingKey.
	secret, err := os.ReadFile(filepath.Join(s.dir, "wallcrawler", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbg.DebuggerFullscreenURL)
	pageID := u.Path[strings.LastIndex(u.Path, "/")+1:]
	tok := u.Query().Get("token")
	toks := sessions.NewTokens(secret, nil)
	expired, _ := toks.SignLive(x.ID, pageID, false, time.Now().Add(-time.Second))
	other, _ := toks.SignLive("sess_other", pageID, false, time.Now().Add(time.Hour))
	// Tampered: the signature's first character changed. Not its last: of
	// the last character of a 32-byte signature in unpadded base64 only 4
	// of the 6 bits are the signature's, and the decoder ignores the other
	// 2, so that A and B there decode the same (one token in 16 ends in A).
	sig := strings.LastIndex(tok, ".") + 1
	first := "A"
	if tok[sig] == 'A' {
		first = "B"
	}
	tampered := tok[:sig] + first + tok[sig+1:]
	cu, _ := url.Parse(x.ConnectURL)
	base := "http://" + s.api + "/wallcrawler/live/" + x.ID + "/" + pageID
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"valid", tok, 200},
		{"tampered", tampered, 401},
		{"expired", expired, 401},
		{"another session's", other, 403},
		{"the signingKey", cu.Query().Get("signingKey"), 401},
	} {
		res, err := http.Get(base + "?token=" + url.QueryEscape(tc.token))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s token: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
		if tc.want == 200 {
			continue
		}
		// The socket refuses it too, before any upgrade.
		ws := "ws" + strings.TrimPrefix(base, "http") + "/ws?token=" + url.QueryEscape(tc.token)
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, res2, err := websocket.Dial(dctx, ws, nil)
		cancel()
		if err == nil {
			conn.CloseNow()
			t.Errorf("%s token: the live socket accepted it", tc.name)
		} else if res2 == nil || res2.StatusCode != tc.want {
			t.Errorf("%s token: live socket answered %v, want %d", tc.name, res2, tc.want)
		}
	}
}
