package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLifecycleStopsInReverse(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name      string
		failRun   bool // the running part fails: the lifecycle's context ends
		failStop  bool // the middle part's stop fails
		wantErrIs error
	}{
		{name: "clean"},
		{name: "a running part fails", failRun: true, wantErrIs: boom},
		{name: "a stop fails", failStop: true, wantErrIs: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := New(context.Background(), slog.New(slog.DiscardHandler))
			var mu sync.Mutex
			var order []string
			record := func(name string) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, name)
			}
			lc.OnStop("first", func(context.Context) error { record("first"); return nil })
			lc.OnStop("second", func(context.Context) error {
				record("second")
				if tt.failStop {
					return boom
				}
				return nil
			})
			lc.Go("runner", func(ctx context.Context) error {
				if tt.failRun {
					return boom
				}
				<-ctx.Done()
				record("runner returned")
				return nil
			}, func(context.Context) error { record("runner stop"); return nil })
			if tt.failRun {
				select {
				case <-lc.Context().Done():
				case <-time.After(5 * time.Second):
					t.Fatal("a failed part did not end the lifecycle's context")
				}
			}
			err := lc.Shutdown(context.Background())
			if tt.wantErrIs == nil && err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
				t.Fatalf("shutdown: %v, want %v", err, tt.wantErrIs)
			}
			want := []string{"runner returned", "runner stop", "second", "first"}
			if tt.failRun {
				want = []string{"runner stop", "second", "first"}
			}
			// The runner's context is cancelled before its stop runs: it
			// may return before or after the stop is called.
			if !tt.failRun {
				slices.Sort(order[:2])
				slices.Sort(want[:2])
			}
			if !slices.Equal(order, want) {
				t.Fatalf("stop order %v, want %v", order, want)
			}
		})
	}
}

func TestLifecycleStopTimesOut(t *testing.T) {
	t.Parallel()
	lc := New(context.Background(), slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	defer close(release)
	lc.Go("stuck", func(context.Context) error { <-release; return nil }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := lc.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stuck") {
		t.Fatalf("shutdown of a stuck part: %v", err)
	}
}
