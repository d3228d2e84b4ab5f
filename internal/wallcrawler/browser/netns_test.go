package browser

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/testenv"
)

// TestBrowserNetworkNamespace runs a browser in a network namespace of
// its own and plays a process inside it (what a browser taken over
// beyond Chromium's sandbox is): it cannot connect to a server on the
// host's loopback or on the host's other addresses, while its one way
// out, the egress proxy's port inside the namespace, answers and the
// browser's pages load through it.
func TestBrowserNetworkNamespace(t *testing.T) {
	if ok, why := probeNetns(); !ok {
		testenv.Missing(t, "no network namespaces: %s", why)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for the process inside the namespace")
	}
	c, _ := newTestProvider(t)
	// The host's service, listening on every address.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	host := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head><title>host service</title></head><body>HOST-CANARY</body></html>")
	})}}
	host.Start()
	t.Cleanup(host.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	// The egress proxy allows every address: whatever the browser
	// reaches, it reaches through the proxy.
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: fetch.AllowAllPolicy()}})
	if err != nil {
		t.Fatal(err)
	}
	go proxy.Serve(proxyLn)
	t.Cleanup(func() { proxy.Close() })
	c.proxyServer = "http://" + proxyLn.Addr().String()
	c.serveEgress = func(l net.Listener, _ EgressListener) error { return proxy.Serve(l) }
	c.confine()
	if !c.Confinement().Netns {
		t.Fatalf("Confinement().Netns = false: %v", c.Confinement().Warnings)
	}
	b := launch(t, c, LaunchOptions{})

	mine, _ := os.Readlink("/proc/self/ns/net")
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", b.PID()))
	if err != nil || theirs == mine {
		t.Fatalf("browser network namespace %q (%v), quarry's %q: want one of its own", theirs, err, mine)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID()))
	var way string
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(a, "--proxy-server=http://"); ok {
			way = v
		}
	}
	if way == "" || way == proxyLn.Addr().String() {
		t.Fatalf("browser proxy %q: want a port inside its namespace", way)
	}

	// connect runs bash inside the browser's namespace and reports
	// whether it could open a TCP connection to addr.
	connect := func(addr string) bool {
		h, p, _ := net.SplitHostPort(addr)
		cmd := exec.Command("bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", h, p))
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", b.PID()))
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		inside := &netns{file: ns}
		done := make(chan error, 1)
		if err := inside.run(cmd.Start); err != nil {
			t.Fatalf("start inside the namespace: %v", err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err == nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			return false
		}
	}
	if !connect(way) {
		t.Fatalf("the egress port %s does not answer inside the namespace: the test would prove nothing", way)
	}
	targets := []string{net.JoinHostPort("127.0.0.1", port), proxyLn.Addr().String()}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				targets = append(targets, net.JoinHostPort(ipn.IP.String(), port))
			}
		}
	}
	for _, addr := range targets {
		if connect(addr) {
			t.Errorf("a process in the browser's namespace connected to the host's %s", addr)
		}
	}

	// The browser's own way out works: the host service loads through
	// the proxy.
	ctx := browserCtx(t, b)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://127.0.0.1:"+port+"/")); err != nil {
		t.Fatalf("navigate through the egress proxy: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil || !strings.Contains(text, "HOST-CANARY") {
		t.Fatalf("page through the egress proxy: %q (%v)", text, err)
	}
}

// TestBrowserEgressListenerWithoutNetns: without network namespaces every
// browser still gets a way out of its own, a port of the host's loopback
// handed to ServeEgress with its id, so that the egress knows whose
// connections it serves; pages load through it, and the port closes with
// the browser.
func TestBrowserEgressListenerWithoutNetns(t *testing.T) {
	c, _ := newTestProvider(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body>VIA-OWN-PORT</body></html>")
	}))
	t.Cleanup(site.Close)
	proxy, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: fetch.AllowAllPolicy()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	got := make(chan EgressListener, 1)
	c.proxyServer = "http://127.0.0.1:1" // shared: must not be the browser's way out
	c.serveEgress = func(l net.Listener, el EgressListener) error {
		got <- el
		return proxy.Serve(l)
	}
	c.confinement.Netns = false
	b := launch(t, c, LaunchOptions{})
	var el EgressListener
	select {
	case el = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeEgress not called")
	}
	if el.Browser != b.ID() || !el.HostNetwork {
		t.Fatalf("ServeEgress got %+v, want browser %s on the host network", el, b.ID())
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID()))
	var way string
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(a, "--proxy-server=http://"); ok {
			way = v
		}
	}
	if way == "" || way == "127.0.0.1:1" {
		t.Fatalf("browser proxy %q: want a port of its own", way)
	}
	ctx := browserCtx(t, b)
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil || !strings.Contains(text, "VIA-OWN-PORT") {
		t.Fatalf("page through its own port: %q (%v)", text, err)
	}
	if err := b.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", way, 2*time.Second); err == nil {
		c.Close()
		t.Fatalf("the browser's egress port %s still answers after it ended", way)
	}
}

// TestExtensionRefusedWithoutNetns: a browser that would share the host's
// network with an egress policy in force gets no extension (its
// chrome.proxy could route around the proxy); the launch fails with
// ErrExtensionNeedsNetns and leaves no browser or directory behind.
func TestExtensionRefusedWithoutNetns(t *testing.T) {
	c, _ := newTestProvider(t)
	c.proxyServer = "http://127.0.0.1:1"
	c.serveEgress = func(l net.Listener, _ EgressListener) error { return nil }
	c.confinement.Netns = false
	unpacked := false
	_, err := c.Launch(t.Context(), LaunchOptions{Extension: func(dir string) error {
		unpacked = true
		return os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version":3,"name":"x","version":"1"}`), 0o600)
	}})
	if !errors.Is(err, ErrExtensionNeedsNetns) {
		t.Fatalf("Launch with an extension on the host network: %v, want ErrExtensionNeedsNetns", err)
	}
	if unpacked {
		t.Error("the extension was unpacked before the refusal")
	}
	if entries, _ := os.ReadDir(c.workDir); len(entries) > 0 {
		t.Errorf("the refused launch left %d entries in the work dir", len(entries))
	}
}
