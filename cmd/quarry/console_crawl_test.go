package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
)

// TestConsoleCrawlControl drives DataShelf's crawl page in Chromium as an
// operator: a bad start URL's message, a crawl of a fixture bookshop
// started from the form and watched until it finishes, the throughput
// chart, the failures (two product pages answer 404) with their errors,
// and a retry; a Checks user gets a 404, and the forms without their CSRF
// token are refused.
func TestConsoleCrawlControl(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	site := fixture.New(fixture.Options{Products: 12, Seed: 5, CrawlDelay: -1})
	var mu sync.Mutex
	gone := map[string]bool{}
	h := site.Handler()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, fixture.Locale+"/products/") && !strings.HasSuffix(r.URL.Path, ".js") {
			mu.Lock()
			if len(gone) < 2 {
				gone[r.URL.Path] = true
			}
			g := gone[r.URL.Path]
			mu.Unlock()
			if g {
				http.NotFound(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer shop.Close()
	var out, errs syncBuffer
	if code := run(t.Context(), []string{"admin", "token", "create", "--name", "ops", "--data-dir", s.dir}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("admin token create: %s", errs.String())
	}
	opToken := strings.TrimSpace(out.String())

	d := newDriver(t, base)
	d.signIn("operator", opToken)
	d.open("/console/datashelf/crawl", "#crawl-form")
	if got := d.text("#crawl-state"); !strings.Contains(got, "No crawl") {
		t.Errorf("before any crawl: %q", got)
	}
	d.run("bad URL", chromedp.SendKeys(chromedp.CSS("#crawl-url"), "ftp://shop.example/"), d.submit("#crawl-start"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := d.text("#error"); !strings.Contains(got, "absolute http or https URL") {
		t.Errorf("bad start URL: %q", got)
	}
	d.run("start", chromedp.SetValue(chromedp.CSS("#crawl-url"), shop.URL+fixture.Locale), chromedp.SetValue(chromedp.CSS("#crawl-max"), "0"),
		d.submit("#crawl-start"), chromedp.WaitVisible(chromedp.CSS("#crawl-state")))
	// "Crawl started." while it runs; a crawl already finished has its
	// card only.
	if st := d.text("#crawl-state"); st == "Running" {
		if got := d.text("#msg"); got != "Crawl started." {
			t.Errorf("after start: %q", got)
		}
	} else if st != "Finished" {
		t.Errorf("after start: %q", st)
	}
	states := map[string]bool{}
	waitLong(t, "the crawl to finish", 60*time.Second, func() bool {
		d.open("/console/datashelf/crawl", "#crawl-state")
		st := d.text("#crawl-state")
		states[st] = true
		return st == "Finished"
	})
	t.Logf("crawl states seen: %v", states)
	if n, _ := strconv.Atoi(d.text("#crawl-products")); n != 10 {
		t.Errorf("products stored: %d, want 10 (12 less the 2 that answer 404)", n)
	}
	if n, _ := strconv.Atoi(d.text("#throughput-total")); n < 10 {
		t.Errorf("throughput total %d", n)
	}
	if n := d.eval(`String(document.querySelectorAll("#throughput svg rect.ok").length)`); n == "0" {
		t.Error("the throughput chart has no bar")
	}
	fails := d.text("#failures")
	if strings.Count(fails, "HTTP 404") != 2 {
		t.Errorf("failures:\n%s", fails)
	}
	d.shot("console-crawl.png")
	d.run("retry one", d.submit("#failures button"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := d.text("#msg"); !strings.HasPrefix(got, "1 failed job(s) queued again") {
		t.Errorf("after retry: %q", got)
	}
	if got := d.text("#failures"); strings.Count(got, "HTTP 404") != 1 {
		t.Errorf("failures after one retry:\n%s", got)
	}
	if got := d.text("#queue"); !regexp.MustCompile(`queued\s+product\s+1`).MatchString(got) {
		t.Errorf("queue after the retry:\n%s", got)
	}

	// quarry's own API listener is reserved: a crawl started from the
	// console cannot reach it, even under --allow-networks all.
	d.open("/console/datashelf/crawl", "#crawl-form")
	d.run("start at quarry's own API", chromedp.SetValue(chromedp.CSS("#crawl-url"), base+"/console/"), chromedp.SetValue(chromedp.CSS("#crawl-max"), "1"),
		d.submit("#crawl-start"), chromedp.WaitVisible(chromedp.CSS("#crawl-state")))
	var own string
	waitLong(t, "the crawl of quarry's own API to finish", 60*time.Second, func() bool {
		d.open("/console/datashelf/crawl", "#crawl-state")
		own = d.text("#crawl-state")
		return own == "Finished"
	})
	if body := d.text("main"); !strings.Contains(body, "tenants may never reach") {
		t.Errorf("a crawl of quarry's own API listener was not refused by the network policy:\n%s", body)
	}
	// The failed start URL is said once, in the card, without the
	// crawler's own prefix.
	if got := d.text("#crawl-error"); !strings.HasPrefix(got, "The start URL failed: "+base+"/console/") || strings.Contains(got, "crawler:") {
		t.Errorf("the failed start URL reads %q", got)
	}

	// Without the CSRF token, both forms are refused.
	op := httpSignIn(t, base, "operator", opToken)
	postNoCSRF(t, op, base+"/console/datashelf/crawl/retry", url.Values{})
	postNoCSRF(t, op, base+"/console/datashelf/crawl/start", url.Values{"url": {shop.URL + fixture.Locale}, "max": {"1"}})
	if got := get(t, op, base+"/console/datashelf/crawl", 200); !strings.Contains(got, "queued") {
		t.Error("the queue changed after refused forms")
	}
	// A Checks user: the crawl page does not exist for them.
	bob := httpSignIn(t, base, "checks", s.createUser("bob@example.com"))
	get(t, bob, base+"/console/datashelf/crawl", http.StatusNotFound)
	resp, err := bob.PostForm(base+"/console/datashelf/crawl/retry", url.Values{"csrf": {csrfOf(t, get(t, bob, base+"/console/checks/", 200))}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a Checks user's retry = %d", resp.StatusCode)
	}
}
