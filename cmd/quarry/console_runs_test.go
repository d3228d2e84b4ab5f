package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
)

// TestConsoleCrawlRuns drives DataShelf's crawl runs in Chromium as an
// operator: a crawl of the fixture bookshop listed among the runs, its
// page with counters and log, its products exported as JSON lines and CSV
// (the rows are the products the API serves), then a slow crawl whose
// page shows live counters and which the Abort button stops. Refused: an
// abort without the CSRF token or by a Checks user (the crawl runs on),
// the abort of a finished run (said clearly), unknown run ids.
func TestConsoleCrawlRuns(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	fast := httptest.NewServer(fixture.New(fixture.Options{Products: 14, PerPage: 6, Seed: 7, CrawlDelay: -1}).Handler())
	defer fast.Close()
	slow := httptest.NewServer(fixture.New(fixture.Options{Products: 300, Seed: 7, CrawlDelay: -1,
		Faults: fixture.Faults{SlowRate: 1, SlowDelay: 300 * time.Millisecond}}).Handler())
	defer slow.Close()
	var out, errs syncBuffer
	if code := run(t.Context(), []string{"admin", "token", "create", "--name", "ops", "--data-dir", s.dir}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("admin token create: %s", errs.String())
	}
	opToken := strings.TrimSpace(out.String())

	d := newDriver(t, base)
	d.signIn("operator", opToken)
	d.open("/console/datashelf/crawl", "#crawl-form")
	if got := d.text("#runs"); !strings.Contains(got, "No crawl has run yet.") {
		t.Errorf("runs before any crawl:\n%s", got)
	}
	d.run("start", chromedp.SetValue(chromedp.CSS("#crawl-url"), fast.URL+fixture.Locale), chromedp.SetValue(chromedp.CSS("#crawl-max"), "0"),
		d.submit("#crawl-start"), chromedp.WaitVisible(chromedp.CSS("#crawl-state")))
	waitLong(t, "the crawl to finish", 60*time.Second, func() bool {
		d.open("/console/datashelf/crawl", "#runs")
		return strings.Contains(d.text("#runs tbody"), "succeeded")
	})
	row := d.text("#runs tbody tr")
	if f := strings.Fields(row); !strings.Contains(row, fast.URL+fixture.Locale) || !slices.Contains(f, "14") || !slices.Contains(f, "succeeded") {
		t.Errorf("the run's row: %q", row)
	}
	d.run("open the run", d.submit("#runs tbody a"), chromedp.WaitVisible(chromedp.CSS("#run-state")))
	if got := d.text("#run-state"); got != "succeeded" {
		t.Errorf("run state %q", got)
	}
	if n, _ := strconv.Atoi(d.text("#run-products")); n != 14 {
		t.Errorf("run products %d, want 14", n)
	}
	if n, _ := strconv.Atoi(d.text("#run-pages")); n < 15 {
		t.Errorf("run pages %d, want at least the 14 product pages and the home page", n)
	}
	if log := d.text("#run-log"); !strings.Contains(log, "product stored: ") || !strings.Contains(log, "finished") {
		t.Errorf("run log:\n%s", log)
	}
	if n := d.eval(`String(document.querySelectorAll("#run-abort").length)`); n != "0" {
		t.Error("a finished run offers Abort")
	}

	// The export links give the products the API serves.
	resp, err := http.Get(base + "/datashelf/api/products?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	var served struct {
		Items []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&served); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var want []string
	for _, p := range served.Items {
		want = append(want, p.ID+" "+p.Title)
	}
	slices.Sort(want)
	fetch := func(sel string) (string, string) {
		status, body, _ := strings.Cut(d.eval(`(() => { const x = new XMLHttpRequest(); x.open("GET", document.querySelector("`+sel+`").href, false); x.send(); return x.status + "\n" + x.responseText })()`), "\n")
		return status, body
	}
	status, body := fetch("#export-jsonl")
	var got []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var p struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		got = append(got, p.ID+" "+p.Title)
	}
	slices.Sort(got)
	if status != "200" || len(want) != 14 || !slices.Equal(got, want) {
		t.Errorf("JSON lines export (%s): %v\nthe API's products: %v", status, got, want)
	}
	status, body = fetch("#export-csv")
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || status != "200" || len(recs) == 0 || recs[0][0] != "id" || recs[0][2] != "title" {
		t.Fatalf("CSV export (%s): %v %v", status, err, recs)
	}
	got = got[:0]
	for _, r := range recs[1:] {
		got = append(got, r[0]+" "+r[2])
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("CSV export: %v\nthe API's products: %v", got, want)
	}
	runPath := d.eval(`location.pathname`)

	// A slow crawl: its page shows it running, with live counters, and
	// Abort stops it.
	d.open("/console/datashelf/crawl", "#crawl-form")
	d.run("start the slow crawl", chromedp.SetValue(chromedp.CSS("#crawl-url"), slow.URL+fixture.Locale), chromedp.SetValue(chromedp.CSS("#crawl-max"), "0"),
		d.submit("#crawl-start"), chromedp.WaitVisible(chromedp.CSS("#crawl-run")))
	d.run("open its run", d.submit("#crawl-run"), chromedp.WaitVisible(chromedp.CSS("#run-state")))
	slowPath := d.eval(`location.pathname`)
	waitLong(t, "live counters", 60*time.Second, func() bool {
		d.open(slowPath, "#run-pages")
		n, _ := strconv.Atoi(d.text("#run-pages"))
		return n > 0 && strings.Contains(d.text("#run-log"), "fetched ")
	})
	if got := d.text("#run-state"); got != "running" {
		t.Fatalf("the slow crawl's state: %q", got)
	}
	d.shot("console-crawl-run.png")
	// The page reloads itself without script too (the Refresh header);
	// an abort without the CSRF token, or by a Checks user, leaves the
	// crawl running.
	op := httpSignIn(t, base, "operator", opToken)
	resp, err = op.Get(base + slowPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Refresh"); got != "3" {
		t.Errorf("a running run's page: Refresh %q, want 3", got)
	}
	postNoCSRF(t, op, base+slowPath+"/abort", url.Values{"confirm": {"yes"}})
	bob := httpSignIn(t, base, "checks", s.createUser("bob@example.com"))
	resp, err = bob.PostForm(base+slowPath+"/abort", url.Values{"csrf": {csrfOf(t, get(t, bob, base+"/console/checks/", 200))}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a Checks user's abort = %d", resp.StatusCode)
	}
	if page := get(t, op, base+slowPath, 200); !strings.Contains(page, `id="run-state" class="state-running">running<`) {
		t.Errorf("the slow crawl after refused aborts:\n%s", page)
	}
	d.open(slowPath, "#run-abort")
	d.run("abort", d.submit("#run-abort"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); got != "Run aborted." {
		t.Errorf("after abort: %q", got)
	}
	if got := d.text("#run-state"); got != "aborted" {
		t.Errorf("state after abort: %q", got)
	}
	if got := d.text("#run-error"); got != "aborted by an operator" {
		t.Errorf("the aborted run's error: %q", got)
	}
	d.open("/console/datashelf/crawl", "#runs")
	if got := d.text("#crawl-error"); got != "Aborted by an operator." {
		t.Errorf("the progress card after the abort: %q", got)
	}
	if rows := d.text("#runs tbody"); !strings.Contains(strings.Split(rows, "\n")[0], "aborted") {
		t.Errorf("the newest run is not the aborted one:\n%s", rows)
	}

	// Aborting a finished run says so, after POST/redirect/GET.
	page := get(t, op, base+runPath, 200)
	resp, err = op.PostForm(base+runPath+"/abort", url.Values{"csrf": {csrfOf(t, get(t, op, base+"/console/datashelf/crawl", 200))}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	_, _ = bufio.NewReader(resp.Body).WriteTo(b)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.Method != "GET" || !strings.Contains(b.String(), "This run had already ended (succeeded): there was nothing to abort.") {
		t.Errorf("abort of a finished run: %d %s %s", resp.StatusCode, resp.Request.URL, b)
	}
	// Without confirm=yes the abort asks first.
	if got := get(t, op, base+runPath+"/abort", 200); !strings.Contains(got, "Abort this crawl?") || !strings.Contains(got, `id="confirm"`) {
		t.Errorf("the abort's confirmation page:\n%s", got)
	}
	if !strings.Contains(page, "succeeded") {
		t.Errorf("run page:\n%s", page)
	}
	for _, p := range []string{"/console/datashelf/runs/00000000-0000-4000-8000-000000000000", "/console/datashelf/runs/x%27--",
		"/console/datashelf/runs/00000000-0000-4000-8000-000000000000/export?format=csv"} {
		get(t, op, base+p, http.StatusNotFound)
	}
	get(t, op, base+runPath+"/export?format=xml", http.StatusBadRequest)
	// A Checks user: no run page, no export.
	get(t, bob, base+runPath, http.StatusNotFound)
	get(t, bob, base+runPath+"/export?format=jsonl", http.StatusNotFound)
}
