package browser

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// refillBackoff paces the retries of a failed background launch.
var refillBackoff = backoff.Policy{Base: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}

// warmBrowser is a pre-launched browser waiting in a Pool.
type warmBrowser struct {
	b     Browser
	taken chan struct{} // closed when it leaves the pool
}

// Pool is a Provider that keeps a number of pre-launched browsers with fresh
// profiles, so that Launch can answer in milliseconds.
type Pool struct {
	p      Provider
	size   int
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	warm   []*warmBrowser
	closed bool
}

var _ Provider = (*Pool)(nil)

// NewPool returns a Pool that keeps size warm browsers launched by p. It
// starts filling in the background right away; cancelling ctx stops the
// refills (call Close to release the warm browsers).
func NewPool(ctx context.Context, p Provider, size int, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pctx, cancel := context.WithCancel(ctx)
	pool := &Pool{p: p, size: max(size, 0), logger: logger, ctx: pctx, cancel: cancel}
	pool.mu.Lock()
	for range pool.size {
		pool.refillLocked()
	}
	pool.mu.Unlock()
	return pool
}

// Ready returns the number of warm browsers.
func (p *Pool) Ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.warm)
}

// Launch hands over a warm browser when opts asks for a fresh profile with the
// default window size and no extension, and one is ready, and starts a replacement in the
// background. Otherwise it delegates to the underlying provider.
func (p *Pool) Launch(ctx context.Context, opts LaunchOptions) (Browser, error) {
	if w, h := opts.size(); opts.UserDataDir == "" && opts.Extension == nil && w == DefaultWidth && h == DefaultHeight {
		for {
			p.mu.Lock()
			if p.closed || len(p.warm) == 0 {
				p.mu.Unlock()
				break
			}
			wb := p.warm[0]
			p.warm = p.warm[1:]
			close(wb.taken)
			p.refillLocked()
			p.mu.Unlock()
			select {
			case <-wb.b.Done():
				// Died while waiting; its watcher did not see it yet.
				p.discard(wb.b)
				continue
			default:
			}
			p.logger.Debug("pool: handed over warm browser", "browser", wb.b.ID())
			return wb.b, nil
		}
	}
	b, err := p.p.Launch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	return b, nil
}

// Close stops refilling, closes and removes the warm browsers, and waits for
// background launches to finish. Browsers already handed over are not
// affected.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	warm := p.warm
	p.warm = nil
	for _, wb := range warm {
		close(wb.taken)
	}
	p.mu.Unlock()
	p.cancel()

	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		errs  []error
	)
	for _, wb := range warm {
		wg.Go(func() {
			if err := closeAndRemove(ctx, wb.b); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	wg.Wait()

	bg := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(bg)
	}()
	select {
	case <-bg:
	case <-ctx.Done():
		return fmt.Errorf("pool: close: waiting for background launches: %w", ctx.Err())
	}
	if len(errs) > 0 {
		return fmt.Errorf("pool: close: %w", errs[0])
	}
	return nil
}

// closeAndRemove closes b and deletes its work dir.
func closeAndRemove(ctx context.Context, b Browser) error {
	if err := b.Close(ctx); err != nil {
		return fmt.Errorf("close %s: %w", b.ID(), err)
	}
	if err := b.Remove(); err != nil {
		return fmt.Errorf("remove %s: %w", b.ID(), err)
	}
	return nil
}

// discard closes and removes a dead warm browser.
func (p *Pool) discard(b Browser) {
	p.logger.Warn("pool: warm browser died", "browser", b.ID(), "err", b.Err())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 30*time.Second)
	defer cancel()
	if err := closeAndRemove(ctx, b); err != nil {
		p.logger.Error("pool: discard", "err", err)
	}
}

// refillLocked starts one background launch unless the pool is closed. p.mu
// must be held.
func (p *Pool) refillLocked() {
	if p.closed {
		return
	}
	p.wg.Go(p.refill)
}

// refill launches one warm browser, retrying with back-off until it succeeds
// or the pool is closed.
func (p *Pool) refill() {
	retry := refillBackoff.Start()
	for {
		b, err := p.p.Launch(p.ctx, LaunchOptions{})
		if err == nil {
			p.add(b)
			return
		}
		if p.ctx.Err() != nil {
			return
		}
		delay := retry.Next()
		p.logger.Error("pool: launch warm browser", "err", err, "retry_in", delay)
		if backoff.Sleep(p.ctx, delay) != nil {
			return
		}
	}
}

// add puts a freshly launched browser into the pool and watches it.
func (p *Pool) add(b Browser) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := closeAndRemove(ctx, b); err != nil {
			p.logger.Error("pool: close browser launched after close", "err", err)
		}
		return
	}
	wb := &warmBrowser{b: b, taken: make(chan struct{})}
	p.warm = append(p.warm, wb)
	p.wg.Go(func() { p.watch(wb) })
	p.mu.Unlock()
	p.logger.Debug("pool: warm browser ready", "browser", b.ID())
}

// watch replaces wb when it dies while waiting in the pool.
func (p *Pool) watch(wb *warmBrowser) {
	select {
	case <-wb.taken:
		return
	case <-wb.b.Done():
	}
	p.mu.Lock()
	found := false
	for i, x := range p.warm {
		if x == wb {
			p.warm = append(p.warm[:i], p.warm[i+1:]...)
			close(wb.taken)
			found = true
			break
		}
	}
	if found {
		p.refillLocked()
	}
	p.mu.Unlock()
	if found {
		p.discard(wb.b)
	}
}
