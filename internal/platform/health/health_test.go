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
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("healthy: %v", err)
	}

	db.down.Store(true)
	waitUntil(t, "dynamodb failing", func() bool { return c.Check(context.Background()) != nil })
	err := c.Check(context.Background())
	var d *DegradedError
	if !errors.As(err, &d) || len(d.Backends) != 1 || d.Backends[0] != "dynamodb" || !d.Degraded() {
		t.Fatalf("Check = %v, want a DegradedError naming dynamodb", err)
	}
	r := c.Report()
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
	waitUntil(t, "recovery", func() bool { return c.Check(context.Background()) == nil })
	if r := c.Report()["dynamodb"].(map[string]any); r["ok"] != true {
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
	if err := c.Check(context.Background()); !errors.As(err, &d) {
		t.Fatalf("Check = %v, want degraded", err)
	}
	if e := c.Report()["s3"].(map[string]any)["error"].(string); e == "" {
		t.Error("no error reported")
	}
}
