package console

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
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

// statusCache holds rendered status pages by user id.
type statusCache struct {
	mu sync.Mutex
	m  map[string]statusEntry
}

type statusEntry struct {
	body []byte
	at   time.Time
}

func (sc *statusCache) get(user string, now time.Time) ([]byte, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, ok := sc.m[user]
	if !ok || now.Sub(e.at) >= statusCacheTTL {
		return nil, false
	}
	return e.body, true
}

func (sc *statusCache) put(user string, body []byte, now time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.m == nil || len(sc.m) >= 1000 {
		sc.m = map[string]statusEntry{}
	}
	sc.m[user] = statusEntry{body: body, at: now}
}

func (sc *statusCache) drop(user string) {
	sc.mu.Lock()
	delete(sc.m, user)
	sc.mu.Unlock()
}

func (c *Console) checksExtraRoutes(m *http.ServeMux) {
	if c.opts.Checks == nil {
		return
	}
	m.HandleFunc("GET /console/checks/alerts", c.alertsPage)
	m.HandleFunc("POST /console/checks/alerts", c.alertsSave)
	m.HandleFunc("GET /console/checks/statuspage", c.statusSettings)
	m.HandleFunc("POST /console/checks/statuspage", c.statusSet)
	m.HandleFunc("GET /console/status/{token}", c.statusPublic)
}

type alertsData struct {
	T     AlertTargets
	Error string
	Msg   string
}

func (c *Console) alertsPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "checks")
	if !ok {
		return
	}
	t, err := c.opts.Checks.Alerts(r.Context(), ss.Subject)
	if err != nil {
		c.failure(w, r, err)
		return
	}
	d := alertsData{T: t}
	if r.URL.Query().Get("msg") == "saved" {
		d.Msg = "Alert targets saved."
	}
	c.render(w, r, http.StatusOK, "alerts", d)
}

func (c *Console) alertsSave(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "checks")
	if !ok {
		return
	}
	f := r.PostForm
	in := AlertTargets{WebhookURL: strings.TrimSpace(f.Get("webhookUrl")), WebhookSecret: f.Get("webhookSecret"),
		Email: strings.TrimSpace(f.Get("email"))}
	in.KeepSecret = in.WebhookSecret == "" && f.Get("clearSecret") != "yes"
	if err := c.opts.Checks.SetAlerts(r.Context(), ss.Subject, in); err != nil {
		cur, rerr := c.opts.Checks.Alerts(r.Context(), ss.Subject)
		if rerr != nil {
			c.failure(w, r, rerr)
			return
		}
		cur.WebhookURL, cur.Email = in.WebhookURL, in.Email // keep what was typed
		c.render(w, r, http.StatusBadRequest, "alerts", alertsData{T: cur, Error: err.Error()})
		return
	}
	http.Redirect(w, r, "/console/checks/alerts?msg=saved", http.StatusSeeOther)
}

type statusSettingsData struct {
	Token string
	URL   string
	Msg   string
}

func (c *Console) statusSettings(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "checks")
	if !ok {
		return
	}
	tok, err := c.opts.Checks.StatusPage(r.Context(), ss.Subject)
	if err != nil {
		c.failure(w, r, err)
		return
	}
	d := statusSettingsData{Token: tok, Msg: map[string]string{"on": "Your status page is public at the address below.",
		"off": "Your status page is off: its address answers 404.", "new": "New address made: the old one answers 404."}[r.URL.Query().Get("msg")]}
	if tok != "" {
		scheme := "http"
		if Secure(r) {
			scheme = "https"
		}
		d.URL = scheme + "://" + r.Host + "/console/status/" + tok
	}
	c.render(w, r, http.StatusOK, "statuspage", d)
}

func (c *Console) statusSet(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "checks")
	if !ok {
		return
	}
	action := r.PostForm.Get("action")
	if action != "on" && action != "off" && action != "new" {
		c.notFound(w, r)
		return
	}
	if _, err := c.opts.Checks.SetStatusPage(r.Context(), ss.Subject, action != "off"); err != nil {
		c.failure(w, r, err)
		return
	}
	c.statusPages.drop(ss.Subject)
	http.Redirect(w, r, "/console/checks/statuspage?msg="+action, http.StatusSeeOther)
}

// statusRow is what a status page shows of a check: nothing that could be
// a secret (no path, query, credentials, keyword, threshold or id).
type statusRow struct {
	Host     string
	Type     string
	State    string // UP, DOWN, PAUSED, FAILED, or PENDING before a run
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

func (c *Console) statusPublic(w http.ResponseWriter, r *http.Request) {
	userID, err := c.opts.Checks.StatusPageUser(r.Context(), r.PathValue("token"))
	if errors.Is(err, ErrNotFound) {
		c.publicNotFound(w, r)
		return
	}
	if err != nil {
		c.publicFailure(w, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL is the secret
	w.Header().Set("X-Robots-Tag", "noindex")
	now := c.opts.Now()
	if body, ok := c.statusPages.get(userID, now); ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(body)
		return
	}
	body, err := c.statusBody(r.Context(), userID, now)
	if err != nil {
		c.publicFailure(w, err)
		return
	}
	c.statusPages.put(userID, body, now)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// statusBody renders a user's status page, with no session in it (it is
// cached and shown to anyone).
func (c *Console) statusBody(ctx context.Context, userID string, now time.Time) ([]byte, error) {
	cks, err := c.opts.Checks.Checks(ctx, userID)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cks, func(a, b Check) int {
		return cmp.Or(strings.Compare(hostOf(a.URL), hostOf(b.URL)), strings.Compare(a.Type, b.Type), strings.Compare(a.ID, b.ID))
	})
	d := statusData{Updated: now.UTC().Format("2006-01-02 15:04 MST")}
	if len(cks) > statusMaxChecks {
		d.More, cks = len(cks)-statusMaxChecks, cks[:statusMaxChecks]
	}
	rows, err := c.histories(ctx, userID, cks)
	if err != nil {
		return nil, err
	}
	for i, ck := range cks {
		row := rows[i]
		state := ck.Status
		if ck.Status == "ACTIVE" {
			state = cmp.Or(ck.LastStatus, "PENDING")
		}
		d.Rows = append(d.Rows, statusRow{Host: hostOf(ck.URL), Type: ck.Type, State: state, Uptime: row.Uptime,
			Uptime7: row.Uptime7, Uptime30: row.Uptime30, Strip: row.Strip})
	}
	var buf bytes.Buffer
	if err := c.pages["status"].ExecuteTemplate(&buf, "layout", page{Data: d, Public: true}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// publicFailure answers a status page's unexpected error: logged without
// the path (it holds the page's token), answered without details.
func (c *Console) publicFailure(w http.ResponseWriter, err error) {
	c.log.Error("console status page", "err", err)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "The status page is unavailable; try again later.", http.StatusBadGateway)
}

// publicNotFound is the 404 of a public page: no session is read.
func (c *Console) publicNotFound(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := c.pages["error"].ExecuteTemplate(&buf, "layout", page{Public: true, Data: errorPage{Title: "Not found", Message: "There is no such page, or it was turned off."}}); err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(buf.Bytes())
}
