package checks

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// A Checks user's alert targets, and their public status page: opt-in, at
// /console/status/{token} (a random token the user can replace or revoke),
// read-only, showing for each check only its host, type, state, uptime and
// status strip, cached for statusCacheTTL.

// AlertTargets are a user's alert targets and their delivery outcome.
type AlertTargets struct {
	WebhookURL string
	// WebhookSecret is written only: Alerts reports whether one is set
	// (HasSecret) and SetAlerts keeps the stored one when KeepSecret.
	WebhookSecret string
	HasSecret     bool
	KeepSecret    bool
	Email         string
	// Delivery outcome (read only).
	LastAlertAt      string
	LastAlertError   string
	LastAlertErrorAt string
}

// statusCacheTTL is how long a rendered status page is reused.
const statusCacheTTL = 30 * time.Second

// statusMaxChecks bounds the checks a status page shows.
const statusMaxChecks = 100

type alertsData struct {
	T     AlertTargets
	Error string
	Msg   string
}

func (a *Area) alertsPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	t, err := a.b.Alerts(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := alertsData{T: t}
	if r.URL.Query().Get("msg") == "saved" {
		d.Msg = "Alert targets saved."
	}
	a.k.Render(w, r, http.StatusOK, "alerts", d)
}

func (a *Area) alertsSave(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	f := r.PostForm
	in := AlertTargets{WebhookURL: strings.TrimSpace(f.Get("webhookUrl")), WebhookSecret: f.Get("webhookSecret"),
		Email: strings.TrimSpace(f.Get("email"))}
	in.KeepSecret = in.WebhookSecret == "" && f.Get("clearSecret") != "yes"
	if err := a.b.SetAlerts(r.Context(), ss.Subject, in); err != nil {
		cur, rerr := a.b.Alerts(r.Context(), ss.Subject)
		if rerr != nil {
			a.k.Failure(w, r, rerr)
			return
		}
		cur.WebhookURL, cur.Email = in.WebhookURL, in.Email // keep what was typed
		a.k.Render(w, r, http.StatusBadRequest, "alerts", alertsData{T: cur, Error: err.Error()})
		return
	}
	http.Redirect(w, r, "/console/checks/alerts?msg=saved", http.StatusSeeOther)
}

type statusSettingsData struct {
	Token string
	URL   string
	Msg   string
}

func (a *Area) statusSettings(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	tok, err := a.b.StatusPage(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := statusSettingsData{Token: tok, Msg: map[string]string{"on": "Your status page is public at the address below.",
		"off": "Your status page is off: its address answers 404.", "new": "New address made: the old one answers 404."}[r.URL.Query().Get("msg")]}
	if tok != "" {
		scheme := "http"
		if console.Secure(r) {
			scheme = "https"
		}
		d.URL = scheme + "://" + r.Host + "/console/status/" + tok
	}
	a.k.Render(w, r, http.StatusOK, "statuspage", d)
}

func (a *Area) statusSet(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	action := r.PostForm.Get("action")
	if action != "on" && action != "off" && action != "new" {
		a.k.NotFound(w, r)
		return
	}
	if _, err := a.b.SetStatusPage(r.Context(), ss.Subject, action != "off"); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	a.status.Drop(ss.Subject)
	http.Redirect(w, r, "/console/checks/statuspage?msg="+action, http.StatusSeeOther)
}

// statusRow is what a status page shows of a check: its name (the user
// chose it to be shown; by default the URL's host) and nothing else that
// could be a secret (no path, query, credentials, keyword, threshold, tag
// or id).
type statusRow struct {
	Name     string
	Type     string
	State    string // UP, DOWN, PAUSED, FAILED, MAINTENANCE, or PENDING before a run
	Uptime   string
	Uptime7  string
	Uptime30 string
	Strip    strip
}

type statusData struct {
	Rows    []statusRow
	More    int // checks not shown (beyond statusMaxChecks)
	Updated string
}

// hostOf is the host name of a check's URL, without user info or port.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "(invalid URL)"
	}
	return u.Hostname()
}

// publicName is the name a status page shows: the check's own name, else
// its URL's host.
func publicName(ck Check) string {
	if ck.OwnName != "" {
		return ck.OwnName
	}
	return hostOf(ck.URL)
}

func (a *Area) statusPublic(w http.ResponseWriter, r *http.Request) {
	userID, err := a.b.StatusPageUser(r.Context(), r.PathValue("token"))
	if errors.Is(err, console.ErrNotFound) {
		a.k.PublicNotFound(w, r)
		return
	}
	if err != nil {
		a.k.PublicFailure(w, "status page", err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL is the secret
	w.Header().Set("X-Robots-Tag", "noindex")
	now := a.k.Now()
	if body, ok := a.status.Get(userID, now); ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(body)
		return
	}
	body, err := a.statusBody(r.Context(), userID, now)
	if err != nil {
		a.k.PublicFailure(w, "status page", err)
		return
	}
	a.status.Put(userID, body, now)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// statusBody renders a user's status page, with no session in it (it is
// cached and shown to anyone).
func (a *Area) statusBody(ctx context.Context, userID string, now time.Time) ([]byte, error) {
	cks, err := a.b.Checks(ctx, userID, Filter{})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cks, func(a, b Check) int {
		return cmp.Or(strings.Compare(strings.ToLower(publicName(a)), strings.ToLower(publicName(b))), strings.Compare(a.Type, b.Type), strings.Compare(a.ID, b.ID))
	})
	d := statusData{Updated: now.UTC().Format("2006-01-02 15:04 MST")}
	if len(cks) > statusMaxChecks {
		d.More, cks = len(cks)-statusMaxChecks, cks[:statusMaxChecks]
	}
	rows, err := a.histories(ctx, userID, cks)
	if err != nil {
		return nil, err
	}
	for i, ck := range cks {
		row := rows[i]
		state := ck.Status
		switch {
		case ck.Status == "ACTIVE" && ck.Maintenance:
			state = "MAINTENANCE"
		case ck.Status == "ACTIVE":
			state = cmp.Or(ck.LastStatus, "PENDING")
		}
		d.Rows = append(d.Rows, statusRow{Name: publicName(ck), Type: ck.Type, State: state, Uptime: row.Uptime,
			Uptime7: row.Uptime7, Uptime30: row.Uptime30, Strip: row.Strip.public()})
	}
	return a.k.RenderPublic("status", d)
}
