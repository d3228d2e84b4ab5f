package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Errors of a Runner.
var (
	// ErrBusy is a crawl started while another runs in this process.
	ErrBusy = errors.New("crawler: a crawl is already running")
	// ErrStopping is a crawl started after Stop.
	ErrStopping = errors.New("crawler: the server is stopping")
	// ErrBadStart is a start URL that is not an absolute http(s) URL.
	ErrBadStart = errors.New("crawler: the start URL must be an absolute http or https URL")
	// ErrNotHere is an abort of a run that another process runs: only the
	// process running a crawl can stop it.
	ErrNotHere = errors.New("crawler: the run is not running in this process")
)

// Status is the progress of a Runner's crawl: the running one, or the
// last one.
type Status struct {
	Running bool
	// RunID is the crawl's run record.
	RunID    string
	URL      string
	Started  time.Time
	Finished time.Time
	Stats
	// Err is why the crawl stopped early (nil when it drained or reached
	// its page limit).
	Err error
}

// Runner runs crawls in the background, one at a time per process, each
// with the Options given to NewRunner (its MaxPages and Progress set per
// crawl) and recorded as a run (store.Runs), and aborts them by run id.
// The console and the API's operator endpoints share one.
type Runner struct {
	ctx    context.Context
	cancel context.CancelFunc
	opts   Options
	now    func() time.Time

	mu     sync.Mutex
	status Status
	abort  context.CancelCauseFunc // the running crawl's; nil when none runs
	done   chan struct{}           // closed when the running (or last) crawl returned
}

// NewRunner returns a Runner whose crawls live until ctx ends (the
// server's life) or Stop.
func NewRunner(ctx context.Context, o Options) *Runner {
	ctx, cancel := context.WithCancel(ctx)
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Runner{ctx: ctx, cancel: cancel, opts: o, now: now}
}

// Start seeds startURL and runs its crawl in the background, and returns
// the crawl's run id. It returns ErrBusy while a crawl runs, ErrBadStart
// for a start URL that is not an absolute http(s) URL and ErrStopping
// after Stop.
func (r *Runner) Start(ctx context.Context, startURL string, maxPages int) (string, error) {
	u, err := url.Parse(startURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", ErrBadStart
	}
	if maxPages < 0 {
		return "", fmt.Errorf("%w: negative page limit", store.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.Running {
		return "", ErrBusy
	}
	if r.ctx.Err() != nil {
		return "", ErrStopping
	}
	o := r.opts
	o.MaxPages = maxPages
	o.Progress = r.progress
	cr, err := New(o)
	if err != nil {
		return "", err
	}
	if err := cr.Seed(ctx, startURL); err != nil {
		return "", err
	}
	runCtx, abort := context.WithCancelCause(r.ctx)
	r.status = Status{Running: true, RunID: cr.RunID(), URL: startURL, Started: r.now()}
	r.abort = abort
	r.done = make(chan struct{})
	done := r.done
	go func() {
		defer close(done)
		defer abort(nil)
		st, err := cr.Run(runCtx)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.status.Stats = st
		r.status.Running = false
		r.status.Finished = r.now()
		r.status.Err = err
		if runCtx.Err() != nil {
			// ErrAborted for an operator's abort.
			r.status.Err = context.Cause(runCtx)
		}
		r.abort = nil
	}()
	return r.status.RunID, nil
}

func (r *Runner) progress(s Stats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Stats = s
}

// Status returns the progress of the crawl running or last run.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Abort stops the crawl of run id, which this process runs, and waits
// (until ctx ends) for it to end; the run is then recorded as aborted.
// It returns the run as it is after the abort, with store.ErrRunEnded if
// the run had already ended, ErrNotHere (whose message names the node
// running it) if another process runs it, and store.ErrNotFound or
// store.ErrInvalid for an id that names no run.
func (r *Runner) Abort(ctx context.Context, id string) (store.Run, error) {
	run, err := r.opts.Store.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if run.State.Ended() {
		return run, fmt.Errorf("%w: run %s ended %s", store.ErrRunEnded, run.ID, run.State)
	}
	r.mu.Lock()
	mine := r.status.Running && strings.EqualFold(r.status.RunID, run.ID)
	abort, done := r.abort, r.done
	r.mu.Unlock()
	if !mine || abort == nil {
		return run, fmt.Errorf("%w: run %s runs on %s; abort it on that node", ErrNotHere, run.ID, run.Node)
	}
	abort(ErrAborted)
	select {
	case <-done:
	case <-ctx.Done():
		return run, ctx.Err()
	}
	return r.opts.Store.GetRun(ctx, id)
}

// Stop ends the running crawl (its jobs in flight are rescued by a later
// crawl once their lease expires, as after a crash; its run is recorded
// as aborted) and waits for it; no crawl starts after it.
func (r *Runner) Stop() {
	r.cancel()
	r.Wait()
}

// Wait blocks until the running crawl (if any) has returned.
func (r *Runner) Wait() {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done != nil {
		<-done
	}
}
