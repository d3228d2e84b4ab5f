package checks

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A Checks user's alert targets, and what the public status page
// (statuspage.go) shares with the badges: its cache's lifetime, its bound
// on checks and a check's public name (its own name, else its host).

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
