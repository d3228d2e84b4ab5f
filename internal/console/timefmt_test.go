package console

import (
	"strings"
	"testing"
	"time"
)

// TestAgo: times are relative to the console's clock, with the absolute
// UTC time on hover.
func TestAgo(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-5 * time.Minute), "5 min ago"},
		{now.Add(-90 * time.Second), "2 min ago"},
		{now.Add(-3 * time.Hour), "3 h ago"},
		{now.Add(-30 * time.Hour), "1 day ago"},
		{now.Add(-6 * 24 * time.Hour), "6 days ago"},
		{now.Add(4 * time.Minute), "in 4 min"},
		{time.Date(2025, 12, 24, 8, 0, 0, 0, time.UTC), "24 Dec 2025"},
	} {
		if got := relative(tc.t, now); got != tc.want {
			t.Errorf("relative(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
	kst := time.FixedZone("KST", 9*3600)
	got := string(Ago(time.Date(2026, 3, 10, 20, 55, 0, 0, kst), now))
	if got != `<time datetime="2026-03-10T11:55:00Z" title="2026-03-10 11:55:00 UTC">5 min ago</time>` {
		t.Errorf("Ago = %s", got)
	}
	if Ago(time.Time{}, now) != "–" {
		t.Error("the zero time")
	}

	// The template function, on the console's clock, for a time.Time and
	// an RFC 3339 string.
	c, err := New(Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.agoFunc("2026-03-10T09:00:00Z"); !strings.Contains(string(got), ">3 h ago<") {
		t.Errorf("ago of a string: %s", got)
	}
	if got := c.agoFunc(now.Add(-time.Hour)); !strings.Contains(string(got), ">1 h ago<") {
		t.Errorf("ago of a time: %s", got)
	}
	if got := c.agoFunc("soon"); got != "soon" {
		t.Errorf("ago of a non-time: %s", got)
	}
}
