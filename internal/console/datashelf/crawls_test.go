package datashelf

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// TestCrawlsOneAtATimeAndStop: a second crawl is refused while one runs,
// Stop ends the running crawl and waits for it, and no crawl starts after.
func TestCrawlsOneAtATimeAndStop(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ds.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	site := fixture.New(fixture.Options{Products: 200, Seed: 3, CrawlDelay: -1,
		Faults: fixture.Faults{SlowRate: 1, SlowDelay: 300 * time.Millisecond}})
	srv := httptest.NewServer(site.Handler())
	defer srv.Close()
	f := fetch.New(fetch.Options{Policy: fetch.AllowAllPolicy()})
	defer f.Close()
	crawls := crawler.NewRunner(ctx, crawler.Options{Store: st, Fetcher: f, Workers: 2})
	s := Adapt(st, crawls)

	if _, err := s.StartCrawl(ctx, "ftp://x/", 0); !errors.Is(err, console.ErrInvalid) {
		t.Fatalf("a bad URL: %v", err)
	}
	if _, err := s.StartCrawl(ctx, srv.URL+fixture.Locale, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartCrawl(ctx, srv.URL+fixture.Locale, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second crawl while one runs: %v", err)
	}
	if got := s.Crawl(); !got.Running || got.URL != srv.URL+fixture.Locale {
		t.Fatalf("status while running: %+v", got)
	}
	stopped := make(chan struct{})
	go func() { crawls.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return")
	}
	if got := s.Crawl(); got.Running || got.Finished.IsZero() || got.Error == "" {
		t.Errorf("status after Stop: %+v", got)
	}
	if _, err := s.StartCrawl(ctx, srv.URL+fixture.Locale, 0); err == nil || errors.Is(err, ErrBusy) {
		t.Errorf("a crawl started after Stop: %v", err)
	}
}
