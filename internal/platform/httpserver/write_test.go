package httpserver

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bigHandler writes size bytes in 64 KiB chunks and reports the first write
// error (nil when the whole response was written) on done.
func bigHandler(size int, done chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	})
}

// A client that sends a request and never reads the answer must not hold
// the handler: its writes fail once the response falls behind. (Over TCP
// the bytes the kernel's buffers take count as sent, which adds up to a
// minute per 4 MiB buffered: the pipe here has no buffer.)
func TestWriteTimeoutCutsOffNonReader(t *testing.T) {
	done := make(chan error, 1)
	ln := newPipeListener()
	srv := &http.Server{Handler: WriteDeadline(bigHandler(256<<20, done), 300*time.Millisecond)}
	go srv.Serve(ln)
	defer srv.Close()
	c := ln.dial()
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	// The bound: 300 ms plus 1 s for the first 64 KiB write.
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("handler's write: %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a client that does not read held the handler for 30 s")
	}
}

// pipeListener hands out the server ends of in-memory pipes: no kernel
// buffer sits between the handler's writes and the client's reads, so a
// write completes only as the client reads.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// A client that reads steadily, faster than MinBodyRate, gets the whole
// response even when it takes many times WriteTimeout: the deadline moves
// with what was written.
func TestWriteTimeoutSparesSteadyReader(t *testing.T) {
	const size, timeout = 256 << 10, 100 * time.Millisecond
	done := make(chan error, 1)
	ln := newPipeListener()
	srv := &http.Server{Handler: WriteDeadline(bigHandler(size, done), timeout)}
	go srv.Serve(ln)
	defer srv.Close()
	c := ln.dial()
	defer c.Close()
	go io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 256 KiB at 4 × MinBodyRate: about 1 s, 10 times WriteTimeout.
	var got int64
	buf := make([]byte, 4<<10)
	start := time.Now()
	for {
		n, err := resp.Body.Read(buf)
		got += int64(n)
		time.Sleep(time.Until(start.Add(time.Second * time.Duration(got) / (4 * MinBodyRate))))
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", got, err)
		}
	}
	if got != size {
		t.Fatalf("read %d bytes, want %d", got, size)
	}
	if err := <-done; err != nil {
		t.Fatalf("handler: %v", err)
	}
}

// An upgraded connection (WebSocket, here a bare echo of the protocol) is a
// long-lived stream: neither WriteTimeout nor the deadline left by an
// earlier response on the same connection cuts it.
func TestWriteTimeoutSparesUpgrades(t *testing.T) {
	const timeout = 200 * time.Millisecond
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			io.WriteString(w, "plain")
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		time.Sleep(3 * timeout) // past any deadline the first response left
		rw.WriteString("late")
		rw.Flush()
	}), Limits{WriteTimeout: timeout})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "plain" {
		t.Fatalf("first response %q", b)
	}
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	late, err := io.ReadAll(br)
	if !strings.Contains(string(late), "late") {
		t.Fatalf("after the upgrade read %q (%v), want the late write", late, err)
	}
}
