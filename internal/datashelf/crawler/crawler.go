// Package crawler is DataShelf's crawler: workers claim scrape jobs from a
// store.Store, fetch pages through a fetch.Doer, parse them with an
// extract.Profile and write navigation rows, categories and products back
// to the store.
//
// A crawl starts with Seed (a navigation job for the site's home page) and
// runs with Run until the queue drains:
//
//   - navigation → extract.Navigation → navigation rows (hierarchy through
//     parent_id) → a category job per collection link;
//   - category → extract.Category → category row → product jobs (at a higher
//     priority than category jobs), category jobs for related collections
//     and for the next page (link rel=next);
//   - product → extract.Product (or Shopify's /products/{handle}.js when
//     Options.ShopifyJSON is set and the profile enables it) → images
//     downloaded once into the blob store under a content-hash key →
//     UpsertProduct.
//
// Failures (fetch errors, non-2xx statuses, truncated pages, extraction
// errors) are reported to the store with Fail, which records the cause and
// schedules a retry with backoff; failures retrying cannot cure (an address
// the network policy refuses, robots.txt, a 4xx other than 408, 425 and
// 429) fail the job at once (FailPermanently). A crawl whose start URL
// fails for good stops with ErrSeedFailed. Re-crawls refresh products older than
// Options.RefreshAge; younger ones are not fetched again, but a product
// found in another category is moved there.
//
// The CLI runs a crawl with Crawl (New, Seed and Run):
//
//	f := fetch.New(crawler.FetchOptions(version))
//	stats, err := crawler.Crawl(ctx, crawler.Options{Store: st, Fetcher: f, Blobs: b, MaxPages: n,
//		Progress: func(s crawler.Stats) { fmt.Fprintf(os.Stderr, "\r%s", s) }}, url)
package crawler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// Job priorities: products before categories so that a crawl's queue stays
// short and products appear early; the navigation job runs first.
const (
	PriorityNavigation = 30
	PriorityProduct    = 20
	PriorityCategory   = 10
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultWorkers        = 4
	DefaultLease          = store.DefaultLease
	DefaultRefreshAge     = 24 * time.Hour
	DefaultImageURLPrefix = "/datashelf/images/"
	DefaultPollInterval   = 100 * time.Millisecond
	DefaultCurrency       = store.DefaultCurrency
)

// Metadata keys the crawler stores on jobs.
const (
	metaNavigationID = "navigation_id"
	metaCategoryID   = "category_id"
)

// ErrTruncated is the cause recorded for an HTML page that ends before its
// closing </html> tag or was cut at the fetcher's size limit.
var ErrTruncated = errors.New("crawler: truncated page")

// Options configures a Crawler.
type Options struct {
	// Store holds the queue and the crawled rows. Required.
	Store store.Store
	// Fetcher fetches pages and images. Required.
	Fetcher fetch.Doer
	// Blobs stores downloaded images. Nil disables image downloads (the
	// product keeps the site's image URLs).
	Blobs blob.Store
	// Profile describes the site; the zero value means extract.WorldOfBooks().
	Profile extract.Profile
	// Workers is the number of jobs processed concurrently (default 4).
	Workers int
	// Lease is the job lease extended by heartbeats; running jobs whose
	// lease expired are rescued when Run starts and every Lease/4 (at
	// most every minute), so within Lease + Lease/4 (default 10 min).
	Lease time.Duration
	// MaxPages stops the crawl (without failing) once this many jobs (one
	// page each; images are not counted) have been claimed; the rest stays
	// queued for a later Run. 0 means no limit.
	MaxPages int
	// RefreshAge: products scraped less than this long ago are not fetched
	// again (default 24 h; negative means always refetch).
	RefreshAge time.Duration
	// RetainFinished is how long completed and failed jobs are kept before
	// Run removes them (default 7 days).
	RetainFinished time.Duration
	// ImageURLPrefix is prepended to blob keys to form image_urls
	// (default "/datashelf/images/").
	ImageURLPrefix string
	// ShopifyJSON makes product jobs read /products/{handle}.js instead of
	// the HTML page when the profile enables Shopify. The JSON carries no
	// currency: Currency is used.
	ShopifyJSON bool
	// Currency is the currency of Shopify JSON prices (default GBP).
	Currency string
	// MaxAttempts is each job's max_attempts (0 means the store's default,
	// store.DefaultMaxAttempts).
	MaxAttempts int
	// PollInterval is how long an idle crawler waits before claiming again
	// when no wake-up (store.Store.Wake) comes first (default 100 ms).
	PollInterval time.Duration
	// Progress, when set, is called about once a second while Run works,
	// and once when it returns.
	Progress func(Stats)
	// Logger receives job failures and progress; nil discards.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// WorkerID names this crawler in locked_by (default host-pid-random).
	WorkerID string
}

// Stats summarises a crawl.
type Stats struct {
	// Pages is the number of pages fetched (any status, images excluded).
	Pages int64 `json:"pages"`
	// Products is the number of products stored (upserted).
	Products int64 `json:"products"`
	// Images is the number of images written to the blob store.
	Images int64 `json:"images"`
	// Failures is the number of failed job attempts (each one Failed).
	Failures int64 `json:"failures"`
	// Completed is the number of jobs completed.
	Completed int64 `json:"completed"`
	// Queued is the queue depth (queued jobs) at the last check.
	Queued int64 `json:"queued"`
	// Elapsed is the time since Run started.
	Elapsed time.Duration `json:"elapsed"`
}

// PagesPerSecond returns Pages / Elapsed.
func (s Stats) PagesPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Pages) / s.Elapsed.Seconds()
}

// String formats the stats as a one-line progress report.
func (s Stats) String() string {
	return fmt.Sprintf("pages %d (%.1f/s) products %d images %d queued %d errors %d elapsed %s",
		s.Pages, s.PagesPerSecond(), s.Products, s.Images, s.Queued, s.Failures, s.Elapsed.Truncate(time.Second))
}

// Crawler runs crawls. Create one with New; a Crawler runs one Run at a
// time.
type Crawler struct {
	o   Options
	log *slog.Logger

	running    atomic.Bool
	start      atomic.Int64 // Run's start, unix ns
	pages      atomic.Int64
	products   atomic.Int64
	images     atomic.Int64
	failures   atomic.Int64
	completed  atomic.Int64
	queued     atomic.Int64
	pageBudget atomic.Int64 // jobs claimed in this Run (counted against MaxPages)

	mu     sync.Mutex
	seen   map[string]bool           // type|url enqueued or claimed in this Run
	navIDs map[string]string         // navigation source_url → id
	cats   map[string]store.Category // category source_url → row
	prods  map[string]store.Product  // product source_url → row
	imgs   map[string]*imageEntry    // image source URL → blob key
	loaded bool

	runID    string   // the run record of the current (or last) Run
	runEnded bool     // runID's record has ended
	runLog   []string // the run's log tail, at most store.RunLogLines

	seedID  string        // the job Seed enqueued
	seedErr error         // set once the seed failed for good (see ErrSeedFailed)
	stop    chan struct{} // closed with seedErr; made by Run
}

type imageEntry struct {
	once sync.Once
	key  string
	err  error
}

// New returns a Crawler for o.
func New(o Options) (*Crawler, error) {
	if o.Store == nil || o.Fetcher == nil {
		return nil, errors.New("crawler: Store and Fetcher are required")
	}
	if o.Profile.Name == "" && o.Profile.ProductTitle == "" {
		o.Profile = extract.WorldOfBooks()
	}
	if err := o.Profile.Validate(); err != nil {
		return nil, err
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.RetainFinished <= 0 {
		o.RetainFinished = 7 * 24 * time.Hour
	}
	if o.RefreshAge == 0 {
		o.RefreshAge = DefaultRefreshAge
	}
	if o.ImageURLPrefix == "" {
		o.ImageURLPrefix = DefaultImageURLPrefix
	}
	if o.Currency == "" {
		o.Currency = DefaultCurrency
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WorkerID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.WorkerID = fmt.Sprintf("crawler-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Crawler{
		o:      o,
		log:    log,
		seen:   map[string]bool{},
		navIDs: map[string]string{},
		cats:   map[string]store.Category{},
		prods:  map[string]store.Product{},
		imgs:   map[string]*imageEntry{},
	}, nil
}

// Seed enqueues a navigation job for startURL (usually the site's home
// page). Seeding a URL whose navigation job is running returns that job; a
// queued one (say, waiting out the backoff of an earlier run's failure) is
// made due at once with its attempts counted afresh (store.NewJob.Reset),
// so a new crawl never waits for an old one's retry. If the seed's job
// fails for good during Run, Run stops and returns ErrSeedFailed. Seed
// also records the crawl's run (store.Runs.StartRun), which Run updates
// and ends.
func (c *Crawler) Seed(ctx context.Context, startURL string) error {
	u, err := url.Parse(startURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("crawler: seed %q: not an absolute http(s) URL", startURL)
	}
	u.Fragment = ""
	j, err := c.o.Store.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: u.String(), Priority: PriorityNavigation, MaxAttempts: c.o.MaxAttempts, Reset: true})
	if err != nil {
		return fmt.Errorf("crawler: seed: %w", err)
	}
	c.mu.Lock()
	c.seedID = j.ID
	c.mu.Unlock()
	if err := c.startRecord(ctx, u.String()); err != nil {
		return err
	}
	c.note("seeded %s", u.String())
	return nil
}

// Stats returns the current counters.
func (c *Crawler) Stats() Stats {
	s := Stats{
		Pages:     c.pages.Load(),
		Products:  c.products.Load(),
		Images:    c.images.Load(),
		Failures:  c.failures.Load(),
		Completed: c.completed.Load(),
		Queued:    c.queued.Load(),
	}
	if ns := c.start.Load(); ns != 0 {
		s.Elapsed = time.Since(time.Unix(0, ns))
	}
	return s
}

// enqueue adds a job unless the same type and URL was enqueued or claimed
// earlier in this crawl (the store deduplicates queued and running jobs;
// this also stops pagination loops through completed pages).
func (c *Crawler) enqueue(ctx context.Context, t store.JobType, target string, prio int, meta map[string]any) error {
	key := string(t) + "|" + target
	c.mu.Lock()
	if c.seen[key] {
		c.mu.Unlock()
		return nil
	}
	c.seen[key] = true
	c.mu.Unlock()
	_, err := c.o.Store.Enqueue(ctx, store.NewJob{Type: t, TargetURL: target, Priority: prio, Metadata: meta, MaxAttempts: c.o.MaxAttempts})
	if err != nil {
		c.mu.Lock()
		delete(c.seen, key)
		c.mu.Unlock()
		return fmt.Errorf("enqueue %s %s: %w", t, target, err)
	}
	return nil
}

// markSeen records a claimed job so that it is not enqueued again.
func (c *Crawler) markSeen(j store.Job) {
	c.mu.Lock()
	c.seen[string(j.Type)+"|"+j.TargetURL] = true
	c.mu.Unlock()
}

// load reads the existing categories and products, so that re-crawls keep
// navigation links and skip fresh products.
func (c *Crawler) load(ctx context.Context) error {
	c.mu.Lock()
	done := c.loaded
	c.mu.Unlock()
	if done {
		return nil
	}
	cats := map[string]store.Category{}
	for off := 0; ; off += store.MaxListLimit {
		page, total, err := c.o.Store.ListCategories(ctx, store.CategoryFilter{Limit: store.MaxListLimit, Offset: off})
		if err != nil {
			return fmt.Errorf("crawler: load categories: %w", err)
		}
		for _, x := range page {
			cats[x.SourceURL] = x
		}
		if len(page) == 0 || off+len(page) >= total {
			break
		}
	}
	prods := map[string]store.Product{}
	if c.o.RefreshAge > 0 {
		// Keyset pages, so that another crawler writing meanwhile makes
		// none be read twice or missed.
		var after *store.ProductKey
		for {
			page, _, err := c.o.Store.ListProducts(ctx, store.ProductFilter{Sort: store.SortCreatedAtDesc, Limit: store.MaxListLimit, After: after, SkipTotal: true})
			if err != nil {
				return fmt.Errorf("crawler: load products: %w", err)
			}
			for _, x := range page {
				prods[x.SourceURL] = x
			}
			if len(page) < store.MaxListLimit {
				break
			}
			k := store.KeyOf(page[len(page)-1], store.SortCreatedAtDesc)
			after = &k
		}
	}
	c.mu.Lock()
	for k, v := range cats {
		c.cats[k] = v
	}
	for k, v := range prods {
		c.prods[k] = v
	}
	c.loaded = true
	c.mu.Unlock()
	return nil
}

// canonical returns u without fragment and without a "page=1" parameter
// (the first page of a collection is its bare URL).
func canonical(u *url.URL) string {
	v := *u
	v.Fragment = ""
	q := v.Query()
	if q.Get("page") == "1" {
		q.Del("page")
	}
	if len(q) == 0 {
		v.RawQuery = ""
	} else {
		v.RawQuery = q.Encode()
	}
	return v.String()
}

// withoutQuery returns u's scheme, host and path.
func withoutQuery(u *url.URL) string {
	v := *u
	v.Fragment, v.RawQuery, v.ForceQuery = "", "", false
	return v.String()
}

func metaString(m map[string]any, k string) string {
	if s, ok := m[k].(string); ok {
		return s
	}
	return ""
}

func isCollectionLink(it extract.NavItem) bool {
	u, err := url.Parse(it.URL)
	if err != nil {
		return false
	}
	return it.Level > 0 || strings.Contains(u.Path, "/collections/")
}

func ptr[T any](v T) *T { return &v }
