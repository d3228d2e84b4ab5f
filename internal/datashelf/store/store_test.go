package store

import (
	"errors"
	"testing"
	"time"
)

func TestExponentialBackoff(t *testing.T) {
	cases := []struct {
		attempt int
		want    time.Duration
	}{{0, 30 * time.Second}, {1, 30 * time.Second}, {2, time.Minute}, {3, 2 * time.Minute}, {8, time.Hour}, {100, time.Hour}}
	for _, c := range cases {
		if got := ExponentialBackoff(30*time.Second, time.Hour, c.attempt); got != c.want {
			t.Errorf("attempt %d: %v, want %v", c.attempt, got, c.want)
		}
	}
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"", "x", "00000000-0000-4000-8000-00000000000g", "000000000000-4000-8000-0000000000000"} {
		if err := ValidateID(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	if err := ValidateID("0A000000-0000-4000-8000-00000000000f"); err != nil {
		t.Error(err)
	}
}

func TestBuildTree(t *testing.T) {
	p := func(s string) *string { return &s }
	rows := []Navigation{{ID: "a"}, {ID: "b", ParentID: p("a")}, {ID: "c", ParentID: p("missing")}, {ID: "d", ParentID: p("b")}}
	roots := BuildTree(rows)
	if len(roots) != 2 || roots[0].ID != "a" || roots[1].ID != "c" || roots[0].Children[0].Children[0].ID != "d" {
		t.Fatalf("tree = %+v", roots)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := (*Options)(nil).EnsureDefaults()
	if o.Now == nil || o.Backoff(2) != time.Minute {
		t.Fatal("defaults not applied")
	}
	fixed := time.Date(2025, 1, 1, 0, 0, 0, 1500, time.FixedZone("x", 3600))
	o = (&Options{Now: func() time.Time { return fixed }}).EnsureDefaults()
	if got := o.Clock(); got.Location() != time.UTC || got.Nanosecond() != 1000 {
		t.Fatalf("Clock() = %v", got)
	}
}
