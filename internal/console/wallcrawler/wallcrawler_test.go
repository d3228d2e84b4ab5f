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
	// The y axis tops at a round number above the busiest day: 1110
	// minutes → 2000, the bar 120 × 1110/2000 = 66.6 tall.
	if ch.Busy != 1110 || ch.Max != 2000 || last.H < 66.5 || last.H > 66.7 || last.Y+last.H != 130 || prev.H < 3.5 || prev.H > 3.7 {
		t.Errorf("scale: busiest %v, top %v, bars %+v %+v", ch.Busy, ch.Max, last, prev)
	}
	// Every other day is labelled, the newest always, at least 75 view
	// box units apart (an 11px "Mar 10" is about 35).
	var labels []bar
	for _, b := range ch.Bars {
		if b.Label != "" {
			labels = append(labels, b)
		}
	}
	if len(labels) != 4 || labels[3].Label != "Mar 10" || labels[0].Label != "Mar 4" {
		t.Errorf("labels: %+v", labels)
	}
	for i := 1; i < len(labels); i++ {
		if gap := labels[i].LabelX - labels[i-1].LabelX; gap < 75 {
			t.Errorf("labels %s and %s %.1f apart", labels[i-1].Label, labels[i].Label, gap)
		}
	}
	if c := usageChart(nil, now, 14); c.Max != 1 || c.Bars[0].H != 0 {
		t.Errorf("an empty chart: top %v, first bar %+v", c.Max, c.Bars[0])
	}
	for _, b := range ch.Bars[:5] {
		if b.Sessions != 0 {
			t.Errorf("old session counted on %s", b.Day)
		}
	}
}
