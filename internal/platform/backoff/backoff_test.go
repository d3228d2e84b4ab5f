package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name     string
		p        Policy
		n        int
		min, max time.Duration
	}{
		{"first", Policy{Base: time.Second, Max: time.Minute}, 1, time.Second, time.Second},
		{"n below 1", Policy{Base: time.Second, Max: time.Minute}, 0, time.Second, time.Second},
		{"doubles", Policy{Base: time.Second, Max: time.Minute}, 4, 8 * time.Second, 8 * time.Second},
		{"capped", Policy{Base: time.Second, Max: 5 * time.Second}, 4, 5 * time.Second, 5 * time.Second},
		{"huge n does not overflow", Policy{Base: time.Second, Max: time.Hour}, 1000, time.Hour, time.Hour},
		{"max below base", Policy{Base: time.Second}, 3, time.Second, time.Second},
		{"jitter spreads", Policy{Base: time.Second, Max: time.Minute, Jitter: 0.2}, 2, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{"jitter never above max", Policy{Base: time.Second, Max: 2 * time.Second, Jitter: 0.5}, 5, time.Second, 2 * time.Second},
		{"jitter clamped to 1", Policy{Base: time.Second, Max: time.Minute, Jitter: 7}, 1, 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 {
				if d := tt.p.Delay(tt.n); d < tt.min || d > tt.max {
					t.Fatalf("Delay(%d) = %v, want %v..%v", tt.n, d, tt.min, tt.max)
				}
			}
		})
	}
}

func TestJitterVaries(t *testing.T) {
	p := Policy{Base: time.Second, Max: time.Minute, Jitter: 0.2}
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[p.Delay(3)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays in 50: no jitter?", len(seen))
	}
}

func TestBackoffNextReset(t *testing.T) {
	b := Policy{Base: time.Millisecond, Max: 8 * time.Millisecond}.Start()
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{1, 2, 4, 8, 8}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != time.Millisecond {
		t.Fatalf("after Reset: %v", d)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	cause := errors.New("stopping")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel(cause) }()
	start := time.Now()
	if err := Sleep(ctx, time.Minute); !errors.Is(err, cause) {
		t.Fatalf("Sleep after cancel: %v, want %v", err, cause)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("Sleep did not end with its context")
	}
	if err := Sleep(ctx, 0); !errors.Is(err, cause) {
		t.Fatalf("Sleep on an ended context: %v", err)
	}
}
