package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// TestConsolePhoneWidth opens each area's main pages in a 390×844 mobile
// viewport: no page scrolls sideways, and each page's main control is
// shown whole within the screen's width.
func TestConsolePhoneWidth(t *testing.T) {
	t.Parallel()
	s := startChecksServer(t)
	base := "http://" + s.api
	ctx0 := context.Background()
	st, err := sqlite.Open(ctx0, filepath.Join(s.dir, "datashelf.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cat, err := st.UpsertCategory(ctx0, store.CategoryInput{Title: "Fiction with a rather long category title", SourceURL: "https://shop.example/fiction"})
	if err != nil {
		t.Fatal(err)
	}
	price := 7.5
	p, err := st.UpsertProduct(ctx0, store.ProductInput{CategoryID: &cat.ID, Title: "A Book With A Title Long Enough To Wrap On A Phone Screen",
		SourceURL: "https://shop.example/p/1", Price: &price, Available: true,
		Specs: map[string]any{"author": "Ann Lee", "isbn": "9780000000001", "description_long_key_without_spaces": strings.Repeat("x", 120)}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errs syncBuffer
	if code := run(ctx0, []string{"admin", "token", "create", "--name", "ops", "--data-dir", s.dir}, noEnv, &out, &errs); code != 0 {
		t.Fatalf("admin token create: %s", errs.String())
	}
	opToken := strings.TrimSpace(out.String())
	userToken := s.createUser("phone@example.com")
	code, ck := s.do("POST", "/v1/checks", userToken, map[string]any{"url": "http://127.0.0.1:9/a/very/long/path/that/should/wrap/on/a/phone/screen/somehow",
		"checkType": "AVAILABILITY", "delayMs": 60000})
	if code != 201 {
		t.Fatalf("create check: %d %v", code, ck)
	}
	checkID := ck["id"].(string)
	// A channel, a maintenance window and an incident, so that their
	// pages' lists are not empty.
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/me/channels", map[string]any{"type": "slack", "name": "a channel with a long name for the phone", "config": map[string]any{"url": "http://127.0.0.1:9/services/T0/B0/a-long-secret-path"}}},
		{"/v1/me/maintenance", map[string]any{"name": "weekly database backups and upgrades", "weekly": map[string]any{"day": "sun", "start": "02:00", "durationMinutes": 60, "timezone": "Europe/Paris"}, "checkIds": []string{checkID}}},
		{"/v1/me/incidents", map[string]any{"title": "Checkout errors for card payments", "status": "investigating", "message": strings.Repeat("The processor answers slowly. ", 8)}},
	} {
		if code, m := s.do("POST", c.path, userToken, c.body); code != 201 {
			t.Fatalf("POST %s: %d %v", c.path, code, m)
		}
	}

	d := newDriver(t, base)
	d.run("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	type pg struct{ path, control string }
	check := func(realm string, pages []pg) {
		t.Helper()
		for _, p := range pages {
			d.open(p.path, p.control)
			got := d.eval(`(function () {
				var w = 390, doc = document.documentElement;
				if (doc.scrollWidth > w) return "the page is " + doc.scrollWidth + " px wide in a " + w + " px screen";
				var el = document.querySelector(` + "`" + p.control + "`" + `), r = el.getBoundingClientRect(), cs = getComputedStyle(el);
				if (r.width === 0 || r.height === 0 || cs.visibility === "hidden" || cs.display === "none") return "the control is not shown";
				if (r.left < 0 || r.right > w) return "the control spans " + r.left + "–" + r.right + " px of " + w;
				return "ok";
			})()`)
			if got != "ok" {
				t.Errorf("%s %s: %s", realm, p.path, got)
			}
		}
	}
	check("signed out", []pg{
		{"/", "#signin button"},
		{"/console/datashelf/", "#shelf-tree a"},
		{"/console/datashelf/c/" + cat.ID, "#apply"},
		{"/console/datashelf/p/" + p.ID, "#specs"},
	})
	d.signIn("checks", userToken)
	d.open("/console/checks/statuspage", "#status-on")
	d.run("status on", d.submit("#status-on"), chromedp.WaitVisible(chromedp.CSS("#status-url")))
	statusPath := regexp.MustCompile(`/console/status/\S+`).FindString(d.text("#status-url"))
	check("checks", []pg{
		{"/console/checks/", "#create-check button"},
		{"/console/checks/" + checkID, "#delete"},
		{"/console/checks/" + checkID + "/edit", "#save"},
		{"/console/checks/alerts", "#save-alerts"},
		{"/console/checks/channels?type=pagerduty", "#add-channel-button"},
		{"/console/checks/maintenance", "#create-window-button"},
		{"/console/checks/incidents", "#create-incident-button"},
		{"/console/checks/statuspage", "#status-off"},
		{statusPath, "#status"},
	})
	d.signIn("operator", opToken)
	check("operator", []pg{
		{"/console/explorer/", "#create-table button"},
		{"/console/explorer/t/checks-CHECK", "#query button"},
		{"/console/datashelf/crawl", "#crawl-start"},
	})
	d.open("/console/checks/", "#who") // a phone screenshot for the docs
	d.open("/console/datashelf/p/"+p.ID, "#specs")
	d.shot("console-phone.png")
}
