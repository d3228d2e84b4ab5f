package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
)

// pageBackend serves one user's status page: its checks (by state), its
// settings, daily rollups and incidents.
type pageBackend struct {
	Backend
	now       time.Time
	checks    []Check
	page      StatusPage
	incidents []Incident
}

func (b pageBackend) StatusPageUser(_ context.Context, token string) (string, error) {
	if token != "tok" {
		return "", console.ErrNotFound
	}
	return "u1", nil
}

func (b pageBackend) StatusPage(context.Context, string) (StatusPage, error) { return b.page, nil }

func (b pageBackend) Incidents(context.Context, string) ([]Incident, error) { return b.incidents, nil }

func (b pageBackend) Checks(context.Context, string, Filter) ([]Check, error) { return b.checks, nil }

func (b pageBackend) Runs(context.Context, string, string, int) ([]Run, error) {
	return []Run{{At: b.now.Add(-time.Minute), Up: false, Error: refusedRun}, {At: b.now.Add(-2 * time.Minute), Up: true}}, nil
}

// Days: every check has runs yesterday (all up) and 10 days ago (half
// down); no other day has any.
func (b pageBackend) Days(_ context.Context, _, _ string, since time.Time) ([]Day, error) {
	today := b.now.UTC().Truncate(24 * time.Hour)
	if since.Before(today.AddDate(0, 0, -89)) {
		return nil, fmt.Errorf("days since %s: beyond the 90 days", since)
	}
	return []Day{{Date: today.AddDate(0, 0, -10), Runs: 10, Up: 5}, {Date: today.AddDate(0, 0, -1), Runs: 100, Up: 100}}, nil
}

func pageCheck(id, name, status, last string, tags ...string) Check {
	return Check{ID: id, OwnName: name, URL: "https://shop.example/secret-path/" + id + "?key=hunter2", Type: "AVAILABILITY",
		Status: status, LastStatus: last, Tags: tags}
}

// servePage serves b's page and returns a getter of its paths.
func servePage(t *testing.T, b pageBackend) func(path string) (int, string) {
	t.Helper()
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return b.now },
		Areas: []console.Area{New(b)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
}

var pageNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// TestStatusPageBanner: the overall banner of each state, the same in the
// HTML and the JSON forms; paused and pending checks do not count.
func TestStatusPageBanner(t *testing.T) {
	maint := pageCheck("c3", "db", "ACTIVE", "UP")
	maint.Maintenance = true
	for _, tc := range []struct {
		name   string
		checks []Check
		want   string
		text   string
	}{
		{"all up", []Check{pageCheck("c1", "web", "ACTIVE", "UP"), pageCheck("c2", "api", "PAUSED", ""), pageCheck("c4", "new", "ACTIVE", "")}, "operational", "All systems operational"},
		{"nothing", nil, "operational", "All systems operational"},
		{"one down", []Check{pageCheck("c1", "web", "ACTIVE", "UP"), pageCheck("c2", "api", "ACTIVE", "DOWN")}, "partial_outage", "Partial outage"},
		{"down and maintenance", []Check{maint, pageCheck("c2", "api", "ACTIVE", "DOWN")}, "partial_outage", "Partial outage"},
		{"all down", []Check{pageCheck("c1", "web", "FAILED", "UP"), pageCheck("c2", "api", "ACTIVE", "DOWN"), pageCheck("c4", "old", "PAUSED", "")}, "major_outage", "Major outage"},
		{"maintenance", []Check{pageCheck("c1", "web", "ACTIVE", "UP"), maint}, "maintenance", "Under maintenance"},
	} {
		get := servePage(t, pageBackend{now: pageNow, checks: tc.checks})
		code, page := get("/console/status/tok")
		if code != 200 || !strings.Contains(page, `id="overall" data-state="`+tc.want+`"`) || !strings.Contains(page, tc.text) {
			t.Errorf("%s: %d, want the banner %s:\n%s", tc.name, code, tc.want, page)
		}
		code, raw := get("/console/status/tok.json")
		var j statusJSON
		if err := json.Unmarshal([]byte(raw), &j); code != 200 || err != nil || j.Overall != tc.want {
			t.Errorf("%s: JSON %d %v overall %q, want %q", tc.name, code, err, j.Overall, tc.want)
		}
	}
}

// TestStatusPageGroupsBarsIncidents: groups show their checks (by tag and
// by id; a check in none is not shown), each check has 90 daily bars,
// grey without data; open incidents come first with their timeline
// newest first, incidents resolved in the last 14 days last, older ones
// not at all.
func TestStatusPageGroupsBarsIncidents(t *testing.T) {
	b := pageBackend{now: pageNow,
		checks: []Check{pageCheck("c1", "Shop", "ACTIVE", "UP", "web"), pageCheck("c2", "Payments", "ACTIVE", "DOWN"),
			pageCheck("c3", "Hidden", "ACTIVE", "UP", "internal")},
		page: StatusPage{Enabled: true, Token: "tok", Title: "Acme status", Description: "Our shop.\nAnd payments.",
			Groups: []StatusGroup{{Name: "Website", Tags: []string{"WEB"}}, {Name: "Money", CheckIDs: []string{"c2"}}}},
		incidents: []Incident{
			{ID: "inc_1", Title: "Payments failing", Status: "identified", CreatedAt: pageNow.Add(-time.Hour), Updates: []IncidentUpdate{
				{At: pageNow.Add(-time.Hour), Status: "investigating", Message: "Looking into card errors."},
				{At: pageNow.Add(-30 * time.Minute), Status: "identified", Message: "The card processor is down."}}},
			{ID: "inc_2", Title: "Slow pages", Status: "resolved", CreatedAt: pageNow.AddDate(0, 0, -3), ResolvedAt: pageNow.AddDate(0, 0, -3),
				Updates: []IncidentUpdate{{At: pageNow.AddDate(0, 0, -3), Status: "resolved", Message: "Cache warmed."}}},
			{ID: "inc_3", Title: "Ancient outage", Status: "resolved", CreatedAt: pageNow.AddDate(0, 0, -20), ResolvedAt: pageNow.AddDate(0, 0, -20),
				Updates: []IncidentUpdate{{At: pageNow.AddDate(0, 0, -20), Status: "resolved", Message: "Long ago."}}},
		}}
	get := servePage(t, b)
	code, page := get("/console/status/tok")
	if code != 200 {
		t.Fatalf("status page %d", code)
	}
	for _, want := range []string{"<h1>Acme status</h1>", "<p>Our shop.</p><p>And payments.</p>", `data-state="partial_outage"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "Hidden") {
		t.Error("a check in no group is shown")
	}
	groups := regexp.MustCompile(`(?s)<section class="status-group"><h2>([^<]*)</h2>(.*?)</section>`).FindAllStringSubmatch(page, -1)
	if len(groups) != 2 || groups[0][1] != "Website" || groups[1][1] != "Money" ||
		!strings.Contains(groups[0][2], "Shop") || strings.Contains(groups[0][2], "Payments") ||
		!strings.Contains(groups[1][2], "Payments") || strings.Contains(groups[1][2], "Shop") {
		t.Fatalf("groups %q", groups)
	}
	bars := regexp.MustCompile(`<rect [^>]*class="day (\w+)"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(groups[0][2], -1)
	if len(bars) != 90 {
		t.Fatalf("%d daily bars, want 90", len(bars))
	}
	today := pageNow.Truncate(24 * time.Hour)
	for i, bar := range bars {
		date := today.AddDate(0, 0, i-89).Format("2006-01-02")
		want := "none"
		switch i {
		case 88:
			want = "up"
		case 79:
			want = "down"
		}
		if bar[1] != want || !strings.HasPrefix(bar[2], date+": ") {
			t.Errorf("bar %d = %s %q, want %s on %s", i, bar[1], bar[2], want, date)
		}
	}
	if bars[0][2] != today.AddDate(0, 0, -89).Format("2006-01-02")+": no data" || bars[88][2] != today.AddDate(0, 0, -1).Format("2006-01-02")+": 100.0 % up (100 runs)" {
		t.Errorf("bar titles %q, %q", bars[0][2], bars[88][2])
	}
	open, status, past := strings.Index(page, `id="incidents-open"`), strings.Index(page, `id="status"`), strings.Index(page, `id="incidents-resolved"`)
	if open < 0 || status < 0 || past < 0 || !(open < status && status < past) {
		t.Fatalf("incidents open at %d, checks at %d, resolved at %d", open, status, past)
	}
	if !strings.Contains(page[open:status], "Payments failing") || !strings.Contains(page[past:], "Slow pages") || strings.Contains(page, "Ancient outage") {
		t.Errorf("incidents misplaced:\n%s", page)
	}
	if i, j := strings.Index(page, "The card processor is down."), strings.Index(page, "Looking into card errors."); i < 0 || j < 0 || i > j {
		t.Errorf("timeline not newest first: %d, %d", i, j)
	}
}

// TestStatusPageJSON: the JSON form (both addresses) has the HTML page's
// data: the same states, groups, 90 days and incidents, and none of the
// secrets the HTML page hides (URL, path, query, id, tags, error text).
func TestStatusPageJSON(t *testing.T) {
	b := pageBackend{now: pageNow,
		checks: []Check{pageCheck("c1", "", "ACTIVE", "UP", "web"), pageCheck("c2", "Payments", "ACTIVE", "DOWN", "money")},
		page:   StatusPage{Enabled: true, Token: "tok", Title: "Acme"},
		incidents: []Incident{{ID: "inc_1", Title: "Payments failing", Status: "monitoring", CreatedAt: pageNow.Add(-time.Hour),
			Updates: []IncidentUpdate{{At: pageNow.Add(-time.Hour), Status: "monitoring", Message: "Watching."}}}}}
	get := servePage(t, b)
	code, raw := get("/console/status/tok.json")
	if code != 200 {
		t.Fatalf("JSON %d %s", code, raw)
	}
	if code2, raw2 := get("/console/status/tok?format=json"); code2 != 200 || raw2 != raw {
		t.Fatalf("?format=json %d differs:\n%s", code2, raw2)
	}
	for _, secret := range []string{"secret-path", "hunter2", "key=", "https://", "c1", "c2", "inc_1", "\"web\"", "money", "10.9.8.7", "8443", "internal.example", "allow-networks"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the JSON form shows %q", secret)
		}
	}
	var j statusJSON
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		t.Fatal(err)
	}
	if j.Title != "Acme" || j.Overall != "partial_outage" || len(j.Groups) != 1 || len(j.Groups[0].Checks) != 2 || len(j.Incidents) != 1 ||
		j.Incidents[0].Updates[0].Message != "Watching." {
		t.Fatalf("JSON %s", raw)
	}
	_, page := get("/console/status/tok")
	for _, c := range j.Groups[0].Checks {
		if len(c.Days) != 90 || c.Days[88].State != "up" || c.Days[0].State != "none" || len(c.LastRuns) != 2 {
			t.Errorf("%s: days %d, runs %d", c.Name, len(c.Days), len(c.LastRuns))
		}
		if !strings.Contains(page, c.Name+"<br><small>"+c.Type) || !strings.Contains(page, ">"+c.State+"</span>") {
			t.Errorf("%s is %s in JSON, not on the page", c.Name, c.State)
		}
	}
	if names := j.Groups[0].Checks[0].Name + "," + j.Groups[0].Checks[1].Name; names != "Payments,shop.example" {
		t.Errorf("names %s", names)
	}
	if r := j.Groups[0].Checks[1].LastRuns; r[1].Up || r[1].Reason != "refused by the network policy" || r[0].At != "2026-11-27T11:58:00Z" {
		t.Errorf("last runs %+v", r)
	}
	if code, raw := get("/console/status/nope.json"); code != 404 || strings.Contains(raw, "<html") {
		t.Errorf("unknown token's JSON: %d %s", code, raw)
	}
}

// TestStatusSettingsPage: over Checks' store and API, a user turns the
// page on, saves a title and groups through PUT /v1/me/statuspage (its
// message shown for an invalid group, the address kept by a save), and
// the public page shows them with the user's incident and not another
// user's.
func TestStatusSettingsPage(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	u, token, err := st.CreateUser(ctx, "a@example.com", checksstore.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := st.CreateUser(ctx, "b@example.com", checksstore.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []checksstore.Check{{UserID: u.ID, Name: "shop", Tags: []string{"web"}}, {UserID: u.ID, Name: "intranet"}} {
		c.URL, c.Type, c.DelayMs = "https://shop.example/", "AVAILABILITY", 60000
		if _, err := st.CreateCheck(ctx, c, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateIncident(ctx, u.ID, "Checkout slow", checksstore.IncidentUpdate{Status: "investigating", Message: "Looking."}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateIncident(ctx, other.ID, "Their outage", checksstore.IncidentUpdate{Status: "investigating", Message: "Theirs."}); err != nil {
		t.Fatal(err)
	}
	prb := probe.New(probe.Options{})
	t.Cleanup(prb.Close)
	h := checksapi.New(st, prb, nil, checksapi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Realms: []console.Realm{Realm(st)}, Areas: []console.Area{New(Adapt(st, h))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	do := func(u string, form url.Values) (int, string) {
		t.Helper()
		var resp *http.Response
		var err error
		if form == nil {
			resp, err = hc.Get(srv.URL + u)
		} else {
			resp, err = hc.PostForm(srv.URL+u, form)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	field := func(body, name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s field in %s", name, body)
		}
		return m[1]
	}
	_, signin := do("/console/signin", nil)
	if code, body := do("/console/signin", url.Values{"nonce": {field(signin, "nonce")}, "realm": {"checks"}, "credential": {token}}); code != 200 {
		t.Fatalf("sign-in = %d %s", code, body)
	}
	_, body := do("/console/checks/statuspage", nil)
	csrf := field(body, "csrf")
	code, body := do("/console/checks/statuspage", url.Values{"csrf": {csrf}, "action": {"on"}})
	addr := regexp.MustCompile(`href="https?://[^"]+(/console/status/[^"]+)"`).FindStringSubmatch(body)
	if code != 200 || addr == nil {
		t.Fatalf("turn on = %d %s", code, body)
	}
	code, body = do("/console/checks/statuspage", url.Values{"csrf": {csrf}, "action": {"save"}, "title": {"Acme"}, "groups": {"Web:\n"}})
	if code != 400 || !strings.Contains(body, "groups[0]: give tags or checkIds") || !strings.Contains(body, `value="Acme"`) {
		t.Fatalf("invalid save = %d %s", code, body)
	}
	code, body = do("/console/checks/statuspage", url.Values{"csrf": {csrf}, "action": {"save"}, "title": {"Acme"}, "description": {"Hello."}, "groups": {"Web: web\n"}})
	if code != 200 || !strings.Contains(body, "Status page saved.") || !strings.Contains(body, addr[1]) || !strings.Contains(body, "Web: web") {
		t.Fatalf("save = %d %s", code, body)
	}
	code, page := do(addr[1], nil)
	if code != 200 || !strings.Contains(page, "<h1>Acme</h1>") || !strings.Contains(page, "<h2>Web</h2>") || !strings.Contains(page, "shop") ||
		strings.Contains(page, "intranet") || !strings.Contains(page, "Checkout slow") || strings.Contains(page, "Their outage") {
		t.Fatalf("public page %d:\n%s", code, page)
	}
}
