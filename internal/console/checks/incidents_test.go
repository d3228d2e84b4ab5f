package checks

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestIncidentsPage: over Checks' store and API, a user publishes an
// incident, posts an update and resolves it from the incidents page; the
// page shows the timeline newest first, and the public status page shows
// the incident and its updates at once (its cached copy dropped);
// refusals are the API's messages with what was typed kept; another user
// neither sees nor updates the incident.
func TestIncidentsPage(t *testing.T) {
	ctx := context.Background()
	tc := newTestConsole(t)
	csrf := tc.csrf()
	tok, err := tc.st.EnableStatusPage(ctx, tc.userID)
	if err != nil {
		t.Fatal(err)
	}
	public := func() string {
		t.Helper()
		resp, err := http.Get(tc.url + "/console/status/" + tok)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		if _, err := io.Copy(b, resp.Body); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if p := public(); strings.Contains(p, "Checkout errors") {
		t.Fatal("the status page shows an incident before any")
	}
	code, body := tc.post("/console/checks/incidents", url.Values{"csrf": {csrf}, "title": {"Checkout errors"}, "status": {"investigating"}, "message": {""}})
	if code != http.StatusBadRequest || !strings.Contains(body, "message") || !strings.Contains(body, `value="Checkout errors"`) {
		t.Fatalf("incident without a message = %d\n%s", code, body)
	}
	code, body = tc.post("/console/checks/incidents", url.Values{"csrf": {csrf}, "title": {"Checkout errors"}, "status": {"investigating"}, "message": {"Card payments fail."}})
	if code != 200 || !strings.Contains(body, "Incident published.") || !strings.Contains(body, "Card payments fail.") {
		t.Fatalf("create = %d\n%s", code, body)
	}
	id := regexp.MustCompile(`id="incident-([^"]+)"`).FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("no incident on the page:\n%s", body)
	}
	if p := public(); !strings.Contains(p, "Checkout errors") || !strings.Contains(p, "Card payments fail.") {
		t.Errorf("the status page lacks the new incident:\n%s", p)
	}
	path := "/console/checks/incidents/" + id[1] + "/updates"
	code, body = tc.post(path, url.Values{"csrf": {csrf}, "status": {"fixed"}, "message": {"Typed update"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "status") || !strings.Contains(body, "Typed update</textarea>") {
		t.Fatalf("update with a bad status = %d\n%s", code, body)
	}
	code, body = tc.post(path, url.Values{"csrf": {csrf}, "status": {"identified"}, "message": {"The processor times out."}})
	if code != 200 || !strings.Contains(body, "Update published.") {
		t.Fatalf("update = %d\n%s", code, body)
	}
	if i, j := strings.Index(body, "The processor times out."), strings.Index(body, "Card payments fail."); i < 0 || j < 0 || i > j {
		t.Errorf("the timeline is not newest first:\n%s", body)
	}
	// Times are relative, the absolute time on hover.
	if !regexp.MustCompile(`opened <time datetime="[^"]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">just now</time>`).MatchString(body) {
		t.Errorf("the incident's time is not relative with the absolute time on hover:\n%s", body)
	}
	if p := public(); !strings.Contains(p, "The processor times out.") || !strings.Contains(p, ">identified<") || !strings.Contains(p, `UTC">just now</time>`) {
		t.Errorf("the status page lacks the update:\n%s", p)
	}

	other := tc.as("b@example.com")
	if p := other.page("/console/checks/incidents"); strings.Contains(p, "Checkout errors") {
		t.Error("another user's incidents page lists the incident")
	}
	if code, _ := other.post(path, url.Values{"csrf": {other.csrf()}, "status": {"resolved"}, "message": {"not mine"}}); code != http.StatusNotFound {
		t.Errorf("another user's update = %d, want 404", code)
	}
	if code, _ := tc.post(path, url.Values{"resolve": {"yes"}, "message": {"x"}}); code != http.StatusForbidden {
		t.Errorf("update without CSRF = %d, want 403", code)
	}

	code, body = tc.post(path, url.Values{"csrf": {csrf}, "status": {"monitoring"}, "resolve": {"yes"}, "message": {"Payments work again."}})
	if code != 200 || !strings.Contains(body, "Incident resolved.") || !strings.Contains(body, `id="incidents-resolved"`) || !strings.Contains(body, "No open incident.") {
		t.Fatalf("resolve = %d\n%s", code, body)
	}
	if p := public(); !strings.Contains(p, `id="incidents-resolved"`) || !strings.Contains(p, "Payments work again.") || strings.Contains(p, `id="incidents-open"`) {
		t.Errorf("the status page does not show the incident resolved:\n%s", p)
	}
}
