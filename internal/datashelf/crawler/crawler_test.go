package crawler

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// env is one crawl setup: a fixture site, a SQLite store, a blob directory
// and a loopback-only fetcher whose politeness waits are scaled down.
type env struct {
	site  *fixture.Site
	srv   *httptest.Server
	st    *sqlite.Store
	blobs *blob.Dir
	fetch *fetch.Fetcher

	mu       sync.Mutex
	maxSleep time.Duration
}

func newEnv(t *testing.T, o fixture.Options) *env {
	t.Helper()
	e := &env{site: fixture.New(o)}
	e.srv = httptest.NewServer(e.site.Handler())
	t.Cleanup(e.srv.Close)
	var err error
	e.st, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ds.db"), &sqlite.Options{
		Options: store.Options{BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.st.Close() })
	if e.blobs, err = blob.NewDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	e.fetch = fetch.New(fetch.Options{
		UserAgent:          "quarry-datashelf/test",
		ObeyRobots:         true,
		AllowPrefixes:      []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		PerHostConcurrency: 8,
		// Politeness waits (Retry-After) are honoured at 1/100 of their
		// length to keep the test fast; maxSleep records the longest asked.
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			e.maxSleep = max(e.maxSleep, d)
			e.mu.Unlock()
			tm := time.NewTimer(d / 100)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	t.Cleanup(e.fetch.Close)
	return e
}

func (e *env) crawl(t *testing.T, o Options) Stats {
	t.Helper()
	o.Store, o.Blobs = e.st, e.blobs
	if o.Fetcher == nil {
		o.Fetcher = e.fetch
	}
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Seed(ctx, e.srv.URL+fixture.Locale); err != nil {
		t.Fatal(err)
	}
	st, err := c.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v (stats %s)", err, st)
	}
	t.Logf("crawl: %s", st)
	return st
}

func allProducts(t *testing.T, st store.Store) []store.Product {
	t.Helper()
	var out []store.Product
	for off := 0; ; off += store.MaxListLimit {
		page, total, err := st.ListProducts(context.Background(), store.ProductFilter{Sort: store.SortTitleAsc, Limit: store.MaxListLimit, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) == 0 || off+len(page) >= total {
			return out
		}
	}
}

func allCategories(t *testing.T, st store.Store) map[string]store.Category {
	t.Helper()
	out := map[string]store.Category{}
	for off := 0; ; off += store.MaxListLimit {
		page, total, err := st.ListCategories(context.Background(), store.CategoryFilter{Limit: store.MaxListLimit, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			out[c.SourceURL] = c
		}
		if len(page) == 0 || off+len(page) >= total {
			return out
		}
	}
}

// check compares the store with the site's ground truth.
func (e *env) check(t *testing.T) {
	t.Helper()
	checkTruth(t, e.st, e.blobs, e.site, e.srv.URL, func() (int, error) {
		var n int
		err := e.st.DB().QueryRow(`SELECT count(*) FROM scrape_job WHERE status = 'failed' AND (last_error IS NULL OR last_error = '')`).Scan(&n)
		return n, err
	})
}

// checkTruth compares st (crawled from the site served at srvURL) with the
// site's ground truth: every product stored exactly once with its fields,
// images in blobs, product_count right for every category, the queue
// drained, and no failed job without a cause (noCause counts them).
func checkTruth(t *testing.T, st store.Store, blobs blob.Store, site *fixture.Site, srvURL string, noCause func() (int, error)) {
	t.Helper()
	ctx := context.Background()
	cats := allCategories(t, st)
	catByID := map[string]store.Category{}
	for _, c := range cats {
		catByID[c.ID] = c
	}
	prods := allProducts(t, st)
	truth := site.Products()
	if len(prods) != len(truth) {
		t.Errorf("stored %d products, site has %d", len(prods), len(truth))
	}
	byURL := map[string]store.Product{}
	for _, p := range prods {
		if _, dup := byURL[p.SourceURL]; dup {
			t.Errorf("product %s stored twice", p.SourceURL)
		}
		byURL[p.SourceURL] = p
	}
	bad := 0
	for _, w := range truth {
		p, ok := byURL[srvURL+w.URL()]
		if !ok {
			t.Errorf("product %s missing", w.URL())
			continue
		}
		var errs []string
		if p.Title != w.Title {
			errs = append(errs, "title "+p.Title)
		}
		wantPrice, _ := strconv.ParseFloat(w.Price, 64)
		if p.Price == nil || *p.Price != wantPrice {
			errs = append(errs, "price")
		}
		if p.Currency != w.Currency {
			errs = append(errs, "currency "+p.Currency)
		}
		if p.SourceID == nil || *p.SourceID != w.ISBN13 {
			errs = append(errs, "source_id")
		}
		if p.Summary == nil || *p.Summary != w.Summary {
			errs = append(errs, "summary")
		}
		if p.Available != w.Available {
			errs = append(errs, "available")
		}
		if len(p.Specs) != len(w.Specs) {
			errs = append(errs, "specs count")
		}
		for k, v := range w.Specs {
			if p.Specs[k] != v {
				errs = append(errs, "spec "+k)
			}
		}
		if len(p.ImageURLs) != len(w.Images) {
			errs = append(errs, "image count")
		}
		for _, u := range p.ImageURLs {
			key, ok := strings.CutPrefix(u, DefaultImageURLPrefix)
			if !ok {
				errs = append(errs, "image url "+u)
				continue
			}
			r, err := blobs.Get(ctx, key)
			if err != nil {
				errs = append(errs, "image blob "+key)
				continue
			}
			r.Close()
		}
		if p.CategoryID == nil || catByID[*p.CategoryID].SourceURL != srvURL+fixture.Locale+"/collections/"+w.Category {
			errs = append(errs, "category")
		}
		if len(errs) > 0 {
			bad++
			if bad <= 10 {
				t.Errorf("product %s: %v", w.URL(), errs)
			}
		}
	}
	for _, w := range site.Categories() {
		c, ok := cats[srvURL+w.URL()]
		if !ok {
			t.Errorf("category %s missing", w.URL())
			continue
		}
		if c.ProductCount != w.ProductCount {
			t.Errorf("category %s: product_count %d, want %d", w.Handle, c.ProductCount, w.ProductCount)
		}
		if w.Group != "" && c.NavigationID == nil {
			t.Errorf("category %s (in the menu) has no navigation row", w.Handle)
		}
	}
	// Queue drained; every failed job has a cause.
	qs, err := st.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Status == store.StatusQueued || q.Status == store.StatusRunning {
			t.Errorf("queue not drained: %+v", q)
		}
	}
	n, err := noCause()
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("%d failed jobs without a cause", n)
	}
}

func TestCrawlFixture(t *testing.T) {
	t.Parallel()
	// 100 products at 8 a page: every category has several pages.
	e := newEnv(t, fixture.Options{Products: 100, PerPage: 8, Seed: 3, CrawlDelay: -1})
	st := e.crawl(t, Options{})
	e.check(t)
	if st.Failures != 0 {
		t.Errorf("failures = %d, want 0", st.Failures)
	}
	if st.Products != 100 {
		t.Errorf("stats products = %d", st.Products)
	}
	if e.site.DisallowedRequests() != 0 {
		t.Errorf("%d requests for robots-disallowed paths", e.site.DisallowedRequests())
	}
	// Navigation hierarchy.
	tree, err := e.st.NavigationTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, n := range tree {
		children += len(n.Children)
	}
	if len(tree) == 0 || children == 0 {
		t.Errorf("navigation tree: %d roots, %d children", len(tree), children)
	}
	// Images stored once per content: one object per distinct image.
	distinct := map[string]bool{}
	for _, p := range e.site.Products() {
		for _, img := range p.Images {
			distinct[img] = true
		}
	}
	if st.Images != int64(len(distinct)) {
		t.Errorf("images written = %d, distinct images = %d", st.Images, len(distinct))
	}
}

func TestCrawlWithFaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 120, PerPage: 8, Seed: 5, CrawlDelay: -1, Faults: fixture.Faults{
		ErrorRate: 0.1, ErrorTimes: 2,
		RateLimitRate: 0.03, RetryAfter: time.Second,
		TruncateRate:   0.05,
		DuplicateLinks: true,
		PaginationLoop: true,
	}})
	st := e.crawl(t, Options{MaxAttempts: 6, Workers: 6})
	e.check(t)
	if st.Failures == 0 {
		t.Error("no failure recorded despite faults")
	}
	var retried, withCause int
	if err := e.st.DB().QueryRow(`SELECT count(*), count(last_error) FROM scrape_job WHERE attempts > 1`).Scan(&retried, &withCause); err != nil {
		t.Fatal(err)
	}
	if retried == 0 || withCause != retried {
		t.Errorf("retried jobs %d, with recorded cause %d", retried, withCause)
	}
	var truncated int
	if err := e.st.DB().QueryRow(`SELECT count(*) FROM scrape_job WHERE last_error LIKE '%truncated%'`).Scan(&truncated); err != nil {
		t.Fatal(err)
	}
	if truncated == 0 {
		t.Error("no truncated page recorded")
	}
	e.mu.Lock()
	slept := e.maxSleep
	e.mu.Unlock()
	if slept < 500*time.Millisecond {
		t.Errorf("Retry-After not honoured: longest politeness wait %s", slept)
	}
	// The pagination loop terminated: no category page crawled twice.
	var dupPages int
	if err := e.st.DB().QueryRow(`SELECT count(*) FROM (SELECT target_url FROM scrape_job WHERE type = 'category' GROUP BY target_url HAVING count(*) > 1)`).Scan(&dupPages); err != nil {
		t.Fatal(err)
	}
	if dupPages != 0 {
		t.Errorf("%d category pages enqueued more than once", dupPages)
	}
}

func TestRecrawlAfterReshuffle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 60, PerPage: 8, Seed: 9, CrawlDelay: -1})
	first := e.crawl(t, Options{})
	e.check(t)
	e.site.Reshuffle()
	// Fresh products are not fetched again but follow their new category.
	second := e.crawl(t, Options{})
	e.check(t)
	if second.Pages >= first.Pages {
		t.Errorf("re-crawl fetched %d pages, first crawl %d: fresh products were refetched", second.Pages, first.Pages)
	}
	e.site.Reshuffle()
	// A refresh age in the past refetches everything, still without
	// duplicating products or images.
	third := e.crawl(t, Options{RefreshAge: -1})
	e.check(t)
	if third.Images != 0 {
		t.Errorf("re-crawl wrote %d images again", third.Images)
	}
}

func TestMaxPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 100, Seed: 2, CrawlDelay: -1})
	st, err := Crawl(context.Background(), Options{Store: e.st, Fetcher: e.fetch, Blobs: e.blobs, MaxPages: 10, Workers: 2,
		PollInterval: 5 * time.Millisecond}, e.srv.URL+fixture.Locale)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pages > 10 || st.Pages == 0 {
		t.Errorf("fetched %d pages, MaxPages 10", st.Pages)
	}
	if st.Queued == 0 {
		t.Error("queue empty after a MaxPages stop")
	}
	if !strings.Contains(st.String(), "pages ") {
		t.Errorf("progress line %q", st)
	}
}

// countingDoer counts the fetched URLs that contain a substring.
type countingDoer struct {
	fetch.Doer
	substr string
	n      atomic.Int64
}

func (d *countingDoer) Get(ctx context.Context, u string) (*fetch.Response, error) {
	if strings.Contains(u, d.substr) {
		d.n.Add(1)
	}
	return d.Doer.Get(ctx, u)
}

func TestShopifyJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 60, Seed: 4, CrawlDelay: -1})
	counter := &countingDoer{Doer: e.fetch, substr: "/products.json?"}
	st := e.crawl(t, Options{ShopifyJSON: true, Profile: extract.WorldOfBooks(), Fetcher: counter})
	if counter.n.Load() == 0 {
		t.Error("no collection products.json was read in Shopify mode")
	}
	if st.Failures != 0 {
		t.Errorf("failures = %d", st.Failures)
	}
	prods := allProducts(t, e.st)
	if len(prods) != 60 {
		t.Fatalf("stored %d products, want 60", len(prods))
	}
	byURL := map[string]store.Product{}
	for _, p := range prods {
		byURL[p.SourceURL] = p
	}
	for _, w := range e.site.Products() {
		p := byURL[e.srv.URL+w.URL()]
		if p.Title != w.Title || p.Specs["isbn"] != w.ISBN13 || len(p.ImageURLs) == 0 {
			t.Errorf("product %s: title %q isbn %v images %d", w.URL(), p.Title, p.Specs["isbn"], len(p.ImageURLs))
		}
	}
}

// cancelAfter cancels a context after n fetches, like a crawler killed
// mid-run.
type cancelAfter struct {
	fetch.Doer
	n      atomic.Int64
	after  int64
	cancel context.CancelFunc
}

func (d *cancelAfter) Get(ctx context.Context, u string) (*fetch.Response, error) {
	if d.n.Add(1) == d.after {
		d.cancel()
	}
	return d.Doer.Get(ctx, u)
}

func TestInterruptAndResume(t *testing.T) {
	e := newEnv(t, fixture.Options{Products: 120, Seed: 11, CrawlDelay: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := New(Options{Store: e.st, Fetcher: &cancelAfter{Doer: e.fetch, after: 60, cancel: cancel}, Blobs: e.blobs,
		PollInterval: 5 * time.Millisecond, Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(ctx, e.srv.URL+fixture.Locale); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx); err != context.Canceled {
		t.Fatalf("interrupted Run: %v, want context.Canceled", err)
	}
	// A new crawler (fresh process) finishes the crawl: the interrupted
	// jobs are rescued once their lease expires.
	var calls atomic.Int64
	c2, err := New(Options{Store: e.st, Fetcher: e.fetch, Blobs: e.blobs, PollInterval: 5 * time.Millisecond,
		Lease: 300 * time.Millisecond, Progress: func(Stats) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	st, err := c2.Run(rctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resumed: %s", st)
	e.check(t)
	if calls.Load() == 0 {
		t.Error("Progress never called")
	}
}
