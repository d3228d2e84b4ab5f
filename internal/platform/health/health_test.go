package health

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flaky is a backend whose answer the test switches, counting probes.
type flaky struct {
	down   atomic.Bool
	probes atomic.Int64
	mu     sync.Mutex
	times  []time.Time
}

func (f *flaky) probe(ctx context.Context) error {
	f.probes.Add(1)
	f.mu.Lock()
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	if f.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCheckerFailsAndRecovers(t *testing.T) {
	var db, pg flaky
	c := New(Options{Interval: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond})
	c.Add("dynamodb", db.probe)
	c.Add("postgres", pg.probe)
	c.Start(context.Background())
	defer c.Stop()
	if db.probes.Load() < 1 || pg.probes.Load() < 1 {
		t.Fatal("Start returned before the first probes")
	}
	if err := check(c); err != nil {
		t.Fatalf("healthy: %v", err)
	}

	db.down.Store(true)
	waitUntil(t, "dynamodb failing", func() bool { return check(c) != nil })
	err := check(c)
	var d *DegradedError
	if !errors.As(err, &d) || len(d.Backends) != 1 || d.Backends[0] != "dynamodb" || !d.Degraded() {
		t.Fatalf("Check = %v, want a DegradedError naming dynamodb", err)
	}
	r := report(c)
	got, _ := r["dynamodb"].(map[string]any)
	if got["ok"] != false || got["error"] != "connection refused" || got["since"] == "" {
		t.Errorf("report of dynamodb: %v", got)
	}
	if p, _ := r["postgres"].(map[string]any); p["ok"] != true || len(p) != 1 {
		t.Errorf("report of postgres: %v", p)
	}

	// The backoff doubles up to MaxBackoff while the backend fails.
	db.mu.Lock()
	n := len(db.times)
	db.mu.Unlock()
	waitUntil(t, "six failing probes", func() bool { db.mu.Lock(); defer db.mu.Unlock(); return len(db.times) >= n+6 })
	db.mu.Lock()
	gaps := []time.Duration{}
	for i := n + 1; i < len(db.times); i++ {
		gaps = append(gaps, db.times[i].Sub(db.times[i-1]))
	}
	db.mu.Unlock()
	if last := gaps[len(gaps)-1]; last < 70*time.Millisecond || last > 300*time.Millisecond {
		t.Errorf("gaps between failing probes %v: want them to reach MaxBackoff (80ms)", gaps)
	}

	db.down.Store(false)
	waitUntil(t, "recovery", func() bool { return check(c) == nil })
	if r := report(c)["dynamodb"].(map[string]any); r["ok"] != true {
		t.Errorf("after recovery: %v", r)
	}
}

func TestCheckerTimeout(t *testing.T) {
	c := New(Options{Interval: time.Hour, Timeout: 20 * time.Millisecond})
	c.Add("s3", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	start := time.Now()
	c.Start(context.Background())
	defer c.Stop()
	if time.Since(start) > time.Second {
		t.Fatalf("Start took %s with a silent backend", time.Since(start))
	}
	var d *DegradedError
	if err := check(c); !errors.As(err, &d) {
		t.Fatalf("Check = %v, want degraded", err)
	}
	if e := report(c)["s3"].(map[string]any)["error"].(string); e == "" {
		t.Error("no error reported")
	}
}

// TestSnapshotAgrees reads the state while a backend flips between up and
// down at every probe: the status (the error) and the report beside it
// must describe the same instant, or /healthz says "ok" beside a failing
// backend.
func TestSnapshotAgrees(t *testing.T) {
	var calls atomic.Int64
	flip := func(context.Context) error {
		if calls.Add(1)%2 == 0 {
			return errors.New("connection refused")
		}
		return nil
	}
	c := New(Options{Interval: time.Microsecond, MaxBackoff: time.Microsecond})
	c.Add("s3", flip)
	c.Add("dynamodb", func(context.Context) error { return nil })
	c.Start(context.Background())
	defer c.Stop()
	var up, down int
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		report, err := c.Snapshot()
		s3ok := report["s3"].(map[string]any)["ok"].(bool)
		var degraded *DegradedError
		switch {
		case err == nil && s3ok:
			up++
		case errors.As(err, &degraded) && !s3ok && len(degraded.Backends) == 1 && degraded.Backends[0] == "s3":
			down++
		default:
			t.Fatalf("status error %v beside report %v", err, report)
		}
	}
	if up == 0 || down == 0 {
		t.Fatalf("saw %d up and %d down states; the backend never flipped while read", up, down)
	}
}

func check(c *Checker) error {
	_, err := c.Snapshot()
	return err
}

func report(c *Checker) map[string]any {
	r, _ := c.Snapshot()
	return r
}
