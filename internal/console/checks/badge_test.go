package checks

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// badgeBackend is one status page (token "tok", user u1) with checks of
// each state, and another user's check.
type badgeBackend struct {
	Backend // the methods badges do not call
	now     time.Time
}

const badgeURL = "https://user:hunter2@shop.example:8443/health?key=abc123"

func (b badgeBackend) StatusPageUser(_ context.Context, token string) (string, error) {
	if token != "tok" {
		return "", console.ErrNotFound
	}
	return "u1", nil
}

func (b badgeBackend) Check(_ context.Context, userID, id string) (Check, error) {
	cks := map[string]Check{
		"c-up":      {ID: "c-up", URL: badgeURL, Status: "ACTIVE", LastStatus: "UP"},
		"c-down":    {ID: "c-down", URL: badgeURL, Status: "ACTIVE", LastStatus: "DOWN", FailureReason: refusedRun},
		"c-paused":  {ID: "c-paused", URL: badgeURL, Status: "PAUSED", LastStatus: "UP"},
		"c-pending": {ID: "c-pending", URL: badgeURL, Status: "ACTIVE"},
		"c-other":   {ID: "c-other", URL: badgeURL, Status: "ACTIVE", LastStatus: "UP"},
	}
	ck, ok := cks[id]
	if !ok || (id == "c-other") != (userID == "u2") {
		return Check{}, console.ErrNotFound
	}
	return ck, nil
}

func (b badgeBackend) Runs(_ context.Context, _, id string, limit int) ([]Run, error) {
	if id == "c-pending" {
		return nil, nil
	}
	// Newest first: 97 up runs and 3 down in the last 24 hours, the newest
	// down (1234 ms, with an error naming secrets), and older runs ignored.
	var rs []Run
	for i := range 100 {
		rs = append(rs, Run{At: b.now.Add(-time.Duration(i+1) * time.Minute), Up: i >= 3, ResponseTimeMs: 1234, Error: refusedRun})
	}
	rs = append(rs, Run{At: b.now.Add(-25 * time.Hour), Up: false})
	if limit < len(rs) {
		rs = rs[:limit]
	}
	return rs, nil
}

func (b badgeBackend) Days(_ context.Context, _, id string, since time.Time) ([]Day, error) {
	if id == "c-pending" {
		return nil, nil
	}
	today := b.now.UTC().Truncate(24 * time.Hour)
	var ds []Day
	for i := 29; i >= 0; i-- { // the last 7 days all up; 20 runs down before them
		d := Day{Date: today.Add(-time.Duration(i) * 24 * time.Hour), Runs: 100, Up: 100}
		if i >= 7 && i < 9 {
			d.Up = 90
		}
		if !d.Date.Before(since) {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// TestStatusBadges: each badge kind of a status page's check says the
// check's state, uptime or response time, as an SVG that encoding/xml
// parses, with no secret of the check in it; another user's check and an
// unknown token answer 404.
func TestStatusBadges(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
		Areas: []console.Area{New(badgeBackend{now: now})}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, tc := range []struct {
		check, kind, want, color string
	}{
		{"up", "status", ">UP<", badgeGreen},
		{"down", "status", ">DOWN<", badgeRed},
		{"paused", "status", ">PAUSED<", badgeGrey},
		{"pending", "status", ">unknown<", badgeGrey},
		{"up", "uptime-24h", ">97%<", badgeOrange},
		{"up", "uptime-7d", ">100%<", badgeGreen},
		{"up", "uptime-30d", ">99.33%<", badgeGreen},
		{"pending", "uptime-30d", ">unknown<", badgeGrey},
		{"up", "response-time", ">1234 ms<", badgeOrange},
		{"pending", "response-time", ">unknown<", badgeGrey},
	} {
		resp, svg := get("/console/status/tok/badge/c-" + tc.check + "/" + tc.kind + ".svg")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %d\n%s", tc.check, tc.kind, resp.StatusCode, svg)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "image/svg+xml" {
			t.Errorf("%s %s: Content-Type %q", tc.check, tc.kind, ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=60" {
			t.Errorf("%s %s: Cache-Control %q", tc.check, tc.kind, cc)
		}
		if !strings.Contains(svg, tc.want) || !strings.Contains(svg, `fill="`+tc.color+`"`) {
			t.Errorf("%s %s: want %s in %s:\n%s", tc.check, tc.kind, tc.want, tc.color, svg)
		}
		for _, secret := range []string{"hunter2", "shop.example", "8443", "health", "abc123", "10.9.8.7", "secret-path", "allow-networks", "c-" + tc.check} {
			if strings.Contains(svg, secret) {
				t.Errorf("%s %s: the badge shows %q", tc.check, tc.kind, secret)
			}
		}
		if strings.Contains(svg, "<script") || strings.Contains(svg, "style") {
			t.Errorf("%s %s: the badge has a script or a style:\n%s", tc.check, tc.kind, svg)
		}
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s %s: not well-formed XML: %v\n%s", tc.check, tc.kind, err, svg)
				break
			}
		}
	}
	for _, path := range []string{
		"/console/status/tok/badge/c-other/status.svg", // another user's check
		"/console/status/nope/badge/c-up/status.svg",   // unknown token
		"/console/status/tok/badge/c-gone/status.svg",  // unknown check
		"/console/status/tok/badge/c-up/uptime.svg",    // unknown kind
		"/console/status/tok/badge/c-up/status.png",
	} {
		if resp, body := get(path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404\n%s", path, resp.StatusCode, body)
		}
	}
}

// TestBadgeEscapesText: text drawn in a badge is escaped.
func TestBadgeEscapesText(t *testing.T) {
	svg := string(renderBadge(`a<b>&"c'`, badge{`<script>alert(1)</script>`, badgeRed}))
	if strings.Contains(svg, "<script") || strings.Contains(svg, "<b>") {
		t.Fatalf("unescaped text:\n%s", svg)
	}
	var v struct{ XMLName xml.Name }
	if err := xml.Unmarshal([]byte(svg), &v); err != nil || v.XMLName.Local != "svg" {
		t.Fatalf("parse: %v %v\n%s", v.XMLName, err, svg)
	}
}
