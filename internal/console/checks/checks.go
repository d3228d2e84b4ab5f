// Package checks is the console's Checks dashboard, for a Checks user:
// their checks, their status, uptime over 24 hours, 7 and 30 days, a
// status strip and a response-time sparkline, their last alert and
// delivery failure; a check's page with a response-time chart and its
// paginated run history; create (the form at the top of the dashboard),
// edit, clone, pause, resume, run now and delete, and pause, resume and
// delete in bulk; search and filters (tag, state, text); the
// alert targets, with the Checks API's own validation messages; the
// notification channels (channels.go), maintenance windows
// (maintenance.go) and incidents (incidents.go); and the user's public
// status page (status.go) and its badges (badge.go).
// Backend is Checks as the pages see it; Adapt makes one of Checks'
// store and API.
package checks

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/console"
)

// Check is a check as the dashboard shows it.
type Check struct {
	ID string
	// Name is the check's name, its URL's host when the user gave none.
	Name string
	// OwnName is the name the user gave, "" when none.
	OwnName        string
	Tags           []string
	URL            string
	Type           string
	Keyword        string // attributes.keyword, "" when none
	Threshold      string // attributes.threshold as typed, "" when none
	DelayMs        int64
	Status         string // ACTIVE, PAUSED, FAILED
	LastExecutedAt string
	LastStatus     string // UP or DOWN of the last run; "" before it
	FailureReason  string
	// LastAlertAt is when an alert of the check was last delivered;
	// LastAlertError and LastAlertErrorAt the last delivery failure.
	LastAlertAt      string
	LastAlertError   string
	LastAlertErrorAt string
	// Maintenance is whether one of the user's maintenance windows covers
	// the check now (its alerts are not sent).
	Maintenance bool
	// Attrs are the check's attributes as the API holds them (the form
	// shows those of its type).
	Attrs map[string]any
	// Channels are the ids of the channels it alerts; none: the user's
	// default ones.
	Channels []string
}

// Run is one run of a check.
type Run struct {
	At             time.Time
	Up             bool
	ResponseTimeMs int64
	// Error is why a DOWN run was down ("" when up or unknown).
	Error string
	// Key is the run's position in the history (RunsBefore's before).
	Key string
}

// CheckInput is the create and edit form.
type CheckInput struct {
	Name    string // "" for none (the URL's host)
	Tags    []string
	URL     string
	Type    string
	DelayMs int64
	Keyword string // attributes.keyword (AVAILABILITY); "" for none
	// Threshold is attributes.threshold (EBAY); 0 for none.
	Threshold float64
	// AVAILABILITY's request and conditions; zero values are not sent.
	Method        string // "" for GET
	Headers       map[string]string
	Body          string
	MaxResponseMs int64
	JSONPath      string
	// Expected is the value at JSONPath (AVAILABILITY) or the answer a DNS
	// lookup must include; "" for none.
	Expected string
	// DaysBeforeExpiry is TLS's attributes.daysBeforeExpiry; nil for the
	// API's default.
	DaysBeforeExpiry *int
	RecordType       string // DNS; "" for A
	// Channels are the ids of the user's channels the check alerts; none:
	// the user's default ones.
	Channels []string
}

// Filter selects the checks the dashboard lists; zero fields select all.
type Filter struct {
	Tag    string
	Status string // UP, DOWN, PENDING, PAUSED, FAILED
	Q      string // in the name or URL
}

// filterStatuses are the states the dashboard filters on.
var filterStatuses = []string{"UP", "DOWN", "PENDING", "PAUSED", "FAILED"}

// Backend is what the dashboard needs of Checks, for one user at a
// time: the user id is the session's, so one user never reaches another's
// checks. Errors of Create and Act are shown to the user as they are (the
// Checks API's validation messages).
type Backend interface {
	Checks(ctx context.Context, userID string, f Filter) ([]Check, error)
	Check(ctx context.Context, userID, id string) (Check, error)
	Runs(ctx context.Context, userID, id string, limit int) ([]Run, error)
	Create(ctx context.Context, userID string, in CheckInput) (Check, error)
	// Update replaces what the edit form sets of a check (PATCH).
	Update(ctx context.Context, userID, id string, in CheckInput) (Check, error)
	// Act is pause, resume, run or delete.
	Act(ctx context.Context, userID, id, action string) error
	// RunsBefore is a page of a check's history, newest first: the runs
	// before the run whose Key is before ("" the newest).
	RunsBefore(ctx context.Context, userID, id, before string, limit int) ([]Run, error)
	// Days is a check's daily rollups from since's day on, oldest first.
	Days(ctx context.Context, userID, id string, since time.Time) ([]Day, error)
	// Alerts reads the user's alert targets and delivery outcome.
	Alerts(ctx context.Context, userID string) (AlertTargets, error)
	// SetAlerts replaces the user's alert targets through the API (its
	// message is the error's); KeepSecret keeps the webhook secret.
	SetAlerts(ctx context.Context, userID string, in AlertTargets) error
	// StatusPage is the user's status page: on or off, its token and its
	// settings.
	StatusPage(ctx context.Context, userID string) (StatusPage, error)
	// SetStatusPage replaces the user's status page through the API (its
	// message is the error's) and returns it: Enabled keeps the token,
	// or makes one when off; NewToken replaces it (the old URL dies).
	SetStatusPage(ctx context.Context, userID string, in StatusPage) (StatusPage, error)
	// Incidents are the user's incidents, open ones first, then newest
	// first.
	Incidents(ctx context.Context, userID string) ([]Incident, error)
	// StatusPageUser returns the user id of a status page token, or
	// console.ErrNotFound.
	StatusPageUser(ctx context.Context, token string) (string, error)
}

// Day is a check's runs on one UTC day.
type Day struct {
	Date       time.Time
	Runs       int64
	Up         int64
	ResponseMs int64
}

//go:embed templates/*.html
var templates embed.FS

// Area is the Checks dashboard of Checks users (realm "checks") and their
// public status pages.
type Area struct {
	b      Backend
	k      *console.Kit
	status *console.PublicCache // rendered status pages by user id
	badges *console.PublicCache // rendered badges by user id, check id and kind
}

// New returns the dashboard over b.
func New(b Backend) *Area {
	return &Area{b: b, status: console.NewPublicCache(statusCacheTTL), badges: console.NewPublicCache(badgeCacheTTL)}
}

// Name implements console.Area.
func (*Area) Name() string { return "checks" }

// Nav links a Checks user to their checks.
func (*Area) Nav(_ *http.Request, s console.Session) template.HTML {
	if s.Realm != "checks" {
		return ""
	}
	return `<a href="/console/checks/">My checks</a>`
}

// Card is the dashboard's card on a Checks user's home page.
func (*Area) Card(s console.Session) template.HTML {
	if s.Realm != "checks" {
		return ""
	}
	return `<li class="card"><a href="/console/checks/"><strong>My checks</strong></a><p>Status, uptime and response times of your checks.</p></li>`
}

// Mount implements console.Area.
func (a *Area) Mount(m *http.ServeMux, k *console.Kit) error {
	a.k = k
	if err := k.Pages(templates, template.FuncMap{"seconds": seconds, "lines": lines, "has": has}); err != nil {
		return err
	}
	m.HandleFunc("GET /console/checks/{$}", a.checksList)
	m.HandleFunc("POST /console/checks/{$}", a.checksCreate)
	m.HandleFunc("POST /console/checks/bulk", a.checksBulk)
	m.HandleFunc("GET /console/checks/{id}", a.checkPage)
	m.HandleFunc("GET /console/checks/{id}/edit", a.editPage)
	m.HandleFunc("POST /console/checks/{id}/edit", a.editSave)
	m.HandleFunc("POST /console/checks/{id}/{action}", a.checkAct)
	m.HandleFunc("GET /console/checks/alerts", a.alertsPage)
	m.HandleFunc("POST /console/checks/alerts", a.alertsSave)
	m.HandleFunc("GET /console/checks/statuspage", a.statusSettings)
	m.HandleFunc("POST /console/checks/statuspage", a.statusSet)
	m.HandleFunc("GET /console/status/{token}", a.statusPublic)
	m.HandleFunc("GET /console/status/{token}/badge/{checkId}/{kind}", a.statusBadgePublic)
	a.mountChannels(m)
	a.mountMaintenance(m)
	a.mountIncidents(m)
	return nil
}

// checkRow is a check with its recent history.
type checkRow struct {
	Check
	Uptime   string // over 24 h: "99.5 %", or "–" without runs
	Runs     int
	Uptime7  string // over the last 7 and 30 days (daily rollups)
	Uptime30 string
	Runs7    int64
	Runs30   int64
	Spark    spark
	Strip    strip
}

type checksData struct {
	Rows     []checkRow
	Total    int    // the checks the filter selects
	Page     int    // 1-based
	Prev     string // the previous page's number, "" on the first
	Next     string // the next page's number, "" on the last
	Form     url.Values
	Error    string // the create form's
	Msg      string
	Filter   Filter
	Filtered bool     // a filter is set
	Tags     []string // every tag of the user's checks, for the filter
	Statuses []string
	// BulkError says which checks a bulk action could not change.
	BulkError string
	// Channels are the user's notification channels, for the form.
	Channels []Channel
}

// checksPerPage is the dashboard's page size.
const checksPerPage = 20

// Runs read per check for its last 24 hours: on the dashboard (a check
// every minute has 1,440 a day: the row then covers the last 200), and on
// a check's page.
const (
	dashboardRuns = 200
	detailRuns    = 1000
)

// history reads a check's runs of the last 24 hours (at most limit, the
// newest) and its daily rollups of the last 30 days (today and the 29
// before; 7 days is today and the 6 before).
func (a *Area) history(ctx context.Context, userID string, ck Check, limit int) (checkRow, error) {
	runs, err := a.b.Runs(ctx, userID, ck.ID, limit)
	if err != nil {
		return checkRow{}, err
	}
	return a.rowOf(ctx, userID, ck, runs)
}

// historyReaders bounds the checks whose history is read at once.
const historyReaders = 4

// histories is history (dashboardRuns) of each of cks, in their order,
// read historyReaders at a time.
func (a *Area) histories(ctx context.Context, userID string, cks []Check) ([]checkRow, error) {
	rows := make([]checkRow, len(cks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(historyReaders)
	for i, ck := range cks {
		g.Go(func() error {
			var err error
			rows[i], err = a.history(gctx, userID, ck, dashboardRuns)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// rowOf is history with the runs (newest first) read.
func (a *Area) rowOf(ctx context.Context, userID string, ck Check, runs []Run) (checkRow, error) {
	since := a.k.Now().Add(-24 * time.Hour)
	var recent []Run
	for i := len(runs) - 1; i >= 0; i-- { // newest first → oldest first
		if runs[i].At.After(since) {
			recent = append(recent, runs[i])
		}
	}
	row := checkRow{Check: ck, Uptime: "–", Runs: len(recent), Spark: sparkline(recent), Strip: statusStrip(runs)}
	up := 0
	for _, r := range recent {
		if r.Up {
			up++
		}
	}
	row.Uptime = percent(int64(up), int64(len(recent)))
	now := a.k.Now().UTC()
	days, err := a.b.Days(ctx, userID, ck.ID, now.Add(-29*24*time.Hour))
	if err != nil {
		return checkRow{}, err
	}
	var up7, up30 int64
	from7 := now.Truncate(24 * time.Hour).Add(-6 * 24 * time.Hour)
	for _, d := range days {
		row.Runs30 += d.Runs
		up30 += d.Up
		if !d.Date.Before(from7) {
			row.Runs7 += d.Runs
			up7 += d.Up
		}
	}
	row.Uptime7, row.Uptime30 = percent(up7, row.Runs7), percent(up30, row.Runs30)
	return row, nil
}

// percent formats up/n as "99.5 %", "–" when n is 0.
func percent(up, n int64) string {
	if n == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(up)/float64(n), 'f', 1, 64) + " %"
}

func (a *Area) checksList(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	q := r.URL.Query()
	form := url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}}
	if id := q.Get("clone"); id != "" {
		ck, err := a.b.Check(r.Context(), ss.Subject, id)
		if err != nil {
			a.k.NotFoundOr(w, r, err)
			return
		}
		form = formOf(ck)
		if ck.OwnName != "" {
			form.Set("name", ck.OwnName+" (copy)")
		}
	}
	a.checksPage(w, r, http.StatusOK, checksData{Form: form, Msg: checkMessage(r), BulkError: q.Get("error")})
}

func checkMessage(r *http.Request) string {
	q := r.URL.Query()
	if n := q.Get("n"); n != "" {
		verb := map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted"}[q.Get("msg")]
		if verb == "" {
			return ""
		}
		if n == "1" {
			return "1 check " + verb + "."
		}
		return n + " checks " + verb + "."
	}
	return map[string]string{"created": "Check created.", "pause": "Check paused.", "resume": "Check resumed.",
		"run": "Check queued to run now.", "delete": "Check deleted.", "saved": "Check saved."}[q.Get("msg")]
}

// filterOf reads the dashboard's filter from the query.
func filterOf(q url.Values) Filter {
	f := Filter{Tag: strings.TrimSpace(q.Get("tag")), Status: strings.ToUpper(q.Get("status")), Q: strings.TrimSpace(q.Get("q"))}
	if !slices.Contains(filterStatuses, f.Status) {
		f.Status = ""
	}
	return f
}

func (a *Area) checksPage(w http.ResponseWriter, r *http.Request, status int, d checksData) {
	ss, _ := a.k.Session(w, r)
	d.Filter = filterOf(r.URL.Query())
	d.Filtered = d.Filter != Filter{}
	d.Statuses = filterStatuses
	all, err := a.b.Checks(r.Context(), ss.Subject, Filter{})
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	for _, ck := range all {
		for _, t := range ck.Tags {
			if !slices.ContainsFunc(d.Tags, func(have string) bool { return strings.EqualFold(have, t) }) {
				d.Tags = append(d.Tags, t)
			}
		}
	}
	slices.SortFunc(d.Tags, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	cks := all
	if d.Filtered {
		if cks, err = a.b.Checks(r.Context(), ss.Subject, d.Filter); err != nil {
			a.k.Failure(w, r, err)
			return
		}
	}
	slices.SortFunc(cks, func(a, b Check) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.URL, b.URL), strings.Compare(a.ID, b.ID))
	})
	d.Total = len(cks)
	d.Page = 1
	if n, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && n > 1 && (n-1)*checksPerPage < len(cks) {
		d.Page = n
	}
	from := (d.Page - 1) * checksPerPage
	cks = cks[from:min(len(cks), from+checksPerPage)]
	if d.Page > 1 {
		d.Prev = strconv.Itoa(d.Page - 1)
	}
	if from+checksPerPage < d.Total {
		d.Next = strconv.Itoa(d.Page + 1)
	}
	rows, err := a.histories(r.Context(), ss.Subject, cks)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d.Rows = rows
	if d.Channels, err = a.formChannels(r.Context(), ss.Subject); err != nil {
		a.k.Failure(w, r, err)
		return
	}
	a.k.Render(w, r, status, "checks", d)
}

// formOf is the create and edit form's values for ck.
func formOf(ck Check) url.Values {
	f := url.Values{"name": {ck.OwnName}, "url": {ck.URL}, "type": {ck.Type}, "keyword": {ck.Keyword},
		"threshold": {ck.Threshold}, "delay": {seconds(ck.DelayMs)}, "tags": {strings.Join(ck.Tags, ", ")}, "channel": ck.Channels}
	a := ck.Attrs
	str := func(k string) string { v, _ := a[k].(string); return v }
	f.Set("method", strings.ToUpper(str("method")))
	f.Set("body", str("body"))
	f.Set("jsonPath", str("jsonPath"))
	f.Set("recordType", strings.ToUpper(str("recordType")))
	if h, ok := a["headers"].(map[string]any); ok {
		var ls []string
		for k, v := range h {
			ls = append(ls, fmt.Sprintf("%s: %v", k, v))
		}
		slices.Sort(ls)
		f.Set("headers", strings.Join(ls, "\n"))
	}
	for _, k := range []string{"maxResponseMs", "daysBeforeExpiry"} {
		if v, ok := a[k]; ok && v != nil {
			f.Set(k, expectedText(v))
		}
	}
	if v, ok := a["expected"]; ok && v != nil {
		if ck.Type == "DNS" {
			f.Set("dnsExpected", expectedText(v))
		} else {
			f.Set("jsonExpected", expectedText(v))
		}
	}
	return f
}

// expectedText writes an attribute's JSON value as the form shows it.
func expectedText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// has reports whether the form value key holds v (a ticked checkbox).
func has(f url.Values, key, v string) bool { return slices.Contains(f[key], v) }

// formAttrs are the attributes the create and edit form sets; an edit
// keeps the others (expectedStatus, opposite, …).
var formAttrs = []string{"keyword", "threshold", "method", "headers", "body", "maxResponseMs", "jsonPath", "expected",
	"daysBeforeExpiry", "recordType"}

// seconds writes a period in ms as seconds ("60", "0.5").
func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) }

// inputOf reads the create and edit form; msg is what is wrong with it.
func inputOf(f url.Values) (in CheckInput, msg string) {
	in = CheckInput{Name: strings.TrimSpace(f.Get("name")), URL: strings.TrimSpace(f.Get("url")),
		Type: strings.ToUpper(strings.TrimSpace(f.Get("type")))}
	for _, t := range strings.Split(f.Get("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			in.Tags = append(in.Tags, t)
		}
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(f.Get("delay")), 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return in, "The interval must be a number of seconds."
	}
	in.DelayMs = int64(math.Round(secs * 1000))
	for _, id := range f["channel"] {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(in.Channels, id) {
			in.Channels = append(in.Channels, id)
		}
	}
	switch in.Type {
	case "EBAY":
		th := strings.TrimSpace(f.Get("threshold"))
		if th == "" {
			return in, "An EBAY check needs a price threshold."
		}
		if in.Threshold, err = strconv.ParseFloat(th, 64); err != nil || !(in.Threshold > 0) || math.IsInf(in.Threshold, 0) {
			return in, "The price threshold must be a number above 0."
		}
	case "TCP":
	case "TLS":
		if d := strings.TrimSpace(f.Get("daysBeforeExpiry")); d != "" {
			n, err := strconv.Atoi(d)
			if err != nil || n < 0 || n > probe.MaxDaysBeforeExpiry {
				return in, fmt.Sprintf("Days before expiry must be a whole number of days from 0 to %d, not %q.", probe.MaxDaysBeforeExpiry, d)
			}
			in.DaysBeforeExpiry = &n
		}
	case "DNS":
		in.RecordType = strings.ToUpper(strings.TrimSpace(f.Get("recordType")))
		in.Expected = strings.TrimSpace(f.Get("dnsExpected"))
	default:
		in.Keyword = strings.TrimSpace(f.Get("keyword"))
		if m := strings.ToUpper(strings.TrimSpace(f.Get("method"))); m != "GET" {
			in.Method = m
		}
		if in.Headers, msg = headersOf(f.Get("headers")); msg != "" {
			return in, msg
		}
		in.Body = f.Get("body")
		if ms := strings.TrimSpace(f.Get("maxResponseMs")); ms != "" {
			if in.MaxResponseMs, err = strconv.ParseInt(ms, 10, 64); err != nil || in.MaxResponseMs < 1 || in.MaxResponseMs > probe.MaxResponseMs {
				return in, fmt.Sprintf("The maximum response time must be a whole number of milliseconds from 1 to %d, not %q.", probe.MaxResponseMs, ms)
			}
		}
		in.JSONPath = strings.TrimSpace(f.Get("jsonPath"))
		in.Expected = strings.TrimSpace(f.Get("jsonExpected"))
		if in.Expected != "" && in.JSONPath == "" {
			return in, "An expected JSON value needs the JSON path it is read at."
		}
	}
	return in, ""
}

// headersOf reads the headers field: one "Name: value" a line.
func headersOf(text string) (map[string]string, string) {
	var h map[string]string
	for i, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Sprintf("Headers: line %d must be \"Name: value\", not %q.", i+1, l)
		}
		if h == nil {
			h = map[string]string{}
		}
		for have := range h {
			if strings.EqualFold(have, name) {
				return nil, fmt.Sprintf("Headers: %s is given twice.", name)
			}
		}
		h[name] = strings.TrimSpace(value)
	}
	return h, ""
}

func (a *Area) checksCreate(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	f := r.PostForm
	in, msg := inputOf(f)
	if msg != "" {
		a.checksPage(w, r, http.StatusBadRequest, checksData{Form: f, Error: msg})
		return
	}
	ck, err := a.b.Create(r.Context(), ss.Subject, in)
	if err != nil {
		a.checksPage(w, r, http.StatusBadRequest, checksData{Form: f, Error: err.Error()})
		return
	}
	http.Redirect(w, r, "/console/checks/"+url.PathEscape(ck.ID)+"?msg=created", http.StatusSeeOther)
}

type editData struct {
	Check    Check
	Form     url.Values
	Error    string
	Channels []Channel // the user's, for the form
}

// formChannels are the user's notification channels the create and edit
// form offers (none when the backend has no channels).
func (a *Area) formChannels(ctx context.Context, userID string) ([]Channel, error) {
	cb, ok := a.channelBackend()
	if !ok {
		return nil, nil
	}
	return cb.Channels(ctx, userID)
}

// renderEdit renders the edit page of ck with the form f.
func (a *Area) renderEdit(w http.ResponseWriter, r *http.Request, status int, userID string, d editData) {
	chs, err := a.formChannels(r.Context(), userID)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d.Channels = chs
	a.k.Render(w, r, status, "edit", d)
}

func (a *Area) editPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	ck, err := a.b.Check(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.renderEdit(w, r, http.StatusOK, ss.Subject, editData{Check: ck, Form: formOf(ck)})
}

func (a *Area) editSave(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	ck, err := a.b.Check(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	f := r.PostForm
	in, msg := inputOf(f)
	if msg == "" {
		if _, err := a.b.Update(r.Context(), ss.Subject, ck.ID, in); errors.Is(err, console.ErrNotFound) {
			a.k.NotFound(w, r)
			return
		} else if err != nil {
			msg = err.Error()
		}
	}
	if msg != "" {
		a.renderEdit(w, r, http.StatusBadRequest, ss.Subject, editData{Check: ck, Form: f, Error: msg})
		return
	}
	http.Redirect(w, r, "/console/checks/"+url.PathEscape(ck.ID)+"?msg=saved", http.StatusSeeOther)
}

// maxBulk bounds the checks one bulk action changes.
const maxBulk = 200

// checksBulk pauses, resumes or deletes the checks ticked on the
// dashboard (id, repeated; or ids, comma-separated, from the delete
// confirmation), each through the API; deleting asks first.
func (a *Area) checksBulk(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	f := r.PostForm
	action := f.Get("action")
	if action != "pause" && action != "resume" && action != "delete" {
		a.k.NotFound(w, r)
		return
	}
	var ids []string
	for _, id := range append(f["id"], strings.Split(f.Get("ids"), ",")...) {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	back := "/console/checks/"
	if len(ids) == 0 {
		http.Redirect(w, r, back+"?"+url.Values{"error": {"No check selected."}}.Encode(), http.StatusSeeOther)
		return
	}
	if len(ids) > maxBulk {
		ids = ids[:maxBulk]
	}
	if action == "delete" && f.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: fmt.Sprintf("Delete %d checks?", len(ids)),
			Message: "These checks and their history will be deleted: " + strings.Join(ids, ", ") + ".",
			Action:  r.URL.Path, Fields: map[string]string{"action": "delete", "ids": strings.Join(ids, ",")}, Back: back})
		return
	}
	done := 0
	var failed []string
	for _, id := range ids {
		if err := a.b.Act(r.Context(), ss.Subject, id, action); err != nil {
			if errors.Is(err, console.ErrNotFound) {
				err = errors.New("not found")
			}
			failed = append(failed, id+": "+err.Error())
			continue
		}
		done++
	}
	v := url.Values{"msg": {action}, "n": {strconv.Itoa(done)}}
	if len(failed) > 0 {
		v.Set("error", fmt.Sprintf("%d not changed: %s", len(failed), strings.Join(failed, "; ")))
	}
	http.Redirect(w, r, back+"?"+v.Encode(), http.StatusSeeOther)
}

type checkData struct {
	Row   checkRow
	Chart chart
	Runs  []Run  // a page of the history, newest first
	Next  string // the next (older) page's cursor, "" on the last
	Paged bool   // not the first page
	Error string
	Msg   string
	// Alerts are the check's channels that still exist; none: it alerts
	// the user's defaults.
	Alerts []Channel
}

// historyPage is the check page's history page size.
const historyPage = 25

func (a *Area) checkPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	ck, err := a.b.Check(r.Context(), ss.Subject, r.PathValue("id"))
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	recent, err := a.b.Runs(r.Context(), ss.Subject, ck.ID, detailRuns)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	row, err := a.rowOf(r.Context(), ss.Subject, ck, recent)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	before := r.URL.Query().Get("before")
	runs, err := a.b.RunsBefore(r.Context(), ss.Subject, ck.ID, before, historyPage+1)
	if errors.Is(err, console.ErrInvalid) {
		before, err = "", nil
		runs, err = a.b.RunsBefore(r.Context(), ss.Subject, ck.ID, "", historyPage+1)
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := checkData{Row: row, Paged: before != "", Msg: checkMessage(r), Error: r.URL.Query().Get("error")}
	chs, err := a.formChannels(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	for _, c := range chs {
		if slices.Contains(ck.Channels, c.ID) {
			d.Alerts = append(d.Alerts, c)
		}
	}
	if len(runs) > historyPage {
		runs = runs[:historyPage]
		d.Next = runs[historyPage-1].Key
	}
	d.Runs = runs
	d.Chart = responseChart(recent, a.k.Now().Add(-24*time.Hour))
	a.k.Render(w, r, http.StatusOK, "check", d)
}

func (a *Area) checkAct(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	switch action {
	case "pause", "resume", "run", "delete":
	default:
		a.k.NotFound(w, r)
		return
	}
	if _, err := a.b.Check(r.Context(), ss.Subject, id); err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	if action == "delete" && r.PostForm.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: "Delete this check?",
			Message: "The check " + id + " and its history will be deleted.", Action: r.URL.Path,
			Back: "/console/checks/" + url.PathEscape(id)})
		return
	}
	err := a.b.Act(r.Context(), ss.Subject, id, action)
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		http.Redirect(w, r, "/console/checks/"+url.PathEscape(id)+"?"+url.Values{"error": {err.Error()}}.Encode(), http.StatusSeeOther)
		return
	}
	if action == "delete" {
		http.Redirect(w, r, "/console/checks/?msg=delete", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/console/checks/"+url.PathEscape(id)+"?msg="+action, http.StatusSeeOther)
}

// spark is a server-rendered SVG sparkline of response times.
type spark struct {
	Points string // the polyline's points, in a 100×20 view box
	Max    int64  // the slowest response, ms
	Last   int64
}

// sparkline draws runs (oldest first) as a polyline.
func sparkline(runs []Run) spark {
	if len(runs) == 0 {
		return spark{}
	}
	var hi int64 = 1
	for _, r := range runs {
		hi = max(hi, r.ResponseTimeMs)
	}
	var b strings.Builder
	n := len(runs)
	for i, r := range runs {
		x := 100.0
		if n > 1 {
			x = 100 * float64(i) / float64(n-1)
		}
		y := 19 - 18*float64(r.ResponseTimeMs)/float64(hi)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	if n == 1 {
		fmt.Fprintf(&b, " 0.0,%.1f", 19-18*float64(runs[0].ResponseTimeMs)/float64(hi))
	}
	return spark{Points: b.String(), Max: hi, Last: runs[n-1].ResponseTimeMs}
}
