package datashelf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

var _ CrawlControl = (*Adapter)(nil)

// crawlError is how the crawl page words why a crawl stopped early. An
// aborted crawl reads "Aborted by an operator."; a failed start URL reads "The start URL failed: <url>: <cause>", once:
// the crawler's own wording of ErrSeedFailed, which prefixes it, is
// replaced.
func crawlError(err error) string {
	if errors.Is(err, crawler.ErrAborted) {
		return "Aborted by an operator."
	}
	if !errors.Is(err, crawler.ErrSeedFailed) {
		return err.Error()
	}
	return "The start URL failed: " + strings.TrimPrefix(err.Error(), crawler.ErrSeedFailed.Error()+": ")
}

// StartCrawl implements CrawlControl.
func (s *Adapter) StartCrawl(ctx context.Context, startURL string, maxPages int) (string, error) {
	if s.runner == nil {
		return "", errors.New("datashelf: crawls are not run by this console")
	}
	id, err := s.runner.Start(ctx, startURL, maxPages)
	switch {
	case errors.Is(err, crawler.ErrBusy):
		return "", ErrBusy
	case errors.Is(err, crawler.ErrBadStart), errors.Is(err, store.ErrInvalid):
		return "", fmt.Errorf("%w: %s", console.ErrInvalid, strings.TrimPrefix(err.Error(), "crawler: "))
	case errors.Is(err, crawler.ErrStopping):
		return "", errors.New("datashelf: the server is stopping")
	}
	return id, err
}

// Crawl implements CrawlControl.
func (s *Adapter) Crawl() CrawlStatus {
	if s.runner == nil {
		return CrawlStatus{}
	}
	st := s.runner.Status()
	cs := CrawlStatus{Running: st.Running, RunID: st.RunID, URL: st.URL, Started: st.Started, Finished: st.Finished,
		Pages: st.Pages, Products: st.Products, Images: st.Images, Completed: st.Completed, Failures: st.Failures,
		Queued: st.Queued, PerSecond: st.PagesPerSecond()}
	if st.Err != nil {
		cs.Error = crawlError(st.Err)
	}
	return cs
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

// Runs implements CrawlControl.
func (s *Adapter) Runs(ctx context.Context, limit, offset int) ([]Run, int, error) {
	rs, total, err := s.st.ListRuns(ctx, store.RunFilter{Limit: limit, Offset: offset})
	if err != nil {
		return nil, 0, fmt.Errorf("datashelf: runs: %w", err)
	}
	out := make([]Run, len(rs))
	for i, r := range rs {
		out[i] = s.shelfRun(r)
	}
	return out, total, nil
}

// shelfRun is r as the pages show it.
func (s *Adapter) shelfRun(r store.Run) Run {
	sr := Run{ID: r.ID, StartURL: r.StartURL, Node: r.Node, MaxPages: r.MaxPages, State: string(r.State),
		Pages: r.Pages, Products: r.Products, Failures: r.Failures, Log: r.Log, Started: r.StartedAt, Updated: r.UpdatedAt}
	if r.LastError != nil {
		sr.Error = *r.LastError
	}
	if r.EndedAt != nil {
		sr.Ended = *r.EndedAt
	}
	if s.runner != nil && r.State == store.RunRunning {
		st := s.runner.Status()
		sr.Here = st.Running && strings.EqualFold(st.RunID, r.ID)
	}
	return sr
}

// Run implements CrawlControl.
func (s *Adapter) Run(ctx context.Context, id string) (Run, error) {
	r, err := s.st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return Run{}, console.ErrNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("datashelf: run: %w", err)
	}
	return s.shelfRun(r), nil
}

// AbortRun implements CrawlControl.
func (s *Adapter) AbortRun(ctx context.Context, id string) (Run, error) {
	if s.runner == nil {
		return Run{}, ErrRunElsewhere
	}
	r, err := s.runner.Abort(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
		return Run{}, console.ErrNotFound
	case errors.Is(err, store.ErrRunEnded):
		return s.shelfRun(r), ErrRunEnded
	case errors.Is(err, crawler.ErrNotHere):
		return s.shelfRun(r), ErrRunElsewhere
	case err != nil:
		return Run{}, fmt.Errorf("datashelf: abort: %w", err)
	}
	return s.shelfRun(r), nil
}

// ExportRun implements CrawlControl.
func (s *Adapter) ExportRun(ctx context.Context, id, format string, w io.Writer) (int, error) {
	return store.WriteProducts(format, w, func(fn func(store.Product) error) error {
		return s.st.RunProducts(ctx, id, fn)
	})
}
