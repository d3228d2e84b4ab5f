package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/testenv"
	"github.com/quarrydb/quarry/internal/wallcrawler"
)

// wdClient speaks the W3C WebDriver HTTP protocol to a session's
// seleniumRemoteUrl, as a Selenium client does, with the session's
// signingKey in the X-BB-Signing-Key header.
type wdClient struct {
	t         *testing.T
	base, key string
}

// do sends one command and returns the status and the answer's "value".
func (c wdClient) do(method, path string, body any) (int, json.RawMessage) {
	c.t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if c.key != "" {
		req.Header.Set("X-BB-Signing-Key", c.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	data, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		c.t.Fatalf("%s %s: %d, not a WebDriver answer: %q", method, path, res.StatusCode, data)
	}
	return res.StatusCode, out.Value
}

// must sends one command that must succeed and decodes its value into v.
func (c wdClient) must(method, path string, body, v any) {
	c.t.Helper()
	code, val := c.do(method, path, body)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", method, path, code, val)
	}
	if v != nil {
		if err := json.Unmarshal(val, v); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, val)
		}
	}
}

// wdError is a W3C WebDriver error value.
type wdError struct {
	Error, Message string
}

// seleniumSession is what a session answer says about its WebDriver
// endpoint.
type seleniumSession struct {
	ID                string  `json:"id"`
	SigningKey        string  `json:"signingKey"`
	SeleniumRemoteURL *string `json:"seleniumRemoteUrl"`
}

// chromedrivers returns the chromedriver processes of browsers under root.
func chromedrivers(t *testing.T, root string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "chromedriver") && strings.Contains(cmd, root+"/") {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// TestWallcrawlerSelenium drives a session's browser through its
// seleniumRemoteUrl with the W3C WebDriver protocol, as Selenium does: a
// new WebDriver session (whose client-chosen binary, arguments and
// extension are ignored: it attaches to the session's own browser), a
// navigation to a site the network policy allows, find element, type,
// click and read the title, which the session's CDP client sees too. A
// CDP command the filter refuses is refused through chromedriver too, and
// a navigation to an address the policy refuses stays refused; the
// endpoint refuses a missing or wrong key, another session's and another
// project's; chromedriver's own commands beyond the WebDriver ones are
// not reachable; releasing the session stops its chromedriver.
func TestWallcrawlerSelenium(t *testing.T) {
	t.Parallel()
	testenv.Chromedriver(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>form</title><input id="q"><button id="go"
onclick="document.title='hello '+document.getElementById('q').value">Go</button>`)
	}))
	defer site.Close()
	canary := newHitCounter(t, "127.0.0.1:0")
	s := startWallcrawlerServer(t, "--allow-networks", site.Listener.Addr().String())
	s.cli("wallcrawler", "project", "create", "--name", "p", "--id", "project_sel", "--concurrency", "3")
	s.cli("wallcrawler", "project", "create", "--name", "q", "--id", "project_other", "--concurrency", "1")
	key := s.cli("wallcrawler", "key", "create", "--project", "project_sel")
	otherKey := s.cli("wallcrawler", "key", "create", "--project", "project_other")

	var x, sibling, foreign seleniumSession
	for _, c := range []struct {
		key string
		out *seleniumSession
	}{{key, &x}, {key, &sibling}, {otherKey, &foreign}} {
		if code := s.call(c.key, "POST", "/v1/sessions", map[string]any{}, c.out); code != http.StatusCreated {
			t.Fatalf("create session: %d", code)
		}
	}
	want := "http://" + s.api + "/wallcrawler/webdriver/" + x.ID
	if x.SeleniumRemoteURL == nil || *x.SeleniumRemoteURL != want {
		t.Fatalf("seleniumRemoteUrl on create = %v, want %s", x.SeleniumRemoteURL, want)
	}
	var got seleniumSession
	if s.call(key, "GET", "/v1/sessions/"+x.ID, nil, &got); got.SeleniumRemoteURL == nil || *got.SeleniumRemoteURL != want {
		t.Fatalf("seleniumRemoteUrl on GET = %v, want %s", got.SeleniumRemoteURL, want)
	}

	// The attacker: no key, a wrong one, a sibling session's, another
	// project's; each is refused before any driver runs.
	for name, k := range map[string]string{"none": "", "garbage": "not-a-key", "sibling session": sibling.SigningKey,
		"other project": foreign.SigningKey, "tampered": x.SigningKey[:len(x.SigningKey)-2] + "xx"} {
		code, val := wdClient{t, want, k}.do("POST", "/session", map[string]any{"capabilities": map[string]any{}})
		var e wdError
		_ = json.Unmarshal(val, &e)
		if code != http.StatusUnauthorized || !strings.Contains(e.Message, "signingKey") {
			t.Errorf("%s key: %d %s, want 401 naming the signingKey", name, code, val)
		}
	}
	if n := chromedrivers(t, wallcrawlerRoot(t, s)); len(n) != 0 {
		t.Fatalf("chromedriver started for refused clients: %v", n)
	}

	wd := wdClient{t, want, x.SigningKey}
	// chromedriver's own endpoints are not WebDriver commands.
	for _, path := range []string{"/shutdown", "/sessions", ""} {
		if code, val := wd.do("GET", path, nil); code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", path, code, val)
		}
	}

	// The client asks for its own binary, arguments, extension and
	// DevTools port: ignored, the driver attaches to the session's browser.
	var created struct {
		SessionID    string         `json:"sessionId"`
		Capabilities map[string]any `json:"capabilities"`
	}
	wd.must("POST", "/session", map[string]any{"capabilities": map[string]any{
		"alwaysMatch": map[string]any{"browserName": "chrome", "goog:chromeOptions": map[string]any{
			"binary": "/bin/false", "args": []string{"--remote-debugging-port=9333", "--no-sandbox"},
			"extensions": []string{"UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA=="}, "debuggerAddress": canary.Listener.Addr().String(),
		}},
		"firstMatch": []any{map[string]any{"goog:chromeOptions": map[string]any{"binary": "/bin/sh"}}},
	}}, &created)
	opts, _ := created.Capabilities["goog:chromeOptions"].(map[string]any)
	if created.SessionID == "" || opts["debuggerAddress"] == canary.Listener.Addr().String() {
		t.Fatalf("new session: %+v", created)
	}
	sess := "/session/" + created.SessionID

	page := site.URL + "/form"
	wd.must("POST", sess+"/url", map[string]any{"url": page}, nil)
	var el map[string]string
	wd.must("POST", sess+"/element", map[string]any{"using": "css selector", "value": "#q"}, &el)
	input := el["element-6066-11e4-a52e-4f735466cecf"]
	wd.must("POST", sess+"/element/"+input+"/value", map[string]any{"text": "selenium"}, nil)
	wd.must("POST", sess+"/element", map[string]any{"using": "css selector", "value": "#go"}, &el)
	wd.must("POST", sess+"/element/"+el["element-6066-11e4-a52e-4f735466cecf"]+"/click", map[string]any{}, nil)
	var title string
	if wd.must("GET", sess+"/title", nil, &title); title != "hello selenium" {
		t.Fatalf("title = %q, want %q", title, "hello selenium")
	}
	// The same browser as the session's CDP clients see.
	c := dialCDP(t, connectURLOf(t, s, key, x.ID))
	raw, err := c.call("", "Target.getTargets", map[string]any{})
	if err != nil || !strings.Contains(string(raw), "hello selenium") {
		t.Fatalf("the session's browser does not show the Selenium page: %v %s", err, raw)
	}

	// chromedriver's raw CDP command passes the session's CDP filter.
	code, val := wd.do("POST", sess+"/goog/cdp/execute", map[string]any{"cmd": "Browser.getBrowserCommandLine", "params": map[string]any{}})
	if code == http.StatusOK || !strings.Contains(string(val), "wallcrawler: Browser.getBrowserCommandLine refused") {
		t.Fatalf("a command the CDP filter refuses, through chromedriver: %d %s", code, val)
	}

	// A navigation the network policy refuses stays refused.
	wd.do("POST", sess+"/url", map[string]any{"url": canary.URL + "/secret"})
	if wd.must("GET", sess+"/title", nil, &title); strings.Contains(title, "CANARY") || canary.hits.Load() != 0 {
		t.Fatalf("refused address reached: title %q, %d hits", title, canary.hits.Load())
	}

	drivers := chromedrivers(t, wallcrawlerRoot(t, s))
	if len(drivers) != 1 {
		t.Fatalf("chromedriver processes while the session runs: %v, want one", drivers)
	}
	// It runs in the browser's confinement: not as root (the browsers' user
	// under this root test), not on the host's network.
	status, _ := os.ReadFile("/proc/" + drivers[0] + "/status")
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	driverNet, _ := os.Readlink("/proc/" + drivers[0] + "/ns/net")
	if os.Geteuid() == 0 && (strings.Contains(string(status), "\nUid:\t0\t") || driverNet == "" || driverNet == hostNet) {
		t.Errorf("chromedriver is not confined: net %q (host %q)\n%s", driverNet, hostNet, status)
	}
	wd.must("DELETE", sess, nil, nil)
	if code := s.call(key, "POST", "/v1/sessions/"+x.ID, map[string]any{"status": "REQUEST_RELEASE"}, nil); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	waitFor(t, "the session's chromedriver to stop", func() bool { return len(chromedrivers(t, wallcrawlerRoot(t, s))) == 0 })
	if code, val := wd.do("POST", "/session", map[string]any{"capabilities": map[string]any{}}); code != http.StatusNotFound {
		t.Fatalf("after release: %d %s, want 404", code, val)
	}
}

// wallcrawlerRoot returns the browser root of s (its default one).
func wallcrawlerRoot(t *testing.T, s *wcServer) string {
	t.Helper()
	root, err := wallcrawler.DefaultBrowserRoot(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// connectURLOf returns the connectUrl of session id.
func connectURLOf(t *testing.T, s *wcServer, key, id string) string {
	t.Helper()
	var x wcSession
	if code := s.call(key, "GET", "/v1/sessions/"+id, nil, &x); code != http.StatusOK || x.ConnectURL == "" {
		t.Fatalf("GET session: %d %+v", code, x)
	}
	return x.ConnectURL
}

// TestClusterSeleniumThroughAnyNode drives a session whose browser runs
// on node A through node B's WebDriver endpoint: B relays each request to
// A, which authenticates the signingKey and runs the driver. Forged
// node-to-node credentials are refused by either node, a bad signingKey
// through B is refused by A, and once the session is released through B
// neither node answers for it.
func TestClusterSeleniumThroughAnyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two quarry nodes, Chromium and chromedriver; skipped in -short mode")
	}
	t.Parallel()
	testenv.Chromium(t)
	testenv.Chromedriver(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>fixture %s</title>", r.URL.Path)
	}))
	defer site.Close()
	d := startSharedDDB(t, "", "")
	allow := "--allow-networks=" + site.Listener.Addr().String()
	a := startNode(t, d, "node-a", allow)
	b := startNode(t, d, "node-b", allow)
	clusterCLI(t, d, "wallcrawler", "project", "create", "--name", "cluster", "--id", "project_cluster", "--concurrency", "2")
	key := clusterCLI(t, d, "wallcrawler", "key", "create", "--project", "project_cluster")

	code, body := wcRequest(t, http.MethodPost, "http://"+a.api+"/wallcrawler/v1/sessions", key, `{}`)
	var x seleniumSession
	if code != http.StatusCreated || json.Unmarshal(body, &x) != nil || x.SeleniumRemoteURL == nil || !strings.Contains(*x.SeleniumRemoteURL, a.api) {
		t.Fatalf("create session on A: %d %s", code, body)
	}
	viaB := strings.Replace(*x.SeleniumRemoteURL, a.api, b.api, 1)

	for _, target := range []string{viaB, *x.SeleniumRemoteURL} {
		req, _ := http.NewRequest(http.MethodGet, target+"/status", nil)
		req.Header.Set("X-BB-Signing-Key", x.SigningKey)
		req.Header.Set("X-Quarry-Node-Token", x.SigningKey) // the tenant's key is no node credential
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged node token at %s: %d, want 401", target, res.StatusCode)
		}
	}
	if code, val := (wdClient{t, viaB, x.SigningKey + "x"}).do("POST", "/session", map[string]any{"capabilities": map[string]any{}}); code != http.StatusUnauthorized {
		t.Errorf("bad signingKey through B: %d %s, want 401", code, val)
	}

	wd := wdClient{t, viaB, x.SigningKey}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	wd.must("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{"browserName": "chrome"}}}, &created)
	wd.must("POST", "/session/"+created.SessionID+"/url", map[string]any{"url": site.URL + "/through-b"}, nil)
	var title string
	if wd.must("GET", "/session/"+created.SessionID+"/title", nil, &title); title != "fixture /through-b" {
		t.Fatalf("title through B = %q", title)
	}
	if !strings.Contains(a.logs.String(), "webdriver: chromedriver started") || strings.Contains(b.logs.String(), "webdriver: chromedriver started") {
		t.Error("the driver should run on A, the browser's node, only")
	}

	if code, body := wcRequest(t, http.MethodPost, "http://"+b.api+"/wallcrawler/v1/sessions/"+x.ID, key, `{"status":"REQUEST_RELEASE"}`); code != http.StatusOK {
		t.Fatalf("release through B: %d %s", code, body)
	}
	for _, target := range []string{viaB, *x.SeleniumRemoteURL} {
		waitFor(t, "the released session to be gone at "+target, func() bool {
			code, _ := (wdClient{t, target, x.SigningKey}).do("GET", "/status", nil)
			return code == http.StatusNotFound
		})
	}
}
