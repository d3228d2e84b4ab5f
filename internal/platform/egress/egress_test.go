package egress_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// resolver answers from a map, so no DNS leaves the test.
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// setup starts an allowed site, a canary that must never be reached, and
// the proxy under a policy that allows only the site's address:port.
func setup(t *testing.T) (proxyAddr string, site, canary *httptest.Server, canaryHits *int, p *egress.Proxy) {
	t.Helper()
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site %s %s host=%s xff=%q", r.Method, r.URL.Path, r.Host, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(site.Close)
	hits := 0
	canary = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		fmt.Fprint(w, "canary")
	}))
	t.Cleanup(canary.Close)
	policy, err := fetch.ParsePolicy(site.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.Reserve(context.Background(), "quarry's egress proxy", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	res := resolver{
		"site.test":     {netip.MustParseAddr("127.0.0.1")},
		"rebind.test":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"canary.test":   {netip.MustParseAddr("127.0.0.1")},
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	}
	p, err = egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: policy, Resolver: res, Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return ln.Addr().String(), site, canary, &hits, p
}

// raw sends one request head (and optional bytes) on a new connection to
// the proxy and returns the status line, headers and what follows.
func raw(t *testing.T, proxy, head string) (status int, rest string, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(head, "CONNECT") {
		b, _ := io.ReadAll(res.Body)
		rest = string(b)
	}
	return res.StatusCode, rest, c, br
}

func TestProxyAppliesThePolicy(t *testing.T) {
	proxy, site, canary, hits, p := setup(t)
	siteAddr := site.Listener.Addr().String()
	canaryAddr := canary.Listener.Addr().String()
	sitePort := site.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name   string
		head   string
		status int
		body   string // substring
	}{
		{"forward to the allowed host:port", "GET http://" + siteAddr + "/a HTTP/1.1\r\nHost: " + siteAddr + "\r\n\r\n", 200, "site GET /a"},
		{"forward adds no X-Forwarded-For", "GET http://" + siteAddr + "/b HTTP/1.1\r\nHost: " + siteAddr + "\r\n\r\n", 200, `xff=""`},
		{"forward by a name resolving to the allowed address", fmt.Sprintf("GET http://site.test:%d/c HTTP/1.1\r\nHost: site.test:%d\r\n\r\n", sitePort, sitePort), 200, "site GET /c"},
		{"forward to a loopback canary", "GET http://" + canaryAddr + "/ HTTP/1.1\r\nHost: " + canaryAddr + "\r\n\r\n", 403, "--allow-networks"},
		{"forward with the Host header of the allowed site to the canary", "GET http://" + canaryAddr + "/ HTTP/1.1\r\nHost: " + siteAddr + "\r\n\r\n", 403, "loopback"},
		{"forward to a name rebinding to loopback", "GET http://rebind.test/ HTTP/1.1\r\nHost: rebind.test\r\n\r\n", 403, "rebind.test resolves to it"},
		{"forward to cloud metadata", "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\nHost: metadata.test\r\n\r\n", 403, "link-local"},
		{"forward to the proxy itself", "GET http://" + proxy + "/ HTTP/1.1\r\nHost: " + proxy + "\r\n\r\n", 403, "egress proxy"},
		{"origin-form request to the proxy", "GET / HTTP/1.1\r\nHost: " + proxy + "\r\n\r\n", 400, "egress"},
		{"absolute https request", "GET https://" + siteAddr + "/ HTTP/1.1\r\nHost: " + siteAddr + "\r\n\r\n", 400, ""},
		{"CONNECT to the canary", "CONNECT " + canaryAddr + " HTTP/1.1\r\nHost: " + canaryAddr + "\r\n\r\n", 403, "--allow-networks=" + canaryAddr},
		{"CONNECT to the canary by name", "CONNECT canary.test:" + strings.Split(canaryAddr, ":")[1] + " HTTP/1.1\r\nHost: x\r\n\r\n", 403, "canary.test resolves to it"},
		{"CONNECT to the canary's port on ::1", "CONNECT [::1]:" + strings.Split(canaryAddr, ":")[1] + " HTTP/1.1\r\nHost: x\r\n\r\n", 403, "loopback"},
		{"CONNECT to 0.0.0.0", "CONNECT 0.0.0.0:" + strings.Split(canaryAddr, ":")[1] + " HTTP/1.1\r\nHost: x\r\n\r\n", 403, "unspecified"},
		{"CONNECT to the proxy itself", "CONNECT " + proxy + " HTTP/1.1\r\nHost: x\r\n\r\n", 403, "egress proxy"},
		{"CONNECT without a port", "CONNECT site.test HTTP/1.1\r\nHost: x\r\n\r\n", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _, _ := raw(t, proxy, tc.head)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("status %d body %q, want %d containing %q", status, body, tc.status, tc.body)
			}
		})
	}
	if *hits != 0 {
		t.Errorf("the canary was reached %d times", *hits)
	}
	if s := p.Stats(); s.Refused < 9 || s.Requests < 3 {
		t.Errorf("stats %+v: want the refusals and forwards counted", s)
	}
}

func TestConnectTunnel(t *testing.T) {
	proxy, site, _, _, p := setup(t)
	siteAddr := site.Listener.Addr().String()
	status, _, c, br := raw(t, proxy, "CONNECT "+siteAddr+" HTTP/1.1\r\nHost: "+siteAddr+"\r\n\r\n")
	if status != 200 {
		t.Fatalf("CONNECT to the allowed site: %d", status)
	}
	// Two requests through the tunnel, the second pipelined behind the first.
	if _, err := io.WriteString(c, "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"site GET /one", "site GET /two"} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("through the tunnel: %q, want %q", b, want)
		}
	}
	if s := p.Stats(); s.Tunnels != 1 || s.Bytes == 0 {
		t.Errorf("stats %+v: want one tunnel and its bytes", s)
	}
	// Close ends open tunnels.
	status, _, c2, _ := raw(t, proxy, "CONNECT "+siteAddr+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != 200 {
		t.Fatal(status)
	}
	p.Close()
	_ = c2.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := c2.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("tunnel still open after Close: %v", err)
	}
}
