package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// countingStore records the calls that commit completions: each
// CompleteMany as "complete N" and each CompleteAndClaim as "complete N
// claim M" (N jobs completed, M claimed), and counts the claims that
// returned jobs.
type countingStore struct {
	store.Store
	mu     sync.Mutex
	calls  []string
	claims int
}

func (s *countingStore) log(format string, args ...any) {
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *countingStore) Claim(ctx context.Context, worker string, n int) ([]store.Job, error) {
	jobs, err := s.Store.Claim(ctx, worker, n)
	if len(jobs) > 0 {
		s.mu.Lock()
		s.claims++
		s.mu.Unlock()
	}
	return jobs, err
}

func (s *countingStore) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	done, err := s.Store.CompleteMany(ctx, ids, worker)
	s.log("complete %d", len(done))
	return done, err
}

func (s *countingStore) CompleteAndClaim(ctx context.Context, ids []string, worker string, n int) ([]string, []store.Job, error) {
	done, jobs, err := s.Store.CompleteAndClaim(ctx, ids, worker, n)
	s.log("complete %d claim %d", len(done), len(jobs))
	return done, jobs, err
}

func (s *countingStore) snapshot() (calls []string, claims int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls), s.claims
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

func enqueueN(t *testing.T, s store.Store, n int) []store.Job {
	t.Helper()
	jobs := make([]store.Job, n)
	for i := range jobs {
		j, err := s.Enqueue(context.Background(), store.NewJob{Type: store.JobProduct, TargetURL: fmt.Sprintf("https://x/%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		jobs[i] = j
	}
	return jobs
}

// TestCompletionsRideClaims: with one worker and a completion delay of an
// hour, each finished job is completed in the commit that claims the next
// one: the next job's handler finds it completed, and 3 jobs take 4
// commits (a claim, then a completion with each claim and the last
// completion with a claim that found nothing), none of them a separate
// CompleteMany. With SeparateCompletions the jobs wait for the completer
// (here: until the queue is idle) and take a commit of their own.
func TestCompletionsRideClaims(t *testing.T) {
	for _, tc := range []struct {
		name          string
		separate      bool
		prevCompleted bool
		claims        int
		calls         []string
	}{
		{"with claims", false, true, 1, []string{"complete 1 claim 1", "complete 1 claim 1", "complete 1 claim 0"}},
		{"separate", true, false, 3, []string{"complete 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t)
			jobs := enqueueN(t, s, 3)
			var seen []string
			d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 1, PollInterval: time.Hour, CompleteDelay: time.Hour,
				SeparateCompletions: tc.separate, Idle: func(context.Context) bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			err = d.Run(ctx, func(ctx context.Context, j store.Job) bool {
				if len(seen) > 0 {
					prev, err := s.GetJob(ctx, seen[len(seen)-1])
					if err != nil || (prev.Status == store.StatusCompleted) != tc.prevCompleted {
						t.Errorf("job %d started with the previous job %s, %v; want completed %v", len(seen)+1, prev.Status, err, tc.prevCompleted)
					}
				}
				seen = append(seen, j.ID)
				return true
			})
			if err != nil {
				t.Fatalf("Run = %v, want nil once idle", err)
			}
			for _, j := range jobs {
				if got, err := s.GetJob(ctx, j.ID); err != nil || got.Status != store.StatusCompleted {
					t.Fatalf("job %s after Run: %s, %v", j.ID, got.Status, err)
				}
			}
			calls, claims := s.snapshot()
			if claims != tc.claims || !slices.Equal(calls, tc.calls) {
				t.Fatalf("%d claims alone, then %q; want %d, then %q", claims, calls, tc.claims, tc.calls)
			}
		})
	}
}

// TestBatchesAndShutdownFlush: with a batch of 3 and a delay of an hour,
// the finished jobs are completed in batches of at most 3 while Run works,
// and a job whose handler returns only once ctx is cancelled is completed
// when Run ends, on its own: none is left running.
func TestBatchesAndShutdownFlush(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const n = 7
	enqueueN(t, s, n)
	started := make(chan string, n)
	d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 2, PollInterval: time.Hour,
		CompleteBatch: 3, CompleteDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	var count atomic.Int32
	go func() {
		done <- d.Run(rctx, func(ctx context.Context, j store.Job) bool {
			started <- j.ID
			if count.Add(1) == n {
				<-ctx.Done()
			}
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
	calls, _ := s.snapshot()
	total := 0
	for _, c := range calls {
		var k int
		if _, err := fmt.Sscanf(c, "complete %d", &k); err != nil || k > 3 {
			t.Fatalf("calls %q: batch over 3", calls)
		}
		total += k
	}
	if last := calls[len(calls)-1]; total != n || strings.Contains(last, "claim") {
		t.Fatalf("calls %q: want %d jobs completed, the last alone when Run ends", calls, n)
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

// TestCooldownFollowsOnlyFullClaims: with a cooldown of an hour, after a
// claim that got a job for every free worker, a worker that frees up
// waits for the others (the next claim comes once every worker is free
// and takes both their jobs in one commit); after a claim that got fewer
// jobs than free workers, nothing waits: a job enqueued after it starts
// on its wake-up while the first job still runs.
func TestCooldownFollowsOnlyFullClaims(t *testing.T) {
	t.Run("full claim waits", func(t *testing.T) {
		ctx := context.Background()
		s := openStore(t)
		enqueueN(t, s, 4)
		var started atomic.Int32
		d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 2, PollInterval: time.Hour, CompleteDelay: time.Hour,
			ClaimCooldown: time.Hour, Idle: func(context.Context) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Run(ctx, func(ctx context.Context, j store.Job) bool {
			if started.Add(1)%2 == 0 {
				time.Sleep(50 * time.Millisecond) // the other worker frees first
			}
			return true
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		calls, claims := s.snapshot()
		if want := []string{"complete 2 claim 2", "complete 2 claim 0"}; claims != 1 || !slices.Equal(calls, want) {
			t.Fatalf("%d claims alone, then %q; want 1, then %q", claims, calls, want)
		}
	})
	t.Run("partial claim does not", func(t *testing.T) {
		ctx := context.Background()
		s := openStore(t)
		enqueueN(t, s, 1)
		secondStarted := make(chan struct{})
		firstStarted := make(chan struct{})
		d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 2, PollInterval: time.Hour, CompleteDelay: time.Hour,
			ClaimCooldown: time.Hour, Idle: func(context.Context) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int32
		go func() {
			<-firstStarted
			if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/second"}); err != nil {
				t.Error(err)
			}
		}()
		err = d.Run(ctx, func(ctx context.Context, j store.Job) bool {
			if n.Add(1) == 1 {
				close(firstStarted)
				select {
				case <-secondStarted:
				case <-time.After(5 * time.Second):
					t.Error("a job enqueued while the first ran did not start within 5 s: the claim of 1 job for 2 free workers was followed by the cooldown")
				}
			} else {
				close(secondStarted)
			}
			return true
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// TestStopDuringClaimWait: Stop closed while a freed worker waits for the
// others ends Run without another claim: the jobs not yet claimed stay
// queued.
func TestStopDuringClaimWait(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	enqueueN(t, s, 4)
	stop := make(chan struct{})
	firstDone := make(chan struct{})
	var started atomic.Int32
	d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 2, PollInterval: time.Hour,
		ClaimCooldown: time.Hour, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(ctx, func(ctx context.Context, j store.Job) bool {
		switch started.Add(1) {
		case 1:
			close(firstDone)
		case 2:
			<-firstDone
			time.Sleep(50 * time.Millisecond) // the freed worker is waiting
			close(stop)
			time.Sleep(50 * time.Millisecond)
		}
		return true
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil after Stop", err)
	}
	stats, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queued := 0
	for _, st := range stats {
		if st.Status == store.StatusQueued {
			queued += st.Count
		}
	}
	if n := started.Load(); n != 2 || queued != 2 {
		t.Fatalf("%d jobs started and %d left queued after Stop; want 2 and 2", n, queued)
	}
}
