package checks

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
)

// TestStatusPageShowsMaintenance: over Checks' store, a check covered by
// an active maintenance window is MAINTENANCE on the public status page
// and in its status badge, the other check keeps its state, and another
// user's check has no badge under this page.
func TestStatusPageShowsMaintenance(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	u, _, err := st.CreateUser(ctx, "a@example.com", checksstore.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := st.CreateUser(ctx, "b@example.com", checksstore.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	create := func(userID, name string, tags []string) checksstore.Check {
		c, err := st.CreateCheck(ctx, checksstore.Check{UserID: userID, Name: name, Tags: tags, URL: "https://shop.example/",
			Type: "AVAILABILITY", DelayMs: 60000}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	db1, web := create(u.ID, "database", []string{"db"}), create(u.ID, "website", nil)
	theirs := create(other.ID, "theirs", []string{"db"})
	now := time.Now().UTC()
	if _, err := st.CreateMaintenance(ctx, u.ID, checksstore.Maintenance{Name: "upgrade", Tags: []string{"db"},
		Start: now.Add(-time.Hour).Format(time.RFC3339), End: now.Add(time.Hour).Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	tok, err := st.EnableStatusPage(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Areas: []console.Area{New(Adapt(st, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("/console/status/" + tok)
	if code != 200 {
		t.Fatalf("status page %d\n%s", code, page)
	}
	dbRow, webRow, _ := strings.Cut(page[strings.Index(page, "database"):], "website")
	if !strings.Contains(dbRow, `class="status maintenance">MAINTENANCE<`) || strings.Contains(webRow, "MAINTENANCE") {
		t.Fatalf("want the database check in maintenance and the website not:\n%s", page)
	}
	if code, svg := get("/console/status/" + tok + "/badge/" + db1.ID + "/status.svg"); code != 200 || !strings.Contains(svg, ">maintenance<") {
		t.Fatalf("badge of the check in maintenance: %d\n%s", code, svg)
	}
	if code, svg := get("/console/status/" + tok + "/badge/" + web.ID + "/status.svg"); code != 200 || !strings.Contains(svg, ">unknown<") {
		t.Fatalf("badge of the check not run yet: %d\n%s", code, svg)
	}
	if code, _ := get("/console/status/" + tok + "/badge/" + theirs.ID + "/status.svg"); code != 404 {
		t.Fatalf("badge of another user's check: %d, want 404", code)
	}
}

// TestMaintenancePage: over Checks' store and API, a user creates a
// one-off window in their time zone for a tag and a weekly one for a
// check; the dashboard and the check's page show the covered check in
// maintenance and the other not; refusals say what to fix and keep what
// was typed; another user neither sees nor deletes the windows nor names
// the checks; deleting ends the maintenance.
func TestMaintenancePage(t *testing.T) {
	ctx := context.Background()
	tc := newTestConsole(t)
	csrf := tc.csrf()
	create := func(name string, tags []string) string {
		c, err := tc.st.CreateCheck(ctx, checksstore.Check{UserID: tc.userID, Name: name, Tags: tags, URL: "https://shop.example/" + name,
			Type: "AVAILABILITY", DelayMs: 60000}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	dbID, webID := create("database", []string{"db"}), create("website", nil)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Minute)
	local := func(d time.Duration) string { return now.Add(d).In(paris).Format("2006-01-02T15:04") }
	form := func(kv ...string) url.Values {
		f := url.Values{"csrf": {csrf}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	if page := tc.page("/console/checks/"); strings.Contains(page, "in-maintenance") {
		t.Fatal("the dashboard shows maintenance before any window")
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{form("name", "bad zone", "timezone", "Mars/Olympus", "kind", "once", "start", local(-time.Hour), "end", local(time.Hour), "scope", "all"), `Time zone: "Mars/Olympus" is not a time zone name`},
		{form("name", "bad start", "kind", "once", "start", "tomorrow", "end", local(time.Hour), "scope", "all"), `Start: want a date and time such as 2026-12-01 02:00, not "tomorrow".`},
		{form("name", "backwards", "kind", "once", "start", local(time.Hour), "end", local(-time.Hour), "scope", "all"), "end"},
		{form("name", "no tags", "kind", "once", "start", local(-time.Hour), "end", local(time.Hour), "scope", "tags", "tags", " , "), "Tags: give at least one tag"},
		{form("name", "bad duration", "kind", "weekly", "day", "sun", "weeklyStart", "02:00", "duration", "an hour", "scope", "all"), `Duration must be a whole number of minutes, not "an hour".`},
		{form("name", "too long", "kind", "weekly", "day", "sun", "weeklyStart", "02:00", "duration", "2000", "scope", "all"), "durationMinutes"},
	} {
		code, body := tc.post("/console/checks/maintenance", c.form)
		if code != http.StatusBadRequest || !strings.Contains(body, html.EscapeString(c.want)) || !strings.Contains(body, `value="`+c.form.Get("name")+`"`) {
			t.Errorf("%s = %d, want 400 with %q and the name kept\n%s", c.form.Get("name"), code, c.want, body)
		}
	}
	code, body := tc.post("/console/checks/maintenance", form("name", "db upgrade", "timezone", "Europe/Paris", "kind", "once",
		"start", local(-time.Hour), "end", local(time.Hour), "scope", "tags", "tags", "db"))
	if code != 200 || !strings.Contains(body, "Maintenance window created.") || !strings.Contains(body, "db upgrade") || !strings.Contains(body, "in force") ||
		!strings.Contains(body, ` UTC">1 h ago</time> – <time datetime=`) {
		t.Fatalf("create = %d\n%s", code, body)
	}
	// The weekly window falls three days from today, never now.
	day := checksstore.Weekdays[(int(now.In(paris).Weekday())+3)%7]
	code, body = tc.post("/console/checks/maintenance", form("name", "backups", "timezone", "Europe/Paris", "kind", "weekly",
		"day", day, "weeklyStart", "03:30", "duration", "45", "scope", "checks", "check", webID))
	if code != 200 || !strings.Contains(body, "every "+day+" at 03:30 for 45 min (Europe/Paris)") || !strings.Contains(body, "website") {
		t.Fatalf("create weekly = %d\n%s", code, body)
	}
	// A one-off window that is over stays listed, marked ended.
	past, err := tc.st.CreateMaintenance(ctx, tc.userID, checksstore.Maintenance{Name: "last week's move",
		Start: now.Add(-3 * time.Hour).Format(time.RFC3339), End: now.Add(-2 * time.Hour).Format(time.RFC3339)})
	if err != nil {
		t.Fatal(err)
	}
	page := tc.page("/console/checks/maintenance")
	if row, _, _ := strings.Cut(page[strings.Index(page, `id="window-`+past.ID+`"`):], "</tr>"); !strings.Contains(row, `class="ended">ended<`) {
		t.Errorf("the ended window's row: %s", row)
	}
	if strings.Count(page, `class="ended"`) != 1 {
		t.Errorf("want only the past window marked ended:\n%s", page)
	}
	if err := tc.st.DeleteMaintenance(ctx, tc.userID, past.ID); err != nil {
		t.Fatal(err)
	}
	ws, err := tc.st.ListMaintenance(ctx, tc.userID)
	if err != nil || len(ws) != 2 {
		t.Fatalf("stored windows %v, %v", ws, err)
	}
	once := ws[0]
	if once.Name != "db upgrade" {
		once = ws[1]
	}
	if start, _ := time.Parse(time.RFC3339, once.Start); !start.Equal(now.Add(-time.Hour)) || fmt.Sprint(once.Tags) != "[db]" {
		t.Errorf("the one-off window starts %s with tags %v, want %s (the Paris time typed) and [db]", once.Start, once.Tags, now.Add(-time.Hour).UTC())
	}
	dash := tc.page("/console/checks/")
	dbRow, webRow := rowOf(dash, dbID), rowOf(dash, webID)
	if !strings.Contains(dbRow, "in-maintenance") || strings.Contains(webRow, "in-maintenance") {
		t.Errorf("dashboard: want the database in maintenance and the website not\n%s\n---\n%s", dbRow, webRow)
	}
	if page := tc.page("/console/checks/" + dbID); !strings.Contains(page, ">maintenance</span>") {
		t.Error("the database's page does not show maintenance")
	}
	// A paused check does not run: a window does not make it maintenance
	// (as on the public status page).
	if code, _ := tc.post("/console/checks/"+dbID+"/pause", form()); code != 200 {
		t.Fatalf("pause = %d", code)
	}
	if row := rowOf(tc.page("/console/checks/"), dbID); !strings.Contains(row, "PAUSED") || strings.Contains(row, "in-maintenance") {
		t.Errorf("the paused database's row: %s", row)
	}
	if code, _ := tc.post("/console/checks/"+dbID+"/resume", form()); code != 200 {
		t.Fatalf("resume = %d", code)
	}

	// Another user: not listed, not deleted, the checks not theirs.
	other := tc.as("b@example.com")
	if page := other.page("/console/checks/maintenance"); strings.Contains(page, "db upgrade") || !strings.Contains(page, "No maintenance windows.") {
		t.Errorf("another user's maintenance page shows the windows:\n%s", page)
	}
	if code, _ := other.post("/console/checks/maintenance/"+once.ID+"/delete", url.Values{"csrf": {other.csrf()}, "confirm": {"yes"}}); code != http.StatusNotFound {
		t.Errorf("another user's delete = %d, want 404", code)
	}
	if code, body := other.post("/console/checks/maintenance", url.Values{"csrf": {other.csrf()}, "name": {"x"}, "kind": {"once"},
		"start": {local(-time.Hour)}, "end": {local(time.Hour)}, "scope": {"checks"}, "check": {dbID}}); code != http.StatusBadRequest || !strings.Contains(body, "is not one of your checks") {
		t.Errorf("another user's window on the database = %d\n%s", code, body)
	}
	if code, _ := tc.post("/console/checks/maintenance/"+once.ID+"/delete", url.Values{"confirm": {"yes"}}); code != http.StatusForbidden {
		t.Errorf("delete without CSRF = %d, want 403", code)
	}

	code, body = tc.post("/console/checks/maintenance/"+once.ID+"/delete", form("confirm", "yes"))
	if code != 200 || !strings.Contains(body, "Maintenance window deleted.") || strings.Contains(body, "db upgrade") {
		t.Fatalf("delete = %d\n%s", code, body)
	}
	if dash := tc.page("/console/checks/"); strings.Contains(rowOf(dash, dbID), "in-maintenance") {
		t.Error("the database is still in maintenance after the window's deletion")
	}
}

// rowOf is the dashboard's row of a check.
func rowOf(page, id string) string {
	i := strings.Index(page, `<tr data-id="`+id+`"`)
	if i < 0 {
		return ""
	}
	row, _, _ := strings.Cut(page[i:], "</tr>")
	return row
}
