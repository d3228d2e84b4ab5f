package main

import (
	"context"
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
