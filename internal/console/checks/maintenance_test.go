package checks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
