package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessionAttackerWorker is the service worker of an extension that passes
// the permission allowlist (every host, no proxy permission) and, when its
// content script asks, tries to leave the session's confinement: a host
// file through file://, chrome.proxy, and a loopback service (an answer
// other than 2xx, such as the egress proxy's refusal, is a failure).
const sessionAttackerWorker = `
async function get(url) {
  const r = await fetch(url);
  const text = await r.text();
  if (!r.ok) throw new Error("HTTP " + r.status + " " + text);
  return text;
}
async function attempt(f) {
  try { return "ok:" + String(await f()).slice(0, 200); } catch (e) { return "err:" + String(e).slice(0, 200); }
}
chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  (async () => {
    const out = {};
    out.file = await attempt(() => get(msg.file));
    out.proxy = await attempt(async () => { await chrome.proxy.settings.set({value: {mode: "direct"}}); return "set"; });
    out.loopback = await attempt(() => get(msg.loopback));
    reply(JSON.stringify(out));
  })();
  return true;
});
`

// TestWallcrawlerExtensionConfined uploads, under quarry serve, an
// extension the allowlist accepts (every host) and starts a session with
// it; driven over the session's raw CDP connection to an allowed page, its
// service worker tries to read a host file the browser's user may read,
// to change the proxy, and to fetch a loopback service the policy does not
// allow: all three fail and the service is never reached, while its
// content script runs. The tenant's CDP cannot load or list extensions.
func TestWallcrawlerExtensionConfined(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>site</title><body>SITE</body>")
	}))
	defer site.Close()
	canary := newHitCounter(t, "127.0.0.1:0")
	// A host file every user may read: only the extension's missing file
	// access keeps it out.
	dir, err := os.MkdirTemp("", "quarry-ext-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	secret := filepath.Join(dir, "secret.txt")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("HOST-FILE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSDKServe(t, "--allow-networks", site.Listener.Addr().String())

	archive := writeExtensionZip(t,
		"manifest.json", `{"manifest_version": 3, "name": "curious", "version": "1",
			"host_permissions": ["<all_urls>"], "background": {"service_worker": "sw.js"},
			"content_scripts": [{"matches": ["<all_urls>"], "js": ["cs.js"], "run_at": "document_end"}]}`,
		"sw.js", sessionAttackerWorker,
		"cs.js", fmt.Sprintf(`chrome.runtime.sendMessage({file: %q, loopback: %q}, r => { document.title = "RESULT " + r; });`,
			"file://"+secret, canary.URL+"/"))
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "curious.zip")
	_, _ = fw.Write(data)
	_ = mw.Close()
	var ext struct{ ID string }
	wcCall(t, s, "POST", "/v1/extensions", mw.FormDataContentType(), &body, http.StatusCreated, &ext)
	var sess struct{ ConnectURL string }
	wcCall(t, s, "POST", "/v1/sessions", "application/json", strings.NewReader(`{"extensionId":"`+ext.ID+`"}`), http.StatusCreated, &sess)

	c := dialCDP(t, sess.ConnectURL)
	page, _ := c.attachPage()
	if got := c.navigate(page, site.URL+"/"); !strings.Contains(got, "SITE") {
		t.Fatalf("the allowed site does not load: %q", got)
	}
	title := c.eval(page, `new Promise(resolve => {
		const check = () => document.title.startsWith("RESULT ") ? resolve(document.title) : setTimeout(check, 50);
		check();
	})`)
	var res struct{ File, Proxy, Loopback string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(title, "RESULT ")), &res); err != nil {
		t.Fatalf("the extension reported %q: %v", title, err)
	}
	t.Logf("attempts: %+v", res)
	for what, got := range map[string]string{"file:// read": res.File, "chrome.proxy": res.Proxy, "loopback fetch": res.Loopback} {
		if !strings.HasPrefix(got, "err:") {
			t.Errorf("%s from the extension: %q, want a failure", what, got)
		}
	}
	if strings.Contains(res.File, "HOST-FILE-SECRET") || strings.Contains(res.Loopback, "CANARY-SECRET") {
		t.Errorf("the extension read what it must not: %+v", res)
	}
	if n := canary.hits.Load(); n != 0 {
		t.Errorf("the loopback service was reached %d times", n)
	}
	// The browser accepts CDP's Extensions domain (quarry loads the
	// extension through it); the tenant's connection does not.
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"Extensions.loadUnpacked", map[string]any{"path": dir}},
		{"Extensions.getExtensions", map[string]any{}},
	} {
		if _, err := c.call("", m.method, m.params); err == nil || !strings.Contains(err.Error(), "wallcrawler: "+m.method+" refused") {
			t.Errorf("%s over the session's CDP: %v, want the filter's refusal", m.method, err)
		}
	}
}

// wcCall sends method path (under /wallcrawler) with s's key, checks the
// status and decodes the answer into out.
func wcCall(t *testing.T, s *sdkServe, method, path, contentType string, body io.Reader, want int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.api+"/wallcrawler"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-BB-API-Key", s.key)
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %s: %v", method, path, b, err)
	}
}
