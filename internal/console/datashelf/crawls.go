package datashelf

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

var _ CrawlControl = (*Adapter)(nil)

// Crawls runs the crawls started from the console, one at a time per
// process, in the background: each is what `quarry datashelf crawl URL
// --max-pages N` runs, with the options given to NewCrawls.
type Crawls struct {
	ctx    context.Context
	cancel context.CancelFunc
	opts   crawler.Options
	now    func() time.Time

	mu      sync.Mutex
	running bool
	status  CrawlStatus
	done    chan struct{}
}

// NewCrawls returns a runner of crawls that live until ctx ends (the
// server's life) or Stop, each with o (Store, Fetcher, Blobs, Profile, …;
// its MaxPages and Progress are set per crawl).
func NewCrawls(ctx context.Context, o crawler.Options) *Crawls {
	ctx, cancel := context.WithCancel(ctx)
	return &Crawls{ctx: ctx, cancel: cancel, opts: o, now: time.Now}
}

// Stop ends the running crawl (its jobs in flight are rescued by a later
// crawl once their lease expires, as after a crash) and waits for it; no
// crawl starts after it.
func (c *Crawls) Stop() {
	c.cancel()
	c.Wait()
}

// Wait blocks until the running crawl (if any) has returned.
func (c *Crawls) Wait() {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (c *Crawls) progress(s crawler.Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.status
	st.Pages, st.Products, st.Images, st.Completed, st.Failures, st.Queued = s.Pages, s.Products, s.Images, s.Completed, s.Failures, s.Queued
	st.PerSecond = s.PagesPerSecond()
}

// start seeds startURL and runs the crawl in the background.
func (c *Crawls) start(ctx context.Context, startURL string, maxPages int) error {
	u, err := url.Parse(startURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: the start URL must be an absolute http or https URL", console.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return ErrBusy
	}
	if c.ctx.Err() != nil {
		return errors.New("datashelf: the server is stopping")
	}
	o := c.opts
	o.MaxPages = maxPages
	o.Progress = c.progress
	cr, err := crawler.New(o)
	if err != nil {
		return err
	}
	if err := cr.Seed(ctx, startURL); err != nil {
		return fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	c.running = true
	c.status = CrawlStatus{Running: true, URL: startURL, Started: c.now()}
	c.done = make(chan struct{})
	done := c.done
	go func() {
		defer close(done)
		st, err := cr.Run(c.ctx)
		c.progress(st)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running = false
		c.status.Running = false
		c.status.Finished = c.now()
		if err != nil {
			c.status.Error = crawlError(err)
		}
	}()
	return nil
}

// crawlError is how the crawl page words why a crawl stopped early. A
// failed start URL reads "The start URL failed: <url>: <cause>", once:
// the crawler's own wording of ErrSeedFailed, which prefixes it, is
// replaced.
func crawlError(err error) string {
	if !errors.Is(err, crawler.ErrSeedFailed) {
		return err.Error()
	}
	return "The start URL failed: " + strings.TrimPrefix(err.Error(), crawler.ErrSeedFailed.Error()+": ")
}

// StartCrawl implements CrawlControl.
func (s *Adapter) StartCrawl(ctx context.Context, startURL string, maxPages int) error {
	if s.crawls == nil {
		return errors.New("datashelf: crawls are not run by this console")
	}
	return s.crawls.start(ctx, startURL, maxPages)
}

// Crawl implements CrawlControl.
func (s *Adapter) Crawl() CrawlStatus {
	if s.crawls == nil {
		return CrawlStatus{}
	}
	s.crawls.mu.Lock()
	defer s.crawls.mu.Unlock()
	return s.crawls.status
}

// Failures implements CrawlControl.
func (s *Adapter) Failures(ctx context.Context, limit int) ([]Job, error) {
	js, err := s.st.FailedJobs(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("datashelf: failed jobs: %w", err)
	}
	out := make([]Job, 0, len(js))
	for _, j := range js {
		sj := Job{ID: j.ID, Type: string(j.Type), URL: j.TargetURL, Attempts: j.Attempts}
		if j.LastError != nil {
			sj.Error = *j.LastError
		}
		if j.CompletedAt != nil {
			sj.FinishedAt = *j.CompletedAt
		}
		out = append(out, sj)
	}
	return out, nil
}

// Throughput implements CrawlControl.
func (s *Adapter) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]ThroughputPoint, error) {
	bs, err := s.st.Throughput(ctx, since, bucket)
	if err != nil {
		return nil, fmt.Errorf("datashelf: throughput: %w", err)
	}
	out := make([]ThroughputPoint, len(bs))
	for i, b := range bs {
		out[i] = ThroughputPoint{Start: b.Start, Completed: b.Completed, Failed: b.Failed}
	}
	return out, nil
}

// Retry implements CrawlControl.
func (s *Adapter) Retry(ctx context.Context, ids []string) (int, error) {
	n, err := s.st.RetryFailed(ctx, ids)
	if errors.Is(err, store.ErrInvalid) {
		return 0, fmt.Errorf("%w: %v", console.ErrInvalid, err)
	}
	if err != nil {
		return 0, fmt.Errorf("datashelf: retry: %w", err)
	}
	return n, nil
}
