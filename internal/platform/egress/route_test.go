package egress_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/testenv"
)

// TestRoute sends one listener's connections through a tenant's upstream
// proxy by host pattern: CONNECT and plain http reach the upstream with
// Proxy-Authorization, a host the pattern misses goes straight out, an
// upstream the policy does not allow is refused (the address is checked
// as any destination), and the bytes through the upstream are counted.
func TestRoute(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site %s via=%q", r.URL.Path, r.Header.Get("X-Via"))
	}))
	defer site.Close()
	up := testenv.NewUpstreamProxy(t, "upstream")
	canaryHits := 0
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { canaryHits++ }))
	defer canary.Close()
	siteAddr := site.Listener.Addr().String()
	_, sitePort, _ := net.SplitHostPort(siteAddr)
	policy, err := fetch.ParsePolicy(siteAddr + "," + up.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	res := resolver{"direct.test": {netip.MustParseAddr("127.0.0.1")}}
	p, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: policy, Resolver: res, Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	route := &egress.Route{}
	go p.ServeRoute(ln, route)
	proxyURL, _ := url.Parse("http://" + ln.Addr().String())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tunnel := func(target string) (int, string) {
		t.Helper()
		code, _, c, br := raw(t, ln.Addr().String(), "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		if code != http.StatusOK {
			return code, ""
		}
		fmt.Fprintf(c, "GET /tunnelled HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
		b, _ := io.ReadAll(br)
		return code, string(b)
	}

	// No upstreams: straight out.
	if code, body := get("http://" + siteAddr + "/a"); code != 200 || body != `site /a via=""` {
		t.Fatalf("direct: %d %q", code, body)
	}
	if route.TakeBytes() != 0 {
		t.Fatal("direct bytes counted as the upstream's")
	}

	const user, pass = "tenant", "s3cret"
	auth := "Basic dGVuYW50OnMzY3JldA=="
	route.Set([]egress.Upstream{
		{Pattern: regexp.MustCompile(`^127\.0\.0\.1$`), Server: up.Listener.Addr().String(), Username: user, Password: pass},
	})
	if code, body := get("http://" + siteAddr + "/b"); code != 200 || body != `site /b via="upstream"` {
		t.Fatalf("http through the upstream: %d %q", code, body)
	}
	if code, body := tunnel(siteAddr); code != 200 || !strings.Contains(body, "site /tunnelled") {
		t.Fatalf("CONNECT through the upstream: %d %q", code, body)
	}
	// The pattern misses direct.test: straight out, the upstream never sees it.
	if code, body := get("http://direct.test:" + sitePort + "/c"); code != 200 || body != `site /c via=""` {
		t.Fatalf("pattern miss: %d %q", code, body)
	}
	if code, body := tunnel("direct.test:" + sitePort); code != 200 || !strings.Contains(body, "site /tunnelled") {
		t.Fatalf("CONNECT pattern miss: %d %q", code, body)
	}
	want := []string{
		"GET http://" + siteAddr + "/b auth=" + auth,
		"CONNECT " + siteAddr + " auth=" + auth,
	}
	if got := up.Seen(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("upstream saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := route.TakeBytes(); n <= 0 {
		t.Fatalf("bytes through the upstream: %d", n)
	}

	// An upstream on an address the policy does not allow is refused, for
	// CONNECT and plain http, and never reached.
	route.Set([]egress.Upstream{{Server: canary.Listener.Addr().String(), Username: user, Password: pass}})
	if code, body := get("http://" + siteAddr + "/d"); code != http.StatusForbidden || !strings.Contains(body, "upstream proxy "+canary.Listener.Addr().String()) || strings.Contains(body, pass) {
		t.Fatalf("http through a refused upstream: %d %q", code, body)
	}
	if code, _ := tunnel(siteAddr); code != http.StatusForbidden {
		t.Fatalf("CONNECT through a refused upstream: %d", code)
	}
	if canaryHits != 0 {
		t.Fatalf("the refused upstream was reached %d times", canaryHits)
	}

	// A "none" entry sends its hosts straight out before a catch-all.
	route.Set([]egress.Upstream{
		{Pattern: regexp.MustCompile(`^direct\.test$`), Direct: true},
		{Server: up.Listener.Addr().String()},
	})
	if code, body := get("http://direct.test:" + sitePort + "/e"); code != 200 || body != `site /e via=""` {
		t.Fatalf("direct entry: %d %q", code, body)
	}
	if code, body := get("http://" + siteAddr + "/f"); code != 200 || body != `site /f via="upstream"` {
		t.Fatalf("catch-all: %d %q", code, body)
	}
}
