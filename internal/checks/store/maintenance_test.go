package store

import (
	"testing"
	"time"
)

// TestMaintenanceActiveAt: when one-off and weekly windows are in force,
// weekly ones in their own zone (across a DST change and a week's end),
// and which checks they cover.
func TestMaintenanceActiveAt(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	once := Maintenance{Start: "2026-12-01T02:00:00Z", End: "2026-12-01T04:00:00Z"}
	sunday := Maintenance{Weekly: &Weekly{Day: "sun", Start: "02:00", DurationMinutes: 60, Timezone: "Europe/Paris"}}
	overnight := Maintenance{Weekly: &Weekly{Day: "sat", Start: "23:30", DurationMinutes: 60, Timezone: "UTC"}}
	for _, tc := range []struct {
		name string
		m    Maintenance
		at   time.Time
		want bool
	}{
		{"once before", once, time.Date(2026, 12, 1, 1, 59, 59, 0, time.UTC), false},
		{"once at start", once, time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), true},
		{"once at end", once, time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC), false},
		{"sunday 02:30 Paris, winter", sunday, time.Date(2026, 11, 29, 2, 30, 0, 0, paris), true},
		{"sunday 01:30 UTC is 02:30 Paris, winter", sunday, time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC), true},
		{"sunday 02:30 UTC is 03:30 Paris, winter", sunday, time.Date(2026, 11, 29, 2, 30, 0, 0, time.UTC), false},
		{"sunday 00:30 UTC is 02:30 Paris, summer", sunday, time.Date(2026, 7, 5, 0, 30, 0, 0, time.UTC), true},
		{"monday 02:30 Paris", sunday, time.Date(2026, 11, 30, 2, 30, 0, 0, paris), false},
		{"overnight saturday", overnight, time.Date(2026, 11, 28, 23, 45, 0, 0, time.UTC), true},
		{"overnight into sunday", overnight, time.Date(2026, 11, 29, 0, 15, 0, 0, time.UTC), true},
		{"overnight after", overnight, time.Date(2026, 11, 29, 0, 30, 0, 0, time.UTC), false},
	} {
		if got := tc.m.ActiveAt(tc.at); got != tc.want {
			t.Errorf("%s: ActiveAt = %v, want %v", tc.name, got, tc.want)
		}
	}
	c := Check{ID: "chk_1", Tags: []string{"Prod"}}
	for _, tc := range []struct {
		m    Maintenance
		want bool
	}{
		{Maintenance{}, true},
		{Maintenance{CheckIDs: []string{"chk_1"}}, true},
		{Maintenance{CheckIDs: []string{"chk_2"}}, false},
		{Maintenance{Tags: []string{"prod"}}, true},
		{Maintenance{CheckIDs: []string{"chk_2"}, Tags: []string{"db"}}, false},
	} {
		if got := tc.m.Covers(c); got != tc.want {
			t.Errorf("%+v covers %v = %v, want %v", tc.m, c, got, tc.want)
		}
	}
}
