package httpserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// upgradeHandler takes over /ws connections (101, then echoes what the
// client sends until it goes away), answers /refuse 429 without taking
// the connection, and anything else "ok".
var upgradeHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ws":
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		io.Copy(c, rw)
	case "/refuse":
		http.Error(w, "no", http.StatusTooManyRequests)
	default:
		io.WriteString(w, "ok")
	}
})

// rawRequest sends one request on a new connection and returns the
// connection (left open) and the answer's status and body (none for 101).
func rawRequest(t *testing.T, addr, path string, upgrade bool) (net.Conn, int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
	if upgrade {
		req += "Connection: Upgrade\r\nUpgrade: test\r\n"
	}
	io.WriteString(c, req+"\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c.SetReadDeadline(time.Time{})
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return c, resp.StatusCode, ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(max(resp.ContentLength, 0))))
	return c, resp.StatusCode, string(b)
}

// TestUpgradedLeaveOrdinaryPool holds more upgraded connections than
// MaxConns: ordinary requests keep every one of their slots, and the
// upgraded connections have their own cap, answered 503 before the
// handler runs.
func TestUpgradedLeaveOrdinaryPool(t *testing.T) {
	addr := startLimited(t, upgradeHandler, Limits{MaxConns: 3, MaxUpgradedConns: 5})
	var ws []net.Conn
	for i := range 5 {
		c, code, body := rawRequest(t, addr, "/ws", true)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade %d: %d %q, want 101", i+1, code, body)
		}
		ws = append(ws, c)
	}
	// The upgraded connections still work.
	io.WriteString(ws[4], "ping")
	buf := make([]byte, 4)
	ws[4].SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadFull(ws[4], buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo on an upgraded connection: %q %v", buf, err)
	}
	// Every ordinary slot is free: three keep-alive connections at once.
	for i := range 3 {
		if _, code, body := rawRequest(t, addr, "/", false); code != 200 || body != "ok" {
			t.Fatalf("ordinary request %d with 5 upgraded held: %d %q, want 200 ok", i+1, code, body)
		}
	}
	// The ordinary cap still holds.
	if _, code, body := rawRequest(t, addr, "/", false); code != 503 || body != `{"error":"busy"}` {
		t.Fatalf("4th ordinary connection: %d %q, want 503 busy", code, body)
	}
}

// TestUpgradedCap fills the upgraded pool: one more upgrade is answered
// 503 with the busy answer before its handler runs, and not taken; an
// upgrade request its handler refuses gives its slot back; a closed
// upgraded connection frees its slot.
func TestUpgradedCap(t *testing.T) {
	addr := startLimited(t, upgradeHandler, Limits{MaxConns: 4, MaxUpgradedConns: 2})
	var ws []net.Conn
	for i := range 2 {
		c, code, _ := rawRequest(t, addr, "/ws", true)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade %d: %d, want 101", i+1, code)
		}
		ws = append(ws, c)
	}
	// Each refused connection is closed at once: kept alive, it would hold
	// one of the 4 ordinary slots.
	c, code, body := rawRequest(t, addr, "/ws", true)
	c.Close()
	if code != 503 || body != `{"error":"busy"}` {
		t.Fatalf("upgrade over the cap: %d %q, want 503 busy", code, body)
	}
	ws[0].Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		c, code, _ := rawRequest(t, addr, "/ws", true)
		if code == http.StatusSwitchingProtocols {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("upgrade after one was closed: %d, want 101", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ws[1].Close()
	time.Sleep(100 * time.Millisecond)
	// Refused upgrades (one slot left) do not keep it.
	for i := range 3 {
		// Kept open: a reservation a refused upgrade kept would last.
		if _, code, _ := rawRequest(t, addr, "/refuse", true); code != http.StatusTooManyRequests {
			t.Fatalf("refused upgrade %d: %d, want the handler's 429", i+1, code)
		}
	}
}

// TestUpgradeHeadTimeout: a connection that never completes the head of
// its upgrade request is cut at ReadHeaderTimeout and gives its ordinary
// slot back.
func TestUpgradeHeadTimeout(t *testing.T) {
	addr := startLimited(t, upgradeHandler, Limits{ReadHeaderTimeout: 300 * time.Millisecond, MaxConns: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n")
		held = append(held, c)
	}
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("incomplete upgrade head %d: still open after 3s", i+1)
		}
	}
	if _, code, body := rawRequest(t, addr, "/", false); code != 200 || body != "ok" {
		t.Fatalf("after the incomplete heads were cut: %d %q, want 200 ok", code, body)
	}
}
