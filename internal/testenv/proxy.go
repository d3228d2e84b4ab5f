package testenv

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// UpstreamProxy is an HTTP proxy on loopback standing for a tenant's own:
// it serves CONNECT (a tunnel) and absolute-form requests (forwarded with
// header X-Via set to its via), and records each request it saw.
type UpstreamProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

// NewUpstreamProxy starts an UpstreamProxy, closed at the test's end.
func NewUpstreamProxy(t testing.TB, via string) *UpstreamProxy {
	t.Helper()
	p := &UpstreamProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Host
		if r.Method != http.MethodConnect {
			target = r.URL.String()
		}
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+target+" auth="+r.Header.Get("Proxy-Authorization"))
		p.mu.Unlock()
		if r.Method == http.MethodConnect {
			up, err := net.Dial("tcp", r.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			down, brw, _ := http.NewResponseController(w).Hijack()
			_, _ = io.WriteString(down, "HTTP/1.1 200 OK\r\n\r\n")
			go func() { _, _ = io.Copy(up, brw); up.Close() }()
			_, _ = io.Copy(down, up)
			down.Close()
			return
		}
		out, _ := http.NewRequest(r.Method, r.URL.String(), nil)
		out.Host = r.Host
		out.Header.Set("X-Via", via)
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

// Seen returns the requests the proxy saw, one "<method> <target>
// auth=<Proxy-Authorization>" each, in order.
func (p *UpstreamProxy) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// SeenText is Seen, a line each.
func (p *UpstreamProxy) SeenText() string { return strings.Join(p.Seen(), "\n") }
