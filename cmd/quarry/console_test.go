package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// consoleBrowser returns a chromedp context of a headless Chromium of its
// own, or skips the test when none is installed.
func consoleBrowser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no chromium on PATH")
	}
	// No back/forward cache: Back reloads the page from the server, as
	// the tests of Back after a write need (and as no-store pages do).
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 800),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,BackForwardCache"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// Accept the confirm dialogs of console.js.
	err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// httpSignIn signs in through the console's form with a plain HTTP client
// and returns the client (its cookie jar holds the session).
func httpSignIn(t *testing.T, base, realm, cred string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	body := get(t, hc, base+"/console/signin", 200)
	m := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no nonce in the sign-in form: %s", body)
	}
	resp, err := hc.PostForm(base+"/console/signin", url.Values{"nonce": {m[1]}, "realm": {realm}, "credential": {cred}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `id="who"`) {
		t.Fatalf("sign-in as %s: %d %s", realm, resp.StatusCode, b)
	}
	return hc
}

func get(t *testing.T, hc *http.Client, u string, want int) string {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d: %s", u, resp.StatusCode, want, b)
	}
	return string(b)
}

// csrfOf returns the CSRF token of the first form of page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in %s", body)
	}
	return m[1]
}

// TestConsole drives the console in Chromium against `quarry serve`: an
// operator signs in with a token minted by `quarry admin token create`,
// explores the store, creates a table and an item, edits it, sees the
// store's validation message, deletes it; a Checks user signs in with their
// token and finds the operator areas missing; forms without their CSRF
// token are refused; signing out ends the session.
func TestConsole(t *testing.T) {
	s := startChecksServer(t)
	base := "http://" + s.api
	var out, errs syncBuffer
	if code := run(context.Background(), []string{"admin", "token", "create", "--name", "alice", "--data-dir", s.dir}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("admin token create: exit %d: %s", code, errs.String())
	}
	opToken := strings.TrimSpace(out.String())
	if !strings.HasPrefix(opToken, "qop_") || !strings.Contains(errs.String(), "alice") {
		t.Fatalf("admin token create printed %q, %q", opToken, errs.String())
	}
	userToken := s.createUser("bob@example.com")

	ctx := consoleBrowser(t)
	shots := t.TempDir()
	if os.Getenv("QUARRY_CONSOLE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "..", "docs", "img")
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return s
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	submit := submitAndWait // clicks a submit button, waits for the next page
	// A wrong token is refused on the form; the operator token signs in.
	run("wrong token", chromedp.Navigate(base+"/"),
		chromedp.SetValue(chromedp.CSS("#realm"), "operator"),
		chromedp.SendKeys(chromedp.CSS("#credential"), "qop_wrong"),
		submit("#signin button"),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text("#error"); !strings.Contains(got, "not valid") {
		t.Errorf("wrong token: %q", got)
	}
	run("sign in", chromedp.SetValue(chromedp.CSS("#realm"), "operator"),
		chromedp.SendKeys(chromedp.CSS("#credential"), opToken),
		submit("#signin button"),
		chromedp.WaitVisible(chromedp.CSS("#who")))
	if got := text("#who"); !strings.Contains(got, "alice") || !strings.Contains(got, "operator") {
		t.Errorf("header says %q", got)
	}

	// The explorer lists the systems' tables with their key schema.
	run("explorer", chromedp.Click(chromedp.CSS(`a[href="/console/explorer/"]`)), chromedp.WaitVisible(chromedp.CSS("#tables")))
	tables := text("#tables")
	for _, want := range []string{"quarry-operator-tokens", "checks-USER", "email-index", "eecar-parts-table", "NEW_AND_OLD_IMAGES"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables page lacks %q:\n%s", want, tables)
		}
	}

	// Create a table through the form.
	run("create table", chromedp.SendKeys(chromedp.CSS("#name"), "console-demo"),
		chromedp.SendKeys(chromedp.CSS("#pk"), "pk"),
		chromedp.SendKeys(chromedp.CSS("#sk"), "n"),
		chromedp.SetValue(chromedp.CSS(`select[name=sktype]`), "N"),
		submit("#create-table button"),
		chromedp.WaitVisible(chromedp.CSS("#facts")))
	if got := text("#msg"); got != "Table created." {
		t.Errorf("after create table: %q", got)
	}
	if got := text("#indexes"); !strings.Contains(got, "pk S") || !strings.Contains(got, "n N") {
		t.Errorf("key schema shown: %q", got)
	}

	// Create an item, then edit it.
	setItem := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.SetValue(chromedp.CSS("#item"), js)
	}
	run("new item", chromedp.Click(chromedp.CSS("#new-item")), chromedp.WaitVisible(chromedp.CSS("#item-form")),
		setItem(`{"pk": {"S": "shop#1"}, "n": {"N": "1"}, "title": {"S": "first"}, "tags": {"SS": ["a", "b"]}}`),
		submit("#save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := text("#msg"); got != "Item saved." {
		t.Errorf("after save: %q", got)
	}
	edited := eval(`document.querySelector("#item").value`)
	if !strings.Contains(edited, `"first"`) {
		t.Fatalf("the saved item is not in the editor: %s", edited)
	}
	run("edit item", setItem(strings.Replace(edited, `"first"`, `"second"`, 1)),
		submit("#save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := eval(`document.querySelector("#item").value`); !strings.Contains(got, `"second"`) {
		t.Errorf("after the edit the editor holds %s", got)
	}
	// A second item, written as plain JSON.
	run("plain item", chromedp.Navigate(base+"/console/explorer/t/console-demo/item"), chromedp.WaitVisible(chromedp.CSS("#item-form")),
		chromedp.Click(chromedp.CSS(`input[name=format][value=plain]`)),
		setItem(`{"pk": "shop#1", "n": 2, "title": "plain", "price": 12.5}`),
		submit("#save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := eval(`document.querySelector("#item").value`); !strings.Contains(got, `"N": "12.5"`) {
		t.Errorf("the plain item reads back as %s", got)
	}

	// The store's own message for an item without its key, inline.
	run("bad item", chromedp.Navigate(base+"/console/explorer/t/console-demo/item"), chromedp.WaitVisible(chromedp.CSS("#item-form")),
		setItem(`{"pk": {"S": "shop#1"}, "title": {"S": "no sort key"}}`),
		submit("#save"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text("#error"); !strings.Contains(got, "ValidationException") {
		t.Errorf("bad item: %q", got)
	}
	if got := eval(`document.querySelector("#item").value`); !strings.Contains(got, "no sort key") {
		t.Errorf("the rejected text is not kept in the editor: %s", got)
	}

	// Scan, then Query with a sort key condition.
	run("scan", chromedp.Navigate(base+"/console/explorer/t/console-demo"), chromedp.WaitVisible(chromedp.CSS("#items")))
	items := text("#items")
	if !strings.Contains(items, "second") || !strings.Contains(items, "plain") || !strings.Contains(items, "12.5") {
		t.Errorf("scan shows:\n%s", items)
	}
	run("query", chromedp.Click(chromedp.CSS(`input[name=op][value=query]`)),
		chromedp.SendKeys(chromedp.CSS("#pkv"), "shop#1"),
		chromedp.SetValue(chromedp.CSS("#skop"), ">"),
		chromedp.SendKeys(chromedp.CSS("#sk"), "1"),
		submit("#query button"),
		chromedp.WaitVisible(chromedp.CSS("#count")))
	if got := text("#items"); !strings.Contains(got, "plain") || strings.Contains(got, "second") {
		t.Errorf("query n > 1 shows:\n%s", got)
	}
	if got := text("#count"); !strings.HasPrefix(got, "page 1: 1 shown") {
		t.Errorf("query count %q", got)
	}
	run("scan for the screenshot", chromedp.Navigate(base+"/console/explorer/t/console-demo?op=scan"), chromedp.WaitVisible(chromedp.CSS("#items")), shot("console-explorer.png"))

	// Delete the first item: console.js asks, the test's browser accepts.
	run("delete item", chromedp.Click(chromedp.CSS("#items a.key")), chromedp.WaitVisible(chromedp.CSS("#delete-item")),
		submit("#delete-item"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := text("#msg"); got != "Item deleted." {
		t.Errorf("after delete: %q", got)
	}
	if got := text("#count"); !strings.HasPrefix(got, "page 1: 1 shown") {
		t.Errorf("after delete, %q", got)
	}

	// A state-changing form posted without its CSRF token, or with another
	// session's, is refused (raw HTTP, the session cookie sent).
	op := httpSignIn(t, base, "operator", opToken)
	other := httpSignIn(t, base, "operator", opToken)
	otherCSRF := csrfOf(t, get(t, other, base+"/console/explorer/", 200))
	for _, form := range []url.Values{
		{"name": {"csrf-victim"}, "pk": {"id"}, "pktype": {"S"}},
		{"name": {"csrf-victim"}, "pk": {"id"}, "pktype": {"S"}, "csrf": {otherCSRF}},
	} {
		resp, err := op.PostForm(base+"/console/explorer/", form)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "security token") {
			t.Errorf("POST without a valid CSRF token = %d: %s", resp.StatusCode, b)
		}
	}
	if body := get(t, op, base+"/console/explorer/", 200); strings.Contains(body, "csrf-victim") {
		t.Error("a table was created without a CSRF token")
	}
	// The same form with the token is accepted.
	resp, err := op.PostForm(base+"/console/explorer/", url.Values{"name": {"csrf-ok"}, "pk": {"id"}, "pktype": {"S"}, "csrf": {csrfOf(t, get(t, op, base+"/console/explorer/", 200))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/console/explorer/t/csrf-ok" {
		t.Errorf("POST with the CSRF token = %d at %s", resp.StatusCode, resp.Request.URL)
	}

	// Without JavaScript a delete shows a confirmation page first.
	tablePage := get(t, op, base+"/console/explorer/t/console-demo", 200)
	ref := regexp.MustCompile(`item\?key=([A-Za-z0-9_-]+)`).FindStringSubmatch(tablePage)
	if ref == nil {
		t.Fatalf("no item link on the table page: %s", tablePage)
	}
	resp, err = op.PostForm(base+"/console/explorer/t/console-demo/item/delete", url.Values{"key": {ref[1]}, "csrf": {csrfOf(t, tablePage)}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Delete this item?") || !strings.Contains(string(b), `name="confirm" value="yes"`) {
		t.Errorf("delete without confirm = %d: %s", resp.StatusCode, b)
	}
	get(t, op, base+"/console/explorer/t/console-demo/item?key="+ref[1], 200) // still there

	// Sign out in the browser: the operator pages ask for sign-in again.
	run("sign out", submit(".signout button"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.Navigate(base+"/console/explorer/"), chromedp.WaitVisible(chromedp.CSS("#signin")))
	if got := eval(`location.pathname + location.search`); got != "/console/signin?next=%2Fconsole%2Fexplorer%2F" {
		t.Errorf("after sign-out the explorer sends to %s", got)
	}
	// A signed-out session's cookie no longer works, even replayed.
	u, _ := url.Parse(base)
	saved := op.Jar.Cookies(u)
	resp, err = op.PostForm(base+"/console/signout", url.Values{"csrf": {csrfOf(t, get(t, op, base+"/console/explorer/", 200))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	op.Jar.SetCookies(u, saved)
	if body := get(t, op, base+"/console/explorer/", 200); !strings.Contains(body, `id="signin"`) {
		t.Error("a signed-out session's cookie still opens the explorer")
	}

	// A Checks user signs in with their API token; the operator areas do
	// not exist for them.
	run("checks sign-in", chromedp.SetValue(chromedp.CSS("#realm"), "checks"),
		chromedp.SendKeys(chromedp.CSS("#credential"), userToken),
		submit("#signin button"),
		chromedp.WaitVisible(chromedp.CSS("#who")))
	if got := text("#who"); !strings.Contains(got, "bob@example.com") {
		t.Errorf("checks user header %q", got)
	}
	if n := eval(`String(document.querySelectorAll('a[href="/console/explorer/"]').length)`); n != "0" {
		t.Error("a Checks user is offered the explorer")
	}
	bob := httpSignIn(t, base, "checks", userToken)
	for _, p := range []string{"/console/explorer/", "/console/explorer/t/checks-USER", "/console/explorer/t/console-demo/item"} {
		get(t, bob, base+p, http.StatusNotFound)
	}

	// Bob's dashboard: a form with bad input shows the Checks API's
	// message; a good one creates a check that runs.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		io.WriteString(w, "hello")
	}))
	defer target.Close()
	run("my checks", chromedp.Click(chromedp.CSS(`a[href="/console/checks/"]`)), chromedp.WaitVisible(chromedp.CSS("#create-check")),
		chromedp.SendKeys(chromedp.CSS("#url"), target.URL+"/", chromedp.NodeVisible),
		chromedp.SetValue(chromedp.CSS("#delay"), "0.2"),
		submit("#create-check button"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := text("#error"); !strings.Contains(got, "interval must be between 1 and 2592000 seconds (30 days), not 0.2") || strings.Contains(got, "delayMs") {
		t.Errorf("bad interval: %q", got)
	}
	run("create check", chromedp.SetValue(chromedp.CSS("#delay"), "1"),
		submit("#create-check button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	checkPath := eval(`location.pathname`)
	if got := text("#check-url"); got != target.URL+"/" {
		t.Errorf("check page shows %q", got)
	}
	waitLong(t, "the check's first runs in the dashboard", 20*time.Second, func() bool {
		run("reload", chromedp.Navigate(base+checkPath), chromedp.WaitVisible(chromedp.CSS("#uptime")))
		return strings.HasPrefix(text("#uptime"), "100.0 %") && !strings.HasPrefix(text("#uptime"), "100.0 % (1 runs)")
	})
	run("pause", submit("#pause"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := text("#facts"); !strings.Contains(got, "PAUSED") {
		t.Errorf("after pause: %q", got)
	}
	run("list", chromedp.Navigate(base+"/console/checks/"), chromedp.WaitVisible(chromedp.CSS("#checks svg.spark")), shot("console-checks.png"))
	if got := text("#checks"); !strings.Contains(got, target.URL) || !strings.Contains(got, "PAUSED") {
		t.Errorf("checks list: %q", got)
	}

	// Another Checks user: bob's check is not found, and acting on it is
	// refused the same way.
	carol := httpSignIn(t, base, "checks", s.createUser("carol@example.com"))
	get(t, carol, base+checkPath, http.StatusNotFound)
	resp, err = carol.PostForm(base+checkPath+"/delete", url.Values{"confirm": {"yes"}, "csrf": {csrfOf(t, get(t, carol, base+"/console/checks/", 200))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("carol deleting bob's check = %d", resp.StatusCode)
	}
	get(t, bob, base+checkPath, http.StatusOK)

	// Bob deletes it (console.js confirms).
	run("delete check", chromedp.Navigate(base+checkPath), chromedp.WaitVisible(chromedp.CSS("#delete")),
		submit("#delete"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := text("#msg"); got != "Check deleted." {
		t.Errorf("after delete: %q", got)
	}
	get(t, bob, base+checkPath, http.StatusNotFound)
}
