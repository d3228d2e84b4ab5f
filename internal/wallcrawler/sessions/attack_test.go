package sessions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// rawCDP is an attacker's CDP client: raw JSON over the session's
// WebSocket, one command at a time.
type rawCDP struct {
	t      *testing.T
	c      *websocket.Conn
	next   int64
	events []cdpMsg
}

// cdpMsg is any message from the browser.
type cdpMsg struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func dialCDP(t *testing.T, u string) *rawCDP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	return &rawCDP{t: t, c: c}
}

// send writes {"id":N,"method":method,"sessionId":session,"params":params}
// (params is raw JSON) and returns the answer.
func (r *rawCDP) send(session, method, params string) cdpMsg {
	r.t.Helper()
	r.next++
	msg := fmt.Sprintf(`{"id":%d,"method":%q`, r.next, method)
	if session != "" {
		msg += fmt.Sprintf(`,"sessionId":%q`, session)
	}
	if params != "" {
		msg += `,"params":` + params
	}
	return r.raw(r.next, msg+"}")
}

// raw writes msg, whose id is id, and returns the answer.
func (r *rawCDP) raw(id int64, msg string) cdpMsg {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		r.t.Fatalf("write %s: %v", msg, err)
	}
	for {
		m := r.read(ctx)
		if m.Method == "" && m.ID == id {
			return m
		}
		if m.Method != "" {
			r.events = append(r.events, m)
		}
	}
}

func (r *rawCDP) read(ctx context.Context) cdpMsg {
	r.t.Helper()
	_, data, err := r.c.Read(ctx)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var m cdpMsg
	if err := json.Unmarshal(data, &m); err != nil {
		r.t.Fatalf("answer %s: %v", data, err)
	}
	return m
}

// ok sends a command that must succeed and decodes its result into out.
func (r *rawCDP) ok(session, method, params string, out any) {
	r.t.Helper()
	m := r.send(session, method, params)
	if m.Error != nil {
		r.t.Fatalf("%s %s: error %d %s", method, params, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			r.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// refused sends a command that the proxy must refuse.
func (r *rawCDP) refused(session, method, params string) {
	r.t.Helper()
	m := r.send(session, method, params)
	r.checkRefused(m, session, method, params)
}

func (r *rawCDP) checkRefused(m cdpMsg, session, method, params string) {
	r.t.Helper()
	if m.Error == nil || m.Error.Code != -32000 || !strings.HasPrefix(m.Error.Message, "wallcrawler: "+method+" refused: ") || m.SessionID != session {
		r.t.Fatalf("%s %s not refused by the proxy: %+v %s", method, params, m.Error, m.Result)
	}
}

// event waits for an event that match accepts, among those already read
// and those to come.
func (r *rawCDP) event(method string, match func(cdpMsg) bool) cdpMsg {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; ; i++ {
		if i == len(r.events) {
			r.events = append(r.events, r.read(ctx))
		}
		if m := r.events[i]; m.Method == method && (match == nil || match(m)) {
			r.events = append(r.events[:i], r.events[i+1:]...)
			return m
		}
	}
}

// eval evaluates an expression in a page and returns its value as JSON.
func (r *rawCDP) eval(session, expr string) string {
	r.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	r.ok(session, "Runtime.evaluate", fmt.Sprintf(`{"expression":%q,"returnByValue":true,"awaitPromise":true}`, expr), &res)
	if res.ExceptionDetails != nil {
		r.t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails)
	}
	return string(res.Result.Value)
}

// navigate loads u in a page and waits until document.title is title.
func (r *rawCDP) navigate(session, u, title string) {
	r.t.Helper()
	r.ok(session, "Page.navigate", fmt.Sprintf(`{"url":%q}`, u), nil)
	r.waitFor(session, fmt.Sprintf("document.readyState === 'complete' && document.title === %q", title))
}

// waitFor polls a page until expr is true.
func (r *rawCDP) waitFor(session, expr string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.eval(session, expr) != "true" {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s (location %s)", expr, r.eval(session, "location.href"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newPage creates a page and attaches to it (flattened); it returns the
// target id and the session id.
func (r *rawCDP) newPage() (string, string) {
	r.t.Helper()
	var created struct{ TargetID string }
	r.ok("", "Target.createTarget", `{"url":"about:blank"}`, &created)
	var attached struct{ SessionID string }
	r.ok("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":true}`, created.TargetID), &attached)
	r.ok(attached.SessionID, "Runtime.enable", "", nil)
	return created.TargetID, attached.SessionID
}

// attackSite serves the pages of the attack test: /title (a page titled
// "fixture" with a file input), /to-file (a redirect to fileURL) and
// /report (a download).
func attackSite(t *testing.T, fileURL string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-file":
			http.Redirect(w, r, fileURL, http.StatusFound)
		case "/report":
			name := "report.txt"
			if n := r.URL.Query().Get("name"); n != "" {
				name = n
			}
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "quarterly numbers")
		default:
			fmt.Fprint(w, `<html><head><title>fixture</title></head><body><input type="file" id="f"><p>hello</p></body></html>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// sessionDownloadDir is where the session's browser puts downloads.
func sessionDownloadDir(t *testing.T, st *stack, id string) string {
	t.Helper()
	x, err := st.repo.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(st.workDir, "browsers", x.TaskARN[strings.LastIndexByte(x.TaskARN, ':')+1:], "downloads")
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestCDPAttacks plays a tenant who sends raw CDP to its own session's
// browser to read host files, smuggle host files into pages, write
// downloads elsewhere, leave the egress proxy or reach the browser
// target from page scripts; each attempt fails, and ordinary automation
// through the same filter keeps working.
func TestCDPAttacks(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	secretText := "wallcrawler-secret-" + randomHex(t)
	secretPath := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secretPath, []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	secretURL := "file://" + secretPath
	web := attackSite(t, secretURL)
	s := st.create(t, nil)
	dl := sessionDownloadDir(t, st, s.ID)
	r := dialCDP(t, s.ConnectURL)
	targetID, page := r.newPage()

	t.Run("ordinary flow", func(t *testing.T) {
		r.t = t
		r.ok(page, "Page.enable", "", nil)
		r.navigate(page, web.URL+"/title", "fixture")
		if got := r.eval(page, "document.querySelector('p').textContent + (6 * 7)"); got != `"hello42"` {
			t.Fatalf("evaluate: %s", got)
		}
		var shot struct{ Data string }
		r.ok(page, "Page.captureScreenshot", `{"format":"png"}`, &shot)
		png, err := base64.StdEncoding.DecodeString(shot.Data)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Fatalf("screenshot: %d bytes, %v", len(png), err)
		}
		var info struct{ TargetInfo struct{ URL string } }
		r.ok("", "Target.getTargetInfo", fmt.Sprintf(`{"targetId":%q}`, targetID), &info)
		if info.TargetInfo.URL != web.URL+"/title" {
			t.Fatalf("target url %q", info.TargetInfo.URL)
		}
	})

	t.Run("local files by URL", func(t *testing.T) {
		r.t = t
		for _, u := range []string{"file:///etc/passwd", secretURL, " FILE://" + secretPath, "\tfi\nle://" + secretPath, "view-source:" + secretURL, "filesystem:" + secretURL, "chrome://version", "about:version"} {
			r.refused(page, "Page.navigate", fmt.Sprintf(`{"url":%q}`, u))
		}
		for _, u := range []string{secretURL, "view-source:file:///etc/passwd", "File:/etc/passwd"} {
			r.refused("", "Target.createTarget", fmt.Sprintf(`{"url":%q}`, u))
		}
		// The same page can still go places.
		r.navigate(page, web.URL+"/title", "fixture")
	})

	t.Run("renderer-initiated file navigation", func(t *testing.T) {
		r.t = t
		// Chromium itself refuses web pages' navigations, and redirects,
		// to file: URLs; the page never shows the secret.
		r.eval(page, fmt.Sprintf("location.href = %q; 1", secretURL))
		r.eval(page, fmt.Sprintf("window.open(%q); 1", secretURL))
		r.eval(page, fmt.Sprintf("fetch(%q).then(r => r.text(), e => String(e))", secretURL))
		time.Sleep(time.Second)
		if html := r.eval(page, "location.href + document.documentElement.outerHTML"); strings.Contains(html, secretText) {
			t.Fatalf("page shows the secret: %s", html)
		}
		r.ok(page, "Page.navigate", fmt.Sprintf(`{"url":%q}`, web.URL+"/to-file"), nil)
		time.Sleep(time.Second)
		if html := r.eval(page, "location.href + document.documentElement.outerHTML"); strings.Contains(html, secretText) {
			t.Fatalf("redirect shows the secret: %s", html)
		}
		var targets struct{ TargetInfos []struct{ URL string } }
		r.ok("", "Target.getTargets", "", &targets)
		for _, ti := range targets.TargetInfos {
			if strings.HasPrefix(ti.URL, "file:") {
				t.Fatalf("a target shows %s", ti.URL)
			}
		}
	})

	t.Run("file inputs", func(t *testing.T) {
		r.t = t
		r.navigate(page, web.URL+"/title", "fixture")
		var doc struct{ Root struct{ NodeID int64 } }
		r.ok(page, "DOM.getDocument", "", &doc)
		var q struct{ NodeID int64 }
		r.ok(page, "DOM.querySelector", fmt.Sprintf(`{"nodeId":%d,"selector":"#f"}`, doc.Root.NodeID), &q)
		for _, files := range [][]string{{secretPath}, {"/etc/passwd"}, {dl + "/../../../../" + secretPath}} {
			p, _ := json.Marshal(map[string]any{"nodeId": q.NodeID, "files": files})
			r.refused(page, "DOM.setFileInputFiles", string(p))
		}
		if got := r.eval(page, "document.getElementById('f').files.length"); got != "0" {
			t.Fatalf("input has %s files", got)
		}
		// A symlink into the download directory does not help either.
		if err := os.Symlink(secretPath, filepath.Join(dl, "link.txt")); err != nil {
			t.Fatal(err)
		}
		r.refused(page, "DOM.setFileInputFiles", fmt.Sprintf(`{"nodeId":%d,"files":[%q]}`, q.NodeID, filepath.Join(dl, "link.txt")))
		_ = os.Remove(filepath.Join(dl, "link.txt"))
		r.refused(page, "Input.dispatchDragEvent", fmt.Sprintf(`{"type":"dragEnter","x":5,"y":5,"data":{"items":[],"files":[%q],"dragOperationsMask":1}}`, secretPath))

		upload := filepath.Join(dl, "upload.txt")
		if err := os.WriteFile(upload, []byte("from the download dir"), 0o644); err != nil {
			t.Fatal(err)
		}
		r.ok(page, "DOM.setFileInputFiles", fmt.Sprintf(`{"nodeId":%d,"files":[%q]}`, q.NodeID, upload), nil)
		if got := r.eval(page, "(async () => { const f = document.getElementById('f').files[0]; return f.name + ':' + await f.text() })()"); got != `"upload.txt:from the download dir"` {
			t.Fatalf("uploaded %s", got)
		}
	})

	t.Run("download path", func(t *testing.T) {
		r.t = t
		evil := filepath.Join(os.TempDir(), "evil-"+randomHex(t))
		t.Cleanup(func() { os.RemoveAll(evil) })
		m := r.send("", "Browser.setDownloadBehavior", fmt.Sprintf(`{"behavior":"allowAndName","downloadPath":%q,"eventsEnabled":true}`, evil))
		if m.Error != nil {
			t.Fatalf("setDownloadBehavior: %+v", m.Error)
		}
		_ = r.send(page, "Page.navigate", fmt.Sprintf(`{"url":%q}`, web.URL+"/report")) // the download aborts the navigation
		begin := r.event("Browser.downloadWillBegin", nil)
		var b struct{ GUID string }
		_ = json.Unmarshal(begin.Params, &b)
		r.event("Browser.downloadProgress", func(m cdpMsg) bool {
			var p struct{ GUID, State string }
			_ = json.Unmarshal(m.Params, &p)
			return p.GUID == b.GUID && p.State != "inProgress"
		})
		got, err := os.ReadFile(filepath.Join(dl, b.GUID))
		if err != nil || string(got) != "quarterly numbers" {
			t.Fatalf("download in the session's dir: %q %v", got, err)
		}
		if entries, err := os.ReadDir(evil); err == nil && len(entries) > 0 {
			t.Fatalf("%s has %d entries", evil, len(entries))
		}

		// Chromium's "default" saves into the browser user's ~/Downloads,
		// which every session shares; it becomes "allow" into the
		// session's directory.
		r.ok("", "Browser.setDownloadBehavior", `{"behavior":"default","eventsEnabled":true}`, nil)
		name := "default-" + randomHex(t) + ".txt"
		_ = r.send(page, "Page.navigate", fmt.Sprintf(`{"url":%q}`, web.URL+"/report?name="+name))
		r.event("Browser.downloadProgress", func(m cdpMsg) bool {
			var p struct{ State string }
			_ = json.Unmarshal(m.Params, &p)
			return p.State != "inProgress"
		})
		if got, err := os.ReadFile(filepath.Join(dl, name)); err != nil || string(got) != "quarterly numbers" {
			t.Fatalf("default download in the session's dir: %q %v", got, err)
		}
		if home, err := os.UserHomeDir(); err == nil {
			if _, err := os.Stat(filepath.Join(home, "Downloads", name)); err == nil {
				t.Fatalf("download in %s/Downloads", home)
			}
		}
		r.ok("", "Browser.setDownloadBehavior", fmt.Sprintf(`{"behavior":"allow","downloadPath":%q}`, dl), nil)
	})

	t.Run("network route", func(t *testing.T) {
		r.t = t
		r.refused("", "Target.createBrowserContext", `{"proxyServer":"direct://"}`)
		r.refused("", "Target.createBrowserContext", `{"proxyServer":""}`)
		r.refused("", "Target.createBrowserContext", `{"proxyServer":"http://127.0.0.1:1","proxyBypassList":"*"}`)
		var bc struct{ BrowserContextID string }
		r.ok("", "Target.createBrowserContext", `{"disposeOnDetach":true}`, &bc)
		var created struct{ TargetID string }
		r.ok("", "Target.createTarget", fmt.Sprintf(`{"url":%q,"browserContextId":%q}`, web.URL+"/title", bc.BrowserContextID), &created)
		r.ok("", "Target.disposeBrowserContext", fmt.Sprintf(`{"browserContextId":%q}`, bc.BrowserContextID), nil)
		r.refused("", "Target.setRemoteLocations", `{"locations":[{"host":"10.1.2.3","port":9222}]}`)
	})

	t.Run("privileges", func(t *testing.T) {
		r.t = t
		r.refused("", "Target.exposeDevToolsProtocol", fmt.Sprintf(`{"targetId":%q}`, targetID))
		if got := r.eval(page, "typeof window.cdp"); got != `"undefined"` {
			t.Fatalf("window.cdp is %s", got)
		}
		r.refused("", "Extensions.loadUnpacked", `{"path":"/tmp"}`)
		r.refused("", "Browser.getBrowserCommandLine", "")
		// The legacy, non-flattened channel: nested commands pass the same
		// rules.
		var legacy struct{ SessionID string }
		r.ok("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":false}`, targetID), &legacy)
		nested := func(id int, method, params string) string {
			b, _ := json.Marshal(fmt.Sprintf(`{"id":%d,"method":%q,"params":%s}`, id, method, params))
			return fmt.Sprintf(`{"sessionId":%q,"message":%s}`, legacy.SessionID, b)
		}
		r.refused("", "Target.sendMessageToTarget", nested(1, "Page.navigate", fmt.Sprintf(`{"url":%q}`, secretURL)))
		r.refused("", "Target.sendMessageToTarget", nested(2, "Target.exposeDevToolsProtocol", fmt.Sprintf(`{"targetId":%q}`, targetID)))
		r.ok("", "Target.sendMessageToTarget", nested(3, "Runtime.evaluate", `{"expression":"6*7","returnByValue":true}`), nil)
		ev := r.event("Target.receivedMessageFromTarget", func(m cdpMsg) bool { return strings.Contains(string(m.Params), `\"id\":3`) })
		if !strings.Contains(string(ev.Params), `\"value\":42`) {
			t.Fatalf("nested evaluate: %s", ev.Params)
		}
		r.ok("", "Target.detachFromTarget", fmt.Sprintf(`{"sessionId":%q}`, legacy.SessionID), nil)
	})

	t.Run("garbage", func(t *testing.T) {
		r.t = t
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, msg := range []string{
			`{"id":900,"method":"Page.navigate","params":{"url":"file:///etc/passwd","url":"https://a.test/"},"sessionId":"` + page + `"}`,
			`{"id":901,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}`,
			`{"method":"Page.navigate","params":{"url":"file:///etc/passwd"},"sessionId":"` + page + `"}`,
		} {
			if err := r.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		// Dropped without an answer: the next answer is the next command's.
		if got := r.eval(page, "location.protocol"); got != `"http:"` {
			t.Fatalf("after garbage the page is at %s", got)
		}
	})

	t.Run("page endpoint", func(t *testing.T) {
		r.t = t
		base, query, _ := strings.Cut(s.ConnectURL, "?")
		p := dialCDP(t, base+"/page/"+targetID+"?"+query)
		p.refused("", "Page.navigate", fmt.Sprintf(`{"url":%q}`, secretURL))
		p.refused("", "DOM.setFileInputFiles", fmt.Sprintf(`{"nodeId":1,"files":[%q]}`, secretPath))
		if got := p.eval("", "document.title"); got != `"fixture"` {
			t.Fatalf("page endpoint title %s", got)
		}
	})

	t.Run("refusals are logged", func(t *testing.T) {
		r.t = t
		var logs []cdp.Entry
		st.call(t, "GET", "/v1/sessions/"+s.ID+"/logs", nil, &logs)
		for _, e := range logs {
			if e.Method == "Target.exposeDevToolsProtocol" && e.Response != nil && strings.Contains(e.Response.RawBody, "refused") {
				return
			}
		}
		t.Fatalf("no logged refusal among %d entries", len(logs))
	})
	st.release(t, s.ID)
}

// browserUITargets asks the session's browser directly, on its own
// DevTools endpoint (which no tenant reaches), for the ids of its
// browser-UI targets (chrome://omnibox-popup in every window).
func browserUITargets(t *testing.T, st *stack, id string) []string {
	t.Helper()
	b := st.launched.byDownloadDir(t, sessionDownloadDir(t, st, id))
	resp, err := b.HTTPClient().Get("http://devtools.invalid/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ ID, Type, URL string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range list {
		if l.Type == "browser_ui" || strings.HasPrefix(l.URL, "chrome:") {
			ids = append(ids, l.ID)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("the browser has no browser-UI target: %+v", list)
	}
	return ids
}

// noBrowserUI fails when a target info or event names browser UI.
func noBrowserUI(t *testing.T, what string, raw []byte) {
	t.Helper()
	if s := string(raw); strings.Contains(s, `"browser_ui"`) || strings.Contains(s, `"url":"chrome:`) || strings.Contains(s, `"type":"other"`) {
		t.Fatalf("%s shows browser UI: %s", what, s)
	}
}

// TestCDPBrowserInternals plays a tenant who, over raw CDP, reaches for
// the browser rather than its pages: scripting Chromium's own WebUI (the
// omnibox popup, a chrome:// page with Mojo access to the browser
// process), reading the host's process ids, and having a trace written to
// the host's disk. Each attempt is refused; attaching to pages, auto-attach
// and tracing over CDP keep working.
func TestCDPBrowserInternals(t *testing.T) {
	st := newStack(t, 1, sessions.Options{})
	web := attackSite(t, "about:blank")
	s := st.create(t, nil)
	ui := browserUITargets(t, st, s.ID)
	base, query, _ := strings.Cut(s.ConnectURL, "?")

	t.Run("browser UI attach", func(t *testing.T) {
		// A connection that has seen nothing: the ids come from elsewhere.
		r := dialCDP(t, s.ConnectURL)
		for _, id := range ui {
			r.refused("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":true}`, id))
			r.refused("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":false}`, id))
			r.refused("", "Target.activateTarget", fmt.Sprintf(`{"targetId":%q}`, id))
			r.refused("", "Target.getTargetInfo", fmt.Sprintf(`{"targetId":%q}`, id))
			r.refused("", "Target.sendMessageToTarget", fmt.Sprintf(`{"targetId":%q,"message":"{\"id\":1,\"method\":\"Runtime.evaluate\",\"params\":{\"expression\":\"location.href\"}}"}`, id))
		}
		for _, ev := range r.events {
			noBrowserUI(t, ev.Method, ev.Params)
		}
		// Pages are still attached to.
		_, page := r.newPage()
		r.navigate(page, web.URL+"/title", "fixture")
	})

	t.Run("browser UI hidden", func(t *testing.T) {
		r := dialCDP(t, s.ConnectURL)
		m := r.send("", "Target.getTargets", "")
		noBrowserUI(t, "Target.getTargets", m.Result)
		if !strings.Contains(string(m.Result), `"type":"page"`) {
			t.Fatalf("Target.getTargets shows no page: %s", m.Result)
		}
		r.ok("", "Target.setDiscoverTargets", `{"discover":true}`, nil)
		// As Playwright and Puppeteer do: the browser's auto-attach, here
		// with a new window (whose omnibox popup starts paused).
		r.ok("", "Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`, nil)
		var created struct{ TargetID string }
		r.ok("", "Target.createTarget", `{"url":"about:blank","newWindow":true}`, &created)
		ev := r.event("Target.attachedToTarget", func(m cdpMsg) bool { return strings.Contains(string(m.Params), created.TargetID) })
		var a struct{ SessionID string }
		_ = json.Unmarshal(ev.Params, &a)
		r.ok(a.SessionID, "Runtime.runIfWaitingForDebugger", "", nil)
		r.ok(a.SessionID, "Runtime.enable", "", nil)
		r.navigate(a.SessionID, web.URL+"/title", "fixture")
		r.ok("", "Target.setAutoAttach", `{"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`, nil)
		for _, ev := range r.events {
			noBrowserUI(t, ev.Method, ev.Params)
		}
		// Nothing of the new window's UI stays paused or attached: the
		// browser still answers, and its UI targets are not attached.
		var v struct{ Product string }
		r.ok("", "Browser.getVersion", "", &v)
		for _, id := range browserUITargets(t, st, s.ID) {
			r.refused("", "Target.attachToTarget", fmt.Sprintf(`{"targetId":%q,"flatten":true}`, id))
		}
	})

	t.Run("browser UI page endpoint", func(t *testing.T) {
		for _, id := range ui {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			c, resp, err := websocket.Dial(ctx, base+"/page/"+id+"?"+query, nil)
			cancel()
			if err == nil {
				c.CloseNow()
				t.Fatalf("page endpoint of browser UI %s connected", id)
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("page endpoint of browser UI %s: %v %v", id, resp, err)
			}
		}
		r := dialCDP(t, s.ConnectURL)
		targetID, _ := r.newPage()
		p := dialCDP(t, base+"/page/"+targetID+"?"+query)
		if got := p.eval("", "1 + 1"); got != "2" {
			t.Fatalf("page endpoint eval %s", got)
		}
	})

	t.Run("process ids", func(t *testing.T) {
		r := dialCDP(t, s.ConnectURL)
		r.refused("", "SystemInfo.getProcessInfo", "")
		r.refused("", "SystemInfo.getProcessInfo", "{}")
		var info struct{ GPU json.RawMessage }
		r.ok("", "SystemInfo.getInfo", "", &info)
	})

	t.Run("trace files", func(t *testing.T) {
		r := dialCDP(t, s.ConnectURL)
		out := filepath.Join(t.TempDir(), "trace.pftrace")
		cfg := func(file bool) string {
			pb := []byte{0x0a, 0x03, 0x08, 0x80, 0x08, 0x12, 0x0f, 0x0a, 0x0d, 0x0a, 0x0b}
			pb = append(pb, "track_event"...)
			if file {
				pb = append(pb, 0x40, 0x01, 0xea, 0x01, byte(len(out))) // write_into_file, output_path
				pb = append(pb, out...)
			}
			return base64.StdEncoding.EncodeToString(pb)
		}
		r.refused("", "Tracing.start", `{"transferMode":"ReturnAsStream","tracingBackend":"system"}`)
		r.refused("", "Tracing.start", fmt.Sprintf(`{"perfettoConfig":%q,"transferMode":"ReturnAsStream"}`, cfg(true)))
		r.refused("", "Tracing.start", fmt.Sprintf(`{"perfettoConfig":%q,"transferMode":"ReportEvents","tracingBackend":"chrome"}`, cfg(true)))
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("a trace was written to %s", out)
		}
		// Tracing that returns the trace over CDP works.
		for _, params := range []string{
			`{"transferMode":"ReturnAsStream","traceConfig":{"includedCategories":["devtools.timeline"]}}`,
			fmt.Sprintf(`{"perfettoConfig":%q,"transferMode":"ReturnAsStream"}`, cfg(false)),
		} {
			r.ok("", "Tracing.start", params, nil)
			r.ok("", "Tracing.end", "", nil)
			ev := r.event("Tracing.tracingComplete", nil)
			var done struct{ Stream string }
			_ = json.Unmarshal(ev.Params, &done)
			if done.Stream == "" {
				t.Fatalf("no trace stream: %s", ev.Params)
			}
			r.ok("", "IO.read", fmt.Sprintf(`{"handle":%q}`, done.Stream), nil)
			r.ok("", "IO.close", fmt.Sprintf(`{"handle":%q}`, done.Stream), nil)
		}
	})
	st.release(t, s.ID)
}
