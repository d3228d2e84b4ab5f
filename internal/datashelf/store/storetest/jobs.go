package storetest

import (
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// failJob enqueues a job of url with priority prio (above every other
// queued job's), claims it and fails it for
// good with msg.
func failJob(t *testing.T, b *bundle, prio int, url, msg string) store.Job {
	t.Helper()
	j := must(b.s.Enqueue(b.ctx, store.NewJob{Type: store.JobProduct, TargetURL: url, MaxAttempts: 1, Priority: prio}))
	cl := must(b.s.Claim(b.ctx, "w", 1))
	if len(cl) != 1 || cl[0].ID != j.ID {
		t.Fatalf("claimed %+v, want %s", cl, j.ID)
	}
	return must(b.s.FailPermanently(b.ctx, j.ID, "w", msg))
}

func testFailedJobsAndRetry(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	if js := must(s.FailedJobs(ctx, 10)); len(js) != 0 {
		t.Fatalf("failed jobs of an empty queue: %+v", js)
	}
	a := failJob(t, b, 1001, "https://x/a", "status 404")
	b.clock.Advance(time.Second)
	bj := failJob(t, b, 1002, "https://x/b", "refused by the network policy")
	b.clock.Advance(time.Second)
	c := failJob(t, b, 1003, "https://x/c", "timeout")
	js := must(s.FailedJobs(ctx, 2))
	if len(js) != 2 || js[0].ID != c.ID || js[1].ID != bj.ID || js[0].LastError == nil || *js[0].LastError != "timeout" {
		t.Fatalf("FailedJobs(2) = %+v, want c then b with their errors", js)
	}
	for _, bad := range []int{0, -1, store.MaxFailedJobs + 1} {
		_, err := s.FailedJobs(ctx, bad)
		wantErr(t, err, store.ErrInvalid)
	}
	_, err := s.RetryFailed(ctx, []string{"nope"})
	wantErr(t, err, store.ErrInvalid)

	// One job by id.
	if n := must(s.RetryFailed(ctx, []string{a.ID})); n != 1 {
		t.Fatalf("RetryFailed(a) = %d", n)
	}
	got := must(s.GetJob(ctx, a.ID))
	if got.Status != store.StatusQueued || got.Attempts != 0 || got.CompletedAt != nil || !got.RunAfter.Equal(b.clock.Now()) {
		t.Fatalf("retried job = %+v", got)
	}
	// A URL that has a queued job again is left failed; the others go.
	must(s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/b"}))
	if n := must(s.RetryFailed(ctx, nil)); n != 1 {
		t.Fatalf("RetryFailed(all) = %d, want 1 (c; b has a queued job)", n)
	}
	if got := must(s.GetJob(ctx, bj.ID)); got.Status != store.StatusFailed {
		t.Fatalf("b = %s, want failed", got.Status)
	}
	if got := must(s.GetJob(ctx, c.ID)); got.Status != store.StatusQueued {
		t.Fatalf("c = %s, want queued", got.Status)
	}
	if js := must(s.FailedJobs(ctx, 10)); len(js) != 1 || js[0].ID != bj.ID {
		t.Fatalf("failed after retries: %+v", js)
	}
	// Two failed jobs of one URL: only the newest is queued.
	old := failJob(t, b, 1004, "https://x/d", "first")
	b.clock.Advance(time.Second)
	newer := failJob(t, b, 1005, "https://x/d", "second")
	if n := must(s.RetryFailed(ctx, []string{old.ID, newer.ID})); n != 1 {
		t.Fatalf("RetryFailed(two of one URL) = %d", n)
	}
	if got := must(s.GetJob(ctx, newer.ID)); got.Status != store.StatusQueued {
		t.Fatalf("the newest failed job of a URL = %s", got.Status)
	}
}

func testThroughput(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	since := b.clock.Now()
	for i := range 3 {
		must(s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/t" + string(rune('a'+i))}))
	}
	b.clock.Advance(90 * time.Second)
	for _, j := range must(s.Claim(ctx, "w", 2)) {
		if err := s.Complete(ctx, j.ID, "w"); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(2 * time.Minute)
	failJob(t, b, 1006, "https://x/tf", "boom")
	b.clock.Advance(30 * time.Second)
	got := must(s.Throughput(ctx, since, time.Minute))
	if len(got) != 4 {
		t.Fatalf("%d buckets, want 4: %+v", len(got), got)
	}
	want := [][2]int{{0, 0}, {2, 0}, {0, 0}, {0, 1}}
	for i, w := range want {
		if got[i].Completed != w[0] || got[i].Failed != w[1] || !got[i].Start.Equal(since.Add(time.Duration(i)*time.Minute)) {
			t.Errorf("bucket %d = %+v, want completed %d failed %d", i, got[i], w[0], w[1])
		}
	}
	for _, bad := range []struct {
		since  time.Time
		bucket time.Duration
	}{{since, 0}, {b.clock.Now().Add(time.Hour), time.Minute}, {since.Add(-30 * 24 * time.Hour), time.Second}} {
		_, err := s.Throughput(ctx, bad.since, bad.bucket)
		wantErr(t, err, store.ErrInvalid)
	}
}
