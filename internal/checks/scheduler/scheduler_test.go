package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// target is a loopback site whose health the test flips.
type target struct {
	*httptest.Server
	down atomic.Bool
	hits atomic.Int64
}

func newTarget(t *testing.T) *target {
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		if tg.down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "<html><title>shop</title><body>In stock</body></html>")
	}))
	t.Cleanup(tg.Close)
	return tg
}

type env struct {
	db    *ddb.Store
	names tables.Names
	st    *store.Store
	clock *clock
	user  store.User
	prb   *probe.Prober
	log   *slog.Logger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := ddb.NewClient(s)
	names, err := tables.EnsureTables(context.Background(), client, tables.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	e := &env{db: s, names: names, clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.st = store.New(client, names, &store.Options{Now: clk.now, Limits: map[string]int{store.TierFree: 5, store.TierPro: 1000}})
	if e.user, _, err = e.st.CreateUser(context.Background(), "ops@example.com", store.TierPro); err != nil {
		t.Fatal(err)
	}
	e.prb = probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(e.prb.Close)
	return e
}

func (e *env) sched(t *testing.T, owner string, a scheduler.Alerter, onRun func(id string, due, started time.Time)) *scheduler.Scheduler {
	return e.schedWith(t, a, scheduler.Options{Owner: owner, OnRun: onRun})
}

// schedWith is sched with more options: the clock is the test's unless
// o.Now is set; the run timeout is 5 s.
func (e *env) schedWith(t *testing.T, a scheduler.Alerter, o scheduler.Options) *scheduler.Scheduler {
	if o.Now == nil {
		o.Now = e.clock.now
	}
	o.Logger, o.RunTimeout = e.log, 5*time.Second
	if o.RecordWait == 0 {
		// The tests step their clocks many times a second of real time:
		// records wait only under load. The default wait is the
		// recorder's tests' and cmd/quarry's process tests'.
		o.RecordWait = -1
	}
	s := scheduler.New(e.st, e.prb, a, o)
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) check(t *testing.T, url string, delay time.Duration, first time.Time, attrs map[string]any) store.Check {
	t.Helper()
	c, err := e.st.CreateCheck(context.Background(), store.Check{UserID: e.user.ID, URL: url, Type: probe.TypeAvailability, DelayMs: delay.Milliseconds(), Attributes: attrs}, first)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runLog records runs by (check, due).
type runLog struct {
	mu    sync.Mutex
	runs  map[string][]time.Time // check → due times
	first map[string]time.Time   // check → its first run's start
	late  []time.Duration
}

func (l *runLog) record(id string, due, started time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs, l.first = map[string][]time.Time{}, map[string]time.Time{}
	}
	if _, ok := l.first[id]; !ok {
		l.first[id] = started
	}
	l.runs[id] = append(l.runs[id], due)
	l.late = append(l.late, started.Sub(due))
}

// startedAfter lists the checks whose first run started after t.
func (l *runLog) startedAfter(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id, at := range l.first {
		if at.After(t) {
			out = append(out, id)
		}
	}
	return out
}

func TestScheduleAccuracy(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, e.check(t, tg.URL, 10*time.Second, t0.Add(time.Duration(i)*500*time.Millisecond), nil).ID)
	}
	var log runLog
	s := e.sched(t, "a", nil, log.record)
	step := 250 * time.Millisecond
	for now := t0; now.Before(t0.Add(5 * time.Minute)); now = now.Add(step) {
		e.clock.set(now)
		s.RunDue(context.Background(), now)
	}
	for i, id := range ids {
		dues := log.runs[id]
		if len(dues) != 30 {
			t.Fatalf("check %d ran %d times in 5 minutes at 10 s, want 30", i, len(dues))
		}
		for k := 1; k < len(dues); k++ {
			if gap := dues[k].Sub(dues[k-1]); gap != 10*time.Second {
				t.Fatalf("check %d: runs %v apart, want exactly 10s", i, gap)
			}
		}
	}
	for _, l := range log.late {
		if l < 0 || l >= step {
			t.Fatalf("lateness %v outside [0, %v)", l, step)
		}
	}
	if got := tg.hits.Load(); got != 600 {
		t.Fatalf("target hit %d times, want 600", got)
	}
}

// TestTwoSchedulersNeverRunTwice runs two schedulers on one store, each
// claiming ahead (derived, fixed at 2 s, or none), and shows that every
// check runs once per period, never twice.
func TestTwoSchedulersNeverRunTwice(t *testing.T) {
	for _, tt := range []struct {
		name      string
		lookahead time.Duration
	}{{"derived lookahead", 0}, {"2s lookahead", 2 * time.Second}, {"no lookahead", -1}} {
		t.Run(tt.name, func(t *testing.T) { twoSchedulers(t, tt.lookahead) })
	}
}

func twoSchedulers(t *testing.T, lookahead time.Duration) {
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	for i := 0; i < 10; i++ {
		e.check(t, tg.URL, 10*time.Second, t0.Add(time.Duration(i)*time.Second), nil)
	}
	var log runLog
	a := e.schedWith(t, nil, scheduler.Options{Owner: "node-a", OnRun: log.record, Lookahead: lookahead})
	b := e.schedWith(t, nil, scheduler.Options{Owner: "node-b", OnRun: log.record, Lookahead: lookahead})
	for now := t0; now.Before(t0.Add(2 * time.Minute)); now = now.Add(500 * time.Millisecond) {
		e.clock.set(now)
		var wg sync.WaitGroup
		for _, s := range []*scheduler.Scheduler{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); s.RunDue(context.Background(), now) }()
		}
		wg.Wait()
	}
	total := 0
	for id, dues := range log.runs {
		seen := map[time.Time]bool{}
		for _, d := range dues {
			if seen[d] {
				t.Fatalf("check %s ran twice for the period due %v", id, d)
			}
			seen[d] = true
		}
		if len(dues) != 12 {
			t.Fatalf("check %s ran %d times in 2 minutes at 10 s, want 12", id, len(dues))
		}
		total += len(dues)
	}
	if int(tg.hits.Load()) != total {
		t.Fatalf("target hit %d times for %d runs", tg.hits.Load(), total)
	}
}

// TestClaimAheadRunsAtDueTime claims a check 2 s ahead: the claim is
// made (the check leased, nextRunAt moved on, another scheduler refused)
// but the run waits for its due time, and starts at it, not before.
func TestClaimAheadRunsAtDueTime(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	t0 := e.clock.now()
	due := t0.Add(10 * time.Second)
	c := e.check(t, tg.URL, 30*time.Second, due, nil)
	var log runLog
	a := e.schedWith(t, nil, scheduler.Options{Owner: "node-a", OnRun: log.record, Lookahead: 2 * time.Second})
	b := e.schedWith(t, nil, scheduler.Options{Owner: "node-b", OnRun: log.record, Lookahead: 2 * time.Second})

	early := due.Add(-1500 * time.Millisecond)
	e.clock.set(early)
	if n := a.RunDue(ctx, early); n != 0 || tg.hits.Load() != 0 {
		t.Fatalf("%v before its due time: ran %d, target hit %d times", due.Sub(early), n, tg.hits.Load())
	}
	got, _ := e.st.GetCheck(ctx, "", c.ID)
	if got.LeaseOwner != "node-a" || !got.NextRunAt.Equal(due.Add(30*time.Second)) {
		t.Fatalf("after the claim ahead: lease %q, nextRunAt %v; want node-a and %v", got.LeaseOwner, got.NextRunAt, due.Add(30*time.Second))
	}
	e.clock.set(due)
	if n := b.RunDue(ctx, due); n != 0 {
		t.Fatalf("another scheduler ran the check claimed ahead (%d runs)", n)
	}
	if n := a.RunDue(ctx, due.Add(-time.Millisecond)); n != 0 {
		t.Fatalf("ran %d a millisecond before its due time", n)
	}
	if n := a.RunDue(ctx, due); n != 1 || tg.hits.Load() != 1 {
		t.Fatalf("at its due time: ran %d, target hit %d times; want 1 and 1", n, tg.hits.Load())
	}
	if d := log.runs[c.ID]; len(d) != 1 || !d[0].Equal(due) || log.late[0] < 0 {
		t.Fatalf("runs due %v, lateness %v; want one due %v, not early", d, log.late, due)
	}
}

// TestClaimAheadRunsAtDueTimeLive is TestClaimAheadRunsAtDueTime on the
// real clock, through Run and its timers: every run starts at or after
// its due time.
func TestClaimAheadRunsAtDueTimeLive(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	first := time.Now().Add(time.Second).Truncate(time.Millisecond)
	for i := range 5 {
		e.check(t, tg.URL, time.Hour, first.Add(time.Duration(i)*100*time.Millisecond), nil)
	}
	started := make(chan [2]time.Time, 5)
	s := e.schedWith(t, nil, scheduler.Options{Owner: "live", Now: time.Now, Lookahead: 2 * time.Second,
		OnRun: func(_ string, due, at time.Time) { started <- [2]time.Time{due, at} }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for range 5 {
		select {
		case r := <-started:
			if r[1].Before(r[0]) {
				t.Errorf("run due %v started %v before it", r[0], r[0].Sub(r[1]))
			}
		case <-time.After(time.Minute):
			t.Fatal("a check did not run within a minute of its due time")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStopGivesBackClaimsAhead stops a scheduler (its Run's context
// ends) while it holds a run claimed ahead: the claim is given back
// (nextRunAt back to the due time, no lease), and another scheduler, after
// its next refresh, runs that very period.
func TestStopGivesBackClaimsAhead(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	due := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	c := e.check(t, tg.URL, 30*time.Second, due, nil)
	b := e.sched(t, "node-b", nil, nil)
	var log runLog
	a := e.schedWith(t, nil, scheduler.Options{Owner: "node-a", Now: time.Now, Lookahead: 2 * time.Hour, OnRun: log.record})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		got, _ := e.st.GetCheck(ctx, "", c.ID)
		if got.LeaseOwner == "node-a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node-a did not claim the check ahead within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := e.st.GetCheck(ctx, "", c.ID)
	if got.LeaseOwner != "" || !got.NextRunAt.Equal(due) {
		t.Fatalf("after the stop: lease %q, nextRunAt %v; want none and %v", got.LeaseOwner, got.NextRunAt, due)
	}
	if tg.hits.Load() != 0 || len(log.runs) != 0 {
		t.Fatalf("node-a ran the check before its due time")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.set(due)
	if n := b.RunDue(ctx, due); n != 1 || tg.hits.Load() != 1 {
		t.Fatalf("node-b at the due time: ran %d, target hit %d times; want 1 and 1", n, tg.hits.Load())
	}
	got, _ = e.st.GetCheck(ctx, "", c.ID)
	if !got.NextRunAt.Equal(due.Add(30 * time.Second)) {
		t.Fatalf("nextRunAt %v after node-b's run, want %v", got.NextRunAt, due.Add(30*time.Second))
	}
}

// TestCrashAfterClaimAhead drops a scheduler that holds a run claimed
// ahead without giving it back (as a crash does): that period is skipped,
// and another scheduler runs the next period, the first due after the
// lease (2 × run timeout from the due time) ended.
func TestCrashAfterClaimAhead(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	t0 := e.clock.now()
	due := t0.Add(10 * time.Second)
	c := e.check(t, tg.URL, 30*time.Second, due, nil)
	var log runLog
	a := e.schedWith(t, nil, scheduler.Options{Owner: "node-a", Lookahead: 2 * time.Second})
	b := e.schedWith(t, nil, scheduler.Options{Owner: "node-b", Lookahead: 2 * time.Second, OnRun: log.record})
	e.clock.set(due.Add(-time.Second))
	a.RunDue(ctx, due.Add(-time.Second)) // claims ahead, then node-a is gone
	for now := due.Add(-time.Second); now.Before(due.Add(90 * time.Second)); now = now.Add(250 * time.Millisecond) {
		e.clock.set(now)
		b.RunDue(ctx, now)
	}
	want := []time.Time{due.Add(30 * time.Second), due.Add(60 * time.Second)}
	if got := log.runs[c.ID]; len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Fatalf("node-b ran the periods due %v, want %v (the period node-a claimed is skipped)", got, want)
	}
}

func TestAfterDowntimeRunsOnce(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	c := e.check(t, tg.URL, 10*time.Second, t0, nil)
	s := e.sched(t, "a", nil, nil)
	later := t0.Add(5 * time.Minute) // 30 periods missed
	e.clock.set(later)
	if n := s.RunDue(context.Background(), later); n != 1 {
		t.Fatalf("ran %d times after downtime, want 1", n)
	}
	got, _ := e.st.GetCheck(context.Background(), "", c.ID)
	if !got.NextRunAt.Equal(later.Add(10 * time.Second)) {
		t.Fatalf("next run %v, want %v", got.NextRunAt, later.Add(10*time.Second))
	}
	if got.LastResult["status"] != "UP" || got.LastExecutedAt == "" {
		t.Fatalf("lastResult %v lastExecutedAt %q", got.LastResult, got.LastExecutedAt)
	}
	if n := s.RunDue(context.Background(), later.Add(time.Second)); n != 0 {
		t.Fatalf("ran again %d", n)
	}
}

func TestCheckLimitUnderConcurrentCreates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	free, _, err := e.st.CreateUser(ctx, "free@example.com", store.TierFree)
	if err != nil {
		t.Fatal(err)
	}
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	var ids sync.Map
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := e.st.CreateCheck(ctx, store.Check{UserID: free.ID, URL: "https://example.com/", Type: probe.TypeAvailability, DelayMs: 60000}, e.clock.now())
			switch {
			case err == nil:
				ok.Add(1)
				ids.Store(c.ID, true)
			case errors.Is(err, store.ErrLimit):
				limited.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 5 || limited.Load() != 15 {
		t.Fatalf("%d created, %d refused; want 5 and 15", ok.Load(), limited.Load())
	}
	list, _ := e.st.ListChecks(ctx, free.ID)
	u, _ := e.st.GetUser(ctx, free.ID)
	if len(list) != 5 || u.CheckCount != 5 {
		t.Fatalf("list %d, checkCount %d", len(list), u.CheckCount)
	}
	// Deleting one frees a slot.
	if err := e.st.DeleteCheck(ctx, free.ID, list[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateCheck(ctx, store.Check{UserID: free.ID, URL: "https://example.com/", Type: probe.TypeAvailability, DelayMs: 60000}, e.clock.now()); err != nil {
		t.Fatal(err)
	}
	// Another user cannot delete it.
	if err := e.st.DeleteCheck(ctx, e.user.ID, list[1].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("foreign delete: %v", err)
	}
}

func TestUniqueEmailUnderConcurrentSignups(t *testing.T) {
	e := newEnv(t)
	var ok, dup atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.st.CreateUser(context.Background(), "Same@Example.com", "")
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrExists):
				dup.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || dup.Load() != 9 {
		t.Fatalf("%d created, %d duplicates", ok.Load(), dup.Load())
	}
	u, err := e.st.UserByEmail(context.Background(), "same@example.com")
	if err != nil || u.Tier != store.TierFree || u.CheckLimit != 5 {
		t.Fatalf("%+v %v", u, err)
	}
}

func TestSuspendedUserChecksDoNotRun(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	t0 := e.clock.now()
	e.check(t, tg.URL, 10*time.Second, t0, nil)
	s := e.sched(t, "a", nil, nil)
	if _, err := e.st.SetUserStatus(ctx, e.user.ID, store.UserSuspended); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		e.clock.set(now)
		s.RunDue(ctx, now)
	}
	if tg.hits.Load() != 0 {
		t.Fatalf("a suspended user's check hit the target %d times", tg.hits.Load())
	}
	if _, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, URL: tg.URL, Type: probe.TypeAvailability, DelayMs: 10000}, t0); !errors.Is(err, store.ErrSuspended) {
		t.Fatalf("create while suspended: %v", err)
	}
	if _, err := e.st.SetUserStatus(ctx, e.user.ID, store.UserActive); err != nil {
		t.Fatal(err)
	}
	s.ForgetUser(e.user.ID)
	now := t0.Add(70 * time.Second)
	e.clock.set(now)
	if n := s.RunDue(ctx, now); n != 1 || tg.hits.Load() != 1 {
		t.Fatalf("after reactivation ran %d, hits %d", n, tg.hits.Load())
	}
}

func TestAlertsOnChangesOnly(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []alert.Alert
	secret := []byte("hook-secret")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alert.VerifyWebhook(secret, r.Header.Get("X-Checks-Signature"), body, time.Now(), time.Minute); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		var a alert.Alert
		_ = json.Unmarshal(body, &a)
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
	}))
	defer hook.Close()
	if _, err := e.st.SetAlerts(ctx, e.user.ID, hook.URL, string(secret), ""); err != nil {
		t.Fatal(err)
	}
	d := alert.New(alert.Options{Logger: e.log})
	dctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(dctx) }()
	t0 := e.clock.now()
	e.check(t, tg.URL, 10*time.Second, t0, map[string]any{"keyword": "in stock"})
	s := e.sched(t, "a", d, nil)
	// up, up, down, down, down, up, up
	for i, down := range []bool{false, false, true, true, true, false, false} {
		tg.down.Store(down)
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		e.clock.set(now)
		if n := s.RunDue(ctx, now); n != 1 {
			t.Fatalf("step %d ran %d", i, n)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// The dispatcher delivers alerts concurrently: they may arrive in
	// either order, so they are compared in the order of their runs.
	sort.Slice(got, func(i, j int) bool { return got[i].At.Before(got[j].At) })
	if len(got) != 2 || got[0].Event != "down" || got[1].Event != "up" {
		t.Fatalf("alerts %+v, want down then up", got)
	}
	if got[0].Result["httpStatus"] != float64(503) {
		t.Fatalf("down alert result %v", got[0].Result)
	}
}

func TestUnparseableEbayPageFails(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t) // no price on it
	ctx := context.Background()
	t0 := e.clock.now()
	c, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, URL: tg.URL, Type: probe.TypeEbay, DelayMs: 10000, Attributes: map[string]any{"threshold": 50}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := e.sched(t, "a", nil, nil)
	for i := 0; i < 5; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		e.clock.set(now)
		s.RunDue(ctx, now)
	}
	got, _ := e.st.GetCheck(ctx, "", c.ID)
	if got.Status != store.CheckFailed || got.FailureReason == "" {
		t.Fatalf("status %s reason %q", got.Status, got.FailureReason)
	}
	if tg.hits.Load() != 3 {
		t.Fatalf("ran %d times, want 3 (FailAfter) then stop", tg.hits.Load())
	}
	runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10)
	if err != nil || len(runs) != 3 {
		t.Fatalf("history %d %v", len(runs), err)
	}
	// Resuming clears the failure.
	r, err := e.st.SetCheckStatus(ctx, e.user.ID, c.ID, []string{store.CheckFailed, store.CheckPaused}, store.CheckActive)
	if err != nil || r.Status != store.CheckActive || r.FailureReason != "" {
		t.Fatalf("resume %+v %v", r, err)
	}
}

// TestStopLetsRunsInFlightFinish stops a scheduler while a run waits on a
// slow target: the run finishes within StopGrace and is recorded (lease
// cleared, the period done), rather than cut off and its period lost.
func TestStopLetsRunsInFlightFinish(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arrived := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		time.Sleep(500 * time.Millisecond)
		fmt.Fprint(w, "<html><title>shop</title><body>In stock</body></html>")
	}))
	t.Cleanup(slow.Close)
	due := time.Now().Truncate(time.Millisecond)
	c := e.check(t, slow.URL, 30*time.Second, due, nil)
	a := e.schedWith(t, nil, scheduler.Options{Owner: "node-a", Now: time.Now, StopGrace: time.Minute})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatal("the run did not reach the target within a minute")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaseOwner != "" || got.LastResult == nil || !got.NextRunAt.Equal(due.Add(30*time.Second)) {
		t.Fatalf("after a stop during the run: lease %q, last result %v, nextRunAt %v (want none, a result, %v)",
			got.LeaseOwner, got.LastResult, got.NextRunAt, due.Add(30*time.Second))
	}
}

// sentAlerts is an Alerter that keeps what it is given.
type sentAlerts struct {
	mu  sync.Mutex
	got []alert.Alert
}

func (s *sentAlerts) Send(a alert.Alert, _ alert.Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, a)
	return nil
}

// TestFailedConditionsAreDownEverywhere runs checks whose keyword or
// status condition fails: each failed run is DOWN with its reason in
// lastResult, the run history, the daily rollup (not up) and the alert,
// whose event names the condition.
func TestFailedConditionsAreDownEverywhere(t *testing.T) {
	tests := []struct {
		name   string
		attrs  map[string]any
		event  string // the alert of the failed run, its condition
		reason string
	}{
		{"keyword missing", map[string]any{"keyword": "sold out"}, "keyword-missing", `keyword "sold out" not found`},
		{"keyword present with opposite", map[string]any{"keyword": "in stock", "opposite": true}, "keyword-present", `keyword "in stock" found, expected absent`},
		{"unexpected status", map[string]any{"expectedStatus": []any{float64(201)}}, "down", "status 200, expected 201"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tg := newTarget(t)
			ctx := context.Background()
			if _, err := e.st.SetAlerts(ctx, e.user.ID, "https://hooks.example/x", "", ""); err != nil {
				t.Fatal(err)
			}
			t0 := e.clock.now()
			c := e.check(t, tg.URL, 10*time.Second, t0, tc.attrs)
			var al sentAlerts
			s := e.sched(t, "a", &al, nil)
			if n := s.RunDue(ctx, t0); n != 1 {
				t.Fatalf("ran %d", n)
			}
			got, err := e.st.GetCheck(ctx, "", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.LastResult["status"] != "DOWN" || got.LastResult["error"] != tc.reason || got.LastResult["condition"] != tc.event {
				t.Errorf("lastResult %v, want DOWN with %q", got.LastResult, tc.reason)
			}
			runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10)
			if err != nil || len(runs) != 1 || runs[0].Result["status"] != "DOWN" || runs[0].Result["error"] != tc.reason {
				t.Errorf("history %+v %v, want one DOWN run with %q", runs, err, tc.reason)
			}
			days, err := e.st.Days(ctx, e.user.ID, c.ID, t0.Add(-24*time.Hour))
			if err != nil || len(days) != 1 || days[0].Runs != 1 || days[0].Up != 0 {
				t.Errorf("rollup %+v %v, want 1 run, 0 up", days, err)
			}
			al.mu.Lock()
			defer al.mu.Unlock()
			if len(al.got) < 1 {
				t.Fatalf("no alert")
			}
			a := al.got[0]
			if a.Event != tc.event || a.Result["status"] != "DOWN" || a.Result["error"] != tc.reason ||
				!strings.Contains(a.Message, "is DOWN: "+tc.reason) {
				t.Errorf("alert %s %v %q, want %s, DOWN, %q", a.Event, a.Result, a.Message, tc.event, tc.reason)
			}
		})
	}
}

// TestMessage: every alert says in its first words whether the check is
// DOWN or UP, and why.
func TestMessage(t *testing.T) {
	down := map[string]any{"status": "DOWN", "error": `keyword "x" not found`}
	up := map[string]any{"status": "UP", "responseTime": int64(42)}
	tests := []struct {
		event string
		r     map[string]any
		want  string
	}{
		{"down", map[string]any{"status": "DOWN", "error": "status 503"}, "https://a.example/ is DOWN: status 503"},
		{"keyword-missing", down, `https://a.example/ is DOWN: keyword "x" not found`},
		{"keyword-present", map[string]any{"status": "DOWN", "error": `keyword "x" found, expected absent`}, `https://a.example/ is DOWN: keyword "x" found, expected absent`},
		{"up", up, "https://a.example/ is UP again (42ms)"},
		{"keyword-found", up, "https://a.example/ is UP again (42ms): the keyword is found"},
		{"keyword-gone", up, "https://a.example/ is UP again (42ms): the keyword is gone"},
	}
	for _, tc := range tests {
		if got := scheduler.Message(tc.event, "https://a.example/", tc.r); got != tc.want {
			t.Errorf("Message(%s) = %q, want %q", tc.event, got, tc.want)
		}
	}
}

// TestAlertSurvivesItsProcess: a process records a DOWN run, queues its
// alert and dies before delivering it. While it lives, its renewed claim
// keeps the alert its own; once the claim runs out, another process's
// sweep delivers the alert, under the same id (the receiver's key to drop
// a duplicate), exactly once, and the outbox is then empty.
func TestAlertSurvivesItsProcess(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string]int{} // alert id → deliveries
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("X-Checks-Alert-Id")]++
		mu.Unlock()
	}))
	defer hook.Close()
	if _, err := e.st.SetAlerts(ctx, e.user.ID, hook.URL, "", ""); err != nil {
		t.Fatal(err)
	}
	t0 := e.clock.now()
	e.check(t, tg.URL, 10*time.Second, t0, nil)
	claim := 15 * time.Second
	var dead sentAlerts // a's dispatcher: queued in memory, never delivered
	a := e.schedWith(t, &dead, scheduler.Options{Owner: "a", AlertClaim: claim})
	var b *scheduler.Scheduler
	d := alert.New(alert.Options{Logger: e.log, OnDone: func(al alert.Alert) { b.AlertDone(al) }})
	b = e.schedWith(t, d, scheduler.Options{Owner: "b", AlertClaim: claim})
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = d.Run(dctx) }()

	e.clock.set(t0)
	if n := a.RunDue(ctx, t0); n != 1 {
		t.Fatalf("first run: %d", n)
	}
	tg.down.Store(true)
	down := t0.Add(10 * time.Second)
	e.clock.set(down)
	if n := a.RunDue(ctx, down); n != 1 {
		t.Fatalf("down run: %d", n)
	}
	dead.mu.Lock()
	if len(dead.got) != 1 || dead.got[0].Event != "down" {
		dead.mu.Unlock()
		t.Fatalf("a queued %+v, want the down alert", dead.got)
	}
	id := dead.got[0].ID
	dead.mu.Unlock()

	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return got[id]
	}
	// a lives: it renews its claim before it runs out; b finds nothing.
	a.SweepAlerts(ctx, down.Add(claim-time.Second))
	b.SweepAlerts(ctx, down.Add(claim+time.Second))
	time.Sleep(200 * time.Millisecond)
	if n := delivered(); n != 0 {
		t.Fatalf("b delivered a live process's alert %d times", n)
	}
	// a dies: its claim runs out, b delivers the alert.
	b.SweepAlerts(ctx, down.Add(2*claim))
	deadline := time.Now().Add(10 * time.Second)
	for delivered() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := delivered(); n != 1 {
		t.Fatalf("the dead process's alert %s was delivered %d times by the survivor, want 1 (deliveries %v)", id, n, got)
	}
	// Delivered and removed: later sweeps deliver nothing again.
	deadline = time.Now().Add(5 * time.Second)
	for {
		left, err := e.st.DueAlerts(ctx, down.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivered alert is still in the outbox: %+v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.SweepAlerts(ctx, down.Add(3*claim))
	a.SweepAlerts(ctx, down.Add(4*claim))
	time.Sleep(200 * time.Millisecond)
	if n := delivered(); n != 1 || len(got) != 1 {
		t.Fatalf("deliveries %v, want the one alert once", got)
	}
}

// TestRunLeaseFollowsItsProcess: a run longer than its claim's lease
// keeps its check while its process renews the lease, so no other
// process runs the check meanwhile; the check of a process that died
// mid-run is taken over at its next period once the short lease ran out,
// not after the run's whole timeout.
func TestRunLeaseFollowsItsProcess(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	var hits atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		fmt.Fprint(w, "ok")
	}))
	defer slow.Close()
	defer close(release)
	t0 := e.clock.now()
	period, lease := 10*time.Second, 3*time.Second
	c := e.check(t, slow.URL, period, t0, nil)
	a := e.schedWith(t, nil, scheduler.Options{Owner: "a", RunLease: lease, Lookahead: -1})
	b := e.schedWith(t, nil, scheduler.Options{Owner: "b", RunLease: lease, Lookahead: -1})

	go a.RunDue(ctx, t0)
	waitHits := func(n int64) {
		deadline := time.Now().Add(10 * time.Second)
		for hits.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitHits(1)
	// a lives, its run hangs: it renews the lease past the next period.
	next := t0.Add(period)
	for at := t0.Add(lease / 2); !at.After(next); at = at.Add(lease / 2) {
		a.RenewRuns(ctx, at)
	}
	b.Schedule(c.ID, next)
	go b.RunDue(ctx, next.Add(time.Second))
	time.Sleep(300 * time.Millisecond)
	if n := hits.Load(); n != 1 {
		t.Fatalf("another process ran the check while its process lived and renewed the lease (%d runs)", n)
	}

	// A process dies mid-run (its run hangs, it renews nothing): its lease
	// runs out after lease, and the check is run again at its next period.
	d := e.check(t, slow.URL+"/d", period, t0, nil)
	dead := e.schedWith(t, nil, scheduler.Options{Owner: "dead", RunLease: lease, Lookahead: -1})
	go dead.RunDue(ctx, t0)
	waitHits(2)
	if hits.Load() != 2 {
		t.Fatalf("the dying process's run did not start (%d runs)", hits.Load())
	}
	b.Schedule(d.ID, next)
	go b.RunDue(ctx, next)
	waitHits(3)
	if n := hits.Load(); n != 3 {
		t.Fatalf("at the next period, %s after the dead process's claim, the check was not taken over (%d runs)", period, n)
	}
}

// TestLoserTriesAtTheNextPeriod: a scheduler that loses a check's claim to
// another process's run in flight tries again at the check's next due
// time, not at the end of that run's lease, so the check does not stay
// with the process that last won it: when that process dies after its
// record, the check runs on at its next period.
func TestLoserTriesAtTheNextPeriod(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	t0 := e.clock.now()
	period := 2 * time.Second
	c := e.check(t, tg.URL, period, t0, nil)
	b := e.schedWith(t, nil, scheduler.Options{Owner: "b", Lookahead: -1})
	// a's run is in flight: b's claim at the due time loses to its lease.
	if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, scheduler.DefaultRunLease); err != nil {
		t.Fatal(err)
	}
	b.Schedule(c.ID, t0)
	if n := b.RunDue(ctx, t0); n != 0 {
		t.Fatalf("b ran a check another process's run holds (%d runs)", n)
	}
	// a records its run, then dies.
	if err := e.st.Complete(ctx, c.ID, "a", store.Outcome{Result: map[string]any{"status": "UP"}, At: t0, AlertState: "ok"}); err != nil {
		t.Fatal(err)
	}
	before := tg.hits.Load()
	if n := b.RunDue(ctx, t0.Add(period)); n != 1 || tg.hits.Load() != before+1 {
		t.Fatalf("at the next period b ran the check %d times; want once, not after the dead process's lease", n)
	}
}

// failedWrites is how many requests the store refused on a condition.
func (e *env) failedWrites() int64 {
	var n int64
	for _, op := range e.db.Metrics().Ops {
		n += op.Errors["ConditionalCheckFailedException"]
	}
	return n
}

// threeNodes starts schedulers node-a, node-b and node-c on e's store,
// their runs recorded by onRun(node index, ...), and has each beat
// twice at now, so that every node sees the others before its first
// claim.
func (e *env) threeNodes(t *testing.T, now time.Time, onRun func(node int, id string, due, started time.Time)) []*scheduler.Scheduler {
	t.Helper()
	var nodes []*scheduler.Scheduler
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, e.schedWith(t, nil, scheduler.Options{Owner: name, OnRun: func(id string, due, started time.Time) { onRun(i, id, due, started) }}))
	}
	for range 2 {
		for _, s := range nodes {
			s.Beat(context.Background(), now)
		}
	}
	return nodes
}

// step drives schedulers with e's clock from from to before to, every
// 250 ms: at each step the nodes live(now) returns run their due checks
// concurrently, after a beat when now is a whole number of beat periods
// after from.
func (e *env) step(from, to time.Time, beat time.Duration, live func(now time.Time) []*scheduler.Scheduler) {
	ctx := context.Background()
	for now := from; now.Before(to); now = now.Add(250 * time.Millisecond) {
		e.clock.set(now)
		var wg sync.WaitGroup
		for _, s := range live(now) {
			wg.Go(func() {
				if now.Sub(from)%beat == 0 {
					s.Beat(ctx, now)
				}
				s.RunDue(ctx, now)
			})
		}
		wg.Wait()
	}
}

// TestNodesShareTheChecks runs three schedulers on one store, each
// beating its node lease: each check is claimed by one node only, so
// almost no claim fails (without the sharing, two of every three claims
// would), no period runs twice, and when a node dies the others take its
// checks over within the failover bound.
func TestNodesShareTheChecks(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	period := 2 * time.Second
	for i := range 30 {
		e.check(t, tg.URL, period, t0.Add(time.Duration(i)*50*time.Millisecond), nil)
	}
	var log runLog
	nodes := e.threeNodes(t, t0, func(_ int, id string, due, started time.Time) { log.record(id, due, started) })
	if got := nodes[0].Nodes(); len(got) != 3 {
		t.Fatalf("node-a sees the nodes %v, want all three", got)
	}
	death, end := t0.Add(30*time.Second), t0.Add(60*time.Second)
	e.step(t0, end, 2*time.Second, func(now time.Time) []*scheduler.Scheduler {
		if !now.Before(death) {
			return nodes[:2] // node-c is gone: no beat, no claim
		}
		return nodes
	})
	runs := 0
	var worst time.Duration
	for id, dues := range log.runs {
		sort.Slice(dues, func(i, j int) bool { return dues[i].Before(dues[j]) })
		for i := 1; i < len(dues); i++ {
			if dues[i].Equal(dues[i-1]) {
				t.Fatalf("check %s ran twice for the period due %v", id, dues[i])
			}
			worst = max(worst, dues[i].Sub(dues[i-1]))
			if gap := dues[i].Sub(dues[i-1]); gap > period+10*time.Second {
				t.Fatalf("check %s waited %v between runs (due %v, then %v), beyond its period + 10 s", id, gap, dues[i-1], dues[i])
			}
		}
		if last := dues[len(dues)-1]; last.Before(end.Add(-period - time.Second)) {
			t.Fatalf("check %s last ran for the period due %v, not taken over after node-c died at %v", id, last, death)
		}
		runs += len(dues)
	}
	if len(log.runs) != 30 || runs < 30*28 {
		t.Fatalf("%d checks ran %d times in 60 s at 2 s, want 30 checks and about %d runs", len(log.runs), runs, 30*30)
	}
	failed := e.failedWrites()
	t.Logf("%d runs, %d writes failed on their condition, longest gap between runs %v", runs, failed, worst)
	if float64(failed) > 0.02*float64(runs) {
		t.Fatalf("%d writes failed on their condition for %d runs, want almost none: each check is claimed by its owner only", failed, runs)
	}
}

// TestForcedCheckGoesToItsOwner creates checks through one node of three
// (Schedule, as its API does): the owners, which have read them, run
// them at their due times, and the creating node's forced claims, put
// off by ForcedGrace, fail once each and leave the checks to their
// owners instead of winning every period until the force lapses.
func TestForcedCheckGoesToItsOwner(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	period := 2 * time.Second
	var ids []string
	for i := range 30 {
		ids = append(ids, e.check(t, tg.URL, period, t0.Add(time.Duration(i)*50*time.Millisecond), nil).ID)
	}
	var log runLog
	var others runLog // the runs on node-b and node-c
	nodes := e.threeNodes(t, t0, func(node int, id string, due, started time.Time) {
		log.record(id, due, started)
		if node > 0 {
			others.record(id, due, started)
		}
	})
	for i, id := range ids {
		nodes[0].Schedule(id, t0.Add(time.Duration(i)*50*time.Millisecond))
	}
	end := t0.Add(16 * time.Second) // within the force's two Refresh periods
	e.step(t0, end, 2*time.Second, func(time.Time) []*scheduler.Scheduler { return nodes })
	runs := 0
	for id, dues := range log.runs {
		sort.Slice(dues, func(i, j int) bool { return dues[i].Before(dues[j]) })
		for i := 1; i < len(dues); i++ {
			if !dues[i].After(dues[i-1]) {
				t.Fatalf("check %s ran twice for the period due %v", id, dues[i])
			}
		}
		runs += len(dues)
	}
	if len(log.runs) != 30 || runs < 30*7 {
		t.Fatalf("%d checks ran %d times in 16 s at 2 s, want 30 checks and about %d runs", len(log.runs), runs, 30*8)
	}
	// A check node-a does not own fails node-a's claim once and is run
	// by its owner from then on. The three nodes step concurrently, so
	// now and then an owner and node-a both try a period, or a refused
	// claim is one write alone rather than in a group (which this count
	// does not see): 1 in 20 to 40 runs under the race detector had 3 to
	// 6 refusals above one a check. Forced claims that keep winning
	// until the force lapses make two to three a check.
	handed := len(others.runs)
	failed := e.failedWrites()
	t.Logf("%d runs, %d writes failed on their condition, %d checks handed to their owners", runs, failed, handed)
	if handed == 0 || failed > int64(handed+handed/2) {
		t.Fatalf("%d writes failed on their condition for %d checks handed over by node-a, want one a check: the owners run the checks forced onto node-a", failed, handed)
	}
}

// TestDeadNodesRunsTakenOver: node-c claims a run of every check and
// dies with them in flight. The other nodes take each run over once
// node-c's node lease has ended (3 s), not once each run's lease would
// (8 s), and node-c's late record of a run taken over is refused, so no
// period is recorded twice.
func TestDeadNodesRunsTakenOver(t *testing.T) {
	e := newEnv(t)
	tg := newTarget(t)
	ctx := context.Background()
	t0 := e.clock.now()
	period := 2 * time.Second
	var ids []string
	for range 12 {
		ids = append(ids, e.check(t, tg.URL, period, t0, nil).ID)
	}
	var log runLog
	nodes := e.threeNodes(t, t0, func(_ int, id string, due, started time.Time) { log.record(id, due, started) })
	// node-c's runs of every check are in flight when it dies.
	for _, id := range ids {
		if _, err := e.st.Claim(ctx, id, "node-c", t0, t0, scheduler.DefaultRunLease); err != nil {
			t.Fatal(err)
		}
	}
	e.step(t0.Add(time.Second), t0.Add(12*time.Second), time.Second, func(time.Time) []*scheduler.Scheduler { return nodes[:2] })
	bound := t0.Add(3*time.Second + 2*time.Second) // node lease, a beat, a step
	for _, id := range ids {
		dues := log.runs[id]
		if len(dues) == 0 {
			t.Fatalf("check %s never ran after node-c died", id)
		}
		sort.Slice(dues, func(i, j int) bool { return dues[i].Before(dues[j]) })
		if first := dues[0]; !first.Equal(t0.Add(period)) {
			t.Fatalf("check %s first ran for the period due %v, want the one due %v (node-c's run of %v is its own)", id, first, t0.Add(period), t0)
		}
		for i := 1; i < len(dues); i++ {
			if !dues[i].After(dues[i-1]) {
				t.Fatalf("check %s ran twice for the period due %v", id, dues[i])
			}
		}
	}
	if late := log.startedAfter(bound); len(late) > 0 {
		t.Fatalf("%d checks first ran after %v, beyond node-c's node lease + a beat (its runs' own leases end at %v): %v", len(late), bound.Sub(t0), scheduler.DefaultRunLease, late)
	}
	// node-c's record of its run in flight is refused: the check is another node's now.
	err := e.st.Complete(ctx, ids[0], "node-c", store.Outcome{Result: map[string]any{"status": "UP"}, At: t0, AlertState: "ok"})
	if !errors.Is(err, store.ErrLost) {
		t.Fatalf("node-c's late record: %v, want ErrLost", err)
	}
}

// TestClaimWindowSharesOneWrite: when a check comes within the lookahead
// of its due time, the checks due within the claim window are claimed
// with it in one transaction (none alone); each still runs once, at its
// own due time. A check due beyond the window waits for a later claim,
// and without a window each check is claimed alone at its lookahead.
func TestClaimWindowSharesOneWrite(t *testing.T) {
	ctx := context.Background()
	// The runs due 10 ms to 900 ms after t0 share the window; the last is
	// beyond it.
	offsets := []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 650 * time.Millisecond, 900 * time.Millisecond, 1500 * time.Millisecond}
	for _, tt := range []struct {
		name        string
		window      time.Duration
		wantTx      int64 // transactions of claims at t0
		wantUpdates int64 // single claims at t0
		wantLeased  int   // checks claimed at t0
	}{
		{name: "default window: one transaction", window: 0, wantTx: 1, wantUpdates: 0, wantLeased: 5},
		{name: "no window: the first alone", window: -1, wantTx: 0, wantUpdates: 1, wantLeased: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tg := newTarget(t)
			t0 := e.clock.now()
			var ids []string
			for _, d := range offsets {
				ids = append(ids, e.check(t, tg.URL, time.Minute, t0.Add(d), nil).ID)
			}
			var log runLog
			s := e.schedWith(t, nil, scheduler.Options{Owner: "a", OnRun: log.record, ClaimWindow: tt.window})
			tx, updates := e.db.Metrics().Requests("TransactWriteItems"), e.db.Metrics().Requests("UpdateItem")
			if n := s.RunDue(ctx, t0); n != 0 {
				t.Fatalf("ran %d checks before their due times", n)
			}
			if n := e.db.Metrics().Requests("TransactWriteItems") - tx; n != tt.wantTx {
				t.Errorf("claims at t0 took %d transactions, want %d", n, tt.wantTx)
			}
			if n := e.db.Metrics().Requests("UpdateItem") - updates; n != tt.wantUpdates {
				t.Errorf("claims at t0 took %d single updates, want %d", n, tt.wantUpdates)
			}
			leased := 0
			for _, id := range ids {
				c, err := e.st.GetCheck(ctx, "", id)
				if err != nil {
					t.Fatal(err)
				}
				if c.LeaseOwner == "a" {
					leased++
				}
			}
			if leased != tt.wantLeased {
				t.Errorf("%d checks claimed at t0, want %d", leased, tt.wantLeased)
			}
			// Step through the due times: each check runs once, at its due
			// time, whether claimed at t0 or later.
			for now := t0; !now.After(t0.Add(2 * time.Second)); now = now.Add(10 * time.Millisecond) {
				e.clock.set(now)
				s.RunDue(ctx, now)
			}
			for i, id := range ids {
				if d := log.runs[id]; len(d) != 1 || !d[0].Equal(t0.Add(offsets[i])) {
					t.Errorf("check %d: runs due %v, want one due %v", i, d, t0.Add(offsets[i]))
				}
			}
			for _, l := range log.late {
				if l != 0 {
					t.Errorf("a run started %v after its due time, want at it", l)
				}
			}
		})
	}
}

// TestClaimWindowLeavesPutOffChecks: a check whose claim was lost to
// another process's run is tried again at its due time, not earlier
// with the checks of a claim window that reaches it: that claim ahead
// would be refused (the run's lease), and its group's write with it.
func TestClaimWindowLeavesPutOffChecks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	const period = 10 * time.Second
	held := e.check(t, tg.URL, period, t0, nil)
	other := e.check(t, tg.URL, period, t0.Add(period-500*time.Millisecond), nil)
	a := e.schedWith(t, nil, scheduler.Options{Owner: "a"})
	// b runs held's period due at t0, and holds it for a minute.
	if _, err := e.st.Claim(ctx, held.ID, "b", t0, t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	a.RunDue(ctx, t0) // a's claim of held is lost: tried at its next due time
	refused := e.failedWrites()
	now := t0.Add(period - 520*time.Millisecond)
	e.clock.set(now)
	a.RunDue(ctx, now) // other within the lookahead; held within the window
	if n := e.failedWrites() - refused; n != 0 {
		t.Errorf("%d claims refused while the window reached the held check, want none", n)
	}
	if c, err := e.st.GetCheck(ctx, "", other.ID); err != nil || c.LeaseOwner != "a" {
		t.Errorf("the check due in the window: lease %q (%v), want a's", c.LeaseOwner, err)
	}
}

// TestForcedCheckClaimedAfterItsGrace: a check forced onto a node that
// does not own it (created or run now through that node) is claimed
// there ForcedGrace after its due time, not later: the claim window,
// which reaches further, does not push it back.
func TestForcedCheckClaimedAfterItsGrace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tg := newTarget(t)
	t0 := e.clock.now()
	var ids []string
	for range 12 {
		ids = append(ids, e.check(t, tg.URL, time.Minute, t0, nil).ID)
	}
	var log runLog
	nodes := e.threeNodes(t, t0, func(_ int, id string, due, started time.Time) { log.record(id, due, started) })
	for _, id := range ids {
		nodes[0].Schedule(id, t0)
	}
	// Only node-a runs: the owners never claim.
	for _, now := range []time.Time{t0, t0.Add(scheduler.ForcedGrace)} {
		e.clock.set(now)
		nodes[0].RunDue(ctx, now)
	}
	for i, id := range ids {
		if d := log.runs[id]; len(d) != 1 {
			t.Errorf("check %d: %d runs by %v, want one (at its due time or its grace after)", i, len(d), scheduler.ForcedGrace)
		}
	}
	for _, l := range log.late {
		if l != 0 && l != scheduler.ForcedGrace {
			t.Errorf("a run started %v late, want 0 (node-a's own) or %v (forced)", l, scheduler.ForcedGrace)
		}
	}
}
