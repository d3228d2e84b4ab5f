package httpserver

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startLimited serves h on a loopback port with lim and returns its address.
func startLimited(t *testing.T, h http.Handler, lim Limits) string {
	t.Helper()
	s := &Server{Name: "test", Addr: "127.0.0.1:0", Handler: h, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Limits: lim,
		Busy: &BusyAnswer{Header: http.Header{"content-type": {"application/x-busy"}, "X-Check": {"123"}}, Body: []byte(`{"error":"busy"}`)}}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s.BoundAddr()
}

func TestLimits(t *testing.T) {
	lim := Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConns: 3}
	slowHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		time.Sleep(2 * lim.ReadTimeout) // longer than the body's deadline
		if err := r.Context().Err(); err != nil {
			http.Error(w, "context "+err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "done")
	})
	for _, tc := range []struct {
		name string
		send string        // written on the connection, then the client stalls
		cut  bool          // the server must close the connection
		want string        // the answer must contain this ("" none)
		wait time.Duration // how long to wait for the close
	}{
		{name: "slow headers", send: "POST / HTTP/1.1\r\nHost: x\r\n", cut: true, wait: 3 * time.Second},
		{name: "announced body never sent", send: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n{", cut: true, wait: 3 * time.Second},
		{name: "idle keep-alive", send: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", cut: true, want: "done", wait: 3 * time.Second},
		{name: "handler outlives the body's deadline", send: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", cut: true, want: "200 OK", wait: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startLimited(t, slowHandler, lim)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, tc.send)
			conn.SetReadDeadline(time.Now().Add(tc.wait))
			got, err := io.ReadAll(conn)
			timedOut := false
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				timedOut = true
			}
			if tc.cut && timedOut {
				t.Errorf("connection still open after %v", tc.wait)
			}
			if tc.want != "" && !strings.Contains(string(got), tc.want) {
				t.Errorf("answer %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// TestLimitsBodyAtRate checks a body sent steadily (faster than
// MinBodyRate) may take longer than ReadTimeout.
func TestLimitsBodyAtRate(t *testing.T) {
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, "read "+strconv.FormatInt(n, 10))
	}), Limits{ReadTimeout: 300 * time.Millisecond})
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, 32<<10)
		for range 8 * 4 { // 1 MiB in 32 KiB chunks, 25 ms apart: 1.3 MiB/s, 0.8 s in all
			if _, err := pw.Write(chunk); err != nil {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", "http://"+addr+"/", pr)
	req.ContentLength = 1 << 20
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "read 1048576" {
		t.Errorf("got %d %q, want the whole body read", resp.StatusCode, b)
	}
}

// TestMaxConns fills the cap with idle connections: the next one is
// answered 503 with the busy answer (its headers included), and one more is served once a slot is
// free again.
func TestMaxConns(t *testing.T) {
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), Limits{MaxConns: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	var header http.Header
	get := func() (int, string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, "", err
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		header = resp.Header.Clone()
		if resp.Close { // ReadResponse takes Connection: close out of the header
			header.Set("Connection", "close")
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	code, body, err := get()
	if err != nil || code != 503 || body != `{"error":"busy"}` {
		t.Fatalf("over the cap: %d %q %v, want 503 with the busy body", code, body, err)
	}
	for k, want := range map[string]string{"Content-Type": "application/x-busy", "X-Check": "123", "Content-Length": "16", "Retry-After": "1", "Connection": "close"} {
		if got := header.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("busy answer's %s = %q, want %q", k, got, want)
		}
	}
	held[0].Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		code, body, err = get()
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 200 || body != "ok" {
		t.Errorf("after a slot was freed: %d %q %v, want 200 ok", code, body, err)
	}
}
