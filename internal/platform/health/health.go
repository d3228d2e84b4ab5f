// Package health watches the backends a process depends on (a DynamoDB
// endpoint, a PostgreSQL database, an S3 bucket) with a background prober
// per backend: a cheap call every Interval while the backend answers, and,
// once it fails, again after a backoff that doubles from Interval up to
// MaxBackoff until it answers again. The process keeps serving whatever
// does not need a failing backend; /healthz reports the failure (see
// Checker.Snapshot) and recovers by itself.
package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultInterval   = 2 * time.Second
	DefaultMaxBackoff = 30 * time.Second
	DefaultTimeout    = 2 * time.Second
)

// Probe is one cheap call to a backend; nil means the backend answered.
type Probe func(ctx context.Context) error

// Options tune a Checker; the zero value means the defaults.
type Options struct {
	// Interval is the time between probes of a healthy backend, and the
	// first backoff after a failure (DefaultInterval when 0).
	Interval time.Duration
	// MaxBackoff bounds the doubling backoff between probes of a failing
	// backend (DefaultMaxBackoff when 0).
	MaxBackoff time.Duration
	// Timeout bounds each probe (DefaultTimeout when 0).
	Timeout time.Duration
	// Logger receives one line per change of state (nil: none).
	Logger *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Checker probes a set of named backends in the background.
type Checker struct {
	opts     Options
	mu       sync.Mutex
	backends map[string]*backend
	names    []string
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	started  bool
}

// backend is one probed backend and its last known state.
type backend struct {
	probe Probe
	ok    bool
	err   string
	since time.Time // when the current state began
}

// New returns a Checker with no backends; Add some, then Start it.
func New(opts Options) *Checker {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxBackoff < opts.Interval {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.Interval)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Checker{opts: opts, backends: map[string]*backend{}}
}

// Add registers a backend under name (e.g. "dynamodb", "postgres", "s3"),
// healthy until its first probe says otherwise. It must be called before
// Start.
func (c *Checker) Add(name string, probe Probe) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		panic("health: Add after Start")
	}
	if _, dup := c.backends[name]; !dup {
		c.names = append(c.names, name)
		sort.Strings(c.names)
	}
	c.backends[name] = &backend{probe: probe, ok: true, since: c.opts.Now()}
}

// Start probes every backend once, synchronously (so that the state is
// known before the process serves), then keeps probing each in the
// background until Stop or until ctx ends.
func (c *Checker) Start(ctx context.Context) {
	c.mu.Lock()
	c.started = true
	names := append([]string(nil), c.names...)
	c.mu.Unlock()
	ctx, c.cancel = context.WithCancel(ctx)
	var first sync.WaitGroup
	for _, name := range names {
		first.Add(1)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.watch(ctx, name, first.Done)
		}()
	}
	first.Wait()
}

// Stop ends the probers and waits for them.
func (c *Checker) Stop() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
}

// watch probes one backend until ctx ends; probed is called after the
// first probe. A healthy backend is probed every Interval; a failing one
// after Interval, then 2×, 4×, … up to MaxBackoff, until it answers.
func (c *Checker) watch(ctx context.Context, name string, probed func()) {
	backoff := c.opts.Interval
	for {
		wait := c.opts.Interval
		if c.probe(ctx, name) {
			backoff = c.opts.Interval
		} else {
			wait = backoff
			backoff = min(2*backoff, c.opts.MaxBackoff)
		}
		if probed != nil {
			probed()
			probed = nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// probe runs one probe of name and records its outcome; it reports
// whether the backend answered.
func (c *Checker) probe(ctx context.Context, name string) bool {
	c.mu.Lock()
	b := c.backends[name]
	c.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	err := b.probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return b.ok // stopping: the outcome says nothing of the backend
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s: %w", c.opts.Timeout, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	switch {
	case err == nil && !b.ok:
		if c.opts.Logger != nil {
			c.opts.Logger.Info("backend recovered", "backend", name, "down_for", now.Sub(b.since).Round(time.Millisecond))
		}
		b.ok, b.err, b.since = true, "", now
	case err != nil && b.ok:
		if c.opts.Logger != nil {
			c.opts.Logger.Warn("backend unreachable: what needs it fails until it answers again", "backend", name, "err", err)
		}
		b.ok, b.err, b.since = false, err.Error(), now
	case err != nil:
		b.err = err.Error() // the latest reason; since stays the start of the outage
	}
	return err == nil
}

// DegradedError is Snapshot's error: the process serves, but the backends
// named fail.
type DegradedError struct {
	// Backends are the failing backends' names.
	Backends []string
}

// Error implements error.
func (e *DegradedError) Error() string {
	return "backend unreachable: " + strings.Join(e.Backends, ", ")
}

// Degraded marks the error as a degraded (rather than dead) process; see
// httpserver.HealthDetails.
func (e *DegradedError) Degraded() bool { return true }

// Snapshot is every backend's state as /healthz shows it, and the status
// it makes, read at one instant so that a status never contradicts the
// backends beside it. The report is
// {"dynamodb":{"ok":false,"error":"…","since":"…"},"postgres":{"ok":true}},
// since (RFC 3339, UTC) being when a failing backend stopped answering; the
// error is nil when every backend answered its last probe, and a
// *DegradedError naming exactly those the report shows failing otherwise.
// It does not probe.
func (c *Checker) Snapshot() (map[string]any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]any, len(c.names))
	var failing []string
	for _, name := range c.names {
		b := c.backends[name]
		if b.ok {
			out[name] = map[string]any{"ok": true}
			continue
		}
		out[name] = map[string]any{"ok": false, "error": b.err, "since": b.since.UTC().Format(time.RFC3339)}
		failing = append(failing, name)
	}
	if len(failing) > 0 {
		return out, &DegradedError{Backends: failing}
	}
	return out, nil
}
