package checks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
)

// Window is a maintenance window as its page shows it.
type Window struct {
	ID   string
	Name string
	// Start and End bound a one-off window (zero for a weekly one).
	Start, End time.Time
	// Weekly is the recurrence of a weekly window, nil for a one-off one.
	Weekly   *checksstore.Weekly
	CheckIDs []string
	Tags     []string
	// Active is whether the window is in force now.
	Active bool
}

// WindowInput is the new-window form, read: a one-off window (Start,
// End) or a weekly one, for CheckIDs and/or Tags (neither: all checks).
type WindowInput struct {
	Name       string
	Start, End time.Time
	Weekly     *checksstore.Weekly
	CheckIDs   []string
	Tags       []string
}

// MaintenanceBackend is what the maintenance page needs of Checks, for
// the session's user. Errors of CreateWindow are the API's messages.
type MaintenanceBackend interface {
	Windows(ctx context.Context, userID string) ([]Window, error)
	CreateWindow(ctx context.Context, userID string, in WindowInput) error
	DeleteWindow(ctx context.Context, userID, id string) error
}

// mountMaintenance adds the maintenance page's routes.
func (a *Area) mountMaintenance(m *http.ServeMux) {
	m.HandleFunc("GET /console/checks/maintenance", a.maintenancePage)
	m.HandleFunc("POST /console/checks/maintenance", a.maintenanceCreate)
	m.HandleFunc("POST /console/checks/maintenance/{id}/delete", a.maintenanceDelete)
}

// windowRow is a window with what it covers in words.
type windowRow struct {
	Window
	When  string // a weekly window's recurrence in words
	Scope string // "all checks", or the tags
	// Ended is whether a one-off window is over (it stays listed until
	// deleted).
	Ended bool
	Names []string // the names of the checks it names
}

type maintenanceData struct {
	Windows []windowRow
	Checks  []Check // the user's, for the form
	Days    []string
	Form    url.Values
	Error   string
	Msg     string
}

func (a *Area) maintenancePage(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "checks"); !ok {
		return
	}
	q := r.URL.Query()
	d := maintenanceData{Form: url.Values{"kind": {"once"}, "scope": {"all"}, "duration": {"60"}, "day": {"sun"}}, Error: q.Get("error"),
		Msg: map[string]string{"created": "Maintenance window created.", "delete": "Maintenance window deleted."}[q.Get("msg")]}
	a.renderMaintenance(w, r, http.StatusOK, d)
}

func (a *Area) renderMaintenance(w http.ResponseWriter, r *http.Request, status int, d maintenanceData) {
	ss, _ := a.k.Session(w, r)
	mb, ok := optionalBackend[MaintenanceBackend](a, w, r)
	if !ok {
		return
	}
	ws, err := mb.Windows(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	cks, err := a.b.Checks(r.Context(), ss.Subject, Filter{})
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	slices.SortFunc(cks, func(a, b Check) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	d.Checks, d.Days = cks, checksstore.Weekdays
	names := map[string]string{}
	for _, c := range cks {
		names[c.ID] = c.Name
	}
	for _, w := range ws {
		row := windowRow{Window: w, Scope: "all checks", Ended: w.Weekly == nil && !w.End.After(a.k.Now())}
		if wk := w.Weekly; wk != nil {
			row.When = fmt.Sprintf("every %s at %s for %d min (%s)", wk.Day, wk.Start, wk.DurationMinutes, cmpOr(wk.Timezone, "UTC"))
		}
		if len(w.Tags) > 0 || len(w.CheckIDs) > 0 {
			row.Scope = ""
			if len(w.Tags) > 0 {
				row.Scope = "tags " + strings.Join(w.Tags, ", ")
			}
		}
		for _, id := range w.CheckIDs {
			row.Names = append(row.Names, cmpOr(names[id], id))
		}
		d.Windows = append(d.Windows, row)
	}
	a.k.Render(w, r, status, "maintenance", d)
}

// cmpOr is s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// localLayouts are the forms a one-off window's start and end are read
// in (a browser's datetime-local field sends the first).
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// windowOf reads the new-window form; msg is what is wrong with it. A
// one-off window's times are read in the form's time zone.
func windowOf(f url.Values) (in WindowInput, msg string) {
	in.Name = strings.TrimSpace(f.Get("name"))
	tz := strings.TrimSpace(f.Get("timezone"))
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil || strings.EqualFold(tz, "local") {
			return in, fmt.Sprintf("Time zone: %q is not a time zone name such as Europe/Paris or UTC.", tz)
		}
	}
	switch f.Get("kind") {
	case "weekly":
		mins, err := strconv.Atoi(strings.TrimSpace(f.Get("duration")))
		if err != nil {
			return in, fmt.Sprintf("Duration must be a whole number of minutes, not %q.", f.Get("duration"))
		}
		in.Weekly = &checksstore.Weekly{Day: f.Get("day"), Start: strings.TrimSpace(f.Get("weeklyStart")), DurationMinutes: mins, Timezone: loc.String()}
	default:
		read := func(label, key string) (time.Time, string) {
			v := strings.TrimSpace(f.Get(key))
			if v == "" {
				return time.Time{}, label + ": required (a date and time such as 2026-12-01 02:00)."
			}
			for _, l := range localLayouts {
				if t, err := time.ParseInLocation(l, v, loc); err == nil {
					return t, ""
				}
			}
			return time.Time{}, fmt.Sprintf("%s: want a date and time such as 2026-12-01 02:00, not %q.", label, v)
		}
		if in.Start, msg = read("Start", "start"); msg != "" {
			return in, msg
		}
		if in.End, msg = read("End", "end"); msg != "" {
			return in, msg
		}
	}
	switch f.Get("scope") {
	case "tags":
		for _, t := range strings.Split(f.Get("tags"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				in.Tags = append(in.Tags, t)
			}
		}
		if len(in.Tags) == 0 {
			return in, "Tags: give at least one tag, or choose all checks."
		}
	case "checks":
		for _, id := range f["check"] {
			if id = strings.TrimSpace(id); id != "" && !slices.Contains(in.CheckIDs, id) {
				in.CheckIDs = append(in.CheckIDs, id)
			}
		}
		if len(in.CheckIDs) == 0 {
			return in, "Checks: tick at least one check, or choose all checks."
		}
	}
	return in, ""
}

func (a *Area) maintenanceCreate(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	mb, ok := optionalBackend[MaintenanceBackend](a, w, r)
	if !ok {
		return
	}
	f := r.PostForm
	in, msg := windowOf(f)
	if msg == "" {
		if err := mb.CreateWindow(r.Context(), ss.Subject, in); err != nil {
			msg = err.Error()
		}
	}
	if msg != "" {
		a.renderMaintenance(w, r, http.StatusBadRequest, maintenanceData{Form: f, Error: msg})
		return
	}
	a.dropStatus(ss.Subject)
	http.Redirect(w, r, "/console/checks/maintenance?msg=created", http.StatusSeeOther)
}

func (a *Area) maintenanceDelete(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	mb, ok := optionalBackend[MaintenanceBackend](a, w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if r.PostForm.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: "Delete this maintenance window?",
			Message: "The window " + id + " will be deleted; the alerts it silences are sent again.", Action: r.URL.Path,
			Back: "/console/checks/maintenance"})
		return
	}
	err := mb.DeleteWindow(r.Context(), ss.Subject, id)
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		http.Redirect(w, r, "/console/checks/maintenance?"+url.Values{"error": {err.Error()}}.Encode(), http.StatusSeeOther)
		return
	}
	a.dropStatus(ss.Subject)
	http.Redirect(w, r, "/console/checks/maintenance?msg=delete", http.StatusSeeOther)
}

var _ MaintenanceBackend = (*Adapter)(nil)

// Windows implements MaintenanceBackend through GET /v1/me/maintenance.
func (k *Adapter) Windows(ctx context.Context, userID string) ([]Window, error) {
	var ms []struct {
		checksstore.Maintenance
		Active bool `json:"active"`
	}
	if err := k.call(ctx, userID, http.MethodGet, "/v1/me/maintenance", nil, &ms); err != nil {
		return nil, err
	}
	out := make([]Window, len(ms))
	for i, m := range ms {
		out[i] = Window{ID: m.ID, Name: m.Name, Weekly: m.Weekly, CheckIDs: m.CheckIDs, Tags: m.Tags, Active: m.Active}
		if m.Weekly == nil {
			out[i].Start, _ = time.Parse(time.RFC3339, m.Start)
			out[i].End, _ = time.Parse(time.RFC3339, m.End)
		}
	}
	return out, nil
}

// CreateWindow implements MaintenanceBackend through POST
// /v1/me/maintenance.
func (k *Adapter) CreateWindow(ctx context.Context, userID string, in WindowInput) error {
	body := map[string]any{"name": in.Name, "checkIds": in.CheckIDs, "tags": in.Tags}
	if in.Weekly != nil {
		body["weekly"] = in.Weekly
	} else {
		body["start"], body["end"] = in.Start.Format(time.RFC3339), in.End.Format(time.RFC3339)
	}
	return k.call(ctx, userID, http.MethodPost, "/v1/me/maintenance", body, nil)
}

// DeleteWindow implements MaintenanceBackend.
func (k *Adapter) DeleteWindow(ctx context.Context, userID, id string) error {
	return k.call(ctx, userID, http.MethodDelete, "/v1/me/maintenance/"+url.PathEscape(id), nil, nil)
}
