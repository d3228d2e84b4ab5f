package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// TestDevToolsEndpointsAreReserved runs browsers behind the egress proxy
// under a policy that allows every address, and checks that a page can
// reach neither its own browser's DevTools endpoint nor another browser's
// (either would hand it an unfiltered CDP connection), while another
// loopback server stays reachable, and that a closed browser's port is
// released.
func TestDevToolsEndpointsAreReserved(t *testing.T) {
	c, _ := newTestProvider(t)
	policy := fetch.AllowAllPolicy()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := policy.Reserve(context.Background(), "quarry's egress proxy", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: policy}})
	if err != nil {
		t.Fatal(err)
	}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })
	c.proxyServer, c.listeners = "http://"+ln.Addr().String(), policy

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, "<html><head><title>reachable</title></head><body>reachable</body></html>")
	}))
	t.Cleanup(srv.Close)

	a := launch(t, c, LaunchOptions{})
	b := launch(t, c, LaunchOptions{})
	ctx := browserCtx(t, a)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	fetchText := func(url string) string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then(r => r.status + ' ' + r.headers.get('X-Quarry-Egress') + ' ' + r.statusText).catch(e => 'failed: ' + e)`, url), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate fetch %s: %v", url, err)
		}
		return got
	}
	if got := fetchText(srv.URL + "/"); !strings.HasPrefix(got, "200") {
		t.Fatalf("fetch of a loopback server allowed by the policy: %q", got)
	}
	for name, addr := range map[string]string{"its own": a.DebugAddr(), "another browser's": b.DebugAddr()} {
		// A navigation reads what fetch could not (CORS): the endpoint's
		// JSON names the browser's WebSocket URL.
		_ = chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/json/version"))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
		if err != nil || strings.Contains(got, "webSocketDebuggerUrl") || !strings.Contains(got, "may never reach") {
			t.Errorf("navigation to %s DevTools endpoint: %q (%v), want the egress refusal", name, got, err)
		}
	}
	bAddr := netip.MustParseAddrPort(b.DebugAddr())
	if err := policy.Check(bAddr); err == nil {
		t.Fatal("a running browser's DevTools endpoint is not reserved")
	}
	closeBrowser(t, b)
	if err := policy.Check(bAddr); err != nil {
		t.Errorf("a closed browser's port is still reserved: %v", err)
	}
}
