package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// ops is how many requests of op the store has served.
func (e *env) ops(op string) int64 {
	for _, o := range e.db.Metrics().Ops {
		if o.Op == op {
			return o.Requests
		}
	}
	return 0
}

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
			before := e.ops("TransactWriteItems")
			errs := e.st.CompleteAll(ctx, "a", recs)
			if n := e.ops("TransactWriteItems") - before; n != tt.wantTx {
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
