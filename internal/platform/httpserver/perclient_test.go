package httpserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestConnsPerClient plays the flooder: one address (127.0.0.2) opens
// more idle connections than the whole listener takes. Past its share it
// is answered 429, and a client at another address (127.0.0.1) is still
// served; an address many clients share (a trusted proxy) is not bounded.
func TestConnsPerClient(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	lim := Limits{ReadHeaderTimeout: 5 * time.Second, MaxConns: 12, MaxConnsPerClient: 4}
	flood := func(t *testing.T, addr string, n int) (answers []string) {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
		for range n {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			// Idle: no request. A refused connection gets its answer
			// once it sends a request's head.
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			b := make([]byte, 1)
			if _, err := c.Read(b); err == nil || !isTimeout(err) {
				// The server answered (or closed) without a request:
				// read what it wrote after a head.
				answers = append(answers, "closed early")
				continue
			}
			c.SetDeadline(time.Now().Add(2 * time.Second))
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers = append(answers, "no answer: "+err.Error())
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers = append(answers, resp.Status+" "+string(body))
			// Keep the connection open and idle again (a served one).
		}
		return answers
	}
	get := func(addr string) string {
		resp, err := (&http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		return resp.Status
	}

	t.Run("the flooder gets 429, the others are served", func(t *testing.T) {
		addr := startLimited(t, ok, lim)
		answers := flood(t, addr, 15)
		refused := 0
		for _, a := range answers[4:] {
			if strings.HasPrefix(a, "429 ") && strings.Contains(a, "too many connections from your address") {
				refused++
			}
		}
		if refused != len(answers)-4 {
			t.Fatalf("past its 4 connections the flooder got %q, want 429 each", answers[4:])
		}
		if got := get(addr); got != "200 OK" {
			t.Fatalf("another address while the flooder holds its share: %s", got)
		}
	})
	t.Run("a shared address is not bounded", func(t *testing.T) {
		shared := lim
		shared.SharedClient = func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.2") }
		addr := startLimited(t, ok, shared)
		answers := flood(t, addr, 8)
		for i, a := range answers {
			if !strings.HasPrefix(a, "200 ") {
				t.Fatalf("connection %d of a trusted proxy: %q, want 200", i+1, a)
			}
		}
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
