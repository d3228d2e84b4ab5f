// Package egress is quarry's egress point: an HTTP forward proxy on
// loopback through which every connection of a Wallcrawler browser leaves
// the host. Chromium is started with it as its only proxy (see
// browser.ChromiumOptions.ProxyServer), so navigations, subresources,
// fetch/XHR, WebSockets and service workers all arrive here, and each
// connection is opened by a fetch.Dialer: the one network policy
// (--allow-networks) decides, on the resolved address, at connect time.
//
// The proxy speaks CONNECT (https, wss, and ws, which Chromium always
// tunnels) and absolute-form HTTP requests (plain http). A refused target
// answers 403 with a plain-text reason that names the flag; a target that
// cannot be reached answers 502.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// Defaults of Options' zero fields.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxConns       = 4096
)

// Options configures a Proxy.
type Options struct {
	// Dialer opens the connections; its Policy decides. Required.
	Dialer *fetch.Dialer
	// Logger receives refusals (info) and failures (debug). Default: discard.
	Logger *slog.Logger
	// MaxConns bounds the client connections served at once; more wait
	// in the listener's backlog. Default 4096.
	MaxConns int
}

// Stats are a Proxy's counters since it started.
type Stats struct {
	// Tunnels is the number of CONNECT tunnels opened.
	Tunnels int64
	// Requests is the number of plain-http requests forwarded.
	Requests int64
	// Refused is the number of connections the policy refused.
	Refused int64
	// Failed is the number of targets that could not be reached.
	Failed int64
	// Bytes is the number of bytes relayed (both directions, tunnels and
	// bodies of forwarded requests' responses).
	Bytes int64
}

// Proxy is the egress point. Serve it on a loopback listener; Close stops
// it and every connection it relays.
type Proxy struct {
	d       *fetch.Dialer
	log     *slog.Logger
	sem     chan struct{}
	forward *httputil.ReverseProxy
	srv     *http.Server

	tunnels, requests, refused, failed, bytes atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // hijacked tunnel ends, closed by Close
	closed bool
}

// New returns a Proxy; it does not listen yet.
func New(o Options) (*Proxy, error) {
	if o.Dialer == nil || o.Dialer.Policy == nil {
		return nil, errors.New("egress: Options.Dialer with a Policy is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	p := &Proxy{d: o.Dialer, log: o.Logger, sem: make(chan struct{}, o.MaxConns), conns: map[net.Conn]struct{}{}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.dial,
		ForceAttemptHTTP2:     false, // plain http only: absolute-form requests are http://
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Forward to the request's own absolute URL; Rewrite (unlike
			// Director) adds no X-Forwarded-* headers.
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport:     tr,
		FlushInterval: -1, // stream (event streams, long polls)
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.refuse(w, r.Host, err)
		},
		ModifyResponse: func(res *http.Response) error {
			res.Body = &countingBody{ReadCloser: res.Body, n: &p.bytes}
			return nil
		},
	}
	p.srv = &http.Server{
		Handler:           p,
		ConnContext:       connContext,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Serve accepts browser connections on l until Close; it returns nil after
// Close.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(&limitListener{Listener: l, sem: p.sem})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the proxy: the listener, forwarded requests and open tunnels.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	return p.srv.Close()
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{Tunnels: p.tunnels.Load(), Requests: p.requests.Load(), Refused: p.refused.Load(), Failed: p.failed.Load(), Bytes: p.bytes.Load()}
}

// ServeHTTP implements http.Handler: CONNECT opens a tunnel, an
// absolute-form http:// request is forwarded, anything else is a 400.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		// An origin-form request is addressed to the proxy itself, and an
		// absolute https:// or other scheme is not how browsers use a proxy.
		http.Error(w, "egress: this is quarry's egress proxy: send absolute http:// requests or CONNECT", http.StatusBadRequest)
		return
	}
	p.requests.Add(1)
	if r.URL.Port() == "" {
		r.URL.Host = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	if route := routeOf(r.Context()); route != nil {
		if u, i := route.match(r.URL.Hostname()); u != nil {
			p.forwardThrough(w, r, route, u, i)
			return
		}
	}
	p.forward.ServeHTTP(w, r)
}

// tunnel serves one CONNECT request.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if _, port, err := net.SplitHostPort(target); err != nil || port == "" {
		http.Error(w, "egress: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	host, _, _ := net.SplitHostPort(target)
	route := routeOf(r.Context())
	u, _ := route.match(host)
	var up net.Conn
	var err error
	if u != nil {
		up, err = p.dialThrough(r.Context(), u, target)
	} else {
		up, err = p.dial(r.Context(), "tcp", target)
	}
	if err != nil {
		p.refuse(w, target, err)
		return
	}
	var counted *atomic.Int64 // the route's count of bytes through its upstream
	if u != nil {
		counted = &route.bytes
	}
	rc := http.NewResponseController(w)
	down, brw, err := rc.Hijack()
	if err != nil {
		_ = up.Close()
		http.Error(w, "egress: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	if !p.track(down, up) {
		return
	}
	defer p.untrack(down, up)
	p.tunnels.Add(1)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent after its CONNECT header (a TLS
		// ClientHello, typically) sit in brw's reader.
		p.relay(up, brw.Reader, counted)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		p.relay(down, up, counted)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

// relay copies src to dst, counting bytes as they pass (also into also,
// when not nil).
func (p *Proxy) relay(dst io.Writer, src io.Reader, also *atomic.Int64) {
	_, _ = io.Copy(countingWriter{dst, &p.bytes, also}, src)
}

// countingWriter counts the bytes written through it into n (and also).
type countingWriter struct {
	io.Writer
	n, also *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	n, err := w.Writer.Write(b)
	w.n.Add(int64(n))
	if w.also != nil {
		w.also.Add(int64(n))
	}
	return n, err
}

// closeWrite half-closes c when it can, so the other direction may finish.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// track registers the two ends of a tunnel so Close can end it; it reports
// false (and closes both) when the proxy is closed already.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = a.Close()
		_ = b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// untrack closes and forgets a tunnel's ends.
func (p *Proxy) untrack(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
}

// dial opens a connection through the policy, bounded by the dialer's
// connect timeout.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.d.DialContext(ctx, network, addr)
}

// refuse answers a failed connection: 403 when the policy refused it, 502
// otherwise.
func (p *Proxy) refuse(w http.ResponseWriter, target string, err error) {
	if errors.Is(err, fetch.ErrBlocked) {
		p.refused.Add(1)
		p.log.Info("egress: refused", "target", target, "reason", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Quarry-Egress", "refused")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "quarry egress refused %s: %v\n", target, err)
		return
	}
	p.failed.Add(1)
	p.log.Debug("egress: target unreachable", "target", target, "err", err)
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "dial") {
		msg = msg[i+2:]
	}
	http.Error(w, "quarry egress could not reach "+target+": "+msg, http.StatusBadGateway)
}

// countingBody counts the bytes read from a forwarded response body into
// n (and also, when not nil).
type countingBody struct {
	io.ReadCloser
	n, also *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	if b.also != nil {
		b.also.Add(int64(n))
	}
	return n, err
}

// limitListener holds at most cap(sem) accepted connections at once.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

// The slot is taken after Accept, so that listeners waiting for a
// connection (one per browser namespace) hold none.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.sem <- struct{}{}
	return &releaseConn{Conn: c, release: func() { <-l.sem }}, nil
}

// releaseConn frees its slot once, when closed.
type releaseConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
