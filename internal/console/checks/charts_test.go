package checks

import (
	"strings"
	"testing"
	"time"
)

func TestStatusStrip(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var runs []Run // newest first
	for i := range 70 {
		runs = append(runs, Run{At: t0.Add(-time.Duration(i) * time.Minute), Up: i%10 != 0, Error: "status 500"})
	}
	s := statusStrip(runs)
	if len(s.Cells) != stripRuns || s.Down != 6 || s.Up != 54 {
		t.Fatalf("strip of 70 runs: %d cells, %d up, %d down", len(s.Cells), s.Up, s.Down)
	}
	last := s.Cells[len(s.Cells)-1]
	if last.X != (stripRuns-1)*5 || last.Up || !strings.Contains(last.Title, "12:00:00Z DOWN: status 500") {
		t.Errorf("newest cell = %+v (want rightmost, the newest run, down)", last)
	}
	if s.Cells[0].X != 0 {
		t.Errorf("oldest cell at %d", s.Cells[0].X)
	}
	short := statusStrip(runs[:3])
	if len(short.Cells) != 3 || short.Cells[2].X != (stripRuns-1)*5 || short.Cells[0].X != (stripRuns-3)*5 {
		t.Errorf("a short strip is not right-aligned: %+v", short.Cells)
	}
	if len(statusStrip(nil).Cells) != 0 {
		t.Error("empty strip has cells")
	}
}

func TestResponseChart(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	runs := []Run{{At: t0, ResponseTimeMs: 30, Up: true}, {At: t0.Add(-time.Hour), ResponseTimeMs: 140}, {At: t0.Add(-2 * time.Hour), ResponseTimeMs: 70, Up: true},
		{At: t0.Add(-30 * time.Hour), ResponseTimeMs: 9999, Up: true}}
	c := responseChart(runs, t0.Add(-24*time.Hour))
	if c.Runs != 3 || c.Max != 200 || c.Points != "60.0,88.0 325.0,46.0 590.0,112.0" || len(c.Down) != 1 || c.Down[0] != (point{325, 46}) {
		t.Errorf("chart = %+v", c)
	}
	if responseChart(runs, t0.Add(time.Hour)).Points != "" {
		t.Error("a chart of no runs has points")
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@127.0.0.1:8080/secret?key=1": "127.0.0.1",
		"https://Example.com/path":                   "Example.com",
		"http://[::1]:9/":                            "::1",
		"::not a url":                                "(invalid URL)",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSparkline(t *testing.T) {
	s := sparkline([]Run{{ResponseTimeMs: 10}, {ResponseTimeMs: 20}, {ResponseTimeMs: 5}})
	if s.Points != "0.0,10.0 50.0,1.0 100.0,14.5" || s.Max != 20 || s.Last != 5 {
		t.Errorf("sparkline = %+v", s)
	}
	if sparkline(nil).Points != "" {
		t.Error("empty sparkline has points")
	}
}
