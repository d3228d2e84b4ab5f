package health

import (
	"context"
	"testing"
	"time"
)

// TestAnswersWithin checks that a probe is skipped only while the
// process's own calls show the backend answering, and runs again once
// they stop.
func TestAnswersWithin(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		noted     []time.Time
		now       time.Time
		wantProbe bool
	}{
		{"never answered", nil, t0, true},
		{"answered just now", []time.Time{t0}, t0.Add(time.Millisecond), false},
		{"answered within the interval", []time.Time{t0.Add(-3 * time.Second), t0}, t0.Add(1999 * time.Millisecond), false},
		{"last answer an interval ago", []time.Time{t0}, t0.Add(2 * time.Second), true},
		{"traffic stopped", []time.Time{t0}, t0.Add(time.Minute), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a Answers
			for _, at := range tc.noted {
				a.Note(at)
			}
			f := &flaky{}
			f.down.Store(true)
			err := a.Within(f.probe, 2*time.Second, func() time.Time { return tc.now })(context.Background())
			if probed := f.probes.Load() == 1; probed != tc.wantProbe {
				t.Fatalf("probed %v, want %v", probed, tc.wantProbe)
			}
			if tc.wantProbe != (err != nil) {
				t.Fatalf("err %v: a skipped probe answers nil, a run one the backend's failure", err)
			}
		})
	}
}
