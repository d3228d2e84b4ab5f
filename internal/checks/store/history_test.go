package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestDaysAndResultsBefore: each recorded run counts in its UTC day's
// rollup, and the history reads page by page, newest first.
func TestDaysAndResultsBefore(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	t0 := e.clock.now()
	c := e.check(t, time.Hour, t0)
	// Six runs over three days: day 0 UP UP DOWN, day 1 UP, day 2 DOWN UP.
	offsets := []time.Duration{0, time.Hour, 2 * time.Hour, 24 * time.Hour, 48 * time.Hour, 49 * time.Hour}
	statuses := []string{"UP", "UP", "DOWN", "UP", "DOWN", "UP"}
	for i, off := range offsets {
		at := t0.Add(off)
		cur, err := e.st.GetCheck(ctx, "", c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.Claim(ctx, c.ID, "w", cur.NextRunAt, at, time.Minute); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		o := outcome(at, statuses[i], 7*24*time.Hour)
		o.Result["responseTime"] = float64(100 * (i + 1))
		if err := e.st.Complete(ctx, c.ID, "w", o); err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
	}
	days, err := e.st.Days(ctx, e.user.ID, c.ID, t0.Add(-30*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Day{{Date: "2026-11-26", Runs: 3, Up: 2, ResponseMs: 600}, {Date: "2026-11-27", Runs: 1, Up: 1, ResponseMs: 400}, {Date: "2026-11-28", Runs: 2, Up: 1, ResponseMs: 1100}}
	if len(days) != len(want) {
		t.Fatalf("days = %+v", days)
	}
	for i := range want {
		if days[i] != want[i] {
			t.Errorf("day %d = %+v, want %+v", i, days[i], want[i])
		}
	}
	if d, _ := e.st.Days(ctx, e.user.ID, c.ID, t0.Add(48*time.Hour)); len(d) != 1 || d[0].Date != "2026-11-28" {
		t.Errorf("days since the third: %+v", d)
	}
	other, _, err := e.st.CreateUser(ctx, "other@example.com", store.TierFree)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Days(ctx, other.ID, c.ID, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another user's days: %v", err)
	}

	// Pages of two, newest first, each starting before the last run of the
	// page before.
	var seen []string
	before := ""
	for range 4 {
		runs, err := e.st.ResultsBefore(ctx, e.user.ID, c.ID, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			seen = append(seen, r.Result["status"].(string))
		}
		if len(runs) < 2 {
			break
		}
		before = runs[len(runs)-1].At
	}
	if got := len(seen); got != 6 || seen[0] != "UP" || seen[1] != "DOWN" || seen[5] != "UP" || seen[3] != "DOWN" {
		t.Errorf("paged history = %v", seen)
	}
	if _, err := e.st.ResultsBefore(ctx, e.user.ID, c.ID, "yesterday", 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a bad cursor: %v", err)
	}
	if _, err := e.st.ResultsBefore(ctx, other.ID, c.ID, before, 2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another user's history: %v", err)
	}
}

// TestStatusPageToken: a status page's token finds its user; a new token
// or turning the page off kills the old one.
func TestStatusPageToken(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, -1)
	if _, err := e.st.StatusPageUser(ctx, "nothing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no page: %v", err)
	}
	tok, err := e.st.EnableStatusPage(ctx, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) < 32 {
		t.Fatalf("token %q is short", tok)
	}
	u, err := e.st.StatusPageUser(ctx, tok)
	if err != nil || u.ID != e.user.ID || u.StatusPage != tok {
		t.Fatalf("StatusPageUser = %+v, %v", u, err)
	}
	tok2, err := e.st.EnableStatusPage(ctx, e.user.ID)
	if err != nil || tok2 == tok {
		t.Fatalf("regenerate: %q %v", tok2, err)
	}
	if _, err := e.st.StatusPageUser(ctx, tok); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the old token after regenerating: %v", err)
	}
	if u, err := e.st.StatusPageUser(ctx, tok2); err != nil || u.ID != e.user.ID {
		t.Errorf("the new token: %+v %v", u, err)
	}
	if err := e.st.DisableStatusPage(ctx, e.user.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.StatusPageUser(ctx, tok2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a disabled page's token: %v", err)
	}
	if u, _ := e.st.GetUser(ctx, e.user.ID); u.StatusPage != "" {
		t.Errorf("user still has a status page: %q", u.StatusPage)
	}
	if err := e.st.DisableStatusPage(ctx, e.user.ID); err != nil {
		t.Errorf("disable twice: %v", err)
	}
}
