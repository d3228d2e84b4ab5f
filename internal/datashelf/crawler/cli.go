package crawler

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// UserAgent returns the crawler's user agent for a quarry version:
// "quarry-datashelf/<version>".
func UserAgent(version string) string {
	if version == "" {
		version = "dev"
	}
	return "quarry-datashelf/" + version
}

// FetchOptions returns the fetcher options of a production crawl: the
// crawler's user agent, robots.txt obeyed (with its Crawl-delay), private
// and loopback addresses refused, and the fetch package's default size,
// time and per-host concurrency limits.
func FetchOptions(version string) fetch.Options {
	return fetch.Options{UserAgent: UserAgent(version), ObeyRobots: true}
}

// Crawl is what `quarry datashelf crawl URL [--max-pages N]` runs: it
// seeds startURL and runs the crawl in the foreground until the queue
// drains, MaxPages is reached or ctx ends. If the start URL fails for good
// (the network policy refuses it, it answers 404, or it fails every
// attempt) the crawl stops at once and the error wraps ErrSeedFailed and
// the cause. Set o.Progress for a live line (Stats.String formats one).
func Crawl(ctx context.Context, o Options, startURL string) (Stats, error) {
	c, err := New(o)
	if err != nil {
		return Stats{}, err
	}
	if err := c.Seed(ctx, startURL); err != nil {
		return Stats{}, err
	}
	st, err := c.Run(ctx)
	if errors.Is(err, ErrSeedFailed) {
		return st, err
	}
	if err != nil {
		return st, fmt.Errorf("crawler: %w", err)
	}
	return st, nil
}
