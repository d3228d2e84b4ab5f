package crawler

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// slowRetryOptions gives failed jobs an hour of backoff, so a crawl that
// waits for a retry runs into the test's deadline instead of passing late.
var slowRetryOptions = store.Options{BackoffBase: time.Hour, BackoffMax: time.Hour}

// openSlowRetry opens a fresh store of kind with slowRetryOptions.
func openSlowRetry(t *testing.T, kind string) store.Store {
	t.Helper()
	d := freshDB(t, kind)
	var st store.Store
	var err error
	switch kind {
	case "sqlite":
		st, err = sqlite.Open(context.Background(), d.Path, &sqlite.Options{Options: slowRetryOptions})
	default:
		st, err = postgres.Open(context.Background(), d.URL, &postgres.Options{Options: slowRetryOptions, Schema: d.Schema, MaxConns: 10})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSeedRefused crawls a start URL that cannot succeed — refused by the
// network policy, or answering 404 — with an hour of retry backoff: the
// crawl must fail at once (not wait out a retry), with an error that wraps
// ErrSeedFailed and names the cause (and, for the policy, the
// --allow-networks flag), after one attempt. A later crawl of the same URL
// with the right policy then runs at once.
func TestSeedRefused(t *testing.T) {
	site := fixture.New(fixture.Options{Products: 12, Seed: 3, CrawlDelay: -1})
	srv := httptest.NewServer(site.Handler())
	t.Cleanup(srv.Close)
	refusing := fetch.New(fetch.Options{UserAgent: "quarry-datashelf/test", ObeyRobots: true, Policy: fetch.NewPolicy(nil, nil)})
	t.Cleanup(refusing.Close)
	allowing := fetch.New(fetch.Options{UserAgent: "quarry-datashelf/test", ObeyRobots: true,
		AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, PerHostConcurrency: 8})
	t.Cleanup(allowing.Close)

	tests := []struct {
		name    string
		fetcher *fetch.Fetcher
		path    string
		cause   error    // wrapped by the crawl's error; nil: only ErrSeedFailed
		mention []string // in the crawl's error
	}{
		{"refused by the network policy", refusing, fixture.Locale, fetch.ErrBlocked, []string{"--allow-networks", "loopback", srv.URL + fixture.Locale}},
		{"404", allowing, "/no-such-shop", nil, []string{"HTTP 404", srv.URL + "/no-such-shop"}},
	}
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					st := openSlowRetry(t, kind)
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					start := time.Now()
					stats, err := Crawl(ctx, Options{Store: st, Fetcher: tt.fetcher, Blobs: newBlobs(t), Workers: 2, PollInterval: 5 * time.Millisecond}, srv.URL+tt.path)
					if !errors.Is(err, ErrSeedFailed) || (tt.cause != nil && !errors.Is(err, tt.cause)) {
						t.Fatalf("crawl error %v (after %s, %s), want ErrSeedFailed wrapping %v", err, time.Since(start), stats, tt.cause)
					}
					for _, m := range tt.mention {
						if !strings.Contains(err.Error(), m) {
							t.Errorf("error %q does not mention %q", err, m)
						}
					}
					if d := time.Since(start); d > 10*time.Second {
						t.Errorf("the crawl took %s to fail", d)
					}
					// One attempt, failed for good, with the cause recorded.
					stat := queueStat(t, st, store.StatusFailed, store.JobNavigation)
					if stat.Count != 1 || stat.AvgAttempts != 1 {
						t.Errorf("failed navigation jobs %+v, want one after one attempt", stat)
					}
					if q := queueStat(t, st, store.StatusQueued, store.JobNavigation); q.Count != 0 {
						t.Errorf("%d navigation jobs left queued for a retry", q.Count)
					}
					if tt.cause == nil {
						return
					}
					// The same crawl with the right policy runs at once.
					stats, err = Crawl(ctx, Options{Store: st, Fetcher: allowing, Blobs: newBlobs(t), Workers: 4, PollInterval: 5 * time.Millisecond}, srv.URL+tt.path)
					if err != nil || stats.Products != 12 {
						t.Fatalf("crawl with the right policy: %v, %s", err, stats)
					}
				})
			}
		})
	}
}

// TestSeedResetsBackoff: a start URL whose navigation job waits out an
// hour of backoff from an earlier failure (a transient one: the site was
// down) is crawled at once by a new crawl, which resets the job.
func TestSeedResetsBackoff(t *testing.T) {
	site := fixture.New(fixture.Options{Products: 12, Seed: 4, CrawlDelay: -1})
	srv := httptest.NewServer(site.Handler())
	t.Cleanup(srv.Close)
	f := fetch.New(fetch.Options{UserAgent: "quarry-datashelf/test", ObeyRobots: true,
		AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, PerHostConcurrency: 8})
	t.Cleanup(f.Close)
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			st := openSlowRetry(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// An earlier run's seed failed once and was queued for a retry
			// in an hour.
			j, err := st.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: srv.URL + fixture.Locale, Priority: PriorityNavigation})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Claim(ctx, "old-crawler", 1); err != nil {
				t.Fatal(err)
			}
			if j, err = st.Fail(ctx, j.ID, "old-crawler", "connection refused"); err != nil || j.Status != store.StatusQueued || time.Until(j.RunAfter) < 50*time.Minute {
				t.Fatalf("old seed: %+v, %v", j, err)
			}
			stats, err := Crawl(ctx, Options{Store: st, Fetcher: f, Blobs: newBlobs(t), Workers: 4, PollInterval: 5 * time.Millisecond}, srv.URL+fixture.Locale)
			if err != nil || stats.Products != 12 {
				t.Fatalf("crawl: %v, %s (the old job's backoff was waited out?)", err, stats)
			}
			got, err := st.GetJob(ctx, j.ID)
			if err != nil || got.Status != store.StatusCompleted || got.Attempts != 1 {
				t.Fatalf("the old seed job after the new crawl: %+v, %v (want completed, attempts counted afresh)", got, err)
			}
		})
	}
}

// queueStat returns the job_queue_stats row of status and type (zero if
// none).
func queueStat(t *testing.T, st store.Store, status store.JobStatus, typ store.JobType) store.QueueStat {
	t.Helper()
	stats, err := st.QueueStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Status == status && s.Type == typ {
			return s
		}
	}
	return store.QueueStat{}
}
