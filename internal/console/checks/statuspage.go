package checks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// The public status page, at /console/status/{token} (HTML) and
// /console/status/{token}.json or ?format=json (the same data as JSON):
// the user's title and description, an overall banner, their checks (in
// their groups when they made some), each with its state, uptimes, last
// runs and 90 daily uptime bars, and their incidents with their timeline.
// It shows of a check only its public name, type, state and history
// (statusCheck), never its URL, id, tags or an error's text.

// StatusPage is a user's status page as the settings page edits it.
type StatusPage struct {
	Enabled bool
	// Token is the page's secret address's last part, "" when off.
	Token       string
	Title       string
	Description string
	Groups      []StatusGroup
	// NewToken asks SetStatusPage for a new address.
	NewToken bool
}

// StatusGroup is a named group of a status page: the checks it names and
// those carrying one of its tags.
type StatusGroup struct {
	Name     string   `json:"name"`
	Tags     []string `json:"tags"`
	CheckIDs []string `json:"checkIds"`
}

// covers reports whether ck is in g (tags ignoring case).
func (g StatusGroup) covers(ck Check) bool {
	if slices.Contains(g.CheckIDs, ck.ID) {
		return true
	}
	return slices.ContainsFunc(g.Tags, func(t string) bool {
		return slices.ContainsFunc(ck.Tags, func(ct string) bool { return strings.EqualFold(ct, t) })
	})
}

// Incident is an incident of a status page, its updates oldest first.
type Incident struct {
	ID         string
	Title      string
	Status     string // investigating, identified, monitoring, resolved
	CreatedAt  time.Time
	UpdatedAt  time.Time
	ResolvedAt time.Time // zero while open
	Updates    []IncidentUpdate
}

// IncidentUpdate is one entry of an incident's timeline.
type IncidentUpdate struct {
	At      time.Time
	Status  string
	Message string
}

// Bounds of the public page.
const (
	// statusDays is how many daily uptime bars a check has.
	statusDays = 90
	// resolvedShown is how long a resolved incident stays on the page.
	resolvedShown = 14 * 24 * time.Hour
)

// Overall states of a status page, as the JSON form names them.
const (
	overallOperational = "operational"
	overallPartial     = "partial_outage"
	overallMajor       = "major_outage"
	overallMaintenance = "maintenance"
)

var overallText = map[string]string{overallOperational: "All systems operational", overallPartial: "Partial outage",
	overallMajor: "Major outage", overallMaintenance: "Under maintenance"}

// lines splits a text into its lines, for templates.
func lines(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") }

// statusSettingsData is the settings page's.
type statusSettingsData struct {
	P      StatusPage
	URL    string
	Groups string // the groups as the form writes them (groupsText)
	Msg    string
	Error  string
}

// groupsText writes groups one a line, "Name: tag, chk_…", as the
// settings form reads them (parseGroups).
func groupsText(gs []StatusGroup) string {
	var b strings.Builder
	for _, g := range gs {
		b.WriteString(g.Name + ": " + strings.Join(append(slices.Clone(g.Tags), g.CheckIDs...), ", ") + "\n")
	}
	return b.String()
}

// parseGroups reads the settings form's groups: one a line, its name, a
// colon, and its members separated by commas, a member starting with
// "chk_" a check id and any other a tag.
func parseGroups(text string) ([]StatusGroup, error) {
	var out []StatusGroup
	for i, line := range lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, members, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("groups, line %d: write a group as \"Name: tag, chk_…\"", i+1)
		}
		g := StatusGroup{Name: strings.TrimSpace(name), Tags: []string{}, CheckIDs: []string{}}
		for _, m := range strings.Split(members, ",") {
			switch m = strings.TrimSpace(m); {
			case m == "":
			case strings.HasPrefix(m, "chk_"):
				g.CheckIDs = append(g.CheckIDs, m)
			default:
				g.Tags = append(g.Tags, m)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func (a *Area) statusSettings(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	p, err := a.b.StatusPage(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := statusSettingsData{P: p, Groups: groupsText(p.Groups), Msg: map[string]string{"on": "Your status page is public at the address below.",
		"off": "Your status page is off: its address answers 404.", "new": "New address made: the old one answers 404.",
		"saved": "Status page saved."}[r.URL.Query().Get("msg")]}
	a.renderSettings(w, r, http.StatusOK, d)
}

func (a *Area) renderSettings(w http.ResponseWriter, r *http.Request, code int, d statusSettingsData) {
	if d.P.Token != "" {
		scheme := "http"
		if console.Secure(r) {
			scheme = "https"
		}
		d.URL = scheme + "://" + r.Host + "/console/status/" + d.P.Token
	}
	a.k.Render(w, r, code, "statuspage", d)
}

// statusSet turns the page on or off, makes a new address (action on,
// off, new: the settings are kept) or saves the settings (save: on or
// off is kept), all through PUT /v1/me/statuspage.
func (a *Area) statusSet(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	action := r.PostForm.Get("action")
	if action != "on" && action != "off" && action != "new" && action != "save" {
		a.k.NotFound(w, r)
		return
	}
	p, err := a.b.StatusPage(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	f := r.PostForm
	switch action {
	case "on", "new":
		p.Enabled, p.NewToken = true, action == "new"
	case "off":
		p.Enabled = false
	case "save":
		p.Title, p.Description = strings.TrimSpace(f.Get("title")), strings.TrimSpace(f.Get("description"))
		groups, err := parseGroups(f.Get("groups"))
		if err == nil {
			p.Groups = groups
			_, err = a.b.SetStatusPage(r.Context(), ss.Subject, p)
		}
		if err != nil {
			if errors.Is(err, console.ErrNotFound) {
				a.k.Failure(w, r, err)
				return
			}
			a.renderSettings(w, r, http.StatusBadRequest, statusSettingsData{P: p, Groups: f.Get("groups"), Error: err.Error()})
			return
		}
	}
	if action != "save" {
		if _, err := a.b.SetStatusPage(r.Context(), ss.Subject, p); err != nil {
			a.k.Failure(w, r, err)
			return
		}
	}
	a.dropStatus(ss.Subject)
	msg := action
	if action == "save" {
		msg = "saved"
	}
	http.Redirect(w, r, "/console/checks/statuspage?msg="+msg, http.StatusSeeOther)
}

// dropStatus forgets the user's cached page, both forms.
func (a *Area) dropStatus(userID string) {
	a.status.Drop(userID)
	a.status.Drop(userID + "#json")
}

// statusCheck is what a status page shows of a check: its name (the user
// chose it to be shown; by default the URL's host) and nothing else that
// could be a secret (no path, query, credentials, keyword, threshold, tag
// or id).
type statusCheck struct {
	Name     string
	Type     string
	State    string // UP, DOWN, PAUSED, FAILED, MAINTENANCE, or PENDING before a run
	Uptime   string
	Uptime7  string
	Uptime30 string
	Strip    strip
	Days     []dayBar
}

// dayBar is one of a check's daily uptime bars.
type dayBar struct {
	X     int
	Date  string
	Runs  int64
	Up    int64
	Class string // up (every run up), partial (95 % up or more), down, none (no runs)
	Fill  string
	Title string
}

var dayFills = map[string]string{"up": "#2e7d32", "partial": "#f9a825", "down": "#c62828", "none": "#bdbdbd"}

type statusGroupView struct {
	Name   string
	Checks []statusCheck
}

type statusIncident struct {
	Incident
	// Timeline is the updates newest first.
	Timeline []IncidentUpdate
}

type statusData struct {
	Title       string
	Description string
	Overall     string // overallOperational, …
	OverallText string
	Groups      []statusGroupView
	Open        []statusIncident
	Resolved    []statusIncident // resolved in the last resolvedShown
	More        int              // checks not shown (beyond statusMaxChecks)
	Updated     time.Time
}

func (a *Area) statusPublic(w http.ResponseWriter, r *http.Request) {
	token, asJSON := strings.CutSuffix(r.PathValue("token"), ".json")
	asJSON = asJSON || r.URL.Query().Get("format") == "json"
	userID, err := a.b.StatusPageUser(r.Context(), token)
	if errors.Is(err, console.ErrNotFound) {
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no such status page"}` + "\n"))
			return
		}
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
	ctype, key := "text/html; charset=utf-8", userID
	if asJSON {
		ctype, key = "application/json", userID+"#json"
	}
	now := a.k.Now()
	body, ok := a.status.Get(key, now)
	if !ok {
		d, err := a.statusModel(r.Context(), userID, now)
		if err == nil {
			if asJSON {
				body, err = json.MarshalIndent(statusJSONOf(d), "", " ")
			} else {
				body, err = a.k.RenderPublic("status", d)
			}
		}
		if err != nil {
			a.k.PublicFailure(w, "status page", err)
			return
		}
		a.status.Put(key, body, now)
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(body)
}

// statusModel reads what a user's status page shows, with no session in
// it (it is cached and shown to anyone).
func (a *Area) statusModel(ctx context.Context, userID string, now time.Time) (statusData, error) {
	p, err := a.b.StatusPage(ctx, userID)
	if err != nil {
		return statusData{}, err
	}
	cks, err := a.b.Checks(ctx, userID, Filter{})
	if err != nil {
		return statusData{}, err
	}
	if len(p.Groups) > 0 {
		cks = slices.DeleteFunc(cks, func(ck Check) bool {
			return !slices.ContainsFunc(p.Groups, func(g StatusGroup) bool { return g.covers(ck) })
		})
	}
	slices.SortFunc(cks, func(a, b Check) int {
		return cmp.Or(strings.Compare(strings.ToLower(publicName(a)), strings.ToLower(publicName(b))), strings.Compare(a.Type, b.Type), strings.Compare(a.ID, b.ID))
	})
	d := statusData{Title: cmp.Or(p.Title, "Status"), Description: p.Description, Updated: now.UTC()}
	if len(cks) > statusMaxChecks {
		d.More, cks = len(cks)-statusMaxChecks, cks[:statusMaxChecks]
	}
	rows, err := a.histories(ctx, userID, cks)
	if err != nil {
		return statusData{}, err
	}
	shown := make([]statusCheck, len(cks))
	var up, down, maint int
	for i, ck := range cks {
		row := rows[i]
		state := ck.Status
		switch {
		case ck.Status == "ACTIVE" && ck.Maintenance:
			state = "MAINTENANCE"
		case ck.Status == "ACTIVE":
			state = cmp.Or(ck.LastStatus, "PENDING")
		}
		switch state {
		case "UP":
			up++
		case "DOWN", "FAILED":
			down++
		case "MAINTENANCE":
			maint++
		}
		days, err := a.dayBars(ctx, userID, ck.ID, now)
		if err != nil {
			return statusData{}, err
		}
		shown[i] = statusCheck{Name: publicName(ck), Type: ck.Type, State: state, Uptime: row.Uptime,
			Uptime7: row.Uptime7, Uptime30: row.Uptime30, Strip: row.Strip.public(), Days: days}
	}
	switch {
	case down > 0 && up == 0 && maint == 0:
		d.Overall = overallMajor
	case down > 0:
		d.Overall = overallPartial
	case maint > 0:
		d.Overall = overallMaintenance
	default:
		d.Overall = overallOperational
	}
	d.OverallText = overallText[d.Overall]
	if len(p.Groups) == 0 {
		d.Groups = []statusGroupView{{Checks: shown}}
	}
	for _, g := range p.Groups {
		v := statusGroupView{Name: g.Name}
		for i, ck := range cks {
			if g.covers(ck) {
				v.Checks = append(v.Checks, shown[i])
			}
		}
		d.Groups = append(d.Groups, v)
	}
	incs, err := a.b.Incidents(ctx, userID)
	if err != nil {
		return statusData{}, err
	}
	for _, in := range incs {
		v := statusIncident{Incident: in, Timeline: slices.Clone(in.Updates)}
		slices.Reverse(v.Timeline)
		switch {
		case in.Status != "resolved":
			d.Open = append(d.Open, v)
		case now.Sub(in.ResolvedAt) <= resolvedShown:
			d.Resolved = append(d.Resolved, v)
		}
	}
	return d, nil
}

// dayBars reads a check's daily rollups of the last statusDays days
// (today the last) as bars, days without runs grey.
func (a *Area) dayBars(ctx context.Context, userID, id string, now time.Time) ([]dayBar, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -(statusDays - 1))
	days, err := a.b.Days(ctx, userID, id, from)
	if err != nil {
		return nil, err
	}
	byDate := make(map[string]Day, len(days))
	for _, d := range days {
		byDate[d.Date.UTC().Format("2006-01-02")] = d
	}
	bars := make([]dayBar, statusDays)
	for i := range bars {
		date := from.AddDate(0, 0, i).Format("2006-01-02")
		d := byDate[date]
		b := dayBar{X: i * 5, Date: date, Runs: d.Runs, Up: d.Up, Class: "none", Title: date + ": no data"}
		if d.Runs > 0 {
			switch pct := 100 * float64(d.Up) / float64(d.Runs); {
			case d.Up == d.Runs:
				b.Class = "up"
			case pct >= 95:
				b.Class = "partial"
			default:
				b.Class = "down"
			}
			b.Title = fmt.Sprintf("%s: %s up (%d runs)", date, percent(d.Up, d.Runs), d.Runs)
		}
		b.Fill = dayFills[b.Class]
		bars[i] = b
	}
	return bars, nil
}

// statusJSON is the JSON form of a status page: the HTML page's data.
type statusJSON struct {
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Updated     string            `json:"updated"`
	Overall     string            `json:"overall"`
	Groups      []statusGroupJSON `json:"groups"`
	Incidents   []incidentJSON    `json:"incidents"`
	More        int               `json:"more"`
}

type statusGroupJSON struct {
	Name   string      `json:"name"`
	Checks []checkJSON `json:"checks"`
}

type checkJSON struct {
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	State    string    `json:"state"`
	Uptime   string    `json:"uptime24h"`
	Uptime7  string    `json:"uptime7d"`
	Uptime30 string    `json:"uptime30d"`
	LastRuns []runJSON `json:"lastRuns"`
	Days     []dayJSON `json:"days"`
}

// runJSON is a run as the page's strip shows it: its time, state and the
// class of its failure (reasonClass), never the error.
type runJSON struct {
	At     string `json:"at"`
	Up     bool   `json:"up"`
	Reason string `json:"reason,omitempty"`
}

type dayJSON struct {
	Date  string `json:"date"`
	Runs  int64  `json:"runs"`
	Up    int64  `json:"up"`
	State string `json:"state"` // up, partial, down, none
}

type incidentJSON struct {
	Title      string               `json:"title"`
	Status     string               `json:"status"`
	CreatedAt  string               `json:"createdAt"`
	ResolvedAt string               `json:"resolvedAt,omitempty"`
	Updates    []incidentUpdateJSON `json:"updates"` // newest first, as on the page
}

type incidentUpdateJSON struct {
	At      string `json:"at"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func statusJSONOf(d statusData) statusJSON {
	out := statusJSON{Title: d.Title, Description: d.Description, Updated: d.Updated.Format(time.RFC3339), Overall: d.Overall,
		Groups: []statusGroupJSON{}, Incidents: []incidentJSON{}, More: d.More}
	for _, g := range d.Groups {
		gj := statusGroupJSON{Name: g.Name, Checks: []checkJSON{}}
		for _, c := range g.Checks {
			cj := checkJSON{Name: c.Name, Type: c.Type, State: c.State, Uptime: c.Uptime, Uptime7: c.Uptime7, Uptime30: c.Uptime30,
				LastRuns: []runJSON{}, Days: make([]dayJSON, len(c.Days))}
			for _, cell := range c.Strip.Cells {
				at, _ := time.Parse("2006-01-02 15:04:05Z", cell.when[:max(strings.LastIndexByte(cell.when, ' '), 0)])
				rj := runJSON{At: at.Format(time.RFC3339), Up: cell.Up}
				if cell.why != "" {
					rj.Reason = reasonClass(cell.why)
				}
				cj.LastRuns = append(cj.LastRuns, rj)
			}
			for i, b := range c.Days {
				cj.Days[i] = dayJSON{Date: b.Date, Runs: b.Runs, Up: b.Up, State: b.Class}
			}
			gj.Checks = append(gj.Checks, cj)
		}
		out.Groups = append(out.Groups, gj)
	}
	for _, in := range append(slices.Clone(d.Open), d.Resolved...) {
		ij := incidentJSON{Title: in.Title, Status: in.Status, CreatedAt: in.CreatedAt.Format(time.RFC3339), Updates: []incidentUpdateJSON{}}
		if !in.ResolvedAt.IsZero() {
			ij.ResolvedAt = in.ResolvedAt.Format(time.RFC3339)
		}
		for _, u := range in.Timeline {
			ij.Updates = append(ij.Updates, incidentUpdateJSON{At: u.At.Format(time.RFC3339), Status: u.Status, Message: u.Message})
		}
		out.Incidents = append(out.Incidents, ij)
	}
	return out
}
