package fetch

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"
)

// gate enforces politeness for one origin (scheme://host:port): at most
// PerHostConcurrency requests in flight, starts spaced by the larger of
// PerHostDelay and the robots.txt Crawl-delay, and none before a pause set
// by a Retry-After. Fields after mu are guarded by it.
type gate struct {
	f   *Fetcher
	sem chan struct{}

	mu          sync.Mutex // never held across a wait
	next        time.Time  // earliest start of the next request
	pausedUntil time.Time  // from Retry-After
	crawlDelay  time.Duration
}

// gateFor returns the gate of u's origin, creating it on first use.
//
// Gates are never evicted: a crawl of a bounded set of sites keeps a few
// entries; a process fetching millions of distinct hosts would need an LRU.
func (f *Fetcher) gateFor(u *url.URL) *gate {
	key := u.Scheme + "://" + strings.ToLower(u.Host)
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gates[key]
	if g == nil {
		g = &gate{f: f, sem: make(chan struct{}, f.o.PerHostConcurrency)}
		f.gates[key] = g
	}
	return g
}

// acquire takes a concurrency slot, reserves a start time and waits for it
// through Options.Sleep. The caller MUST call release after a nil return.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	now := g.f.o.Now()
	start := now
	if g.next.After(start) {
		start = g.next
	}
	if g.pausedUntil.After(start) {
		start = g.pausedUntil
	}
	g.next = start.Add(max(g.f.o.PerHostDelay, g.crawlDelay))
	g.mu.Unlock()
	if wait := start.Sub(now); wait > 0 {
		if err := g.f.o.Sleep(ctx, wait); err != nil {
			<-g.sem
			return err
		}
	}
	return nil
}

// release frees the slot taken by acquire.
func (g *gate) release() { <-g.sem }

// pause delays every later request to the host until t.
func (g *gate) pause(t time.Time) {
	g.mu.Lock()
	if t.After(g.pausedUntil) {
		g.pausedUntil = t
	}
	g.mu.Unlock()
}

// setCrawlDelay records the host's robots.txt Crawl-delay.
func (g *gate) setCrawlDelay(d time.Duration) {
	g.mu.Lock()
	g.crawlDelay = d
	g.mu.Unlock()
}
