package wallcrawler

import (
	"testing"
	"time"
)

// TestUsageChart adds sessions up by the UTC day they started, running
// ones up to now, and leaves out those before the window.
func TestUsageChart(t *testing.T) {
	now := time.Date(2026, 3, 11, 5, 0, 0, 0, time.FixedZone("KST", 9*3600)) // Mar 10 20:00 UTC
	day := func(d int, h int) time.Time { return time.Date(2026, 3, d, h, 0, 0, 0, time.UTC) }
	all := []Session{
		{StartedAt: day(10, 1), EndedAt: day(10, 1).Add(30 * time.Minute), ProxyBytes: 100},
		{StartedAt: day(10, 2), ProxyBytes: 50}, // running: until now (20:00 UTC)
		{StartedAt: day(9, 23), EndedAt: day(10, 0), ProxyBytes: 7},
		{StartedAt: day(1, 12), EndedAt: day(1, 13)}, // before the 7-day window
	}
	ch := usageChart(all, now, 7)
	if len(ch.Bars) != 7 {
		t.Fatalf("%d bars", len(ch.Bars))
	}
	last, prev := ch.Bars[6], ch.Bars[5]
	if last.Day != "Mar 10" || last.Sessions != 2 || last.Minutes != 1110 || last.Bytes != 150 {
		t.Errorf("today: %+v", last)
	}
	if prev.Day != "Mar 9" || prev.Sessions != 1 || prev.Minutes != 60 || prev.Bytes != 7 {
		t.Errorf("yesterday: %+v", prev)
	}
	if ch.Max != 1110 || last.H != 100 || last.Y != 0 || prev.H < 5.3 || prev.H > 5.5 {
		t.Errorf("scale: max %v, bars %+v %+v", ch.Max, last, prev)
	}
	for _, b := range ch.Bars[:5] {
		if b.Sessions != 0 {
			t.Errorf("old session counted on %s", b.Day)
		}
	}
}
