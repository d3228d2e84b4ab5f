// Package lifecycle owns what a process starts: parts recorded as they
// start and stopped in reverse (Lifecycle), and systems that wait in the
// background for a backend that does not answer yet (Slot, StartSystem).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Lifecycle is the one owner of what `quarry serve` starts: each part is
// recorded as it starts (with how to stop it, and the goroutine it runs
// when it runs one, under one errgroup), and shutdown stops them all in
// the reverse order, whether the process is stopping or a later part
// failed to start. A running part that fails cancels the Lifecycle's
// context, which stops the process.
type Lifecycle struct {
	log   *slog.Logger
	ctx   context.Context
	group *errgroup.Group

	mu    sync.Mutex
	parts []part // in start order
}

// part is one started part: its name (for the logs) and how to
// stop it.
type part struct {
	name string
	stop func(context.Context) error
}

// New returns a Lifecycle whose context ends with ctx or the first
// failure of a running part.
func New(ctx context.Context, log *slog.Logger) *Lifecycle {
	g, gctx := errgroup.WithContext(ctx)
	return &Lifecycle{log: log, ctx: gctx, group: g}
}

// Context returns the Lifecycle's context: done when the caller's context
// is, or when a running part failed.
func (l *Lifecycle) Context() context.Context { return l.ctx }

// OnStop records a started part; stop runs at shutdown, before the stops
// of the parts started earlier.
func (l *Lifecycle) OnStop(name string, stop func(context.Context) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts = append(l.parts, part{name: name, stop: stop})
}

// Go runs fn in the Lifecycle's errgroup as the part name. At
// shutdown, fn's context is cancelled, stop (when not nil) is called, and
// shutdown waits for fn to return before stopping earlier parts. An error
// of fn stops the process.
func (l *Lifecycle) Go(name string, fn func(context.Context) error, stop func(context.Context) error) {
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	l.group.Go(func() error {
		defer close(done)
		if err := fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
	l.OnStop(name, func(sctx context.Context) error {
		cancel()
		var err error
		if stop != nil {
			err = stop(sctx)
		}
		select {
		case <-done:
			return err
		case <-sctx.Done():
			return errors.Join(err, fmt.Errorf("still running: %w", sctx.Err()))
		}
	})
}

// Shutdown stops every part in the reverse of the order they started,
// each given ctx, and returns the first failure of a running part joined
// with the stops' errors. It is safe to call once.
func (l *Lifecycle) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	parts := slices.Clone(l.parts)
	l.parts = nil
	l.mu.Unlock()
	var errs []error
	for _, p := range slices.Backward(parts) {
		l.log.Debug("stopping", "part", p.name)
		if err := p.stop(ctx); err != nil {
			l.log.Warn("stop", "part", p.name, "err", err)
			errs = append(errs, fmt.Errorf("stop %s: %w", p.name, err))
		}
	}
	// Every goroutine of the group ended with its part (or its stop
	// reported that it did not): Wait only collects the first failure.
	waited := make(chan error, 1)
	go func() { waited <- l.group.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			errs = append([]error{err}, errs...)
		}
	case <-ctx.Done():
	}
	return errors.Join(errs...)
}
