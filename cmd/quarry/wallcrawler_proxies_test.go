package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/testenv"
)

// TestWallcrawlerProxies creates a session whose egress goes through a
// tenant's own proxy for the hosts of its domainPattern: the proxy sees
// the session's plain-http requests and https tunnels with
// Proxy-Authorization, a host the pattern misses goes direct, and the
// credentials appear nowhere quarry shows or logs (GET session, the list,
// /logs, the server's log). proxies: true is a 400 naming what is
// supported; an upstream the network policy does not allow is refused.
func TestWallcrawlerProxies(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<title>site</title>path=%s via=%s", r.URL.Path, r.Header.Get("X-Via"))
	}))
	defer site.Close()
	tlsSite := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls") }))
	defer tlsSite.Close()
	up := testenv.NewUpstreamProxy(t, "tenant-proxy")
	refused := newHitCounter(t, "127.0.0.1:0")
	siteAddr, tlsAddr := site.Listener.Addr().String(), tlsSite.Listener.Addr().String()
	_, sitePort, _ := net.SplitHostPort(siteAddr)
	s := startWallcrawlerServer(t, "--allow-networks", siteAddr+","+tlsAddr+","+up.Listener.Addr().String())
	s.cli("wallcrawler", "project", "create", "--name", "p", "--id", "project_px", "--concurrency", "3")
	key := s.cli("wallcrawler", "key", "create", "--project", "project_px")

	var bad struct {
		StatusCode int
		Message    string
	}
	if code := s.call(key, "POST", "/v1/sessions", map[string]any{"proxies": true}, &bad); code != http.StatusBadRequest ||
		!strings.Contains(bad.Message, `"type":"external"`) || !strings.Contains(bad.Message, "no built-in proxies") {
		t.Fatalf("proxies: true → %d %+v", code, bad)
	}
	if code := s.call(key, "POST", "/v1/sessions", map[string]any{"proxies": []any{map[string]any{"type": "browserbase"}}}, &bad); code != http.StatusBadRequest {
		t.Fatalf("type browserbase → %d %+v", code, bad)
	}
	if code := s.call(key, "POST", "/v1/sessions", map[string]any{"proxies": []any{map[string]any{"type": "external", "server": "socks5://" + up.Listener.Addr().String()}}}, &bad); code != http.StatusBadRequest || !strings.Contains(bad.Message, "only http://") {
		t.Fatalf("socks5 → %d %+v", code, bad)
	}

	password := "pw-" + fmt.Sprint(time.Now().UnixNano())
	x := s.createSessionWith(key, map[string]any{"proxies": []any{map[string]any{
		"type": "external", "server": "http://" + up.Listener.Addr().String(),
		"username": "tenant", "password": password, "domainPattern": `127\.0\.0\.1`,
	}}})
	c := dialCDP(t, x.ConnectURL)
	page, _ := c.attachPage()
	if got := c.navigate(page, "http://"+siteAddr+"/through"); !strings.Contains(got, "path=/through via=tenant-proxy") {
		t.Fatalf("through the tenant's proxy: %q", got)
	}
	c.navigate(page, "https://"+tlsAddr+"/") // a certificate error page: the tunnel is what counts
	if got := c.navigate(page, "http://localhost:"+sitePort+"/direct"); !strings.Contains(got, "path=/direct via=") || strings.Contains(got, "tenant-proxy") {
		t.Fatalf("pattern miss: %q", got)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("tenant:"+password))
	seen := up.SeenText()
	for _, want := range []string{"GET http://" + siteAddr + "/through auth=" + auth, "CONNECT " + tlsAddr + " auth=" + auth} {
		if !strings.Contains(seen, want) {
			t.Errorf("the tenant's proxy did not see %q; it saw:\n%s", want, seen)
		}
	}
	if strings.Contains(seen, "localhost") || strings.Contains(seen, "/direct") {
		t.Errorf("the pattern's miss reached the tenant's proxy:\n%s", seen)
	}

	// An upstream the policy does not allow: refused, never reached.
	y := s.createSessionWith(key, map[string]any{"proxies": []any{map[string]any{"type": "external", "server": refused.Listener.Addr().String()}}})
	cy := dialCDP(t, y.ConnectURL)
	pagey, _ := cy.attachPage()
	if got := cy.navigate(pagey, "http://"+siteAddr+"/refused"); strings.Contains(got, "path=/refused") {
		t.Fatalf("through a refused upstream: %q", got)
	}
	if n := refused.hits.Load(); n != 0 {
		t.Fatalf("the refused upstream was reached %d times", n)
	}

	// The credentials are shown and logged nowhere.
	for _, path := range []string{"/v1/sessions/" + x.ID, "/v1/sessions", "/v1/sessions/" + x.ID + "/logs"} {
		req, _ := http.NewRequest("GET", "http://"+s.api+"/wallcrawler"+path, nil)
		req.Header.Set("X-BB-API-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || strings.Contains(string(body), password) || strings.Contains(string(body), auth[6:]) {
			t.Errorf("GET %s: %d, shows the proxy's credentials: %s", path, res.StatusCode, body)
		}
	}
	var ended struct{ ProxyBytes int64 }
	if code := s.call(key, "POST", "/v1/sessions/"+x.ID, map[string]any{"status": "REQUEST_RELEASE"}, &ended); code != 200 || ended.ProxyBytes <= 0 {
		t.Errorf("release: %d proxyBytes %d", code, ended.ProxyBytes)
	}
	if logs := s.logs.String(); strings.Contains(logs, password) || strings.Contains(logs, auth[6:]) {
		t.Errorf("the server's log holds the proxy's credentials")
	}
}
