package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestStatusPageSettings: the settings round-trip, default to empty, and
// are refused for an unknown user.
func TestStatusPageSettings(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	p, err := e.st.StatusPageSettings(ctx, e.user.ID)
	if err != nil || p.Title != "" || p.Groups == nil || len(p.Groups) != 0 {
		t.Fatalf("unset settings = %+v, %v", p, err)
	}
	want := store.StatusPageSettings{Title: "Shop", Description: "Our services", Groups: []store.StatusGroup{
		{Name: "Web", Tags: []string{"web"}}, {Name: "API", CheckIDs: []string{"chk_1"}}}}
	if err := e.st.PutStatusPageSettings(ctx, e.user.ID, want); err != nil {
		t.Fatal(err)
	}
	p, err = e.st.StatusPageSettings(ctx, e.user.ID)
	if err != nil || p.Title != "Shop" || p.Description != "Our services" || fmt.Sprint(p.Groups) != "[{Web [web] []} {API [] [chk_1]}]" {
		t.Fatalf("settings = %+v, %v", p, err)
	}
	if !p.Groups[0].Covers(store.Check{ID: "x", Tags: []string{"WEB"}}) || p.Groups[0].Covers(store.Check{ID: "chk_1"}) || !p.Groups[1].Covers(store.Check{ID: "chk_1"}) {
		t.Fatal("Covers")
	}
	if err := e.st.PutStatusPageSettings(ctx, "usr_nobody", want); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown user = %v", err)
	}
}

// TestIncidentsLimits: incidents list open first then newest first; an
// update changes the status and resolving sets resolvedAt; updates per
// incident are bounded; beyond MaxIncidents the oldest resolved incident
// goes, and with all open a create is refused; another user's incident is
// not found.
func TestIncidentsLimits(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	other, _, err := e.st.CreateUser(ctx, "other@example.com", store.TierFree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.st.CreateIncident(ctx, e.user.ID, "DB slow", store.IncidentUpdate{Status: "investigating", Message: "looking"})
	if err != nil || a.Status != "investigating" || len(a.Updates) != 1 || a.ResolvedAt != "" {
		t.Fatalf("create = %+v, %v", a, err)
	}
	e.clock.add(time.Minute)
	b, err := e.st.CreateIncident(ctx, e.user.ID, "Old", store.IncidentUpdate{Status: "resolved", Message: "done"})
	if err != nil || b.ResolvedAt == "" {
		t.Fatalf("create resolved = %+v, %v", b, err)
	}
	e.clock.add(time.Minute)
	got, err := e.st.AddIncidentUpdate(ctx, e.user.ID, a.ID, store.IncidentUpdate{Status: "resolved", Message: "fixed"})
	if err != nil || got.Status != "resolved" || got.ResolvedAt == "" || len(got.Updates) != 2 || got.Updates[1].Message != "fixed" {
		t.Fatalf("update = %+v, %v", got, err)
	}
	got, err = e.st.AddIncidentUpdate(ctx, e.user.ID, a.ID, store.IncidentUpdate{Status: "monitoring", Message: "back"})
	if err != nil || got.Status != "monitoring" || got.ResolvedAt != "" {
		t.Fatalf("reopen = %+v, %v", got, err)
	}
	if _, err := e.st.AddIncidentUpdate(ctx, other.ID, a.ID, store.IncidentUpdate{Status: "resolved", Message: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's update = %v", err)
	}
	if _, err := e.st.GetIncident(ctx, other.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's get = %v", err)
	}
	for len(got.Updates) < store.MaxIncidentUpdates {
		if got, err = e.st.AddIncidentUpdate(ctx, e.user.ID, a.ID, store.IncidentUpdate{Status: "monitoring", Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.AddIncidentUpdate(ctx, e.user.ID, a.ID, store.IncidentUpdate{Status: "resolved", Message: "x"}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("update beyond the limit = %v", err)
	}
	l, err := e.st.ListIncidents(ctx, e.user.ID)
	if err != nil || len(l) != 2 || l[0].ID != a.ID || l[1].ID != b.ID {
		t.Fatalf("list = %+v, %v", l, err)
	}
	if l, err := e.st.ListIncidents(ctx, other.ID); err != nil || len(l) != 0 {
		t.Fatalf("another user's list = %+v, %v", l, err)
	}
	// Fill up to the limit with open incidents: b (resolved, oldest) goes.
	for i := 2; i < store.MaxIncidents; i++ {
		e.clock.add(time.Second)
		if _, err := e.st.CreateIncident(ctx, e.user.ID, fmt.Sprint("open ", i), store.IncidentUpdate{Status: "identified", Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.add(time.Second)
	if _, err := e.st.CreateIncident(ctx, e.user.ID, "one more", store.IncidentUpdate{Status: "investigating", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.GetIncident(ctx, e.user.ID, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the oldest resolved incident is kept: %v", err)
	}
	if _, err := e.st.CreateIncident(ctx, e.user.ID, "too many", store.IncidentUpdate{Status: "investigating", Message: "m"}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("create with all open = %v", err)
	}
	if l, _ := e.st.ListIncidents(ctx, e.user.ID); len(l) != store.MaxIncidents {
		t.Fatalf("%d incidents kept", len(l))
	}
}
