package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestMaintenanceCRUD: create (one-off and weekly), list (with whether
// each is active), delete; another user sees none and cannot delete.
func TestMaintenanceCRUD(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	_, other := e.user(t, "b@example.com", store.TierPro)
	ck := e.createCheck(t, token, 60000, nil)["id"].(string)
	now := time.Now().UTC()

	r := call(t, e.srv.URL, "POST", "/v1/me/maintenance", token, map[string]any{
		"name": "db upgrade", "start": now.Add(-time.Hour).Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339),
		"checkIds": []string{ck}})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	once := r.obj(t)
	onceID, _ := once["id"].(string)
	if !strings.HasPrefix(onceID, "mnt_") || once["active"] != true {
		t.Fatalf("created %s", r.raw)
	}
	r = call(t, e.srv.URL, "POST", "/v1/me/maintenance", token, map[string]any{
		"name": "backups", "weekly": map[string]any{"day": "Sunday", "start": "02:00", "durationMinutes": 60, "timezone": "Europe/Paris"},
		"tags": []string{"prod", "PROD", "db"}})
	if r.code != 201 {
		t.Fatalf("create weekly = %d %s", r.code, r.raw)
	}
	weekly := r.obj(t)
	if w, _ := weekly["weekly"].(map[string]any); w["day"] != "sun" || w["timezone"] != "Europe/Paris" || fmt.Sprint(weekly["tags"]) != "[db prod]" {
		t.Fatalf("created weekly %s", r.raw)
	}
	l := call(t, e.srv.URL, "GET", "/v1/me/maintenance", token, nil).list(t)
	if len(l) != 2 {
		t.Fatalf("list %v", l)
	}
	if l := call(t, e.srv.URL, "GET", "/v1/me/maintenance", other, nil).list(t); len(l) != 0 {
		t.Fatalf("another user lists %v", l)
	}
	if r := call(t, e.srv.URL, "DELETE", "/v1/me/maintenance/"+onceID, other, nil); r.code != 404 {
		t.Fatalf("another user's delete = %d %s", r.code, r.raw)
	}
	if r := call(t, e.srv.URL, "DELETE", "/v1/me/maintenance/"+onceID, token, nil); r.code != 204 {
		t.Fatalf("delete = %d %s", r.code, r.raw)
	}
	if r := call(t, e.srv.URL, "DELETE", "/v1/me/maintenance/"+onceID, token, nil); r.code != 404 {
		t.Fatalf("delete again = %d %s", r.code, r.raw)
	}
	if l := call(t, e.srv.URL, "GET", "/v1/me/maintenance", token, nil).list(t); len(l) != 1 || l[0]["id"] != weekly["id"] {
		t.Fatalf("list after delete %v", l)
	}
}

// TestMaintenanceValidation: each invalid window is a 400 naming what is
// wrong; the limit of windows per user is a 400 too.
func TestMaintenanceValidation(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	_, other := e.user(t, "b@example.com", store.TierPro)
	othersCheck := e.createCheck(t, other, 60000, nil)["id"].(string)
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	weekly := func(day, start string, minutes int, tz string) map[string]any {
		return map[string]any{"name": "w", "weekly": map[string]any{"day": day, "start": start, "durationMinutes": minutes, "timezone": tz}}
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"no name", map[string]any{"start": at(0), "end": at(time.Hour)}, "name: required"},
		{"no time", map[string]any{"name": "x"}, "start and end"},
		{"both", map[string]any{"name": "x", "start": at(0), "end": at(time.Hour), "weekly": map[string]any{"day": "sun"}}, "not both"},
		{"bad start", map[string]any{"name": "x", "start": "tomorrow", "end": at(time.Hour)}, `start: "tomorrow" is not an RFC 3339 time`},
		{"bad end", map[string]any{"name": "x", "start": at(0), "end": "2026-13-01"}, "end: "},
		{"end before start", map[string]any{"name": "x", "start": at(time.Hour), "end": at(0)}, "end must be after start"},
		{"end equals start", map[string]any{"name": "x", "start": at(time.Hour), "end": at(time.Hour)}, "end must be after start"},
		{"too long", map[string]any{"name": "x", "start": at(0), "end": at(31 * 24 * time.Hour)}, "a window lasts at most 30 days (this one lasts 31 days)"},
		{"past", map[string]any{"name": "x", "start": at(-2 * time.Hour), "end": at(-time.Hour)}, "end is in the past"},
		{"bad day", weekly("funday", "02:00", 60, "UTC"), `weekly.day: "funday" is not one of sun, mon`},
		{"bad start time", weekly("sun", "25:00", 60, "UTC"), `weekly.start: "25:00"`},
		{"start without zero", weekly("sun", "2:00", 60, "UTC"), `weekly.start: "2:00"`},
		{"zero minutes", weekly("sun", "02:00", 0, "UTC"), "weekly.durationMinutes must be between 1 and 1440"},
		{"too many minutes", weekly("sun", "02:00", 1441, "UTC"), "weekly.durationMinutes must be between 1 and 1440"},
		{"bad timezone", weekly("sun", "02:00", 60, "Mars/Olympus"), `weekly.timezone: "Mars/Olympus" is not an IANA time zone`},
		{"local timezone", weekly("sun", "02:00", 60, "Local"), `weekly.timezone: "Local"`},
		{"another user's check", map[string]any{"name": "x", "start": at(0), "end": at(time.Hour), "checkIds": []string{othersCheck}}, "is not one of your checks"},
		{"bad tag", map[string]any{"name": "x", "start": at(0), "end": at(time.Hour), "tags": []string{"a,b"}}, "must not contain a comma"},
	} {
		r := call(t, e.srv.URL, "POST", "/v1/me/maintenance", token, tc.body)
		if r.code != 400 || !strings.Contains(r.errMsg(t), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, r.code, r.raw, tc.want)
		}
	}
	if l := call(t, e.srv.URL, "GET", "/v1/me/maintenance", token, nil).list(t); len(l) != 0 {
		t.Fatalf("invalid windows were stored: %v", l)
	}
	for i := range store.MaxMaintenance {
		if r := call(t, e.srv.URL, "POST", "/v1/me/maintenance", token, weekly("mon", "02:00", 60, "UTC")); r.code != 201 {
			t.Fatalf("window %d = %d %s", i, r.code, r.raw)
		}
	}
	r := call(t, e.srv.URL, "POST", "/v1/me/maintenance", token, weekly("mon", "02:00", 60, "UTC"))
	if r.code != 400 || !strings.Contains(r.errMsg(t), fmt.Sprintf("at most %d maintenance windows", store.MaxMaintenance)) {
		t.Fatalf("window beyond the limit = %d %s", r.code, r.raw)
	}
}

// TestMaintenanceSilencesAlerts: two checks go DOWN in the same run; the
// one in a maintenance window (by tag) sends no alert, the other does.
// After the window, the silenced check's recovery alerts.
func TestMaintenanceSilencesAlerts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n := e.notifying(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	hook := newInbox(t, 204)
	if r := call(t, n.srv.URL, "PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": hook.URL}); r.code != 200 {
		t.Fatalf("PUT alerts = %d %s", r.code, r.raw)
	}
	target := newFlaky(t)
	create := func(tags []string) string {
		r := call(t, n.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000, "tags": tags})
		if r.code != 201 {
			t.Fatalf("create = %d %s", r.code, r.raw)
		}
		return r.obj(t)["id"].(string)
	}
	silenced, loud := create([]string{"db"}), create([]string{"web"})
	t0 := time.Now()
	r := call(t, n.srv.URL, "POST", "/v1/me/maintenance", token, map[string]any{"name": "db upgrade",
		"start": t0.Add(-time.Minute).Format(time.RFC3339), "end": t0.Add(10 * time.Minute).Format(time.RFC3339), "tags": []string{"DB"}})
	if r.code != 201 {
		t.Fatalf("create window = %d %s", r.code, r.raw)
	}
	windowID := r.obj(t)["id"].(string)

	target.down.Store(true)
	if k := n.sched.RunDue(ctx, t0.Add(61*time.Second)); k != 2 {
		t.Fatalf("%d runs", k)
	}
	if got := hook.next(t); got["checkId"] != loud || got["event"] != "down" {
		t.Fatalf("alert %v, want the down of %s", got, loud)
	}
	n.finished(t, 1)
	hook.none(t)
	for _, id := range []string{silenced, loud} {
		c := call(t, n.srv.URL, "GET", "/v1/checks/"+id, token, nil).obj(t)
		if lr, _ := c["lastResult"].(map[string]any); lr["status"] != "DOWN" {
			t.Fatalf("%s: lastResult %v: a check in maintenance still runs", id, c["lastResult"])
		}
	}

	// Still down after the window: nothing (the state moved in it).
	if r := call(t, n.srv.URL, "DELETE", "/v1/me/maintenance/"+windowID, token, nil); r.code != 204 {
		t.Fatalf("delete window = %d", r.code)
	}
	if k := n.sched.RunDue(ctx, t0.Add(200*time.Second)); k != 2 {
		t.Fatalf("%d runs", k)
	}
	hook.none(t)
	// Up again: both recover, with an alert each.
	target.down.Store(false)
	if k := n.sched.RunDue(ctx, t0.Add(300*time.Second)); k != 2 {
		t.Fatalf("%d runs", k)
	}
	got := map[any]any{}
	for range 2 {
		m := hook.next(t)
		got[m["checkId"]] = m["event"]
	}
	n.finished(t, 2)
	if got[silenced] != "up" || got[loud] != "up" {
		t.Fatalf("recovery alerts %v", got)
	}
}
