package browser

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/testenv"
)

// TestExtensionID checks the id computation against the id Chromium 156
// answered for an extension it loaded from /tmp/extprobe/ext2.
func TestExtensionID(t *testing.T) {
	t.Parallel()
	if got, want := ExtensionID("/tmp/extprobe/ext2"), "aopkaihanmggfahelblanlpkhdmmengo"; got != want {
		t.Errorf("ExtensionID = %q, want %q", got, want)
	}
}

// attackerWorker is the service worker of an extension that tries to
// leave the browser's confinement when a content script asks it: it reads
// a host file through file://, switches the browser's proxy off with
// chrome.proxy, then fetches a loopback service. It answers what each
// attempt gave.
const attackerWorker = `
async function attempt(f) {
  try { return "ok:" + String(await f()).slice(0, 200); } catch (e) { return "err:" + String(e).slice(0, 200); }
}
chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  (async () => {
    const out = {};
    out.file = await attempt(async () => (await fetch(msg.file)).text());
    out.proxy = await attempt(() => new Promise((resolve, reject) =>
      chrome.proxy.settings.set({value: {mode: "direct"}, scope: "regular"},
        () => chrome.runtime.lastError ? reject(chrome.runtime.lastError.message) : resolve("set"))));
    out.loopback = await attempt(async () => (await fetch(msg.loopback)).text());
    reply(JSON.stringify(out));
  })();
  return true;
});
`

// TestExtensionConfinement loads, as a crafted archive could if it got
// past the permission allowlist, an extension with the proxy permission
// and access to every host into a confined browser (its own user, its
// own network namespace, the egress proxy under a policy that allows only
// the test site). Its service worker must fail to read a host file that
// the browser's user may read, and to reach a loopback service after
// switching the proxy off, while its content script runs on the allowed
// site (it reports the attempts there).
func TestExtensionConfinement(t *testing.T) {
	u := browserUser(t)
	if ok, why := probeNetns(); !ok {
		testenv.Missing(t, "no network namespaces: %s", why)
	}
	root := reachableTempDir(t)
	secret := filepath.Join(root, "host-secret.txt")
	if err := os.WriteFile(secret, []byte("HOST-FILE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, "LOOPBACK-CANARY")
	}))
	defer canary.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>site</title><body>SITE</body>")
	}))
	defer site.Close()
	siteAddr := netip.MustParseAddrPort(site.Listener.Addr().String())
	policy := fetch.NewPolicy(nil, []netip.AddrPort{siteAddr})
	proxy, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: policy}})
	if err != nil {
		t.Fatal(err)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go proxy.Serve(proxyLn)
	t.Cleanup(func() { proxy.Close() })

	c, err := NewChromium(ChromiumOptions{
		WorkDir: filepath.Join(root, "browsers"), User: &u, StartTimeout: 30 * time.Second,
		ProxyServer: "http://" + proxyLn.Addr().String(),
		ServeEgress: func(l net.Listener, _ EgressListener) error { return proxy.Serve(l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Confinement().Netns {
		t.Fatalf("no network namespace: %v", c.Confinement().Warnings)
	}
	files := map[string]string{
		"manifest.json": `{"manifest_version": 3, "name": "attacker", "version": "1.0",
			"permissions": ["proxy"], "host_permissions": ["<all_urls>"],
			"background": {"service_worker": "sw.js"},
			"content_scripts": [{"matches": ["<all_urls>"], "js": ["cs.js"], "run_at": "document_end"}]}`,
		"sw.js": attackerWorker,
		"cs.js": fmt.Sprintf(`chrome.runtime.sendMessage({file: %q, loopback: %q}, r => { document.title = "RESULT " + r; });`,
			"file://"+secret, canary.URL+"/"),
	}
	b := launch(t, c, LaunchOptions{Extension: func(dir string) error {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return err
			}
		}
		return nil
	}})
	cb := b.(*chromiumBrowser)
	if cb.ExtensionID() == "" {
		t.Fatal("no extension id")
	}
	for _, name := range []string{"", "sw.js"} {
		st, err := os.Stat(filepath.Join(cb.extensionDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s mode %v: readable by others than the browser's user", filepath.Join(cb.extensionDir, name), st.Mode())
		}
	}

	title := extensionResult(t, b, site.URL+"/")
	var res struct{ File, Proxy, Loopback string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(title, "RESULT ")), &res); err != nil {
		t.Fatalf("title %q: %v", title, err)
	}
	t.Logf("attempts: %+v", res)
	if !strings.HasPrefix(res.File, "err:") || strings.Contains(res.File, "HOST-FILE-SECRET") {
		t.Errorf("file:// read from the extension: %q, want a failure", res.File)
	}
	if !strings.HasPrefix(res.Loopback, "err:") || strings.Contains(res.Loopback, "LOOPBACK-CANARY") {
		t.Errorf("loopback fetch after chrome.proxy (%s): %q, want a failure", res.Proxy, res.Loopback)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback service was reached %d times", n)
	}
}

// extensionResult navigates b's page to url and returns its title once a
// content script has set it to "RESULT ...".
func extensionResult(t *testing.T, b Browser, url string) string {
	t.Helper()
	ws := pageWS(t, b)
	if text := readThroughPage(t, b, ws, url); !strings.Contains(text, "SITE") {
		t.Fatalf("the allowed site does not load: %q", text)
	}
	var title string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res, err := CallURL(t.Context(), b.HTTPClient(), ws, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
		if err == nil {
			var r struct {
				Result struct {
					Value string `json:"value"`
				} `json:"result"`
			}
			_ = json.Unmarshal(res, &r)
			if title = r.Result.Value; strings.HasPrefix(title, "RESULT ") {
				return title
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the extension reported nothing (title %q)", title)
	return ""
}
