package crawler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// ErrAborted is the cause of a crawl an operator aborted (Runner.Abort):
// Run ends its run record as aborted.
var ErrAborted = errors.New("crawler: aborted by an operator")

// RunFlushInterval is how often a running crawl writes its counters and
// log tail to its run record (store.Runs.UpdateRun), the record's
// heartbeat; StaleRunAfter is how long a running record may go without
// one before another process ends it as failed.
const (
	RunFlushInterval = time.Second
	StaleRunAfter    = 2 * time.Minute
)

// startRecord records the crawl's run (store.Runs.StartRun), once per
// Crawler: Seed records its start URL; a Run without a Seed records
// queuedStart.
func (c *Crawler) startRecord(ctx context.Context, startURL string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runID != "" && !c.runEnded {
		return nil
	}
	r, err := c.o.Store.StartRun(ctx, store.NewRun{StartURL: startURL, Node: c.o.WorkerID, MaxPages: c.o.MaxPages})
	if err != nil {
		return fmt.Errorf("crawler: record the run: %w", err)
	}
	c.runID, c.runEnded = r.ID, false
	c.runLog = c.runLog[:0]
	return nil
}

// queuedStart is the start URL recorded for a Run without a Seed (it
// works through the jobs already queued).
const queuedStart = "(jobs already queued)"

// RunID returns the id of the crawl's run record ("" before Seed or Run).
func (c *Crawler) RunID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runID
}

// note adds a line to the run's log tail: the time (UTC, from Options.Now)
// and the message, whose control characters (a page's title may hold a
// newline) become spaces, so that a line stays one line. Only the last
// store.RunLogLines lines are kept.
func (c *Crawler) note(format string, args ...any) {
	msg := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, fmt.Sprintf(format, args...))
	line := c.o.Now().UTC().Format("15:04:05 ") + msg
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.runLog) == store.RunLogLines {
		copy(c.runLog, c.runLog[1:])
		c.runLog = c.runLog[:len(c.runLog)-1]
	}
	c.runLog = append(c.runLog, store.CutLine(line, store.RunLogLineBytes))
}

// progress returns the counters and a copy of the log tail.
func (c *Crawler) progress() store.RunProgress {
	c.mu.Lock()
	log := append([]string(nil), c.runLog...)
	c.mu.Unlock()
	return store.RunProgress{
		RunCounters: store.RunCounters{Pages: c.pages.Load(), Products: c.products.Load(), Failures: c.failures.Load()},
		Log:         log,
	}
}

// heartbeat writes the run record every RunFlushInterval (from before
// Run loads the catalogue, however long that takes, so that the record
// never looks stale while its crawl lives) until the returned function
// is called, which waits for the last write.
func (c *Crawler) heartbeat(ctx context.Context) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(RunFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				c.flushRecord(ctx)
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// flushRecord writes the counters and the log tail to the run record.
func (c *Crawler) flushRecord(ctx context.Context) {
	id := c.RunID()
	if id == "" {
		return
	}
	if _, err := c.o.Store.UpdateRun(ctx, id, c.progress()); err != nil && ctx.Err() == nil {
		c.log.Warn("crawler: update the run record", "run", id, "err", err)
	}
}

// endRecord ends the run record as Run ends with err under ctx:
// succeeded when err is nil, aborted when ctx ended (the message says
// whether an operator aborted it or the process stopped), failed
// otherwise, with err's message.
func (c *Crawler) endRecord(ctx context.Context, err error) {
	id := c.RunID()
	if id == "" {
		return
	}
	state, msg := store.RunSucceeded, ""
	switch {
	case ctx.Err() != nil:
		state = store.RunAborted
		if cause := context.Cause(ctx); errors.Is(cause, ErrAborted) {
			msg = "aborted by an operator"
		} else {
			msg = "stopped before the end: " + cause.Error()
		}
		c.note("%s", msg)
	case err == nil:
		c.note("finished: the queue is drained or the page limit reached")
	default:
		state, msg = store.RunFailed, err.Error()
		c.note("failed: %s", msg)
	}
	if _, err := c.o.Store.EndRun(context.WithoutCancel(ctx), id, state, c.progress(), msg); err != nil {
		c.log.Warn("crawler: end the run record", "run", id, "err", err)
	}
	c.mu.Lock()
	c.runEnded = true
	c.mu.Unlock()
}
