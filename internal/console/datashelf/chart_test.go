package datashelf

import (
	"testing"
	"time"
)

func TestThroughputBars(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	b := throughputBars([]ThroughputPoint{{Start: t0, Completed: 3, Failed: 1}, {Start: t0.Add(time.Minute)}}, time.Minute)
	if b.Max != 5 || b.Total != 3 || b.Fails != 1 || len(b.Bars) != 2 {
		t.Fatalf("bars = %+v", b)
	}
	if got := b.Bars[0]; got.HOK != 60 || got.YOK != 50 || got.HFail != 20 || got.YFail != 30 || got.X != 60 {
		t.Errorf("first bar = %+v", got)
	}
	if b.To != "Nov 26 12:02 UTC" {
		t.Errorf("to %q", b.To)
	}
}
