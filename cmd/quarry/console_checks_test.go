package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// seedHistory writes n runs of a check's history (one every 30 minutes
// before now, every fourth DOWN with "status 500") and ten days of daily
// rollups into the running server's store, as the scheduler writes them.
func seedHistory(t *testing.T, s *checksServer, checkID string, n int) {
	t.Helper()
	ctx := context.Background()
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.store),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	now := time.Now().UTC()
	put := func(it map[string]types.AttributeValue) {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("checks-CHECK"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		status, res := "UP", map[string]types.AttributeValue{"responseTime": ddbitem.N(int64(20 + i%7*10))}
		if i%4 == 3 {
			status, res["error"] = "DOWN", ddbitem.S("status 500")
		}
		res["status"] = ddbitem.S(status)
		at := now.Add(-time.Duration(i+1) * 30 * time.Minute)
		put(map[string]types.AttributeValue{"PK": ddbitem.S(checkID), "SK": ddbitem.S("RESULT#" + ddbitem.FormatTime(at)),
			"result": &types.AttributeValueMemberM{Value: res}, "expiresAt": ddbitem.N(now.Add(7 * 24 * time.Hour).Unix())})
	}
	for d := 1; d <= 10; d++ {
		put(map[string]types.AttributeValue{"PK": ddbitem.S(checkID), "SK": ddbitem.S("DAY#" + now.AddDate(0, 0, -d).Format("2006-01-02")),
			"runs": ddbitem.N(100), "up": ddbitem.N(90), "responseMs": ddbitem.N(3000), "expiresAt": ddbitem.N(now.Add(30 * 24 * time.Hour).Unix())})
	}
}

// TestConsoleChecksDetail drives the Checks area in Chromium: the
// dashboard's uptimes, status strip and last alert; a check's page with
// its chart and paged history; the alert targets form with the API's
// message and a delivery failure shown; the public status page turned on,
// read signed out (no secrets, no other user's checks, cached), given a
// new address and turned off (404); another user's pages are 404 and
// forms without their CSRF token are refused.
func TestConsoleChecksDetail(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	var down atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer target.Close()
	var hooks atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>410</title></head><body><h1>receiver error page</h1><p>"+strings.Repeat("lorem ipsum ", 40)+"</p></body></html>")
	}))
	defer receiver.Close()
	port := strings.TrimPrefix(target.URL, "http://127.0.0.1:")

	bobToken, carolToken := s.createUser("bob@example.com"), s.createUser("carol@example.com")
	secretURL := "http://user:pw@127.0.0.1:" + port + "/secret-path?key=hunter2"
	code, ck := s.do("POST", "/v1/checks", bobToken, map[string]any{"url": secretURL, "checkType": "AVAILABILITY", "delayMs": 1000,
		"attributes": map[string]any{"keyword": "hello"}})
	if code != 201 {
		t.Fatalf("create bob's check: %d %v", code, ck)
	}
	id := ck["id"].(string)
	if code, m := s.do("POST", "/v1/checks", carolToken, map[string]any{"url": "http://localhost:" + port + "/carol-only", "checkType": "AVAILABILITY", "delayMs": 60000}); code != 201 {
		t.Fatalf("create carol's check: %d %v", code, m)
	}
	seedHistory(t, s, id, 40)

	d := newDriver(t, base)
	d.signIn("checks", bobToken)

	// Alert targets: the API's message for a bad webhook, then a receiver
	// that answers 410 (a permanent delivery failure).
	d.open("/console/checks/alerts", "#alerts-form")
	d.run("bad webhook", chromedp.SendKeys(chromedp.CSS("#webhookUrl"), "ftp://nope.example/"), d.submit("#save-alerts"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.text("#error"); !strings.Contains(got, "cannot receive alerts") {
		t.Errorf("bad webhook: %q", got)
	}
	if got := d.eval(`document.querySelector("#webhookUrl").value`); got != "ftp://nope.example/" {
		t.Errorf("the form lost the typed URL: %q", got)
	}
	d.run("good webhook", chromedp.SetValue(chromedp.CSS("#webhookUrl"), receiver.URL+"/hook"), chromedp.SendKeys(chromedp.CSS("#webhookSecret"), "s3cret"),
		d.submit("#save-alerts"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.eval(`document.querySelector("#webhookUrl").value`); got != receiver.URL+"/hook" {
		t.Errorf("saved webhook reads back as %q", got)
	}
	if got := d.eval(`document.querySelector("#webhookSecret").value + "|" + String(!!document.querySelector("#clearSecret"))`); got != "|true" {
		t.Errorf("the secret field: %q (want empty, with a remove box)", got)
	}
	// Saving again with the secret left empty keeps it.
	d.run("save again", d.submit("#save-alerts"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if n := d.eval(`String(!!document.querySelector("#clearSecret"))`); n != "true" {
		t.Error("saving with an empty secret field removed the secret")
	}

	// The check goes down: the alert's delivery fails, and the dashboard
	// and the check's page say so.
	waitLong(t, "a first run", 20*time.Second, func() bool {
		_, m := s.do("GET", "/v1/checks/"+id, bobToken, nil)
		return m["lastExecutedAt"] != nil
	})
	down.Store(true)
	waitLong(t, "the alert's delivery failure", 30*time.Second, func() bool {
		_, m := s.do("GET", "/v1/checks/"+id, bobToken, nil)
		e, _ := m["lastAlertError"].(string)
		return strings.Contains(e, "410")
	})
	down.Store(false)
	d.open("/console/checks/", "#checks svg.strip")
	row := d.text("#checks")
	for _, want := range []string{"%", "delivery failed", "webhook responded 410 Gone"} {
		if !strings.Contains(row, want) {
			t.Errorf("dashboard row lacks %q:\n%s", want, row)
		}
	}
	// The receiver's error page is cut off: the row shows the status line.
	for _, unwanted := range []string{"receiver error page", "lorem", "DOCTYPE", "<html"} {
		if strings.Contains(row, unwanted) || strings.Contains(d.eval(`document.querySelector("#checks").innerHTML`), unwanted) {
			t.Errorf("dashboard row shows the receiver's page (%q):\n%s", unwanted, row)
		}
	}
	if n := d.eval(`String(document.querySelectorAll("#checks svg.strip rect.down").length)`); n == "0" {
		t.Error("the status strip has no DOWN run")
	}

	checkPath := "/console/checks/" + id
	d.open(checkPath, "#runs")
	if got := d.text("#uptime7"); !regexp.MustCompile(`^\d+\.\d %`).MatchString(got) {
		t.Errorf("7-day uptime %q", got)
	}
	if got := d.text("#uptime30"); !strings.Contains(got, "%") || !strings.Contains(got, "runs") {
		t.Errorf("30-day uptime %q", got)
	}
	if got := d.text("#last-alert"); !strings.Contains(got, "delivery failed") {
		t.Errorf("check page last alert: %q", got)
	}
	if got := d.eval(`String(document.querySelectorAll("#chart svg polyline").length) + "/" + String(document.querySelectorAll("#chart circle.down").length)`); got == "0/0" || strings.HasPrefix(got, "0/") || strings.HasSuffix(got, "/0") {
		t.Errorf("chart polylines/down marks: %s", got)
	}
	if n := d.eval(`String(document.querySelectorAll("#runs tbody tr").length)`); n != "25" {
		t.Errorf("first history page has %s rows", n)
	}
	d.shot("console-check.png")
	first := d.text("#runs tbody tr:last-child td")
	d.run("older runs", d.submit("#older"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	older := d.text("#runs tbody")
	if strings.Contains(older, first) || !strings.Contains(older, "status 500") {
		t.Errorf("older page repeats %q or lacks the seeded errors:\n%s", first, older)
	}

	// The public status page.
	d.open("/console/checks/statuspage", "#status-on")
	d.run("status on", d.submit("#status-on"), chromedp.WaitVisible(chromedp.CSS("#status-url")))
	statusURL := d.text("#status-url")
	if !strings.HasPrefix(statusURL, base+"/console/status/") || len(statusURL) < len(base)+40 {
		t.Fatalf("status URL %q", statusURL)
	}
	anon := &http.Client{}
	body, hdr := fetchStatus(t, anon, statusURL, 200)
	if !strings.Contains(body, "127.0.0.1") || !strings.Contains(body, "AVAILABILITY") || !strings.Contains(body, "%") {
		t.Errorf("status page lacks the check:\n%s", body)
	}
	for _, secret := range []string{"secret-path", "hunter2", "user:pw", "hello", id, "bob@example.com", receiver.URL, "s3cret", "localhost", "carol", port, "csrf", "Sign out"} {
		if strings.Contains(body, secret) {
			t.Errorf("the status page shows %q", secret)
		}
	}
	if cc := hdr.Get("Cache-Control"); !strings.Contains(cc, "public") || !strings.Contains(cc, "max-age=") {
		t.Errorf("status page Cache-Control %q", cc)
	}
	d.run("status page", chromedp.Navigate(statusURL), chromedp.WaitVisible(chromedp.CSS("#status")))
	d.shot("console-status.png")

	// Carol's page shows her check only.
	carol := httpSignIn(t, base, "checks", carolToken)
	sp := get(t, carol, base+"/console/checks/statuspage", 200)
	resp, err := carol.PostForm(base+"/console/checks/statuspage", url.Values{"action": {"on"}, "csrf": {csrfOf(t, sp)}})
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	carolURL := regexp.MustCompile(`href="(http[^"]+/console/status/[^"]+)"`).FindStringSubmatch(string(cb))
	if carolURL == nil {
		t.Fatalf("carol's status page URL not shown: %s", cb)
	}
	carolBody, _ := fetchStatus(t, anon, carolURL[1], 200)
	if !strings.Contains(carolBody, "localhost") || strings.Contains(carolBody, "127.0.0.1") {
		t.Errorf("carol's status page:\n%s", carolBody)
	}
	// Another user's check pages are 404.
	get(t, carol, base+checkPath, http.StatusNotFound)
	get(t, carol, base+checkPath+"?before="+url.QueryEscape(ddbitem.FormatTime(time.Now())), http.StatusNotFound)

	// Forms without their CSRF token are refused.
	bob := httpSignIn(t, base, "checks", bobToken)
	postNoCSRF(t, bob, base+"/console/checks/statuspage", url.Values{"action": {"off"}})
	postNoCSRF(t, bob, base+"/console/checks/alerts", url.Values{"webhookUrl": {""}})
	fetchStatus(t, anon, statusURL, 200)

	// A new address kills the old one; turning it off kills the new one.
	d.open("/console/checks/statuspage", "#status-new")
	d.run("new address", d.submit("#status-new"), chromedp.WaitVisible(chromedp.CSS("#status-url")))
	newURL := d.text("#status-url")
	if newURL == statusURL {
		t.Fatal("the address did not change")
	}
	fetchStatus(t, anon, statusURL, 404)
	// Rendered first for the signed-in owner, the cached page carries no
	// session to the next visitor.
	d.run("new status page", chromedp.Navigate(newURL), chromedp.WaitVisible(chromedp.CSS("#status")))
	if body, _ := fetchStatus(t, anon, newURL, 200); strings.Contains(body, "csrf") || strings.Contains(body, "bob@example.com") || strings.Contains(body, "Sign out") {
		t.Errorf("the status page cached a session:\n%s", body)
	}
	d.open("/console/checks/statuspage", "#status-off")
	d.run("status off", d.submit("#status-off"), chromedp.WaitVisible(chromedp.CSS("#status-on")))
	fetchStatus(t, anon, newURL, 404)
	fetchStatus(t, anon, carolURL[1], 200)
	if n := hooks.Load(); n == 0 {
		t.Error("the webhook receiver was never called")
	}
	t.Logf("webhook calls: %s", strconv.Itoa(int(hooks.Load())))
}

// fetchStatus GETs a public status page and checks its status code.
func fetchStatus(t *testing.T, hc *http.Client, u string, want int) (string, http.Header) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d", u, resp.StatusCode, want)
	}
	return string(b), resp.Header
}

// TestConsoleChecksManage drives the dashboard's management in Chromium:
// the create form at the top (its interval refused in seconds, names and
// tags), a check whose keyword is missing shown DOWN on the dashboard and
// the public status page, both by name; search and the tag and status
// filters; the edit page (the API's message, the typed values kept);
// clone; bulk pause, resume and delete (after a confirmation); and the
// bulk and edit forms refused without their CSRF token.
func TestConsoleChecksManage(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>hello</body></html>")
	}))
	defer target.Close()
	token := s.createUser("dora@example.com")
	code, blog := s.do("POST", "/v1/checks", token, map[string]any{"name": "Blog", "tags": []string{"staging"},
		"url": target.URL + "/blog", "checkType": "AVAILABILITY", "delayMs": 1000, "attributes": map[string]any{"keyword": "sold out"}})
	if code != 201 {
		t.Fatalf("create the blog check: %d %v", code, blog)
	}
	blogID := blog["id"].(string)

	d := newDriver(t, base)
	d.signIn("checks", token)
	d.open("/console/checks/", "#create-check")
	if got := d.eval(`String(document.querySelector("#create-check").compareDocumentPosition(document.querySelector("#checks")) & Node.DOCUMENT_POSITION_FOLLOWING)`); got == "0" {
		t.Error("the create form is not above the checks")
	}
	d.run("interval too short", chromedp.SetValue(chromedp.CSS("#name"), "Shop front"), chromedp.SetValue(chromedp.CSS("#url"), target.URL+"/shop"),
		chromedp.SetValue(chromedp.CSS("#keyword"), "hello"), chromedp.SetValue(chromedp.CSS("#tags"), "prod, eu"),
		chromedp.SetValue(chromedp.CSS("#delay"), "0.5"), d.submit("#create"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.text("#error"); !strings.Contains(got, "interval must be between 1 and 2592000 seconds") || strings.Contains(got, "delayMs") {
		t.Errorf("interval refused as %q, want it in seconds", got)
	}
	if got := d.eval(`document.querySelector("#name").value + "|" + document.querySelector("#tags").value`); got != "Shop front|prod, eu" {
		t.Errorf("the form lost what was typed: %q", got)
	}
	d.run("create", chromedp.SetValue(chromedp.CSS("#delay"), "1"), d.submit("#create"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#check-name"); got != "Shop front" {
		t.Errorf("the new check's page is titled %q", got)
	}
	shopID := strings.TrimPrefix(d.eval(`location.pathname`), "/console/checks/")

	// The blog's keyword is missing: DOWN with the reason, by name.
	waitLong(t, "both checks' first runs", 20*time.Second, func() bool {
		_, a := s.do("GET", "/v1/checks/"+blogID, token, nil)
		_, b := s.do("GET", "/v1/checks/"+shopID, token, nil)
		return a["lastResult"] != nil && b["lastResult"] != nil
	})
	d.open("/console/checks/", "#checks svg.strip")
	row := d.text(`#checks tr[data-id="` + blogID + `"]`)
	if !strings.Contains(row, "Blog") || !strings.Contains(row, "DOWN") || strings.Contains(row, "UP") {
		t.Errorf("the blog's row: %q, want Blog, DOWN", row)
	}
	if row := d.text(`#checks tr[data-id="` + shopID + `"]`); !strings.Contains(row, "Shop front") || !strings.Contains(row, "prod") || !strings.Contains(row, "UP") {
		t.Errorf("the shop's row: %q", row)
	}
	d.open("/console/checks/"+blogID, "#runs")
	if got := d.text("#runs"); !strings.Contains(got, `keyword "sold out" not found`) {
		t.Errorf("the blog's history lacks the reason:\n%s", got)
	}

	// Search and filters.
	rows := func() string {
		return d.eval(`Array.from(document.querySelectorAll("#checks a.check-name")).map(a => a.textContent).join("|")`)
	}
	for _, tc := range []struct{ query, want string }{
		{"q=shop", "Shop front"},
		{"q=BLOG", "Blog"},
		{"tag=staging", "Blog"},
		{"tag=eu", "Shop front"},
		{"status=DOWN", "Blog"},
		{"status=UP", "Shop front"},
		{"status=PAUSED", ""},
		{"", "Blog|Shop front"},
	} {
		d.open("/console/checks/?"+tc.query, "#checks")
		if got := rows(); got != tc.want {
			t.Errorf("?%s lists %q, want %q", tc.query, got, tc.want)
		}
	}
	d.open("/console/checks/", "#filter")
	d.run("filter form", chromedp.SetValue(chromedp.CSS("#q"), "front"), d.submit("#apply-filter"), chromedp.WaitVisible(chromedp.CSS("#clear-filter")))
	if got := rows(); got != "Shop front" {
		t.Errorf("the filter form lists %q", got)
	}

	// Edit: the API's message with the typed values kept, then saved.
	d.open("/console/checks/"+shopID+"/edit", "#edit-check")
	if got := d.eval(`document.querySelector("#name").value + "|" + document.querySelector("#tags").value + "|" + document.querySelector("#delay").value + "|" + document.querySelector("#keyword").value`); got != "Shop front|eu, prod|1|hello" {
		t.Errorf("the edit form holds %q", got)
	}
	long := strings.Repeat("x", 40)
	d.run("bad tag", chromedp.SetValue(chromedp.CSS("#tags"), "eu, "+long), chromedp.SetValue(chromedp.CSS("#name"), "Shop EU"),
		d.submit("#save"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.text("#error"); !strings.Contains(got, "must be at most 32 characters") {
		t.Errorf("bad tag refused as %q", got)
	}
	if got := d.eval(`document.querySelector("#name").value`); got != "Shop EU" {
		t.Errorf("the edit form lost the typed name: %q", got)
	}
	if _, m := s.do("GET", "/v1/checks/"+shopID, token, nil); m["name"] != "Shop front" {
		t.Errorf("a refused edit changed the check: %v", m["name"])
	}
	d.run("save", chromedp.SetValue(chromedp.CSS("#tags"), "eu"), chromedp.SetValue(chromedp.CSS("#delay"), "2"),
		d.submit("#save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#check-name"); got != "Shop EU" {
		t.Errorf("after the edit the page is titled %q", got)
	}
	if _, m := s.do("GET", "/v1/checks/"+shopID, token, nil); m["name"] != "Shop EU" || fmt.Sprint(m["tags"]) != "[eu]" || m["delayMs"] != float64(2000) {
		t.Errorf("after the edit: %v", m)
	} else if a, _ := m["attributes"].(map[string]any); a["keyword"] != "hello" {
		t.Errorf("the edit lost the keyword: %v", m["attributes"])
	}

	// Clone: the create form prefilled.
	d.run("clone", chromedp.Click(chromedp.CSS("#clone")), chromedp.WaitVisible(chromedp.CSS("#create-check")))
	if got := d.eval(`[ "#name", "#url", "#keyword", "#tags", "#delay" ].map(s => document.querySelector(s).value).join("|")`); got != "Shop EU (copy)|"+target.URL+"/shop|hello|eu|2" {
		t.Errorf("the clone form holds %q", got)
	}

	// The public status page shows the names.
	d.open("/console/checks/statuspage", "#status-on")
	d.run("status on", d.submit("#status-on"), chromedp.WaitVisible(chromedp.CSS("#status-url")))
	body, _ := fetchStatus(t, &http.Client{}, d.text("#status-url"), 200)
	if !strings.Contains(body, "Blog") || !strings.Contains(body, "Shop EU") || strings.Contains(body, "127.0.0.1") {
		t.Errorf("the status page does not show the names:\n%s", body)
	}
	if !regexp.MustCompile(`(?s)Blog.*?class="status down">DOWN<`).MatchString(body) {
		t.Errorf("the status page does not show the blog DOWN:\n%s", body)
	}

	// Bulk pause, resume and delete.
	tick := func(ids ...string) {
		for _, id := range ids {
			d.run("tick "+id, chromedp.Click(chromedp.CSS(`#checks tr[data-id="`+id+`"] input[type=checkbox]`)))
		}
	}
	d.open("/console/checks/", "#bulk")
	tick(blogID, shopID)
	d.run("bulk pause", d.submit("#bulk-pause"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); got != "2 checks paused." {
		t.Errorf("bulk pause: %q", got)
	}
	for _, id := range []string{blogID, shopID} {
		if _, m := s.do("GET", "/v1/checks/"+id, token, nil); m["status"] != "PAUSED" {
			t.Errorf("%s after bulk pause: %v", id, m["status"])
		}
	}
	tick(shopID)
	d.run("bulk resume", d.submit("#bulk-resume"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if _, m := s.do("GET", "/v1/checks/"+shopID, token, nil); m["status"] != "ACTIVE" || d.text("#msg") != "1 check resumed." {
		t.Errorf("bulk resume: %v, %q", m["status"], d.text("#msg"))
	}
	tick(blogID, shopID)
	d.run("bulk delete", d.submit("#bulk-delete"), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if _, m := s.do("GET", "/v1/checks/"+blogID, token, nil); m["id"] != blogID {
		t.Error("bulk delete did not wait for the confirmation")
	}
	d.run("confirm", d.submit("#confirm"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); got != "2 checks deleted." {
		t.Errorf("bulk delete: %q", got)
	}
	for _, id := range []string{blogID, shopID} {
		if code, _ := s.do("GET", "/v1/checks/"+id, token, nil); code != 404 {
			t.Errorf("%s after bulk delete: %d", id, code)
		}
	}

	// Without their CSRF token the forms are refused.
	hc := httpSignIn(t, base, "checks", token)
	_, other := s.do("POST", "/v1/checks", token, map[string]any{"url": target.URL, "checkType": "AVAILABILITY", "delayMs": 60000})
	otherID := other["id"].(string)
	postNoCSRF(t, hc, base+"/console/checks/bulk", url.Values{"action": {"delete"}, "id": {otherID}, "confirm": {"yes"}})
	postNoCSRF(t, hc, base+"/console/checks/"+otherID+"/edit", url.Values{"name": {"x"}, "url": {target.URL}, "type": {"AVAILABILITY"}, "delay": {"60"}})
	if _, m := s.do("GET", "/v1/checks/"+otherID, token, nil); m["id"] != otherID || m["name"] != "127.0.0.1" {
		t.Errorf("a form without its CSRF token changed the check: %v", m)
	}
}

// TestConsoleChecksOperate drives the Checks pages added beside the
// dashboard in Chromium: notification channels added and tested against
// loopback receivers (the delivery result shown, delivered and failed);
// the create form's type-specific fields (the other types' hidden by
// console.js) making a TCP check alerting a ticked channel, and the edit
// form turning it into an HTTP check with a maximum response time; a
// maintenance window typed in the browser's time zone making the check
// show maintenance on the dashboard, its page and the public status
// page's banner; and an incident published and updated on the incidents
// page, shown with its update on the public page.
func TestConsoleChecksOperate(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	var okHits, badHits atomic.Int32
	okReceiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { okHits.Add(1) }))
	defer okReceiver.Close()
	badReceiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		badHits.Add(1)
		http.Error(w, "no such channel", http.StatusNotFound)
	}))
	defer badReceiver.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer target.Close()
	hostPort := strings.TrimPrefix(target.URL, "http://")
	token := s.createUser("erin@example.com")

	d := newDriver(t, base)
	d.signIn("checks", token)

	// Channels: add two, test both; the result is shown on the page.
	addChannel := func(name, u string) {
		d.open("/console/checks/channels", "#channel-type")
		d.run("choose slack", chromedp.SetValue(chromedp.CSS("#type"), "slack"), d.submit("#choose-type"), chromedp.WaitVisible(chromedp.CSS("#add-channel")))
		d.run("add "+name, chromedp.SetValue(chromedp.CSS("#name"), name), chromedp.SetValue(chromedp.CSS(`[id="config.url"]`), u),
			d.submit("#add-channel-button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	}
	addChannel("ops", okReceiver.URL+"/services/T0/B0/abcd")
	addChannel("stale", badReceiver.URL+"/services/T0/B0/efgh")
	ids := map[string]string{}
	chs := d.eval(`Array.from(document.querySelectorAll("#channels tr[id^=channel-]")).map(r => r.querySelector("strong").textContent + "=" + r.id.slice(8)).join(" ")`)
	for _, kv := range strings.Fields(chs) {
		name, id, _ := strings.Cut(kv, "=")
		ids[name] = id
	}
	if ids["ops"] == "" || ids["stale"] == "" {
		t.Fatalf("channels %q", chs)
	}
	d.run("test ops", d.submit(`#channel-`+ids["ops"]+` .test-channel`), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got, row := d.text("#msg"), d.text("#channel-"+ids["ops"]+" .delivery"); got != "Test message delivered." || !strings.Contains(row, "delivered") || !strings.Contains(row, "just now") || okHits.Load() != 1 {
		t.Errorf("ops test: %q, row %q, %d hits", got, row, okHits.Load())
	}
	if title := d.eval(`document.querySelector("#channel-` + ids["ops"] + ` .delivery time").title`); !strings.HasSuffix(title, " UTC") {
		t.Errorf("the delivery time's hover text is %q", title)
	}
	d.run("test stale", d.submit(`#channel-`+ids["stale"]+` .test-channel`), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got, row := d.text("#error"), d.text("#channel-"+ids["stale"]+" .delivery"); !strings.Contains(got, "test message not delivered") || !strings.Contains(got, "404") || !strings.Contains(row, "404") || badHits.Load() != 1 {
		t.Errorf("stale test: %q, row %q, %d hits", got, row, badHits.Load())
	}

	// The create form: the type's fields only (console.js), a TCP check
	// alerting the ops channel.
	d.open("/console/checks/", "#create-check")
	shown := func() string {
		return d.eval(`Array.from(document.querySelectorAll("#create-check fieldset[data-for-type]")).filter(f => f.offsetParent !== null).map(f => f.dataset.forType).join(",")`)
	}
	if got := shown(); got != "AVAILABILITY" {
		t.Errorf("the new-check form shows the fields of %q, want AVAILABILITY", got)
	}
	pick := func(typ string) {
		d.eval(`(function () { var s = document.querySelector("#type"); s.value = "` + typ + `"; s.dispatchEvent(new Event("change")); return ""; })()`)
	}
	pick("DNS")
	if got := shown(); got != "DNS" {
		t.Errorf("after choosing DNS the form shows %q", got)
	}
	pick("TCP")
	d.run("create TCP", chromedp.SetValue(chromedp.CSS("#name"), "Database port"), chromedp.SetValue(chromedp.CSS("#url"), "tcp://"+hostPort),
		chromedp.SetValue(chromedp.CSS("#delay"), "1"), chromedp.Click(chromedp.CSS(`#fs-channels input[value="`+ids["ops"]+`"]`)),
		d.submit("#create"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	checkID := strings.TrimPrefix(d.eval(`location.pathname`), "/console/checks/")
	if _, m := s.do("GET", "/v1/checks/"+checkID, token, nil); m["checkType"] != "TCP" || fmt.Sprint(m["channels"]) != "["+ids["ops"]+"]" {
		t.Fatalf("the created check: %v", m)
	}

	// Edit: into an HTTP check with a maximum response time and a header.
	d.open("/console/checks/"+checkID+"/edit", "#edit-check")
	if got := shown(); got != "" {
		t.Errorf("the TCP check's edit form shows the fields of %q", got)
	}
	if got := d.eval(`String(document.querySelector('#fs-channels input[value="` + ids["ops"] + `"]').checked)`); got != "true" {
		t.Error("the edit form does not tick the check's channel")
	}
	pick("AVAILABILITY")
	d.run("edit", chromedp.SetValue(chromedp.CSS("#url"), target.URL+"/health"), chromedp.SetValue(chromedp.CSS("#maxResponseMs"), "5000"),
		chromedp.SetValue(chromedp.CSS("#headers"), "X-Probe: quarry"), d.submit("#save"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	_, m := s.do("GET", "/v1/checks/"+checkID, token, nil)
	if a, _ := m["attributes"].(map[string]any); m["checkType"] != "AVAILABILITY" || a["maxResponseMs"] != float64(5000) || fmt.Sprint(a["headers"]) != "map[X-Probe:quarry]" {
		t.Errorf("after the edit: %v", m)
	}
	waitLong(t, "a run after the edit", 20*time.Second, func() bool {
		_, m := s.do("GET", "/v1/checks/"+checkID, token, nil)
		r, _ := m["lastResult"].(map[string]any)
		return r["status"] == "UP"
	})

	// Maintenance: a window for the check, typed in the browser's zone.
	d.open("/console/checks/maintenance", "#create-window")
	tz := d.eval(`document.querySelector("#mw-timezone").value`)
	loc, err := time.LoadLocation(tz)
	if tz == "" || err != nil {
		t.Fatalf("the time zone field holds %q (%v), want the browser's zone", tz, err)
	}
	now := time.Now().In(loc)
	d.run("create window", chromedp.SetValue(chromedp.CSS("#mw-name"), "db upgrade"),
		chromedp.SetValue(chromedp.CSS("#mw-start"), now.Add(-time.Hour).Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS("#mw-end"), now.Add(time.Hour).Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS("#scope-checks")), chromedp.Click(chromedp.CSS(`#create-window input[name=check][value="`+checkID+`"]`)),
		d.submit("#create-window-button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#windows"); !strings.Contains(got, "db upgrade") || !strings.Contains(got, "in force") || !strings.Contains(got, "Database port") {
		t.Errorf("the windows: %q", got)
	}
	d.open("/console/checks/", "#checks")
	if got := d.text(`#checks tr[data-id="` + checkID + `"]`); !strings.Contains(got, "maintenance") {
		t.Errorf("the dashboard row does not show maintenance: %q", got)
	}
	d.open("/console/checks/"+checkID, "#facts")
	if got := d.text("#facts"); !strings.Contains(got, "maintenance") {
		t.Errorf("the check's page does not show maintenance: %q", got)
	}

	// Incidents, then the public page: banner, incident and its update.
	d.open("/console/checks/statuspage", "#status-on")
	d.run("status on", d.submit("#status-on"), chromedp.WaitVisible(chromedp.CSS("#status-url")))
	statusURL := d.text("#status-url")
	d.run("incidents link", chromedp.Click(chromedp.CSS("#incidents-page")), chromedp.WaitVisible(chromedp.CSS("#create-incident")))
	d.run("publish", chromedp.SetValue(chromedp.CSS("#in-title"), "Slow checkout"), chromedp.SetValue(chromedp.CSS("#in-message"), "Payments take a minute."),
		d.submit("#create-incident-button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	d.run("update", chromedp.SetValue(chromedp.CSS("#incidents-open select[name=status]"), "monitoring"),
		chromedp.SetValue(chromedp.CSS("#incidents-open textarea[name=message]"), "A fix is deployed."),
		d.submit("#incidents-open .post-update"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#incidents-open"); !strings.Contains(got, "monitoring") || !strings.Contains(got, "A fix is deployed.") || !strings.Contains(got, "Payments take a minute.") {
		t.Errorf("the open incident: %q", got)
	}
	d.run("public page", chromedp.Navigate(statusURL), chromedp.WaitVisible(chromedp.CSS("#overall")))
	if got := d.eval(`document.querySelector("#overall").dataset.state`); got != "maintenance" {
		t.Errorf("the banner's state is %q, want maintenance", got)
	}
	if got := d.text("#incidents-open"); !strings.Contains(got, "Slow checkout") || !strings.Contains(got, "A fix is deployed.") || !strings.Contains(got, "monitoring") {
		t.Errorf("the public page's incident: %q", got)
	}
	if got := d.text("#status"); !strings.Contains(got, "MAINTENANCE") {
		t.Errorf("the public page's check: %q", got)
	}
}
