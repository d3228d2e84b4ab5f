package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestCompleteAll: runs recorded together are each recorded as Complete
// records one (the check's last result with its lease removed, a history
// item, an alert in the outbox), in one transaction when they fit in
// one; a run whose lease was lost is refused alone (ErrLost) while the
// others of its transaction are recorded one by one; two runs of one
// check never share a transaction, so the second is refused by the
// lease the first removed; runs beyond one transaction's items take
// another.
func TestCompleteAll(t *testing.T) {
	ctx := context.Background()
	const lease = time.Minute
	tests := []struct {
		name string
		runs int
		// lost is the run whose check another owner took before the
		// record (-1: none); again is a run recorded a second time, last
		// (-1: none).
		lost, again int
		alerts      bool
		wantTx      int64
	}{
		{name: "three runs, one transaction", runs: 3, lost: -1, again: -1, wantTx: 1},
		{name: "with their alerts", runs: 3, lost: -1, again: -1, alerts: true, wantTx: 1},
		{name: "a lease lost: the others one by one", runs: 3, lost: 1, again: -1, wantTx: 1 + 2},
		{name: "one check twice: two transactions", runs: 2, lost: -1, again: 0, wantTx: 2},
		{name: "more items than one transaction holds", runs: 40, lost: -1, again: -1, wantTx: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, -1)
			t0 := e.clock.now()
			var ids []string
			for range tt.runs {
				c := e.check(t, 10*time.Second, t0)
				if _, err := e.st.Claim(ctx, c.ID, "a", t0, t0, lease); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, c.ID)
			}
			at := t0.Add(time.Second)
			if tt.lost >= 0 {
				// a's run outlives its lease; b claims the next period.
				cur, err := e.st.GetCheck(ctx, "", ids[tt.lost])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.st.Claim(ctx, ids[tt.lost], "b", cur.NextRunAt, t0.Add(2*lease), lease); err != nil {
					t.Fatal(err)
				}
			}
			var recs []store.Record
			for i, id := range ids {
				o := outcome(at, "DOWN", time.Hour)
				o.AlertState = "down"
				if tt.alerts {
					o.Alert = &store.PendingAlert{Key: store.AlertKey(at, fmt.Sprint("alt_", i)), CheckID: id, Alert: []byte(`{}`)}
					o.AlertClaim = at.Add(time.Minute)
				}
				recs = append(recs, store.Record{ID: id, Outcome: o})
			}
			if tt.again >= 0 {
				recs = append(recs, recs[tt.again])
			}
			before := e.db.Metrics().Requests("TransactWriteItems")
			errs := e.st.CompleteAll(ctx, "a", recs)
			if n := e.db.Metrics().Requests("TransactWriteItems") - before; n != tt.wantTx {
				t.Errorf("%d transactions, want %d", n, tt.wantTx)
			}
			if len(errs) != len(recs) {
				t.Fatalf("%d errors for %d runs", len(errs), len(recs))
			}
			for i, err := range errs {
				refused := i == tt.lost || (tt.again >= 0 && i == len(recs)-1)
				if refused != errors.Is(err, store.ErrLost) || (!refused && err != nil) {
					t.Errorf("run %d: %v (refused: %v)", i, err, refused)
				}
			}
			for i, id := range ids {
				got, err := e.st.GetCheck(ctx, "", id)
				if err != nil {
					t.Fatal(err)
				}
				runs, err := e.st.Results(ctx, e.user.ID, id, 10)
				if err != nil {
					t.Fatal(err)
				}
				if i == tt.lost {
					if got.LastResult != nil || got.LeaseOwner != "b" || len(runs) != 0 {
						t.Errorf("lost run %d recorded: lastResult %v lease %q history %d", i, got.LastResult, got.LeaseOwner, len(runs))
					}
					continue
				}
				if got.LastResult["status"] != "DOWN" || got.AlertState != "down" || got.LeaseOwner != "" || len(runs) != 1 {
					t.Errorf("run %d: lastResult %v alertState %q lease %q history %d, want DOWN, down, none, 1", i, got.LastResult, got.AlertState, got.LeaseOwner, len(runs))
				}
			}
			pending, err := e.st.DueAlerts(ctx, at.Add(2*time.Minute), 100)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: tt.runs}[tt.alerts]; len(pending) != want {
				t.Errorf("%d alerts in the outbox, want %d", len(pending), want)
			}
		})
	}
}

// TestClaimAll: claims made together are each made as ClaimAhead makes
// one (the lease taken, nextRunAt a period on, or a period after a late
// run's start), in one transaction when none is refused; a claim refused
// (its check held by another owner) fails alone, with the check as it
// stands, while the others are made together in one more transaction; a
// check named twice is claimed once.
func TestClaimAll(t *testing.T) {
	ctx := context.Background()
	const period, lease = 10 * time.Second, time.Minute
	tests := []struct {
		name   string
		claims int
		// held is the check another owner holds (-1: none); twice is a
		// check claimed a second time, last (-1: none).
		held, twice int
		late        time.Duration // the claims' now after their due time
		wantTx      int64
		wantUpdates int64
	}{
		{name: "three due: one transaction", claims: 3, held: -1, twice: -1, wantTx: 1},
		{name: "late, period known: next period from the start", claims: 3, held: -1, twice: -1, late: 25 * time.Second, wantTx: 1},
		{name: "one held by another: the others together", claims: 3, held: 1, twice: -1, wantTx: 2, wantUpdates: 1},
		{name: "one of five held: the four others together", claims: 5, held: 3, twice: -1, wantTx: 2, wantUpdates: 1},
		{name: "one check twice: claimed once", claims: 2, held: -1, twice: 0, wantTx: 1, wantUpdates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, -1)
			due := e.clock.now()
			now := due.Add(tt.late)
			var rs []store.ClaimRequest
			for i := range tt.claims {
				c := e.check(t, period, due)
				if i == tt.held {
					if _, err := e.st.Claim(ctx, c.ID, "b", due, due, lease); err != nil {
						t.Fatal(err)
					}
				}
				rs = append(rs, store.ClaimRequest{ID: c.ID, Due: due, Now: now, Lease: lease, Period: period})
			}
			if tt.twice >= 0 {
				rs = append(rs, rs[tt.twice])
			}
			tx, updates := e.db.Metrics().Requests("TransactWriteItems"), e.db.Metrics().Requests("UpdateItem")
			got := e.st.ClaimAll(ctx, "a", rs)
			if n := e.db.Metrics().Requests("TransactWriteItems") - tx; n != tt.wantTx {
				t.Errorf("%d transactions, want %d", n, tt.wantTx)
			}
			if n := e.db.Metrics().Requests("UpdateItem") - updates; n != tt.wantUpdates {
				t.Errorf("%d UpdateItem calls, want %d", n, tt.wantUpdates)
			}
			if len(got) != len(rs) {
				t.Fatalf("%d outcomes for %d claims", len(got), len(rs))
			}
			wantNext := due.Add(period)
			if tt.late > 0 {
				wantNext = now.Add(period)
			}
			for i, r := range rs {
				g := got[i]
				stored, err := e.st.GetCheck(ctx, "", r.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case i == tt.held:
					if !errors.Is(g.Err, store.ErrLost) || g.Check.LeaseOwner != "b" || stored.LeaseOwner != "b" {
						t.Errorf("claim %d of a check b holds: %v, owner %q (stored %q), want ErrLost and b's", i, g.Err, g.Check.LeaseOwner, stored.LeaseOwner)
					}
				case tt.twice >= 0 && i == len(rs)-1:
					if !errors.Is(g.Err, store.ErrLost) {
						t.Errorf("second claim of one check: %v, want ErrLost", g.Err)
					}
				default:
					if g.Err != nil || g.Check.ID != r.ID || g.Check.LeaseOwner != "a" || !g.Check.NextRunAt.Equal(wantNext) || g.Check.URL == "" {
						t.Errorf("claim %d: %v, check %q owner %q next %v url %q; want a's, next %v", i, g.Err, g.Check.ID, g.Check.LeaseOwner, g.Check.NextRunAt, g.Check.URL, wantNext)
					}
					if stored.LeaseOwner != "a" || !stored.NextRunAt.Equal(wantNext) {
						t.Errorf("claim %d stored: owner %q next %v, want a, %v", i, stored.LeaseOwner, stored.NextRunAt, wantNext)
					}
				}
			}
		})
	}
}
