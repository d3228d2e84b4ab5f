package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// guard bounds every wait of these cases. It is no timing assertion: the
// dispatchers here poll once an hour, so a wake-up that never comes fails
// the case after guard instead of hanging the suite.
const guard = 2 * time.Minute

// recv waits for a value (or the close) of ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("no %s within %s", what, guard)
		panic("unreachable")
	}
}

// testWake: Wake sends once listening, then after every commit that makes
// a job claimable (Enqueue, Fail's retry, RescueExpired, RetryFailed), and
// its channel closes when ctx ends.
func testWake(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake := s.Wake(wctx)
	recv(t, wake, "wake-up once listening")
	steps := []struct {
		name string
		do   func()
	}{
		{"Enqueue", func() { enqueue(t, b, store.JobProduct, "https://x/wake", 0) }},
		{"Fail (queued for a retry)", func() {
			j := must(s.Claim(ctx, "w", 1))[0]
			must(s.Fail(ctx, j.ID, "w", "boom"))
		}},
		{"RescueExpired", func() {
			b.clock.Advance(time.Hour) // the retry's backoff
			must(s.Claim(ctx, "dead", 1))
			b.clock.Advance(store.DefaultLease + time.Second)
			if n := must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)); n != 1 {
				t.Fatalf("rescued %d, want 1", n)
			}
		}},
		{"RetryFailed", func() {
			j := must(s.Claim(ctx, "w", 1))[0]
			must(s.FailPermanently(ctx, j.ID, "w", "gone"))
			if n := must(s.RetryFailed(ctx, nil)); n != 1 {
				t.Fatalf("retried %d, want 1", n)
			}
		}},
	}
	for _, st := range steps {
		// Empty the channel of anything the previous step's other
		// statements caused, then expect this step's wake-up.
		select {
		case <-wake:
		default:
		}
		st.do()
		if _, ok := recv(t, wake, "wake-up after "+st.name), true; !ok {
			t.Fatalf("channel closed after %s", st.name)
		}
	}
	cancel()
	for range wake { // drains, and ends once the channel is closed
	}
}

// testCompleteManyOwnership: CompleteMany completes only the jobs running
// under the caller; a job whose lease was lost and that was claimed again
// by another worker stays with that worker.
func testCompleteManyOwnership(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	lost := enqueue(t, b, store.JobProduct, "https://x/lost", 2)
	kept := enqueue(t, b, store.JobProduct, "https://x/kept", 1)
	done := enqueue(t, b, store.JobProduct, "https://x/done", 0)
	if got := must(s.Claim(ctx, "A", 1)); len(got) != 1 || got[0].ID != lost.ID {
		t.Fatalf("A claimed %+v", got)
	}
	b.clock.Advance(store.DefaultLease + time.Second)
	must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease))
	if got := must(s.Claim(ctx, "B", 1)); len(got) != 1 || got[0].ID != lost.ID {
		t.Fatalf("B claimed %+v", got)
	}
	if got := must(s.Claim(ctx, "A", 2)); len(got) != 2 || got[0].ID != kept.ID || got[1].ID != done.ID {
		t.Fatalf("A claimed %+v", got)
	}
	if err := s.Complete(ctx, done.ID, "A"); err != nil {
		t.Fatal(err)
	}
	missing := "00000000-0000-4000-8000-000000000000"
	got := must(s.CompleteMany(ctx, []string{lost.ID, kept.ID, done.ID, missing}, "A"))
	if len(got) != 1 || got[0] != kept.ID {
		t.Fatalf("A's CompleteMany completed %v, want only %s", got, kept.ID)
	}
	if j := must(s.GetJob(ctx, lost.ID)); j.Status != store.StatusRunning || j.LockedBy == nil || *j.LockedBy != "B" {
		t.Fatalf("job of B after A's stale CompleteMany: %+v", j)
	}
	if j := must(s.GetJob(ctx, kept.ID)); j.Status != store.StatusCompleted || j.CompletedAt == nil || j.LockedBy != nil {
		t.Fatalf("A's job after CompleteMany: %+v", j)
	}
	if got := must(s.CompleteMany(ctx, []string{lost.ID}, "B")); len(got) != 1 || got[0] != lost.ID {
		t.Fatalf("B's CompleteMany completed %v", got)
	}
	if got := must(s.CompleteMany(ctx, []string{lost.ID}, "B")); len(got) != 0 {
		t.Fatalf("completed twice: %v", got)
	}
	if got := must(s.CompleteMany(ctx, nil, "B")); len(got) != 0 {
		t.Fatalf("CompleteMany(nil) = %v", got)
	}
	_, err := s.CompleteMany(ctx, []string{"nope"}, "B")
	wantErr(t, err, store.ErrInvalid)
}

// testCompleteAndClaim: one CompleteAndClaim completes only the jobs
// running under the caller (as CompleteMany) and claims the next ones in
// priority order (as Claim); a job is never completed twice; an invalid
// id changes nothing.
func testCompleteAndClaim(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	mine := enqueue(t, b, store.JobProduct, "https://x/mine", 9)
	lost := enqueue(t, b, store.JobProduct, "https://x/lost", 8)
	kept := enqueue(t, b, store.JobProduct, "https://x/kept", 7)
	next := enqueue(t, b, store.JobProduct, "https://x/next", 2)
	later := enqueue(t, b, store.JobProduct, "https://x/later", 1)
	if got := must(s.Claim(ctx, "A", 3)); len(got) != 3 || got[0].ID != mine.ID || got[1].ID != lost.ID || got[2].ID != kept.ID {
		t.Fatalf("A claimed %+v", got)
	}
	b.clock.Advance(store.DefaultLease + time.Second)
	must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease))
	if got := must(s.Claim(ctx, "B", 3)); len(got) != 3 || got[0].ID != mine.ID || got[1].ID != lost.ID || got[2].ID != kept.ID {
		t.Fatalf("B claimed %+v", got)
	}

	missing := "00000000-0000-4000-8000-000000000000"
	// A lost all three; B completes two of them and claims the next job.
	if done, claimed := must2(s.CompleteAndClaim(ctx, []string{mine.ID, lost.ID}, "A", 1)); len(done) != 0 || len(claimed) != 1 || claimed[0].ID != next.ID {
		t.Fatalf("A's stale CompleteAndClaim = %v, %+v; want nothing completed and %s claimed", done, claimed, next.ID)
	}
	done, claimed := must2(s.CompleteAndClaim(ctx, []string{strings.ToUpper(mine.ID), lost.ID, missing}, "B", 5))
	if len(done) != 2 || !slices.Contains(done, mine.ID) || !slices.Contains(done, lost.ID) {
		t.Fatalf("B completed %v, want %s and %s", done, mine.ID, lost.ID)
	}
	if len(claimed) != 1 || claimed[0].ID != later.ID || claimed[0].Status != store.StatusRunning || claimed[0].LockedBy == nil || *claimed[0].LockedBy != "B" {
		t.Fatalf("B claimed %+v, want %s running under B", claimed, later.ID)
	}
	for _, id := range []string{mine.ID, lost.ID} {
		if j := must(s.GetJob(ctx, id)); j.Status != store.StatusCompleted || j.CompletedAt == nil || j.LockedBy != nil {
			t.Fatalf("job %s after B's CompleteAndClaim: %+v", id, j)
		}
	}
	if j := must(s.GetJob(ctx, next.ID)); j.Status != store.StatusRunning || *j.LockedBy != "A" {
		t.Fatalf("A's claimed job: %+v", j)
	}
	// Never twice; nothing left to claim.
	if done, claimed := must2(s.CompleteAndClaim(ctx, []string{mine.ID}, "B", 3)); len(done) != 0 || len(claimed) != 0 {
		t.Fatalf("second CompleteAndClaim = %v, %+v", done, claimed)
	}
	// One side alone.
	if done, claimed := must2(s.CompleteAndClaim(ctx, []string{later.ID}, "B", 0)); len(done) != 1 || done[0] != later.ID || len(claimed) != 0 {
		t.Fatalf("CompleteAndClaim(n 0) = %v, %+v", done, claimed)
	}
	again := enqueue(t, b, store.JobProduct, "https://x/again", 0)
	if done, claimed := must2(s.CompleteAndClaim(ctx, nil, "B", 2)); len(done) != 0 || len(claimed) != 1 || claimed[0].ID != again.ID {
		t.Fatalf("CompleteAndClaim(no ids) = %v, %+v", done, claimed)
	}
	// An invalid id: an error naming it, nothing completed, nothing claimed.
	fresh := enqueue(t, b, store.JobProduct, "https://x/fresh", 0)
	_, _, err := s.CompleteAndClaim(ctx, []string{kept.ID, "nope"}, "B", 1)
	wantErr(t, err, store.ErrInvalid)
	if j := must(s.GetJob(ctx, kept.ID)); j.Status != store.StatusRunning {
		t.Fatalf("job after a refused CompleteAndClaim: %+v", j)
	}
	if j := must(s.GetJob(ctx, fresh.ID)); j.Status != store.StatusQueued {
		t.Fatalf("queued job after a refused CompleteAndClaim: %+v", j)
	}
	// A ctx ended before the claim: the completions roll back with it.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = s.CompleteAndClaim(cctx, []string{kept.ID}, "B", 1)
	wantErr(t, err, context.Canceled)
	if j := must(s.GetJob(ctx, kept.ID)); j.Status != store.StatusRunning {
		t.Fatalf("job after a cancelled CompleteAndClaim: %+v", j)
	}
	if j := must(s.GetJob(ctx, fresh.ID)); j.Status != store.StatusQueued {
		t.Fatalf("queued job after a cancelled CompleteAndClaim: %+v", j)
	}
}

// runDispatcher runs a dispatcher over b's store (polling once an hour:
// only wake-ups and its rescue timer make it claim) with handler h until
// the case ends. Its Completed outcomes go to the returned channel.
func runDispatcher(t *testing.T, b *bundle, o dispatch.Options, h dispatch.Handler) <-chan error {
	t.Helper()
	o.Store, o.Now = b.s, b.clock.Now
	if o.Worker == "" {
		o.Worker = "dispatcher"
	}
	o.PollInterval = time.Hour
	if o.RescueEvery == 0 {
		o.RescueEvery = time.Hour
	}
	completed := make(chan error, 16)
	o.Completed = func(_ store.Job, err error) { completed <- err }
	d, err := dispatch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	})
	return completed
}

// testDispatcherWakes: a dispatcher waiting on an empty queue starts a job
// enqueued meanwhile at once, although its poll interval is an hour, and
// completes it.
func testDispatcherWakes(t *testing.T, b *bundle) {
	idle := make(chan struct{}, 1)
	started := make(chan string, 16)
	completed := runDispatcher(t, b, dispatch.Options{Idle: func(context.Context) bool {
		select {
		case idle <- struct{}{}:
		default:
		}
		return false
	}}, func(_ context.Context, j store.Job) bool {
		started <- j.ID
		return true
	})
	recv(t, idle, "idle dispatcher")
	for i, url := range []string{"https://x/w/1", "https://x/w/2"} {
		j := enqueue(t, b, store.JobProduct, url, 0)
		if got := recv(t, started, "job start after a wake-up"); got != j.ID {
			t.Fatalf("job %d: started %s, want %s", i, got, j.ID)
		}
		if err := recv(t, completed, "completion"); err != nil {
			t.Fatalf("job %d: completion: %v", i, err)
		}
		if got := must(b.s.GetJob(b.ctx, j.ID)); got.Status != store.StatusCompleted || got.Attempts != 1 {
			t.Fatalf("job %d after the dispatcher: %+v", i, got)
		}
		recv(t, idle, "idle dispatcher")
	}
}

// testDispatcherLostLease: a job whose lease was lost while its handler ran
// (rescued and claimed by another worker) is not completed by the old
// owner's batch: the completion reports store.ErrNotRunning and the job
// stays with the new owner.
func testDispatcherLostLease(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := enqueue(t, b, store.JobProduct, "https://x/slow", 0)
	completed := runDispatcher(t, b, dispatch.Options{Worker: "old", Workers: 1}, func(context.Context, store.Job) bool {
		// One worker: the dispatcher cannot claim the rescued job itself.
		// (Errors are not checked here, off the test's goroutine: the
		// job's state below shows what happened.)
		b.clock.Advance(store.DefaultLease + time.Second)
		_, _ = s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)
		_, _ = s.Claim(ctx, "new", 1)
		return true
	})
	if err := recv(t, completed, "completion"); !errors.Is(err, store.ErrNotRunning) {
		t.Fatalf("old owner's completion = %v, want ErrNotRunning", err)
	}
	if got := must(s.GetJob(ctx, j.ID)); got.Status != store.StatusRunning || got.LockedBy == nil || *got.LockedBy != "new" || got.Attempts != 2 {
		t.Fatalf("job after the old owner's completion: %+v", got)
	}
}

// testDispatcherRescues: a dispatcher rescues expired leases when it starts
// and every RescueEvery, and runs the rescued jobs without waiting for its
// poll: a job whose worker died is running again within Lease +
// RescueEvery.
func testDispatcherRescues(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	early := enqueue(t, b, store.JobProduct, "https://x/dead/1", 1)
	must(s.Claim(ctx, "dead", 1))
	b.clock.Advance(store.DefaultLease + time.Second)
	late := enqueue(t, b, store.JobProduct, "https://x/dead/2", 0)
	must(s.Claim(ctx, "dead", 1)) // its lease runs until Lease from now
	idle := make(chan struct{}, 1)
	started := make(chan string, 16)
	runDispatcher(t, b, dispatch.Options{RescueEvery: 10 * time.Millisecond, Idle: func(context.Context) bool {
		select {
		case idle <- struct{}{}:
		default:
		}
		return false
	}}, func(_ context.Context, j store.Job) bool {
		started <- j.ID
		return true
	})
	if got := recv(t, started, "start of the job rescued at start-up"); got != early.ID {
		t.Fatalf("started %s, want %s", got, early.ID)
	}
	recv(t, idle, "idle dispatcher") // early is completed by now
	if got := must(s.GetJob(ctx, late.ID)); got.Status != store.StatusRunning || *got.LockedBy != "dead" {
		t.Fatalf("a live lease was rescued: %+v", got)
	}
	b.clock.Advance(store.DefaultLease + time.Second)
	if got := recv(t, started, "start of the job rescued by the timer"); got != late.ID {
		t.Fatalf("started %s, want %s", got, late.ID)
	}
	for _, id := range []string{early.ID, late.ID} {
		if got := must(s.GetJob(ctx, id)); got.Attempts != 2 || got.LastError == nil {
			t.Fatalf("rescued job: %+v", got)
		}
	}
}
