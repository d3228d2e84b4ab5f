package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// inspectFixture is the site a recorded session visits: /inspect logs to
// the console, throws, fetches /data.json (200) and /missing (404), and
// paints a purple page.
func inspectFixture(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/inspect":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><head><title>inspected</title><style>html,body{margin:0;height:100%;background:#8030c0;color:#fff;font:40px sans-serif}</style></head>
<body><p id="n">inspected page</p><script>
console.log("hello inspector", 42);
console.warn("careful <b>now</b>");
fetch("/data.json").then(function(r){return r.json()}).then(function(d){document.getElementById("n").textContent="got "+d.items;
  return fetch("/missing")}).then(function(){document.title="fetched";setTimeout(function(){throw new Error("boom after fetch")},0)});
</script></body></html>`)
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"items":`+strings.Repeat(" ", 3000)+`3}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConsoleWallcrawler signs in to the console with a Wallcrawler API
// key and inspects a finished session in Chromium: the list with its
// status, the lifecycle timeline, the console messages, the network
// requests with their status and size, the CDP log and its search, and
// the replay's frames. Another project's session and pages are 404s; a
// release without its CSRF token is refused, with it the session ends.
func TestConsoleWallcrawler(t *testing.T) {
	site := inspectFixture(t)
	s := startWallcrawlerServer(t, "--allow-networks", site.Listener.Addr().String())
	base := "http://" + s.api
	s.cli("wallcrawler", "project", "create", "--name", "Acme", "--id", "project_acme", "--concurrency", "3")
	s.cli("wallcrawler", "project", "create", "--name", "Rival", "--id", "project_rival")
	key := s.cli("wallcrawler", "key", "create", "--project", "project_acme")
	rivalKey := s.cli("wallcrawler", "key", "create", "--project", "project_rival")

	// Two contexts of Acme: one the first session persists, one empty.
	var persisted, empty struct {
		ID string `json:"id"`
	}
	if s.call(key, "POST", "/v1/contexts", map[string]any{"projectId": "project_acme"}, &persisted) != http.StatusCreated ||
		s.call(key, "POST", "/v1/contexts", map[string]any{"projectId": "project_acme"}, &empty) != http.StatusCreated {
		t.Fatal("create contexts")
	}
	// A session of Acme visits the fixture, then is released.
	x := s.createSessionWith(key, map[string]any{"browserSettings": map[string]any{"context": map[string]any{"id": persisted.ID, "persist": true}}})
	c := dialCDP(t, x.ConnectURL)
	cs, _ := c.attachPage()
	if got := c.navigate(cs, site.URL+"/inspect"); !strings.Contains(got, "inspected") && !strings.Contains(got, "got 3") {
		t.Fatalf("fixture: %q", got)
	}
	waitFor(t, "the page's fetches", func() bool { return c.eval(cs, "document.title") == "fetched" })
	// The DOM recording reaches quarry through the page's binding, a
	// little after the page changed. Its full snapshot is taken when the
	// recorder's script first runs in the document, which under load may
	// be after the page's own script wrote its text; a change the tenant
	// makes after that is an incremental snapshot.
	domRecorded := func(what string, types map[int]bool, text string) {
		t.Helper()
		waitFor(t, what, func() bool {
			var evs []struct {
				Type int             `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			s.call(key, "GET", "/v1/sessions/"+x.ID+"/recording", nil, &evs)
			for _, e := range evs {
				if types[e.Type] && strings.Contains(string(e.Data), text) {
					return true
				}
			}
			return false
		})
	}
	domRecorded("the DOM recording of the fetched text", map[int]bool{2: true, 3: true}, "got 3")
	c.eval(cs, `document.getElementById("n").textContent = "got 3, then 4"`)
	domRecorded("the DOM recording of the tenant's change", map[int]bool{3: true}, "got 3, then 4")
	if code := s.call(key, "POST", "/v1/sessions/"+x.ID, map[string]any{"status": "REQUEST_RELEASE"}, nil); code != 200 {
		t.Fatalf("release: %d", code)
	}
	// A session of the rival, and one more of Acme left running.
	rival := s.createSession(rivalKey)
	running := s.createSession(key)

	ctx := consoleBrowser(t)
	shots := t.TempDir()
	if os.Getenv("QUARRY_CONSOLE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "..", "docs", "img")
	}
	shot := func(name string, full bool) {
		t.Helper()
		var png []byte
		var err error
		if full {
			png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		} else {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	do("sign in", chromedp.Navigate(base+"/console/signin"),
		chromedp.SetValue(chromedp.CSS("#realm"), "wallcrawler"),
		chromedp.SendKeys(chromedp.CSS("#credential"), key),
		chromedp.Submit(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#nav-wc")),
		chromedp.Click(chromedp.CSS("#nav-wc")),
		chromedp.WaitVisible(chromedp.CSS("#sessions")))
	list := text("#sessions")
	for _, want := range []string{x.ID, running.ID, "COMPLETED", "RUNNING"} {
		if !strings.Contains(list, want) {
			t.Errorf("sessions list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, rival.ID) {
		t.Errorf("the rival's session is listed")
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#usage-chart rect").length`)); err != nil || n != 14 {
		t.Errorf("usage chart: %d bars, %v", n, err)
	}
	// The chart's axis labels are readable: at least 10 px tall on a
	// desktop screen, and no two overlap.
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[][]float64](`Array.prototype.map.call(document.querySelectorAll("#usage-chart text"),
		function(e){var r=e.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom]})`))
	if err != nil || len(labels) < 8 {
		t.Fatalf("chart labels: %v %v", labels, err)
	}
	for i, a := range labels {
		if a[3]-a[1] < 10 {
			t.Errorf("chart label %d is %.1f px tall", i, a[3]-a[1])
		}
		for _, b := range labels[i+1:] {
			if a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3] {
				t.Errorf("chart labels overlap: %v %v", a, b)
			}
		}
	}
	do("filter", chromedp.SetValue(chromedp.CSS("#status"), "COMPLETED"), chromedp.Submit(chromedp.CSS("#filters")),
		chromedp.WaitReady(chromedp.CSS(`#status option[selected]`)))
	if list := text("#sessions"); !strings.Contains(list, x.ID) || strings.Contains(list, running.ID) {
		t.Errorf("COMPLETED sessions:\n%s", list)
	}
	shot("console-wallcrawler-sessions.png", true)

	do("session page", chromedp.Click(chromedp.CSS(`#sessions a[href$="`+x.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS("#events")))
	events := text("#events")
	for _, want := range []string{"PROVISIONING", "READY", "TERMINATING", "STOPPED", "REQUEST_RELEASE"} {
		if !strings.Contains(events, want) {
			t.Errorf("timeline lacks %q:\n%s", want, events)
		}
	}
	do("console tab", chromedp.Click(chromedp.CSS("#tab-console")), chromedp.WaitVisible(chromedp.CSS("#console-messages")))
	if cur := text(`#tabs [aria-current="page"]`); !strings.HasPrefix(cur, "Console") {
		t.Errorf("current tab: %q", cur)
	}
	consoleText := text("#console-messages")
	for _, want := range []string{"hello inspector 42", "careful <b>now</b>", "boom after fetch", "warning"} {
		if !strings.Contains(consoleText, want) {
			t.Errorf("console lacks %q:\n%s", want, consoleText)
		}
	}
	do("network tab", chromedp.Click(chromedp.CSS("#tab-network")), chromedp.WaitVisible(chromedp.CSS("#requests")))
	network := text("#requests")
	for _, want := range []string{"GET " + site.URL + "/inspect", site.URL + "/data.json", "200", site.URL + "/missing", "404", "KiB"} {
		if !strings.Contains(network, want) {
			t.Errorf("network lacks %q:\n%s", want, network)
		}
	}
	// The replay: its last frame is the purple page, and the player steps
	// through the frames.
	do("replay tab", chromedp.Click(chromedp.CSS("#tab-replay")), chromedp.WaitVisible(chromedp.CSS("#player")))
	// The DOM replay: rrweb's Replayer rebuilds the page as it last was,
	// its text included (written by the page's script after its fetch).
	do("DOM replay", chromedp.WaitVisible(chromedp.CSS(`#dom-player[data-ready="1"]`)))
	replayed := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var f=document.querySelector("#dom-stage iframe");
			return f && f.contentDocument && f.contentDocument.body ? f.contentDocument.body.innerText : ""})()`))
		return s
	}
	waitFor(t, "the DOM replay to show the page's text", func() bool { return strings.Contains(replayed(), "got 3, then 4") })
	if bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#dom-stage iframe").contentDocument.body).backgroundColor`)); err != nil || bg != "rgb(128, 48, 192)" {
		t.Errorf("the DOM replay lacks the page's style: background %q %v", bg, err)
	}
	shot("console-wallcrawler-session.png", false)
	do("DOM replay from the start", chromedp.SetValue(chromedp.CSS("#dom-pos"), "0"), chromedp.Click(chromedp.CSS("#dom-play")))
	waitFor(t, "the DOM replay to play to its end", func() bool {
		return strings.Contains(text("#dom-status"), " s of ") && strings.Contains(replayed(), "got 3, then 4")
	})
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`new Promise(function(ok){var i=document.getElementById("replay-frame");
		if(i.complete){ok(i.naturalWidth)}else{i.onload=function(){ok(i.naturalWidth)};i.onerror=function(){ok(-1)}}})`, chromedp.EvalAwaitPromise))
	if err != nil || width <= 0 {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("replay").nextElementSibling.outerHTML`))
		t.Fatalf("replay frame: width %d, %v\n%s", width, err, page)
	}
	pixel, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`(function(){var i=document.getElementById("replay-frame"),c=document.createElement("canvas");
		c.width=i.naturalWidth;c.height=i.naturalHeight;var g=c.getContext("2d");g.drawImage(i,0,0);
		var p=g.getImageData(c.width/2,c.height-30,1,1).data;return [p[0],p[1],p[2],c.width,c.height]})()`))
	if err != nil || len(pixel) != 5 || pixel[0] < 100 || pixel[0] > 160 || pixel[1] > 80 || pixel[2] < 160 {
		t.Errorf("the replay's last frame is not the fixture page: pixel and size %v %v", pixel, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`parseInt(document.getElementById("player").dataset.frames,10)`)); err != nil || n < 1 {
		t.Errorf("replay frames: %d %v", n, err)
	}
	do("replay player", chromedp.SetValue(chromedp.CSS("#replay-pos"), "0"), chromedp.Click(chromedp.CSS("#replay-play")))
	waitFor(t, "the player to move", func() bool { return strings.HasPrefix(text("#replay-time"), "Frame ") })

	// The CDP log and its search.
	do("CDP log tab", chromedp.Click(chromedp.CSS("#tab-cdp")), chromedp.WaitVisible(chromedp.CSS("#cdp-log")))
	if got := text("#cdp-log"); !strings.Contains(got, "Page.navigate") || !strings.Contains(got, "Target.attachToTarget") {
		t.Errorf("CDP log:\n%s", got)
	}
	do("search the CDP log", chromedp.SendKeys(chromedp.CSS("#q"), "navigate"), chromedp.Submit(chromedp.CSS("#log-search")),
		chromedp.WaitVisible(chromedp.CSS(`#q[value="navigate"]`)))
	if got := text("#cdp-log"); !strings.Contains(got, "Page.navigate") || !strings.Contains(got, "/inspect") || strings.Contains(got, "Target.attachToTarget") {
		t.Errorf("CDP log searched for navigate:\n%s", got)
	}
	do("downloads tab", chromedp.Click(chromedp.CSS("#tab-downloads")), chromedp.WaitVisible(chromedp.CSS("#download-files")))
	if got := text("#download-files"); !strings.Contains(got, "no files") {
		t.Errorf("downloads of a session that downloaded nothing:\n%s", got)
	}
	// The page is no longer one long column: every tab fits in a few
	// screens.
	for _, tab := range []string{"", "/replay", "/console", "/network", "/cdp", "/downloads"} {
		do("open tab "+tab, chromedp.Navigate(base+"/console/wallcrawler/project_acme/sessions/"+x.ID+tab), chromedp.WaitVisible(chromedp.CSS("#tabs")))
		if h, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollHeight`)); err != nil || h > 2500 {
			t.Errorf("tab %q is %d px tall (%v)", tab, h, err)
		}
	}

	// Raw HTTP with the same key: another project's pages and sessions are
	// 404s; the release form needs its CSRF token.
	hc := httpSignIn(t, base, "wallcrawler", key)
	acme := base + "/console/wallcrawler/project_acme"
	for _, u := range []string{
		base + "/console/wallcrawler/project_rival/",
		base + "/console/wallcrawler/project_rival/sessions/" + rival.ID,
		acme + "/sessions/" + rival.ID,
		acme + "/sessions/" + rival.ID + "/frames/0.jpg",
		acme + "/sessions/" + rival.ID + "/downloads.zip",
		base + "/console/wallcrawler/project_rival/contexts",
		acme + "/sessions/" + x.ID + "/frames/100000.jpg",
		acme + "/sessions/" + x.ID + "/bogus",
		acme + "/sessions/" + x.ID + "/",
		acme + "/sessions/" + rival.ID + "/console",
		acme + "/sessions/" + rival.ID + "/downloads",
	} {
		get(t, hc, u, http.StatusNotFound)
	}
	get(t, hc, acme+"/sessions/"+x.ID+"/frames/0.jpg", http.StatusOK)
	get(t, hc, acme+"/sessions/"+rival.ID+"/dom.json", http.StatusNotFound)
	get(t, hc, base+"/console/wallcrawler/project_rival/sessions/"+rival.ID+"/dom.json", http.StatusNotFound)
	if dom := get(t, hc, acme+"/sessions/"+x.ID+"/dom.json", http.StatusOK); !strings.Contains(dom, `"type":2`) || !strings.Contains(dom, "got 3") {
		t.Errorf("dom.json lacks a full snapshot with the page's text: %.300s", dom)
	}
	// The API serves the DOM recording (rrweb meta, full and incremental
	// snapshot events) beside the frames, in rrweb's envelope.
	var recorded []struct {
		Type      int             `json:"type"`
		SessionID string          `json:"sessionId"`
		Timestamp int64           `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if code := s.call(key, "GET", "/v1/sessions/"+x.ID+"/recording", nil, &recorded); code != 200 {
		t.Fatalf("recording: %d", code)
	}
	types := map[int]int{}
	for _, e := range recorded {
		types[e.Type]++
		if e.SessionID != x.ID || e.Timestamp <= 0 || len(e.Data) == 0 {
			t.Errorf("recording event %+v", e)
			break
		}
	}
	if types[2] == 0 || types[3] == 0 || types[4] == 0 || types[5] == 0 {
		t.Errorf("recording event types %v: want meta (4), full (2) and incremental (3) snapshots and frames (5)", types)
	}
	if code := s.call(rivalKey, "GET", "/v1/sessions/"+x.ID+"/recording", nil, nil); code != http.StatusNotFound {
		t.Errorf("another project's key reads the recording: %d", code)
	}
	// Each tab is its own server-rendered URL, whole without JavaScript.
	for tab, want := range map[string]string{"": `id="events"`, "/replay": `id="replay-frame"`, "/console": "hello inspector 42",
		"/network": "/data.json", "/cdp": "Page.navigate", "/downloads": `href="/console/wallcrawler/project_acme/sessions/` + x.ID + `/downloads.zip"`} {
		if page := get(t, hc, acme+"/sessions/"+x.ID+tab, http.StatusOK); !strings.Contains(page, want) || !strings.Contains(page, `id="tabs"`) {
			t.Errorf("tab %q without JavaScript lacks %s", tab, want)
		}
	}
	ctxPage := get(t, hc, acme+"/contexts", http.StatusOK)
	if !strings.Contains(ctxPage, persisted.ID) || !strings.Contains(ctxPage, empty.ID) || !strings.Contains(ctxPage, "none yet") ||
		!regexp.MustCompile(`[0-9.]+ (KiB|MiB)</td>`).MatchString(ctxPage) {
		t.Errorf("contexts page:\n%s", ctxPage)
	}
	page := get(t, hc, acme+"/sessions/"+running.ID, http.StatusOK)
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	post := func(u string, form url.Values) int {
		t.Helper()
		res, err := noRedirect.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(acme+"/sessions/"+running.ID+"/release", url.Values{}); code != http.StatusForbidden {
		t.Errorf("release without CSRF token: %d", code)
	}
	if code := post(acme+"/sessions/"+running.ID+"/release", url.Values{"csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("release with a forged CSRF token: %d", code)
	}
	var now wcSession
	if s.call(key, "GET", "/v1/sessions/"+running.ID, nil, &now); now.Status != "RUNNING" {
		t.Fatalf("a refused release ended the session: %s", now.Status)
	}
	if code := post(acme+"/sessions/"+rival.ID+"/release", url.Values{"csrf": {csrfOf(t, page)}}); code != http.StatusNotFound {
		t.Errorf("release of the rival's session: %d", code)
	}
	if code := post(acme+"/sessions/"+running.ID+"/release", url.Values{"csrf": {csrfOf(t, page)}}); code != http.StatusSeeOther {
		t.Errorf("release with its CSRF token: %d", code)
	}
	if s.call(key, "GET", "/v1/sessions/"+running.ID, nil, &now); now.Status != "COMPLETED" {
		t.Errorf("released from the console: %s", now.Status)
	}
	if s.call(rivalKey, "GET", "/v1/sessions/"+rival.ID, nil, &now); now.Status != "RUNNING" {
		t.Errorf("the rival's session: %s", now.Status)
	}

	// A revoked key's console session ends at its next request.
	s.cli("wallcrawler", "key", "revoke", "--key", key)
	res, err := noRedirect.Get(acme + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/signin") {
		t.Errorf("after revoking the key: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestConsoleWallcrawlerLive embeds the live view of a running session on
// its console page: the session's page (the fixture's green button) is
// painted in the frame, and a click in the frame reaches the page (its
// title, read through the session's own CDP connection, changes). The
// page's HTML holds neither the API key nor a live-view token; the
// frame's console URL needs the console session, answers 404 for another
// project's session and for an ended one, and an ended session's page
// has no live view.
func TestConsoleWallcrawlerLive(t *testing.T) {
	site := liveFixture(t)
	s := startWallcrawlerServer(t, "--allow-networks", site.Listener.Addr().String())
	base := "http://" + s.api
	s.cli("wallcrawler", "project", "create", "--name", "Live", "--id", "project_live")
	s.cli("wallcrawler", "project", "create", "--name", "Rival", "--id", "project_rival")
	key := s.cli("wallcrawler", "key", "create", "--project", "project_live")
	rivalKey := s.cli("wallcrawler", "key", "create", "--project", "project_rival")
	x := s.createSession(key)
	rival := s.createSession(rivalKey)
	c := dialCDP(t, x.ConnectURL)
	cs, _ := c.attachPage()
	if got := c.navigate(cs, site.URL+"/button"); !strings.Contains(got, "Click me") {
		t.Fatalf("fixture page: %q", got)
	}

	d := newDriver(t, base)
	d.signIn("wallcrawler", key)
	page := "/console/wallcrawler/project_live/sessions/" + x.ID
	d.open(page, "#live-frame")
	rect, err := chromedp.Run(d.ctx, chromedp.Evaluate[[]float64](`(function(){var f=document.getElementById("live-frame");
		f.scrollIntoView();var r=f.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom]})()`))
	if err != nil || len(rect) != 4 || rect[2]-rect[0] < 300 {
		t.Fatalf("live frame: %v %v", rect, err)
	}
	inner := [4]int{int(rect[0]) + 10, int(rect[1]) + 10, int(rect[2]) - 10, int(rect[3]) - 10}
	painted := func(col rgb) bool {
		png, err := chromedp.Run(d.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		return share(t, png, inner[0], inner[1], inner[2], inner[3], col) > 0.6
	}
	waitFor(t, "the session's page painted in the console's live view", func() bool { return painted(rgb{0, 0xc0, 0}) })
	d.shot("console-wallcrawler-live.png")
	if _, err := chromedp.Run(d.ctx, chromedp.MouseClickXY((rect[0]+rect[2])/2, (rect[1]+rect[3])/2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the click in the console to reach the page", func() bool { return c.eval(cs, "document.title") == "clicked 1" })
	waitFor(t, "the page's new colour in the live view", func() bool { return painted(rgb{0xff, 0xc0, 0}) })

	hc := httpSignIn(t, base, "wallcrawler", key)
	html := get(t, hc, base+page, http.StatusOK)
	if strings.Contains(html, key) || strings.Contains(html, "token=") || !strings.Contains(html, `src="`+page+`/live"`) {
		t.Errorf("session page: a credential in the HTML, or no live frame:\n%s", html)
	}
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	location := func(u string) (int, string) {
		t.Helper()
		res, err := noRedirect.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Location")
	}
	if code, loc := location(base + page + "/live"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/wallcrawler/live/"+x.ID+"?token=") {
		t.Errorf("live: %d %s", code, loc)
	}
	if code, loc := location(base + page + "/live?mode=view"); code != http.StatusSeeOther || !strings.Contains(loc, "token=") {
		t.Errorf("view-only live: %d %s", code, loc)
	}
	anon := &http.Client{CheckRedirect: noRedirect.CheckRedirect}
	if res, err := anon.Get(base + page + "/live"); err != nil || res.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(res.Header.Get("Location"), "/console/signin") {
		t.Errorf("live without a console session: %v %v", res, err)
	}
	get(t, hc, base+"/console/wallcrawler/project_live/sessions/"+rival.ID+"/live", http.StatusNotFound)
	get(t, hc, base+"/console/wallcrawler/project_rival/sessions/"+rival.ID+"/live", http.StatusNotFound)

	if code := s.call(key, "POST", "/v1/sessions/"+x.ID, map[string]any{"status": "REQUEST_RELEASE"}, nil); code != 200 {
		t.Fatalf("release: %d", code)
	}
	get(t, hc, base+page+"/live", http.StatusNotFound)
	if html := get(t, hc, base+page, http.StatusOK); strings.Contains(html, `id="live-frame"`) {
		t.Errorf("an ended session's page frames a live view")
	}
}
