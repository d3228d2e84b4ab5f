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

// RefillDelay is how long the replacement of a browser taken from a Pool
// waits before it launches. A Chromium start takes about a second of CPU;
// started at once, it competes with the session that took the browser,
// whose client connects and loads its first page right then (create,
// connect and first page take well under a second on an idle 2-core
// machine, bench/wallcrawlerbench). A second lets that first page load
// finish on its own; the replacement then starts at the pool's lower
// priority (poolNice), so it yields to the sessions also after the wait.
const RefillDelay = time.Second

// poolNice is how much nicer than quarry a Pool starts its warm browsers
// (when it may give them quarry's niceness back, see NewPool): at +10 the
// kernel gives a busy warm browser about a tenth of the CPU time of a busy
// session's browser, so a refill uses what the sessions leave.
const poolNice = 10

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
	cfg    poolConfig

	mu     sync.Mutex
	warm   []*warmBrowser
	closed bool
}

var _ Provider = (*Pool)(nil)

// poolConfig holds what NewPool decides and tests replace.
type poolConfig struct {
	// delay is how long a replacement for a taken browser waits.
	delay time.Duration
	// after returns a channel that receives once d has passed.
	after func(d time.Duration) <-chan time.Time
	// nice is how much nicer than baseNice warm browsers start; 0: at
	// quarry's own priority.
	nice int
	// baseNice is quarry's niceness, which a handed-over browser gets.
	baseNice int
}

// NewPool returns a Pool that keeps size warm browsers launched by p. It
// starts filling in the background right away; cancelling ctx stops the
// refills (call Close to release the warm browsers).
//
// The replacement of a taken browser launches RefillDelay after the take.
// Warm browsers start poolNice nicer than quarry and get quarry's
// niceness back when handed over, provided quarry may raise a process's
// priority again (root, CAP_SYS_NICE or RLIMIT_NICE); otherwise they start
// at quarry's own priority, as a session's browser must not keep a lower
// priority than one launched for it cold.
func NewPool(ctx context.Context, p Provider, size int, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := poolConfig{delay: RefillDelay, after: time.After}
	if base, err := threadNice(); err != nil {
		logger.Warn("pool: warm browsers start at quarry's priority", "err", err)
	} else if !canRestorePriority() {
		logger.Info("pool: warm browsers start at quarry's priority: quarry may not give a browser started nicer its priority back (needs root, CAP_SYS_NICE or RLIMIT_NICE)", "nice", base)
		cfg.baseNice = base
	} else {
		cfg.nice, cfg.baseNice = poolNice, base
	}
	return newPool(ctx, p, size, logger, cfg)
}

// newPool is NewPool with cfg.
func newPool(ctx context.Context, p Provider, size int, logger *slog.Logger, cfg poolConfig) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pctx, cancel := context.WithCancel(ctx)
	pool := &Pool{p: p, size: max(size, 0), logger: logger, ctx: pctx, cancel: cancel, cfg: cfg}
	pool.mu.Lock()
	for range pool.size {
		pool.refillLocked(0)
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

// Launch hands over a warm browser, at quarry's priority, when opts asks for
// a fresh profile with the default window size and no extension, and one
// is ready, and starts a replacement in the background after RefillDelay.
// Otherwise (an empty pool too) it delegates to the underlying provider.
func (p *Pool) Launch(ctx context.Context, opts LaunchOptions) (Browser, error) {
	if w, h := opts.size(); opts.UserDataDir == "" && opts.Extension == nil && opts.Nice == 0 && w == DefaultWidth && h == DefaultHeight {
		for {
			p.mu.Lock()
			if p.closed || len(p.warm) == 0 {
				p.mu.Unlock()
				break
			}
			wb := p.warm[0]
			p.warm = p.warm[1:]
			close(wb.taken)
			p.refillLocked(p.cfg.delay)
			p.mu.Unlock()
			select {
			case <-wb.b.Done():
				// Died while waiting; its watcher did not see it yet.
				p.discard(wb.b)
				continue
			default:
			}
			if p.cfg.nice > 0 {
				// A browser that keeps the lower priority still works:
				// its session runs slower while the machine is busy.
				if err := setGroupNice(wb.b.PID(), p.cfg.baseNice); err != nil {
					p.logger.Warn("pool: warm browser keeps its lower priority", "browser", wb.b.ID(), "err", err)
				}
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

// refillLocked starts one background launch, after delay, unless the pool
// is closed. p.mu must be held.
func (p *Pool) refillLocked(delay time.Duration) {
	if p.closed {
		return
	}
	p.wg.Go(func() { p.refill(delay) })
}

// refill waits delay, then launches one warm browser, retrying with
// back-off until it succeeds or the pool is closed.
func (p *Pool) refill(delay time.Duration) {
	if delay > 0 {
		select {
		case <-p.cfg.after(delay):
		case <-p.ctx.Done():
			return
		}
	}
	retry := refillBackoff.Start()
	for {
		b, err := p.p.Launch(p.ctx, LaunchOptions{Nice: p.cfg.nice})
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
		p.refillLocked(0) // no session to make way for
	}
	p.mu.Unlock()
	if found {
		p.discard(wb.b)
	}
}
