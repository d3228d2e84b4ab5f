package dispatch

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// completeRetries is how many times a batch whose CompleteMany failed is
// tried again (after 50, 100 and 200 ms) before its jobs are given up:
// they then stay running and are rescued once their lease expires, so a
// job is never completed twice, and at worst runs again.
const completeRetries = 3

// completer completes finished jobs in batches: a batch starts with the
// first job that arrives and is committed CompleteDelay later, at
// CompleteBatch jobs, on flush, or when the completer is closed, unless
// the dispatcher takes it first to commit it with its next claim
// (store.Store.CompleteAndClaim).
type completer struct {
	o        Options
	log      *slog.Logger
	in       chan store.Job
	flushReq chan chan struct{}
	takeReq  chan chan []store.Job
}

func newCompleter(o Options, log *slog.Logger) *completer {
	return &completer{
		o:        o,
		log:      log,
		in:       make(chan store.Job, 2*max(o.Workers, o.CompleteBatch)),
		flushReq: make(chan chan struct{}),
		takeReq:  make(chan chan []store.Job),
	}
}

// add queues j for completion.
func (c *completer) add(j store.Job) { c.in <- j }

// flush commits every job added before it and returns.
func (c *completer) flush() {
	done := make(chan struct{})
	c.flushReq <- done
	<-done
}

// take returns the jobs added before it and not committed yet, at most
// CompleteBatch, and leaves the others for later; the caller completes
// them and reports the outcome with settle.
func (c *completer) take() []store.Job {
	reply := make(chan []store.Job)
	c.takeReq <- reply
	return <-reply
}

// settle reports the outcome of completing jobs it got from take: done
// holds the ids the store completed. On an error the jobs go back to the
// completer, which commits them on its own with its retries.
func (c *completer) settle(jobs []store.Job, done []string, err error) {
	if err != nil {
		c.log.Warn("dispatch: complete with claim", "jobs", len(jobs), "err", err)
		for _, j := range jobs {
			c.in <- j
		}
		return
	}
	c.report(jobs, done, nil)
}

// close commits the jobs left and ends run; add must not be called after.
func (c *completer) close() { close(c.in) }

// run commits batches until close; ctx must not end before (the
// dispatcher passes a context without cancellation).
func (c *completer) run(ctx context.Context) {
	var batch []store.Job
	var timer *time.Timer
	var deadline <-chan time.Time
	// clock keeps the invariant: a batch that holds jobs has its delay
	// running (from its oldest job still held), an empty one has none.
	clock := func() {
		switch {
		case len(batch) == 0 && timer != nil:
			timer.Stop()
			timer, deadline = nil, nil
		case len(batch) > 0 && timer == nil:
			timer = time.NewTimer(c.o.CompleteDelay)
			deadline = timer.C
		}
	}
	commit := func() {
		c.commit(ctx, batch)
		batch = batch[:0]
		clock()
	}
	// drain moves the jobs added so far from in to batch.
	drain := func() {
		for {
			select {
			case j, ok := <-c.in:
				if !ok {
					return
				}
				batch = append(batch, j)
			default:
				return
			}
		}
	}
	for {
		select {
		case j, ok := <-c.in:
			if !ok {
				commit()
				return
			}
			batch = append(batch, j)
			if len(batch) >= c.o.CompleteBatch {
				commit()
			} else {
				clock()
			}
		case <-deadline:
			timer, deadline = nil, nil
			commit()
		case done := <-c.flushReq:
			// Jobs added before the flush are in the buffer already.
			drain()
			commit()
			close(done)
		case reply := <-c.takeReq:
			// So are jobs added before the take. The dispatcher takes
			// while in is open (it closes it only after its loop).
			drain()
			n := min(len(batch), c.o.CompleteBatch)
			out := slices.Clone(batch[:n])
			batch = append(batch[:0], batch[n:]...)
			// Jobs drained here and left behind (over CompleteBatch)
			// start their batch's delay, as jobs received above do.
			clock()
			reply <- out
		}
	}
}

// commit completes batch with CompleteMany (in slices of CompleteBatch)
// and reports each job's outcome.
func (c *completer) commit(ctx context.Context, batch []store.Job) {
	for part := range slices.Chunk(batch, c.o.CompleteBatch) {
		ids := make([]string, len(part))
		for i, j := range part {
			ids[i] = j.ID
		}
		var done []string
		var err error
		for try := 0; ; try++ {
			if done, err = c.o.Store.CompleteMany(ctx, ids, c.o.Worker); err == nil || try == completeRetries {
				break
			}
			c.log.Warn("dispatch: complete", "jobs", len(ids), "err", err)
			time.Sleep(50 * time.Millisecond << try)
		}
		c.report(part, done, err)
	}
}

// report passes the outcome of completing jobs to Options.Completed: err,
// or, when err is nil, nil for the ids of done and store.ErrNotRunning for
// the others.
func (c *completer) report(jobs []store.Job, done []string, err error) {
	ok := make(map[string]bool, len(done))
	for _, id := range done {
		ok[id] = true
	}
	for _, j := range jobs {
		res := err
		if res == nil && !ok[j.ID] {
			res = store.ErrNotRunning
		}
		if res != nil {
			c.log.Warn("dispatch: complete", "job", j.ID, "err", res)
		}
		if c.o.Completed != nil {
			c.o.Completed(j, res)
		}
	}
}
