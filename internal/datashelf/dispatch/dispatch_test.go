package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// countingStore counts CompleteMany calls and the jobs they complete.
type countingStore struct {
	store.Store
	mu      sync.Mutex
	batches []int
}

func (s *countingStore) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	done, err := s.Store.CompleteMany(ctx, ids, worker)
	s.mu.Lock()
	s.batches = append(s.batches, len(done))
	s.mu.Unlock()
	return done, err
}

func openStore(t *testing.T) *countingStore {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &countingStore{Store: s}
}

// TestBatchesAndShutdownFlush: with a batch of 3 and a delay of an hour,
// 7 finished jobs are completed in two batches of 3 while Run works, and
// the last one when Run ends (ctx cancelled): none is left running.
func TestBatchesAndShutdownFlush(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const n = 7
	for i := range n {
		if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: fmt.Sprintf("https://x/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan string, n)
	d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 2, PollInterval: time.Hour,
		CompleteBatch: 3, CompleteDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- d.Run(rctx, func(_ context.Context, j store.Job) bool {
			started <- j.ID
			return true
		})
	}()
	for range n {
		<-started
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil || len(stats) != 1 || stats[0].Status != store.StatusCompleted || stats[0].Count != n {
		t.Fatalf("queue after Run: %+v, %v", stats, err)
	}
	if len(s.batches) != 3 || s.batches[0] != 3 || s.batches[1] != 3 || s.batches[2] != 1 {
		t.Fatalf("batches = %v, want [3 3 1]", s.batches)
	}
}

// TestIdleFlushes: Idle sees the finished jobs completed (the crawler's
// "queue drained" check), although the batch delay is an hour.
func TestIdleFlushes(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/1"}); err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", PollInterval: time.Hour, CompleteDelay: time.Hour,
		Idle: func(ctx context.Context) bool {
			st, err := s.QueueStats(ctx)
			return err == nil && len(st) == 1 && st[0].Status == store.StatusCompleted
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(ctx, func(context.Context, store.Job) bool { return true }); err != nil {
		t.Fatalf("Run = %v, want nil once idle", err)
	}
}
