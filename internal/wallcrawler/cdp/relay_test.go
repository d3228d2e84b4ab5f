package cdp

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// floodBrowser is a browser target that sends its client events as fast
// as they are taken, until the connection fails; gone is closed then.
func floodBrowser(t *testing.T) (srv *httptest.Server, gone <-chan struct{}) {
	done := make(chan struct{})
	var once sync.Once
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		defer once.Do(func() { close(done) })
		ctx := c.CloseRead(context.Background()) // answers the proxy's close
		ev := []byte(`{"method":"Network.dataReceived","params":{"requestId":"1","data":"` + strings.Repeat("x", 16<<10) + `"}}`)
		for {
			if err := c.Write(ctx, websocket.MessageText, ev); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, done
}

// rawUpgrade completes a WebSocket handshake with u over raw TCP, with a
// small receive buffer, and returns the connection after reading the
// answer's head: from then on the client reads nothing.
func rawUpgrade(t *testing.T, u string) net.Conn {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", pu.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET "+pu.RequestURI()+" HTTP/1.1\r\nHost: "+pu.Host+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	c.SetDeadline(time.Time{})
	return c
}

// TestProxyCutsNonReader plays a client that completes the WebSocket
// upgrade and then never reads, while the browser keeps sending: once the
// buffers between them are full, the relay's write to the client times
// out, and the relay ends (Closed is called) and lets go of the browser's
// connection, whether it filters a local browser or forwards to another
// process.
func TestProxyCutsNonReader(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, forward := range []bool{false, true} {
		name := "local"
		if forward {
			name = "forwarded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			browser, gone := floodBrowser(t)
			ended := make(chan struct{})
			target := Target{URL: "ws" + strings.TrimPrefix(browser.URL, "http"), Forward: forward, Closed: func() { close(ended) }}
			p := httptest.NewServer(NewProxyWith(fakeResolver{target}, ProxyOptions{Logger: log, WriteTimeout: 200 * time.Millisecond}))
			t.Cleanup(p.Close)
			rawUpgrade(t, p.URL+"/cdp/s1")
			select {
			case <-ended:
			case <-time.After(20 * time.Second):
				t.Fatal("a client that never reads held the relay for 20 s")
			}
			select {
			case <-gone:
			case <-time.After(20 * time.Second):
				t.Fatal("the relay ended but the browser's connection stayed open for 20 s")
			}
		})
	}
}

// TestProxyServesQuietClient: a live client that sends nothing and gets
// nothing for many times the write timeout is still served: the bound is
// on writes that do not complete, not on silence.
func TestProxyServesQuietClient(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	browser := echoBrowser(t)
	const timeout = 50 * time.Millisecond
	p := httptest.NewServer(NewProxyWith(fakeResolver{Target{URL: "ws" + strings.TrimPrefix(browser.URL, "http")}}, ProxyOptions{Logger: log, WriteTimeout: timeout}))
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, p.URL+"/cdp/s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	time.Sleep(20 * timeout)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), "Browser.getVersion") {
		t.Fatalf("after %v of silence: %s %v", 20*timeout, b, err)
	}
}
