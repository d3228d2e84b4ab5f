package httpserver

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSlowloris plays the slowloris attacker over raw TCP: it fills every
// ordinary slot with connections that never complete a request head (an
// upgrade's among them), each in its own way, and stalls. Each is closed
// once ReadHeaderTimeout has passed since its head began, however it
// trickles, and an ordinary request is then served again.
func TestSlowloris(t *testing.T) {
	const headTimeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		// first is sent and answered in full before the attack (a
		// keep-alive connection's earlier request); "" none.
		first string
		send  string // then written, and nothing more
		// trickle sends send one byte every 50 ms, and then one more byte
		// of a header every 50 ms until the connection is closed: bytes
		// keep arriving, so only a bound on the whole head cuts it.
		trickle bool
	}{
		{name: "nothing sent"},
		{name: "partial request line", send: "GET /wallcrawler/cdp/s1?signingKey=x HTT"},
		{name: "request line without headers", send: "GET / HTTP/1.1\r\n"},
		{name: "partial upgrade headers", send: "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Ver"},
		{name: "trickled upgrade headers", send: "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nX-Pad: ", trickle: true},
		{name: "partial second request on a keep-alive connection",
			first: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", send: "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: webs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const slots = 3
			addr := startLimited(t, upgradeHandler, Limits{ReadHeaderTimeout: headTimeout, IdleTimeout: time.Minute, MaxConns: slots})
			closed := make(chan time.Duration, slots)
			for range slots {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if tc.first != "" {
					io.WriteString(c, tc.first)
					c.SetReadDeadline(time.Now().Add(3 * time.Second))
					buf := make([]byte, 512)
					if n, err := c.Read(buf); err != nil || !strings.HasSuffix(string(buf[:n]), "ok") {
						t.Fatalf("first request: %q %v", buf[:n], err)
					}
				}
				start := time.Now()
				if tc.trickle {
					go func() {
						for _, b := range []byte(tc.send + strings.Repeat("a", 1<<20)) {
							if _, err := c.Write([]byte{b}); err != nil {
								return
							}
							time.Sleep(50 * time.Millisecond)
						}
					}()
				} else {
					io.WriteString(c, tc.send)
				}
				go func() {
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					_, err := io.ReadAll(c)
					if isTimeout(err) {
						closed <- -1
						return
					}
					closed <- time.Since(start)
				}()
			}
			for i := range slots {
				if d := <-closed; d < 0 {
					t.Fatalf("connection %d: still open 10 s after its head began (read-header timeout %v)", i+1, headTimeout)
				}
			}
			// A slot is given back just after its connection closes.
			for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				c, code, body := rawRequest(t, addr, "/", false)
				c.Close()
				if code == 200 && body == "ok" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the stalled connections were cut: %d %q, want 200 ok", code, body)
				}
			}
		})
	}
}
