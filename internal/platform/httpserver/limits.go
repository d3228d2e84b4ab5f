package httpserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
			// test recorder): serve it without the bound.
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

// limitListener caps the connections open at once, in two pools: ordinary
// connections (max), and those a handler has taken over, WebSockets
// (maxUpgraded). An ordinary connection over the cap is answered 503 and
// closed at once, so that neither it nor the connections queued behind it
// wait in the kernel's backlog. A connection enters as ordinary; when its
// handler hijacks it, it gives its ordinary slot back for an upgraded one,
// so that however many WebSockets are held, REST requests keep their
// capacity, and the process its file descriptors (max + maxUpgraded at
// most). An upgrade request takes its upgraded slot before its handler
// runs (see gate): one over the cap is answered 503 without an upgrade.
type limitListener struct {
	net.Listener
	max, maxUpgraded int64
	open, upgraded   atomic.Int64
	busy             []byte
	busyAnswer       *BusyAnswer
	log              *slog.Logger
	warned           atomic.Int64 // unix seconds of the last warning

	// perClient caps one client address's ordinary connections (0: no
	// cap); shared exempts addresses many clients share.
	perClient int64
	shared    func(netip.Addr) bool
	clientsMu sync.Mutex
	clients   map[netip.Addr]int64 // ordinary connections per address
}

func newLimitListener(ln net.Listener, max, maxUpgraded int, busy *BusyAnswer, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), maxUpgraded: int64(maxUpgraded), busy: busy.bytes(), busyAnswer: busy, log: log}
}

// Accept returns the next connection under the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refuse(c, l.busy, "too many connections")
			continue
		}
		lc := &limitConn{Conn: c, l: l, ordinary: true}
		if !l.takeClient(lc) {
			l.open.Add(-1)
			l.refuse(c, tooManyFromClient, "too many connections from one address")
			continue
		}
		return lc, nil
	}
}

// takeClient counts c against its address's share of the ordinary pool;
// false when the address already holds perClient connections.
func (l *limitListener) takeClient(c *limitConn) bool {
	if l.perClient <= 0 {
		return true
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return true
	}
	a := ap.Addr().Unmap()
	if l.shared != nil && l.shared(a) {
		return true
	}
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	if l.clients[a] >= l.perClient {
		return false
	}
	if l.clients == nil {
		l.clients = map[netip.Addr]int64{}
	}
	l.clients[a]++
	c.client, c.counted = a, true
	return true
}

// releaseClient gives back c's count in its address's share.
func (l *limitListener) releaseClient(c *limitConn) {
	if !c.counted {
		return
	}
	c.counted = false
	l.clientsMu.Lock()
	defer l.clientsMu.Unlock()
	if l.clients[c.client]--; l.clients[c.client] <= 0 {
		delete(l.clients, c.client)
	}
}

// takeUpgraded takes a slot of the upgraded pool; false when all are taken.
func (l *limitListener) takeUpgraded() bool {
	if l.upgraded.Add(1) <= l.maxUpgraded {
		return true
	}
	l.upgraded.Add(-1)
	return false
}

// gate serves h, but first takes an upgraded slot for a request asking
// to upgrade its connection (or a CONNECT): the handler may hijack it.
// Over the cap it answers 503 with the busy answer instead. The slot goes
// back when h returns without hijacking.
func (l *limitListener) gate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*limitConn)
		if c == nil || (r.Header.Get("Upgrade") == "" && r.Method != http.MethodConnect) {
			h.ServeHTTP(w, r)
			return
		}
		if !c.reserveUpgraded() {
			if now := time.Now().Unix(); l.warned.Swap(now) != now {
				l.log.Warn("upgrade refused: too many upgraded connections", "max_upgraded", l.maxUpgraded, "remote", r.RemoteAddr)
			}
			for k, v := range l.busyAnswer.Header {
				w.Header()[http.CanonicalHeaderKey(k)] = v
			}
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(l.busyAnswer.Body)
			return
		}
		defer c.endRequest()
		h.ServeHTTP(w, r)
	})
}

// connKey keys the request context's *limitConn.
type connKey struct{}

// withConn is the http.Server's ConnContext: it gives gate the connection.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connState is the http.Server's ConnState: a hijacked connection moves to
// the upgraded pool (net/http reports it from within Hijack, before the
// handler gets the connection).
func connState(c net.Conn, s http.ConnState) {
	if lc, ok := c.(*limitConn); ok && s == http.StateHijacked {
		lc.hijacked()
	}
}

// refuse writes the answer ans on c and closes it, without blocking
// Accept; why names the refusal in the (rate-limited) warning.
func (l *limitListener) refuse(c net.Conn, ans []byte, why string) {
	if now := time.Now().Unix(); l.warned.Swap(now) != now {
		l.log.Warn("connection refused: "+why, "max", l.max, "max_per_client", l.perClient, "remote", c.RemoteAddr().String())
	}
	go func() {
		// The answer follows the request's head, so that it reads as the
		// response to that request: Go's http.Transport (aws-sdk-go-v2's)
		// drops a response that arrives before its request is written as
		// unsolicited, and fails the request without its status or body.
		c.SetReadDeadline(time.Now().Add(time.Second))
		readHead(c, 64<<10)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(ans)
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

// limitConn holds a slot of its listener's ordinary pool until hijacked,
// then one of its upgraded pool, and gives back what it holds when closed.
type limitConn struct {
	net.Conn
	l        *limitListener
	mu       sync.Mutex
	ordinary bool // holds an ordinary slot
	upgraded bool // holds an upgraded slot (reserved by gate, or hijacked)
	taken    bool // hijacked: the upgraded slot stays until Close
	closed   bool
	// client is the address the connection counts against while ordinary
	// (counted).
	client  netip.Addr
	counted bool
}

// reserveUpgraded takes an upgraded slot for the request being served,
// which may hijack the connection; false when the pool is full.
func (c *limitConn) reserveUpgraded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.upgraded || c.closed {
		return !c.closed
	}
	c.upgraded = c.l.takeUpgraded()
	return c.upgraded
}

// endRequest gives back the slot reserveUpgraded took when the request
// ended without hijacking the connection.
func (c *limitConn) endRequest() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.upgraded && !c.taken && !c.closed {
		c.upgraded = false
		c.l.upgraded.Add(-1)
	}
}

// hijacked moves the connection to the upgraded pool: it keeps the slot
// reserved for it (or takes one: a handler may hijack without an Upgrade
// header) and gives its ordinary slot back. With the upgraded pool full
// it stays ordinary.
func (c *limitConn) hijacked() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken || c.closed {
		return
	}
	if !c.upgraded {
		if !c.l.takeUpgraded() {
			return
		}
		c.upgraded = true
	}
	c.taken = true
	if c.ordinary {
		c.ordinary = false
		c.l.open.Add(-1)
		c.l.releaseClient(c)
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		if c.ordinary {
			c.l.open.Add(-1)
			c.l.releaseClient(c)
		}
		if c.upgraded {
			c.l.upgraded.Add(-1)
		}
	}
	return err
}

// WriteDeadline bounds how long h's responses may take to reach a client
// that reads them slowly or not at all: d from the response's first byte,
// plus one second per MinBodyRate bytes written. A client that falls behind
// is cut off (the handler's writes fail and the connection is closed), so
// that a client which stops reading cannot hold a handler and a connection
// for ever. WebSocket upgrades and CONNECT tunnels are long-lived streams
// whose own protocols watch them: they are served without a deadline
// (net/http clears a connection's deadlines when a handler hijacks it and
// after each request).
func WriteDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if rc.SetWriteDeadline(time.Time{}) != nil {
			h.ServeHTTP(w, r) // a writer without deadlines (a test recorder)
			return
		}
		if r.Method == http.MethodConnect || r.Header.Get("Upgrade") != "" {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, grace: d}, r)
	})
}

// deadlineWriter moves the connection's write deadline as its response is
// written.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	grace    time.Duration
	start    time.Time // the first byte (or header); zero before
	written  int64
	extended time.Time
}

// arm notes the response's start, at its first header or byte.
func (d *deadlineWriter) arm() {
	if d.start.IsZero() {
		d.start = time.Now()
		d.extend(0)
	}
}

// extend sets the deadline for the bytes written so far and the next
// pending ones.
func (d *deadlineWriter) extend(pending int) {
	d.extended = time.Now()
	allowed := d.grace + time.Duration(d.written+int64(pending))*time.Second/MinBodyRate
	d.rc.SetWriteDeadline(d.start.Add(allowed))
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.arm()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.arm()
	// A large write may block for as long as the client takes to read it:
	// its bytes count before it starts. Small writes move the deadline at
	// most every 100 ms (a quarter of the grace when shorter).
	if len(p) >= 16<<10 || time.Since(d.extended) > min(100*time.Millisecond, d.grace/4) {
		d.extend(len(p))
	}
	n, err := d.ResponseWriter.Write(p)
	d.written += int64(n)
	return n, err
}

// Flush sends what is buffered (http.Flusher).
func (d *deadlineWriter) Flush() {
	d.arm()
	d.rc.Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
