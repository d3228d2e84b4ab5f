package live

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// grantAll grants every token the page at target.
type grantAll struct{ target cdp.Target }

func (g grantAll) LiveTarget(context.Context, string, string, string) (sessions.LiveGrant, error) {
	return sessions.LiveGrant{Target: g.target, PageID: "P1"}, nil
}

// screencastPage is a page target that sends screencast frames as fast
// as they are taken, reading (and dropping) the commands it gets, until
// the connection fails; gone is closed then.
func screencastPage(t *testing.T) (srv *httptest.Server, gone <-chan struct{}) {
	done := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer close(done)
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		frame := []byte(`{"method":"Page.screencastFrame","params":{"sessionId":1,"metadata":{"deviceWidth":800,"deviceHeight":600},"data":"` +
			base64.StdEncoding.EncodeToString(make([]byte, 32<<10)) + `"}}`)
		for {
			if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, done
}

// TestViewerCutsNonReader plays a viewer that completes the WebSocket
// upgrade over raw TCP and then never reads, while the page keeps
// drawing: once the buffers are full the write of a frame times out, the
// viewer's socket ends (Closed is called) and the page's connection is
// let go.
func TestViewerCutsNonReader(t *testing.T) {
	page, gone := screencastPage(t)
	ended := make(chan struct{})
	h := New(grantAll{cdp.Target{URL: "ws" + strings.TrimPrefix(page.URL, "http"), Closed: func() { close(ended) }}},
		&Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WriteTimeout: 200 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	c, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /live/s1/ws?token=x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	// From here the viewer reads nothing.
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("a viewer that never reads held its socket for 20 s")
	}
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the viewer's socket ended but the page's connection stayed open for 20 s")
	}
}

// TestViewerMaxConnsPerProject: a viewer of a project that holds all its
// connections (here taken by its CDP clients) is answered 429 in
// Browserbase's shape before the upgrade; the HTML page is not counted.
func TestViewerMaxConnsPerProject(t *testing.T) {
	page, _ := screencastPage(t)
	projects := cdp.NewProjectConns(1)
	if !projects.Acquire("a") {
		t.Fatal("acquire")
	}
	h := New(grantAll{cdp.Target{URL: "ws" + strings.TrimPrefix(page.URL, "http"), Project: "a"}},
		&Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Projects: projects})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, srv.URL+"/live/s1/ws?token=x", nil)
	if err == nil {
		c.CloseNow()
		t.Fatal("a viewer over the project's cap was upgraded")
	}
	if resp == nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), `"statusCode":429`) || !strings.Contains(string(body), cdp.MaxConnsPerProjectSetting) {
		t.Fatalf("viewer over the cap: %d %q, want 429 naming %s with Retry-After", resp.StatusCode, body, cdp.MaxConnsPerProjectSetting)
	}
	res, err := http.Get(srv.URL + "/live/s1?token=x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the live view's page with the project's share taken: %d", res.StatusCode)
	}
}
