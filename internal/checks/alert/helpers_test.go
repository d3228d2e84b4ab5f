package alert

import (
	"context"
	"sync"
	"time"
)

// result is one OnResult call.
type result struct {
	AlertID  string
	Channel  string
	Attempts int
	Err      error
}

// recorder records Sleep requests and OnResult calls and never really sleeps.
type recorder struct {
	mu      sync.Mutex
	sleeps  []time.Duration
	results []result
	notify  chan result // optional; receives every result
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) onResult(a Alert, channel string, attempts int, err error) {
	res := result{AlertID: a.ID, Channel: channel, Attempts: attempts, Err: err}
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
	if r.notify != nil {
		r.notify <- res
	}
}

func (r *recorder) Sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

func (r *recorder) Results() []result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]result(nil), r.results...)
}

// options returns Options wired to r with a short backoff.
func (r *recorder) options() Options {
	return Options{
		Backoff:     time.Second,
		MaxBackoff:  time.Minute,
		MaxAttempts: 6,
		Sleep:       r.sleep,
		OnResult:    r.onResult,
	}
}

func testAlert(id string) Alert {
	return Alert{
		ID:        id,
		CheckID:   "abcdef",
		UserID:    "123456",
		URL:       "https://example.com/shop?item=1",
		CheckType: "AVAILABILITY",
		Event:     "down",
		Previous:  "up",
		Message:   "https://example.com/shop?item=1 is down: HTTP 503",
		Result:    map[string]any{"status": "DOWN", "responseTime": float64(250), "keywordFound": false},
		At:        time.Date(2024, 6, 29, 14, 5, 0, 0, time.UTC),
	}
}
