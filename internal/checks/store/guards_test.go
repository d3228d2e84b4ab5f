package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// clock is a settable test clock shared by the embedded store and Checks.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	db     *ddb.Store
	client *dynamodb.Client
	st     *store.Store
	clock  *clock
	user   store.User
	names  tables.Names
}

// newEnv opens an embedded store driven by a test clock; ttlInterval is its
// TTL sweep period (negative: no sweeper).
func newEnv(t *testing.T, ttlInterval time.Duration) *env {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, Now: clk.now, TTLInterval: ttlInterval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	client := ddb.NewClient(db)
	names, err := tables.EnsureTables(context.Background(), client, tables.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, client: client, clock: clk, names: names}
	e.st = store.New(client, names, &store.Options{Now: clk.now})
	if e.user, _, err = e.st.CreateUser(context.Background(), "ops@example.com", store.TierPro); err != nil {
		t.Fatal(err)
	}
	return e
}

// check creates an ACTIVE check first due at first.
func (e *env) check(t *testing.T, delay time.Duration, first time.Time) store.Check {
	t.Helper()
	c, err := e.st.CreateCheck(context.Background(), store.Check{UserID: e.user.ID, URL: "http://127.0.0.1:1/", Type: "AVAILABILITY", DelayMs: delay.Milliseconds()}, first)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func outcome(at time.Time, status string, retention time.Duration) store.Outcome {
	return store.Outcome{Result: map[string]any{"status": status}, At: at, AlertState: "ok", Retention: retention}
}

// TestClaimLeaseGuard: while one owner's lease on a run holds, another
// owner may not claim the same check, even when its next period is due
// (a run longer than the period); once the lease has expired it may.
func TestClaimLeaseGuard(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	period := 10 * time.Second
	lease := time.Minute
	c := e.check(t, period, t0)

	first, err := e.st.Claim(ctx, c.ID, "a", t0, t0, lease)
	if err != nil {
		t.Fatalf("a's claim: %v", err)
	}
	if !first.NextRunAt.Equal(t0.Add(period)) || first.LeaseOwner != "a" {
		t.Fatalf("after a's claim: next %v owner %q", first.NextRunAt, first.LeaseOwner)
	}
	for _, tt := range []struct {
		name  string
		owner string
		at    time.Duration // after t0
		want  error
	}{
		{"other owner, next period due, lease holds", "b", period, store.ErrLost},
		{"other owner, just before the lease ends", "b", lease - time.Millisecond, store.ErrLost},
		{"other owner after the lease ended", "b", lease + time.Second, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := t0.Add(tt.at)
			cur, err := e.st.GetCheck(ctx, "", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.st.Claim(ctx, c.ID, tt.owner, cur.NextRunAt, now, lease)
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("claim by %s at +%s: %v, want %v", tt.owner, tt.at, err, tt.want)
			}
			if tt.want != nil && (got.LeaseOwner != "a" || !got.NextRunAt.Equal(cur.NextRunAt)) {
				t.Fatalf("refused claim changed the check: owner %q next %v", got.LeaseOwner, got.NextRunAt)
			}
			if tt.want == nil && got.LeaseOwner != tt.owner {
				t.Fatalf("claim by %s: owner %q", tt.owner, got.LeaseOwner)
			}
		})
	}
}

// TestClaimAheadGuards: a run may be claimed up to the lookahead before
// its due time, not further; a check still carrying another owner's
// lease (its record late) is not claimed ahead, even with the lease
// expired, only once due; the lease runs from the due time; Unclaim puts
// nextRunAt back to the due time, so that another owner claims that
// period, and after a schedule change only drops the lease.
func TestClaimAheadGuards(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	period, lease, ahead := 10*time.Second, 4*time.Second, time.Second
	c := e.check(t, period, t0.Add(period))
	due := t0.Add(period)

	if _, err := e.st.ClaimAhead(ctx, c.ID, "a", due, due.Add(-ahead-time.Millisecond), ahead, lease, 0); !errors.Is(err, store.ErrLost) {
		t.Fatalf("claim further ahead than the lookahead: %v, want ErrLost", err)
	}
	got, err := e.st.ClaimAhead(ctx, c.ID, "a", due, due.Add(-ahead), ahead, lease, 0)
	if err != nil {
		t.Fatalf("claim within the lookahead: %v", err)
	}
	if !got.NextRunAt.Equal(due.Add(period)) || !got.LeaseUntil.Equal(due.Add(lease)) {
		t.Fatalf("after the claim ahead: next %v lease until %v; want %v and %v", got.NextRunAt, got.LeaseUntil, due.Add(period), due.Add(lease))
	}
	// a's record is late: its lease has expired, but is still there.
	next := got.NextRunAt
	if _, err := e.st.ClaimAhead(ctx, c.ID, "b", next, next.Add(-ahead/2), ahead, lease, 0); !errors.Is(err, store.ErrLost) {
		t.Fatalf("b's claim ahead over a's expired lease: %v, want ErrLost", err)
	}
	if _, err := e.st.ClaimAhead(ctx, c.ID, "b", next, next, ahead, lease, 0); err != nil {
		t.Fatalf("b's claim at the due time after a's lease ended: %v", err)
	}

	// Unclaim: b gives the period back; a claims that very period.
	if err := e.st.Unclaim(ctx, c.ID, "b", next, next.Add(period)); err != nil {
		t.Fatal(err)
	}
	back, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !back.NextRunAt.Equal(next) || back.LeaseOwner != "" {
		t.Fatalf("after Unclaim: next %v owner %q; want %v and none", back.NextRunAt, back.LeaseOwner, next)
	}
	if _, err := e.st.ClaimAhead(ctx, c.ID, "a", next, next.Add(-ahead), ahead, lease, 0); err != nil {
		t.Fatalf("a's claim of the period given back: %v", err)
	}
	// Given back after its schedule changed: the lease goes, nextRunAt stays.
	if _, err := e.st.RunNow(ctx, e.user.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	changed, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Unclaim(ctx, c.ID, "a", next, next.Add(period)); err != nil {
		t.Fatal(err)
	}
	after, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !after.NextRunAt.Equal(changed.NextRunAt) || after.LeaseOwner != "" {
		t.Fatalf("Unclaim after a schedule change: next %v owner %q; want %v and none", after.NextRunAt, after.LeaseOwner, changed.NextRunAt)
	}
}

// TestCompleteNeedsLease: a run whose lease was taken over by another
// owner may not record its result (nor history, nor alert state); the new
// owner's run does.
func TestCompleteNeedsLease(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	c := e.check(t, 10*time.Second, t0)
	lease := time.Minute
	if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, lease); err != nil {
		t.Fatal(err)
	}
	// a's run hangs past its lease; b claims the check's next period.
	later := t0.Add(2 * lease)
	cur, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Claim(ctx, c.ID, "b", cur.NextRunAt, later, lease); err != nil {
		t.Fatalf("b's claim after a's lease expired: %v", err)
	}

	stale := outcome(t0.Add(30*time.Second), "DOWN", time.Hour)
	stale.AlertState = "down"
	if err := e.st.Complete(ctx, c.ID, "a", stale); !errors.Is(err, store.ErrLost) {
		t.Fatalf("a's Complete after the takeover = %v, want ErrLost", err)
	}
	got, err := e.st.GetCheck(ctx, "", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastResult != nil || got.AlertState != "" || got.LeaseOwner != "b" {
		t.Fatalf("a's stale run was recorded: lastResult %v alertState %q lease %q", got.LastResult, got.AlertState, got.LeaseOwner)
	}
	if runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10); err != nil || len(runs) != 0 {
		t.Fatalf("history after a's stale run: %v %v, want none", runs, err)
	}

	if err := e.st.Complete(ctx, c.ID, "b", outcome(later, "UP", time.Hour)); err != nil {
		t.Fatalf("b's Complete: %v", err)
	}
	got, _ = e.st.GetCheck(ctx, "", c.ID)
	if got.LastResult["status"] != "UP" || got.LeaseOwner != "" {
		t.Fatalf("b's run: lastResult %v lease %q", got.LastResult, got.LeaseOwner)
	}
}

// TestHistoryExpires: each run's history item carries the TTL attribute
// at run time + retention (epoch seconds), and the store's TTL sweep
// removes it once that has passed; the check itself stays.
func TestHistoryExpires(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 20*time.Millisecond)
	t0 := e.clock.now()
	c := e.check(t, 10*time.Second, t0)
	retention := 3 * time.Hour
	if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Complete(ctx, c.ID, "a", outcome(t0, "UP", retention)); err != nil {
		t.Fatal(err)
	}
	runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("history: %v %v, want 1 run", runs, err)
	}
	out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.names.Checks),
		Key:       map[string]types.AttributeValue{"PK": ddbitem.S(c.ID), "SK": ddbitem.S("RESULT#" + runs[0].At)},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("history item: %v %v", out, err)
	}
	if got, want := ddbitem.Int(out.Item, tables.TTLAttribute), t0.Add(retention).Unix(); got != want {
		t.Fatalf("%s = %d, want %d (run time + retention)", tables.TTLAttribute, got, want)
	}

	waitHistory := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			runs, err := e.st.Results(ctx, e.user.ID, c.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) == want || time.Now().After(deadline) {
				if len(runs) != want {
					t.Fatalf("at %s: %d runs in the history, want %d", e.clock.now().Sub(t0), len(runs), want)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	e.clock.add(retention - time.Minute)
	time.Sleep(100 * time.Millisecond) // several sweeps
	waitHistory(1)
	e.clock.add(2 * time.Minute)
	waitHistory(0)
	if _, err := e.st.GetCheck(ctx, e.user.ID, c.ID); err != nil {
		t.Fatalf("the check itself: %v", err)
	}
}

// TestClaimRefusesStaleDue: a scheduler holding a due time that another
// scheduler has already claimed and recorded may not claim with it, even
// once the next period is due: its claim would run that period on a stale
// view of the schedule (two runs in one period with another scheduler
// that claims the next period by its true due time).
func TestClaimRefusesStaleDue(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	period, lease := 10*time.Second, 5*time.Second
	c := e.check(t, period, t0)
	if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, lease); err != nil {
		t.Fatalf("a's claim: %v", err)
	}
	if err := e.st.Complete(ctx, c.ID, "a", outcome(t0, "UP", 0)); err != nil {
		t.Fatalf("a's record: %v", err)
	}
	for _, at := range []time.Duration{time.Second, period, period + lease + time.Second} {
		got, err := e.st.Claim(ctx, c.ID, "b", t0, t0.Add(at), lease)
		if !errors.Is(err, store.ErrLost) {
			t.Fatalf("b's claim with the stale due time at +%s: %v, want ErrLost", at, err)
		}
		if !got.NextRunAt.Equal(t0.Add(period)) || got.LeaseOwner != "" {
			t.Fatalf("refused claim changed the check: next %v owner %q", got.NextRunAt, got.LeaseOwner)
		}
	}
	// The true due time still claims.
	if _, err := e.st.Claim(ctx, c.ID, "b", t0.Add(period), t0.Add(period), lease); err != nil {
		t.Fatalf("b's claim with the true due time: %v", err)
	}
}

// TestLateClaimIsOneWrite: a claim more than a period late (a node
// behind its schedule) moves nextRunAt to a period after the run's start
// in the claim's one write when the caller knows the period, in two
// writes when it does not; a stale period costs a second claim, never a
// wrong schedule; an on-time claim keeps the cadence whatever the period
// given.
func TestLateClaimIsOneWrite(t *testing.T) {
	ctx := context.Background()
	period, lease := 2*time.Second, 4*time.Second
	cases := []struct {
		name       string
		late       time.Duration // the claim's now after the due time
		given      time.Duration // the period the caller passes
		wantWrites int64
		wantNext   time.Duration // after the due time
	}{
		{"late, period known", 5 * time.Second, period, 1, 5*time.Second + period},
		{"late, period unknown", 5 * time.Second, 0, 2, 5*time.Second + period},
		{"late, period stale", 5 * time.Second, 3 * time.Second, 2, 5*time.Second + period},
		{"on time, period known", 100 * time.Millisecond, period, 1, period},
		{"exactly a period late", period, period, 1, 2 * period},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, -1)
			due := e.clock.now()
			c := e.check(t, period, due)
			before := e.db.Metrics().Requests("UpdateItem")
			got, err := e.st.ClaimAhead(ctx, c.ID, "a", due, due.Add(tc.late), 0, lease, tc.given)
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if n := e.db.Metrics().Requests("UpdateItem") - before; n != tc.wantWrites {
				t.Errorf("the claim took %d writes, want %d", n, tc.wantWrites)
			}
			stored, err := e.st.GetCheck(ctx, "", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := due.Add(tc.wantNext)
			if !got.NextRunAt.Equal(want) || !stored.NextRunAt.Equal(want) || stored.LeaseOwner != "a" {
				t.Fatalf("next run %v (stored %v, owner %q), want %v held by a", got.NextRunAt, stored.NextRunAt, stored.LeaseOwner, want)
			}
		})
	}
}

// TestTakeOverGuards: a run is taken over from its holder only once the
// holder's node lease has ended and only from the holder named; the
// holder's late record is refused after.
func TestTakeOverGuards(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	period, lease := 2*time.Second, 8*time.Second
	c := e.check(t, period, t0)
	if _, _, err := e.st.BeatNode(ctx, "c", t0, t0.Add(3*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	held, err := e.st.Claim(ctx, c.ID, "c", t0, t0, lease)
	if err != nil {
		t.Fatal(err)
	}
	due := held.NextRunAt // c's run of t0 is in flight; the next period is due
	if _, err := e.st.TakeOver(ctx, c.ID, "a", "c", due, due, lease); !errors.Is(err, store.ErrLost) {
		t.Fatalf("take over while c's node lease runs: %v, want ErrLost", err)
	}
	after := t0.Add(4 * time.Second)
	if _, err := e.st.TakeOver(ctx, c.ID, "a", "x", due, after, lease); !errors.Is(err, store.ErrLost) {
		t.Fatalf("take over from a node that does not hold the check: %v, want ErrLost", err)
	}
	got, err := e.st.TakeOver(ctx, c.ID, "a", "c", due, after, lease)
	if err != nil {
		t.Fatalf("take over once c's node lease ended: %v", err)
	}
	if got.LeaseOwner != "a" || !got.NextRunAt.After(after) {
		t.Fatalf("after the take-over: owner %q next %v, want a and after %v", got.LeaseOwner, got.NextRunAt, after)
	}
	err = e.st.Complete(ctx, c.ID, "c", store.Outcome{Result: map[string]any{"status": "UP"}, At: t0, AlertState: "ok"})
	if !errors.Is(err, store.ErrLost) {
		t.Fatalf("c's late record: %v, want ErrLost", err)
	}
}

// TestRenewRunOutcome: renewing a run's lease extends it while the owner
// holds it, says ErrLost when another owner took the check over (a real
// loss: the run's record will be refused) and ErrReleased when no one
// holds it because the run ended (its record written, or the check
// deleted), which the scheduler does not warn about.
func TestRenewRunOutcome(t *testing.T) {
	lease := time.Minute
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, e *env, c store.Check)
		want  error
	}{
		{"held", func(*testing.T, *env, store.Check) {}, nil},
		{"recorded", func(t *testing.T, e *env, c store.Check) {
			if err := e.st.Complete(context.Background(), c.ID, "a", outcome(e.clock.now(), "UP", time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, store.ErrReleased},
		{"deleted", func(t *testing.T, e *env, c store.Check) {
			if err := e.st.DeleteCheck(context.Background(), e.user.ID, c.ID); err != nil {
				t.Fatal(err)
			}
		}, store.ErrReleased},
		{"taken over", func(t *testing.T, e *env, c store.Check) {
			e.clock.add(2 * lease)
			cur, err := e.st.GetCheck(context.Background(), "", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.st.Claim(context.Background(), c.ID, "b", cur.NextRunAt, e.clock.now(), lease); err != nil {
				t.Fatal(err)
			}
		}, store.ErrLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, -1)
			t0 := e.clock.now()
			c := e.check(t, 10*time.Second, t0)
			if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, lease); err != nil {
				t.Fatal(err)
			}
			tc.after(t, e, c)
			until := e.clock.now().Add(5 * lease)
			err := e.st.RenewRun(ctx, c.ID, "a", until)
			if !errors.Is(err, tc.want) {
				t.Fatalf("RenewRun = %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				got, err := e.st.GetCheck(ctx, "", c.ID)
				if err != nil || !got.LeaseUntil.Equal(until.Truncate(time.Millisecond)) {
					t.Fatalf("lease after RenewRun: %v, %v; want until %v", got.LeaseUntil, err, until)
				}
			}
		})
	}
}
