package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// Run processes jobs until the queue is drained (no queued or running job
// left, including jobs waiting for a retry), until MaxPages pages have been
// fetched, or until ctx ends (then it returns ctx's error; jobs being
// processed stay running and are rescued once their lease expires).
//
// Run keeps the crawl's run record (see Seed; a Run without a Seed
// records one of its own): counters and log tail every
// RunFlushInterval, then its end, as succeeded (nil error), aborted (ctx
// ended; an operator's abort cancels it with ErrAborted as the cause) or
// failed. It also fails the running records of other crawls whose
// process stopped updating them for StaleRunAfter.
func (c *Crawler) Run(ctx context.Context) (st Stats, err error) {
	if !c.running.CompareAndSwap(false, true) {
		return c.Stats(), errors.New("crawler: Run is already running")
	}
	defer c.running.Store(false)
	c.start.Store(time.Now().UnixNano())
	for _, n := range []*atomic.Int64{&c.pages, &c.products, &c.images, &c.failures, &c.completed, &c.pageBudget} {
		n.Store(0)
	}
	c.mu.Lock()
	c.seen = map[string]bool{}
	c.loaded = false
	c.seedErr = nil
	c.stop = make(chan struct{})
	stop := c.stop
	c.mu.Unlock()
	if err := c.startRecord(ctx, queuedStart); err != nil {
		return c.Stats(), err
	}
	defer func() { c.endRecord(ctx, err) }()
	// Deferred after endRecord, so it stops first: the record's last
	// update is its end.
	defer c.heartbeat(ctx)()
	if n, err := c.o.Store.EndStaleRuns(ctx, StaleRunAfter, fmt.Sprintf("its process stopped updating it for %s", StaleRunAfter)); err != nil {
		c.log.Warn("crawler: end stale runs", "err", err)
	} else if n > 0 {
		c.log.Info("crawler: ended stale runs", "count", n)
	}
	if err := c.load(ctx); err != nil {
		return c.Stats(), err
	}
	// Finished jobs are kept RetainFinished (7 days) for inspection, then
	// removed, as the document's cleanup function does.
	if n, err := c.o.Store.CleanupFinished(ctx, c.o.RetainFinished); err != nil {
		c.log.Warn("crawler: clean up finished jobs", "err", err)
	} else if n > 0 {
		c.log.Info("crawler: cleaned up finished jobs", "count", n)
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if c.o.Progress == nil {
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				c.refreshQueued(ctx)
				c.o.Progress(c.Stats())
			case <-stopProgress:
				return
			}
		}
	}()

	d, derr := dispatch.New(dispatch.Options{
		Store:        c.o.Store,
		Worker:       c.o.WorkerID,
		Workers:      c.o.Workers,
		Lease:        c.o.Lease,
		PollInterval: c.o.PollInterval,
		Now:          c.o.Now,
		Logger:       c.log,
		Budget:       c.budget,
		Claimed: func(j store.Job) {
			c.markSeen(j)
			c.pageBudget.Add(1)
		},
		Completed: func(j store.Job, err error) {
			if err == nil {
				c.completed.Add(1)
			}
		},
		Idle: c.drained,
		Stop: stop,
	})
	err = derr
	if err == nil {
		err = d.Run(ctx, c.work)
	}
	if err == nil {
		err = c.stopped()
	}
	close(stopProgress)
	<-progressDone
	if ctx.Err() == nil {
		c.refreshQueued(ctx)
	}
	st = c.Stats()
	if c.o.Progress != nil {
		c.o.Progress(st)
	}
	return st, err
}

// budget caps a claim of free jobs by what is left of MaxPages.
func (c *Crawler) budget(free int) int {
	if c.o.MaxPages <= 0 {
		return free
	}
	return int(min(int64(free), max(int64(c.o.MaxPages)-c.pageBudget.Load(), 0)))
}

// drained reports whether the queue holds no queued or running job (the
// crawl is over: nothing waits for a retry either).
func (c *Crawler) drained(ctx context.Context) bool {
	queued, running, err := c.queueDepth(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("crawler: queue stats", "err", err)
		}
		return false
	}
	return queued == 0 && running == 0
}

// queueDepth returns the number of queued and running jobs.
func (c *Crawler) queueDepth(ctx context.Context) (queued, running int, err error) {
	st, err := c.o.Store.QueueStats(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range st {
		switch s.Status {
		case store.StatusQueued:
			queued += s.Count
		case store.StatusRunning:
			running += s.Count
		}
	}
	c.queued.Store(int64(queued))
	return queued, running, nil
}

func (c *Crawler) refreshQueued(ctx context.Context) {
	_, _, _ = c.queueDepth(ctx)
}

// work processes one job (under the dispatcher's heartbeats): true has it
// completed, otherwise it is failed here, or left running when ctx ended.
func (c *Crawler) work(ctx context.Context, j store.Job) bool {
	err := c.process(ctx, j)
	if ctx.Err() != nil {
		// Interrupted: leave the job running; its lease will expire and
		// RescueExpired will queue it again.
		return false
	}
	if err == nil {
		return true
	}
	sctx := context.WithoutCancel(ctx)
	c.failures.Add(1)
	msg := err.Error()
	if msg == "" {
		msg = "unknown error"
	}
	fail := c.o.Store.Fail
	if permanent(err) {
		fail = c.o.Store.FailPermanently
	}
	nj, ferr := fail(sctx, j.ID, c.o.WorkerID, msg)
	if ferr != nil {
		c.log.Warn("crawler: fail", "job", j.ID, "err", ferr)
		return false
	}
	if nj.Status == store.StatusFailed {
		c.note("%s %s failed for good (attempt %d): %s", j.Type, j.TargetURL, nj.Attempts, msg)
	} else {
		c.note("%s %s failed (attempt %d, retried later): %s", j.Type, j.TargetURL, nj.Attempts, msg)
	}
	c.log.Info("crawler: job failed", "type", j.Type, "url", j.TargetURL, "attempt", nj.Attempts, "status", nj.Status, "err", msg)
	if nj.Status == store.StatusFailed && c.isSeed(j.ID) {
		c.seedFailed(fmt.Errorf("%w: %s: %w", ErrSeedFailed, j.TargetURL, err))
	}
	return false
}

// isSeed reports whether id is the job Seed enqueued.
func (c *Crawler) isSeed(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seedID != "" && c.seedID == id
}

// seedFailed records that the start URL failed for good and tells dispatch
// to stop.
func (c *Crawler) seedFailed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seedErr == nil {
		c.seedErr = err
		close(c.stop)
	}
}

// stopped returns the seed's failure once it failed for good.
func (c *Crawler) stopped() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seedErr
}

// process dispatches a job by type.
func (c *Crawler) process(ctx context.Context, j store.Job) error {
	switch j.Type {
	case store.JobNavigation:
		return c.navigation(ctx, j)
	case store.JobCategory:
		return c.category(ctx, j)
	case store.JobProduct:
		return c.product(ctx, j)
	default:
		return fmt.Errorf("crawler: unknown job type %q", j.Type)
	}
}

// statusError is the cause recorded for a non-2xx response.
type statusError struct {
	status int
	url    string
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("crawler: unexpected status: HTTP %d for %s", e.status, e.url)
	if permanentStatus(e.status) {
		msg += " (not retried)"
	}
	return msg
}

// errStatus builds the cause recorded for a non-2xx response.
func errStatus(status int, u string) error {
	return &statusError{status: status, url: u}
}

// permanentStatus reports whether a status means that asking again will
// not help: a 4xx other than 408 (timeout), 425 (too early) and 429 (rate
// limited).
func permanentStatus(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout &&
		status != http.StatusTooEarly && status != http.StatusTooManyRequests
}

// permanent reports whether a job's failure is one retrying cannot cure:
// the network policy refuses the address (fetch.ErrBlocked, which names
// the --allow-networks flag), robots.txt disallows the page, the URL is not
// HTTP, redirects loop, or the site answered a permanent 4xx. Such a job
// is failed at once (store.FailPermanently) instead of being retried with
// backoff.
func permanent(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return permanentStatus(se.status)
	}
	return errors.Is(err, fetch.ErrBlocked) || errors.Is(err, fetch.ErrDisallowedByRobots) ||
		errors.Is(err, fetch.ErrNotHTTP) || errors.Is(err, fetch.ErrTooManyRedirects)
}

// ErrSeedFailed reports a crawl whose start URL (the seed's navigation job)
// failed for good: Run stops at once and returns it, wrapping the cause
// (for instance fetch.ErrBlocked, whose message names --allow-networks).
var ErrSeedFailed = errors.New("crawler: the start URL failed")
