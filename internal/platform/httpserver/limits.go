package httpserver

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// BodyDeadline bounds how long h's requests may take to send their bodies:
// d, plus one second per MinBodyRate bytes received. A body that falls
// behind is cut off (its reads fail with a timeout and the connection is
// closed). Once the body is read to its end the deadline is lifted, so a
// long-running handler keeps its connection (net/http watches it for the
// client going away, and a read deadline there would cancel the request's
// context, as http.Server.ReadTimeout does); requests without a body are
// untouched.
func BodyDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), start: time.Now(), grace: d}
		if b.extend() != nil {
			// The connection takes no deadlines (an HTTP/2 stream or a
			// test recorder): serve unbounded, as before.
			h.ServeHTTP(w, r)
			return
		}
		r.Body = b
		// The deadline stays when the handler returns before the body's
		// end: what is left is discarded under it, and the next request
		// on the connection sets its own.
		h.ServeHTTP(w, r)
	})
}

// deadlineBody moves the connection's read deadline as its body arrives.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	received int64
	lifted   bool
	extended time.Time // when the deadline was last moved
}

func (b *deadlineBody) extend() error {
	b.extended = time.Now()
	allowed := b.grace + time.Duration(b.received)*time.Second/MinBodyRate
	return b.rc.SetReadDeadline(b.start.Add(allowed))
}

// lift removes the deadline once the body is done.
func (b *deadlineBody) lift() {
	if !b.lifted {
		b.lifted = true
		b.rc.SetReadDeadline(time.Time{})
	}
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.received += int64(n)
	if err != nil {
		if err == io.EOF {
			b.lift()
		}
		return n, err
	}
	if n > 0 && !b.lifted && time.Since(b.extended) > 100*time.Millisecond {
		b.extend()
	}
	return n, err
}

// limitListener caps the connections open at once: a connection over the
// cap is answered 503 and closed at once, so that neither it nor the
// connections queued behind it wait in the kernel's backlog.
type limitListener struct {
	net.Listener
	max    int64
	open   atomic.Int64
	busy   []byte
	log    *slog.Logger
	warned atomic.Int64 // unix seconds of the last warning
}

func newLimitListener(ln net.Listener, max int, busy *BusyAnswer, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), busy: busy.bytes(), log: log}
}

// Accept returns the next connection under the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

// refuse answers 503 on c and closes it, without blocking Accept.
func (l *limitListener) refuse(c net.Conn) {
	if now := time.Now().Unix(); l.warned.Swap(now) != now {
		l.log.Warn("connection refused: too many connections", "max", l.max, "remote", c.RemoteAddr().String())
	}
	go func() {
		// The answer follows the request's head, so that it reads as the
		// response to that request: Go's http.Transport (aws-sdk-go-v2's)
		// drops a response that arrives before its request is written as
		// unsolicited, and fails the request without its status or body.
		c.SetReadDeadline(time.Now().Add(time.Second))
		readHead(c, 64<<10)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(l.busy)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
			// Drain what the client sent so that closing does not reset
			// the connection before it reads the answer.
			c.SetReadDeadline(time.Now().Add(time.Second))
			io.Copy(io.Discard, io.LimitReader(c, 64<<10))
		}
		c.Close()
	}()
}

// readHead reads from c until the end of an HTTP request's head (a blank
// line), limit bytes, or an error (the read deadline among them).
func readHead(c net.Conn, limit int) {
	buf := make([]byte, 4096)
	var tail []byte // the last bytes read, to find a blank line split across reads
	for n := 0; n < limit; {
		k, err := c.Read(buf)
		n += k
		tail = append(tail, buf[:k]...)
		if bytes.Contains(tail, []byte("\r\n\r\n")) || bytes.Contains(tail, []byte("\n\n")) || err != nil {
			return
		}
		tail = tail[max(0, len(tail)-3):]
	}
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
