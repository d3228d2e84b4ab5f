package health

import (
	"context"
	"sync/atomic"
	"time"
)

// Answers records when a backend last answered one of the process's own
// calls, so that its probe can be skipped while that traffic shows it
// answering: a busy process spends no request of its own on the
// backend's health, and an idle one probes it every interval. The zero
// value has seen no answer.
type Answers struct {
	last atomic.Int64 // Unix nanoseconds of the latest answer; 0: none
}

// Note records an answer at t.
func (a *Answers) Note(t time.Time) { a.last.Store(t.UnixNano()) }

// Within returns probe, skipped (nil, no call) when the backend answered
// a call less than d before now().
func (a *Answers) Within(probe Probe, d time.Duration, now func() time.Time) Probe {
	return func(ctx context.Context) error {
		if last := a.last.Load(); last != 0 && now().Sub(time.Unix(0, last)) < d {
			return nil
		}
		return probe(ctx)
	}
}
