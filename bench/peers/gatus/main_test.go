package main

import (
	"slices"
	"testing"
	"time"
)

func TestEndpointPeriods(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s ...float64) []time.Time {
		out := make([]time.Time, len(s))
		for i, x := range s {
			out[i] = t0.Add(time.Duration(x * float64(time.Second)))
		}
		return out
	}
	ms := func(x ...int) []time.Duration {
		out := make([]time.Duration, len(x))
		for i, v := range x {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	const interval = 60 * time.Second
	from, to := t0.Add(10*time.Second), t0.Add(190*time.Second) // 3 min window
	tests := []struct {
		name     string
		hits     []time.Time
		requests int
		errs     []time.Duration
		missed   int
	}{
		{"on time", at(0, 60, 120, 180), 3, ms(0, 0, 0), 0},
		{"late and early", at(0, 60.25, 119.9, 180.1), 3, ms(250, -350, 200), 0},
		{"one skipped", at(0, 60, 180), 2, ms(0, 60000), 1},
		{"stopped after the first in the window", at(0, 60), 1, ms(0), 1}, // due 120 missed; 180 within the grace
		{"last due within half an interval of the end", at(5, 65, 125), 2, ms(0, 0), 0},
		{"never requested", nil, 0, nil, 3},
		{"requested only long before the window", at(-300), 0, nil, 2}, // due 60 and 120 in the window; 180 within the grace
		{"requests after the window ignored", at(0, 60, 120, 180, 240), 3, ms(0, 0, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, errs, missed := endpointPeriods(tt.hits, from, to, interval)
			if n != tt.requests || !slices.Equal(errs, tt.errs) || missed != tt.missed {
				t.Errorf("got requests %d, errors %v, missed %d; want %d, %v, %d", n, errs, missed, tt.requests, tt.errs, tt.missed)
			}
		})
	}
}
