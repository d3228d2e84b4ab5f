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
// CompleteBatch jobs, on flush, or when the completer is closed.
type completer struct {
	o        Options
	log      *slog.Logger
	in       chan store.Job
	flushReq chan chan struct{}
}

func newCompleter(o Options, log *slog.Logger) *completer {
	return &completer{
		o:        o,
		log:      log,
		in:       make(chan store.Job, 2*max(o.Workers, o.CompleteBatch)),
		flushReq: make(chan chan struct{}),
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

// close commits the jobs left and ends run; add must not be called after.
func (c *completer) close() { close(c.in) }

// run commits batches until close; ctx must not end before (the
// dispatcher passes a context without cancellation).
func (c *completer) run(ctx context.Context) {
	var batch []store.Job
	var timer *time.Timer
	var deadline <-chan time.Time
	commit := func() {
		if timer != nil {
			timer.Stop()
			timer, deadline = nil, nil
		}
		c.commit(ctx, batch)
		batch = batch[:0]
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
			} else if timer == nil {
				timer = time.NewTimer(c.o.CompleteDelay)
				deadline = timer.C
			}
		case <-deadline:
			timer, deadline = nil, nil
			commit()
		case done := <-c.flushReq:
			// Jobs added before the flush are in the buffer already.
			for drained := false; !drained; {
				select {
				case j, ok := <-c.in:
					if ok {
						batch = append(batch, j)
					} else {
						drained = true
					}
				default:
					drained = true
				}
			}
			commit()
			close(done)
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
		ok := make(map[string]bool, len(done))
		for _, id := range done {
			ok[id] = true
		}
		for _, j := range part {
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
}
