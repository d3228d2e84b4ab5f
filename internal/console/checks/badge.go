package checks

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// Badges of a public status page's checks, at
// /console/status/{token}/badge/{checkId}/{kind}.svg: a flat two-part SVG
// (a grey label, a coloured value) to embed in a README or a wiki. A
// badge shows what the status page shows of a check and nothing more: its
// state, an uptime or its last response time; never the URL, an error
// text or the check's name. The check must be one of the token's user's,
// else the answer is the 404 of an unknown token.

// badgeCacheTTL is how long a rendered badge is reused, and how long a
// shared cache may keep it (Cache-Control max-age).
const badgeCacheTTL = 60 * time.Second

// Badge colours (shields.io's flat palette).
const (
	badgeGreen  = "#4c1"
	badgeOrange = "#fe7d37"
	badgeRed    = "#e05d44"
	badgeGrey   = "#9f9f9f"
	badgeBlue   = "#007ec6"
	badgeLabel  = "#555"
)

// badgeKinds are the badges of a check, by the file name's stem, with
// their label.
var badgeKinds = map[string]string{
	"status":        "status",
	"uptime-24h":    "uptime 24h",
	"uptime-7d":     "uptime 7d",
	"uptime-30d":    "uptime 30d",
	"response-time": "response time",
}

// badge is what a badge says: its value and colour.
type badge struct {
	Value string
	Color string
}

// statusBadge is the badge of a check's state: UP, DOWN, PAUSED, FAILED,
// maintenance (an active check in a maintenance window), or unknown
// before its first run.
func statusBadge(ck Check) badge {
	switch {
	case ck.Status == "ACTIVE" && ck.Maintenance:
		return badge{"maintenance", badgeBlue}
	case ck.Status == "PAUSED":
		return badge{"PAUSED", badgeGrey}
	case ck.Status == "FAILED":
		return badge{"FAILED", badgeOrange}
	case ck.Status == "ACTIVE" && ck.LastStatus == "UP":
		return badge{"UP", badgeGreen}
	case ck.Status == "ACTIVE" && ck.LastStatus == "DOWN":
		return badge{"DOWN", badgeRed}
	}
	return badge{"unknown", badgeGrey}
}

// uptimeBadge is the badge of up runs out of n: green from 99 %, orange
// from 95 %, red below, grey without runs.
func uptimeBadge(up, n int64) badge {
	if n == 0 {
		return badge{"unknown", badgeGrey}
	}
	p := 100 * float64(up) / float64(n)
	v := strconv.FormatFloat(p, 'f', 2, 64)
	v = strings.TrimSuffix(strings.TrimRight(v, "0"), ".") + "%"
	switch {
	case p >= 99:
		return badge{v, badgeGreen}
	case p >= 95:
		return badge{v, badgeOrange}
	}
	return badge{v, badgeRed}
}

// responseBadge is the badge of the last run's response time: green under
// 500 ms, orange under 2 s, red from 2 s.
func responseBadge(runs []Run) badge {
	if len(runs) == 0 {
		return badge{"unknown", badgeGrey}
	}
	ms := runs[0].ResponseTimeMs
	v := strconv.FormatInt(ms, 10) + " ms"
	switch {
	case ms < 500:
		return badge{v, badgeGreen}
	case ms < 2000:
		return badge{v, badgeOrange}
	}
	return badge{v, badgeRed}
}

// badgeOf reads what the badge kind of ck says: the state from the check,
// the 24-hour uptime from its runs of the last 24 hours (the status page's
// figure), the 7- and 30-day uptimes from its daily rollups, the response
// time from its last run.
func (a *Area) badgeOf(ctx context.Context, userID string, ck Check, kind string) (badge, error) {
	now := a.k.Now().UTC()
	switch kind {
	case "status":
		return statusBadge(ck), nil
	case "response-time":
		runs, err := a.b.Runs(ctx, userID, ck.ID, 1)
		if err != nil {
			return badge{}, err
		}
		return responseBadge(runs), nil
	case "uptime-24h":
		runs, err := a.b.Runs(ctx, userID, ck.ID, detailRuns)
		if err != nil {
			return badge{}, err
		}
		var up, n int64
		for _, r := range runs {
			if r.At.After(now.Add(-24 * time.Hour)) {
				n++
				if r.Up {
					up++
				}
			}
		}
		return uptimeBadge(up, n), nil
	}
	days := 7
	if kind == "uptime-30d" {
		days = 30
	}
	from := now.Truncate(24 * time.Hour).Add(-time.Duration(days-1) * 24 * time.Hour)
	ds, err := a.b.Days(ctx, userID, ck.ID, from)
	if err != nil {
		return badge{}, err
	}
	var up, n int64
	for _, d := range ds {
		if !d.Date.Before(from) {
			n += d.Runs
			up += d.Up
		}
	}
	return uptimeBadge(up, n), nil
}

// textWidth estimates the width in pixels of s in 11 px Verdana, the
// badge's font, from the widths of its character classes; the badge is
// laid out for it and the viewer's own font is close enough.
func textWidth(s string) int {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("il.,:;|!'ítj ", r):
			w += 3.9
		case strings.ContainsRune("fr()[]-", r):
			w += 4.9
		case strings.ContainsRune("mwMW%", r):
			w += 10.5
		case r >= 'A' && r <= 'Z':
			w += 7.6
		default:
			w += 7
		}
	}
	return int(w + 0.5)
}

// svgText is s escaped for XML character data and attribute values.
func svgText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// renderBadge draws a flat badge of label and b. It has no script, no
// style element or attribute and no external reference, so it renders
// under the console's Content-Security-Policy and in an <img> anywhere.
func renderBadge(label string, b badge) []byte {
	lw, vw := textWidth(label)+10, textWidth(b.Value)+10
	w := lw + vw
	alt := svgText(label + ": " + b.Value)
	l, v := svgText(label), svgText(b.Value)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s">`, w, alt)
	fmt.Fprintf(&buf, `<title>%s</title>`, alt)
	buf.WriteString(`<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`)
	fmt.Fprintf(&buf, `<clipPath id="r"><rect width="%d" height="20" rx="3" fill="#fff"/></clipPath>`, w)
	fmt.Fprintf(&buf, `<g clip-path="url(#r)"><rect width="%d" height="20" fill="%s"/><rect x="%d" width="%d" height="20" fill="%s"/><rect width="%d" height="20" fill="url(#s)"/></g>`,
		lw, badgeLabel, lw, vw, b.Color, w)
	buf.WriteString(`<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">`)
	for _, t := range []struct {
		x    int
		text string
	}{{lw / 2, l}, {lw + vw/2, v}} {
		fmt.Fprintf(&buf, `<text x="%d" y="15" fill="#010101" fill-opacity=".3">%s</text><text x="%d" y="14">%s</text>`, t.x, t.text, t.x, t.text)
	}
	buf.WriteString(`</g></svg>`)
	return buf.Bytes()
}

// statusBadgePublic serves a badge of a status page's check.
func (a *Area) statusBadgePublic(w http.ResponseWriter, r *http.Request) {
	kind, ok := strings.CutSuffix(r.PathValue("kind"), ".svg")
	label, known := badgeKinds[kind]
	if !ok || !known {
		a.k.PublicNotFound(w, r)
		return
	}
	userID, err := a.b.StatusPageUser(r.Context(), r.PathValue("token"))
	if errors.Is(err, console.ErrNotFound) {
		a.k.PublicNotFound(w, r)
		return
	}
	if err != nil {
		a.k.PublicFailure(w, "status badge", err)
		return
	}
	id := r.PathValue("checkId")
	now := a.k.Now()
	key := userID + "/" + id + "/" + kind
	body, cached := a.badges.Get(key, now)
	if !cached {
		ck, err := a.b.Check(r.Context(), userID, id)
		if errors.Is(err, console.ErrNotFound) {
			a.k.PublicNotFound(w, r)
			return
		}
		if err != nil {
			a.k.PublicFailure(w, "status badge", err)
			return
		}
		bd, err := a.badgeOf(r.Context(), userID, ck, kind)
		if err != nil {
			a.k.PublicFailure(w, "status badge", err)
			return
		}
		body = renderBadge(label, bd)
		a.badges.Put(key, body, now)
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(badgeCacheTTL/time.Second)))
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer") // the URL holds the page's token
	h.Set("X-Robots-Tag", "noindex")
	_, _ = w.Write(body)
}
