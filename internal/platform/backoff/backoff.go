// Package backoff is quarry's one retry pacing: exponential delays with
// jitter, and a sleep that ends with its context.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy describes the delays of a retry loop: Base before the first
// retry, doubled before each further one up to Max, each spread by
// Jitter. The zero Jitter gives exact delays.
type Policy struct {
	// Base is the delay before the first retry.
	Base time.Duration
	// Max caps every delay, jitter included; 0 or less than Base: Base.
	Max time.Duration
	// Jitter is the fraction by which a delay is spread: it is drawn
	// uniformly from [d·(1-Jitter), d·(1+Jitter)] (then capped at Max),
	// so that clients failing together do not retry together. 0.2 is
	// quarry's usual; 0 to 1.
	Jitter float64
}

// Delay returns the delay before retry n (n ≥ 1, after the n-th failure;
// n < 1 counts as 1): Base·2^(n-1), capped at Max, jittered.
func (p Policy) Delay(n int) time.Duration {
	ceiling := max(p.Max, p.Base)
	d := p.Base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	if j := min(max(p.Jitter, 0), 1); j > 0 {
		d = time.Duration(float64(d) * (1 - j + 2*j*rand.Float64()))
	}
	return min(d, ceiling)
}

// Start returns the state of one retry loop under p.
func (p Policy) Start() *Backoff { return &Backoff{p: p} }

// Backoff is the state of one retry loop: how many retries it has made.
// It is not safe for concurrent use.
type Backoff struct {
	p Policy
	n int
}

// Next returns the delay before the next retry and counts it.
func (b *Backoff) Next() time.Duration {
	b.n++
	return b.p.Delay(b.n)
}

// Reset starts the delays again from Base (after a success).
func (b *Backoff) Reset() { b.n = 0 }

// Wait sleeps the next delay (see Next), or until ctx ends: it then
// returns ctx's cause.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx ends: it then returns ctx's cause (nil when
// d passed).
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
