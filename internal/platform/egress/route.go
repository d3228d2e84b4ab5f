package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Upstream is one entry of a Route: hosts matching Pattern leave through
// the HTTP proxy at Server (CONNECT for tunnels, absolute-URI requests for
// plain http), or, when Direct, straight through the policy.
type Upstream struct {
	// Pattern selects the hosts (names or addresses, without port) the
	// entry applies to; nil: every host.
	Pattern *regexp.Regexp
	// Direct sends the matching hosts straight out (Browserbase's
	// proxy type "none").
	Direct bool
	// Server is the upstream proxy's host:port; the policy decides
	// whether quarry may connect to it, as for any destination.
	Server string
	// Username and Password, when Username is set, are sent as
	// Proxy-Authorization: Basic. They are never logged.
	Username, Password string
}

// Route is how the connections of one listener (one browser) leave:
// through the first Upstream whose Pattern matches the target host, or
// straight through the policy when none does. The zero Route sends
// everything straight out. Its upstreams may be set while it is served
// (a browser launched ahead, then given to a session).
type Route struct {
	ups   atomic.Pointer[[]Upstream]
	bytes atomic.Int64 // relayed through upstreams since the last TakeBytes

	mu         sync.Mutex
	transports map[int]*http.Transport // by upstream index, for plain http
}

// Set replaces the route's upstreams (nil: everything goes straight out).
// Connections already open keep their way.
func (r *Route) Set(ups []Upstream) {
	cp := append([]Upstream(nil), ups...)
	r.ups.Store(&cp)
	r.mu.Lock()
	for _, t := range r.transports {
		t.CloseIdleConnections()
	}
	r.transports = nil
	r.mu.Unlock()
}

// TakeBytes returns the bytes relayed through the route's upstream
// proxies (both directions) since the previous call.
func (r *Route) TakeBytes() int64 { return r.bytes.Swap(0) }

// close lets the route's idle upstream connections go.
func (r *Route) close() {
	r.mu.Lock()
	for _, t := range r.transports {
		t.CloseIdleConnections()
	}
	r.transports = nil
	r.mu.Unlock()
}

// match returns the upstream for host and its index, or nil to go
// straight out.
func (r *Route) match(host string) (*Upstream, int) {
	if r == nil {
		return nil, -1
	}
	ups := r.ups.Load()
	if ups == nil {
		return nil, -1
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	for i := range *ups {
		u := &(*ups)[i]
		if u.Pattern != nil && !u.Pattern.MatchString(h) {
			continue
		}
		if u.Direct {
			return nil, -1
		}
		return u, i
	}
	return nil, -1
}

// authorization returns u's Proxy-Authorization value ("" without a
// username).
func (u *Upstream) authorization() string {
	if u.Username == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username+":"+u.Password))
}

// ServeRoute accepts browser connections on l, as Serve does, sending
// them out by r (nil: straight out), until l is closed or the proxy is
// closed.
func (p *Proxy) ServeRoute(l net.Listener, r *Route) error {
	defer func() {
		if r != nil {
			r.close()
		}
	}()
	return p.Serve(&routeListener{Listener: l, route: r})
}

// routeListener tags the connections it accepts with their route.
type routeListener struct {
	net.Listener
	route *Route
}

func (l *routeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &routedConn{Conn: c, route: l.route}, nil
}

// routedConn is a browser connection and its route.
type routedConn struct {
	net.Conn
	route *Route
}

// routeKey is the context key of a request's route.
type routeKey struct{}

// connContext puts the route of a connection in its requests' context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*releaseConn); ok {
		c = rc.Conn
	}
	if rc, ok := c.(*routedConn); ok && rc.route != nil {
		return context.WithValue(ctx, routeKey{}, rc.route)
	}
	return ctx
}

func routeOf(ctx context.Context) *Route {
	r, _ := ctx.Value(routeKey{}).(*Route)
	return r
}

// upstreamError is a failure of an upstream proxy; it names the proxy's
// address, never its credentials.
type upstreamError struct {
	server string
	err    error
}

func (e *upstreamError) Error() string { return "upstream proxy " + e.server + ": " + e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// dialThrough opens a tunnel to target through upstream u: a connection to
// the proxy (through the policy), CONNECT target, a 200. It returns the
// connection, positioned after the proxy's answer.
func (p *Proxy) dialThrough(ctx context.Context, u *Upstream, target string) (net.Conn, error) {
	c, err := p.dial(ctx, "tcp", u.Server)
	if err != nil {
		return nil, &upstreamError{u.Server, err}
	}
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	} else {
		_ = c.SetDeadline(time.Now().Add(DefaultConnectTimeout))
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if a := u.authorization(); a != "" {
		req += "Proxy-Authorization: " + a + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		_ = c.Close()
		return nil, &upstreamError{u.Server, err}
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = c.Close()
		return nil, &upstreamError{u.Server, err}
	}
	if res.StatusCode != http.StatusOK {
		_ = c.Close()
		return nil, &upstreamError{u.Server, fmt.Errorf("CONNECT %s answered %s", target, res.Status)}
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The proxy sent bytes of the tunnel with its answer.
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// bufferedConn reads what its reader buffered before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// forwardThrough forwards an absolute-form http request through upstream
// u (index i of route r): the upstream receives the absolute URI and the
// Proxy-Authorization.
func (p *Proxy) forwardThrough(w http.ResponseWriter, req *http.Request, r *Route, u *Upstream, i int) {
	r.mu.Lock()
	if r.transports == nil {
		r.transports = map[int]*http.Transport{}
	}
	t := r.transports[i]
	if t == nil {
		proxyURL := &url.URL{Scheme: "http", Host: u.Server}
		if u.Username != "" {
			proxyURL.User = url.UserPassword(u.Username, u.Password)
		}
		t = &http.Transport{
			Proxy:                 http.ProxyURL(proxyURL),
			DialContext:           p.dial, // the upstream's address, under the policy
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       60 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}
		r.transports[i] = t
	}
	r.mu.Unlock()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport:     t,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			p.refuse(w, req.Host, &upstreamError{u.Server, err})
		},
		ModifyResponse: func(res *http.Response) error {
			res.Body = &countingBody{ReadCloser: res.Body, n: &p.bytes, also: &r.bytes}
			return nil
		},
	}
	rp.ServeHTTP(w, req)
}
