package checks

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
)

// IncidentBackend is what the incidents page needs of Checks beyond
// Backend's Incidents, for the session's user. Errors are the API's
// messages; another user's incident is console.ErrNotFound.
type IncidentBackend interface {
	// CreateIncident opens an incident with its first update.
	CreateIncident(ctx context.Context, userID, title, status, message string) error
	// UpdateIncident appends an update; its status becomes the
	// incident's (resolved resolves it).
	UpdateIncident(ctx context.Context, userID, id, status, message string) error
}

// mountIncidents adds the incidents page's routes.
func (a *Area) mountIncidents(m *http.ServeMux) {
	m.HandleFunc("GET /console/checks/incidents", a.incidentsPage)
	m.HandleFunc("POST /console/checks/incidents", a.incidentCreate)
	m.HandleFunc("POST /console/checks/incidents/{id}/updates", a.incidentUpdate)
}

type incidentsData struct {
	Open     []statusIncident // open incidents, their timelines newest first
	Resolved []statusIncident
	Statuses []string
	Form     url.Values // the new-incident form
	// UpdateID is the incident whose update form UpdateForm refills
	// after a refusal.
	UpdateID   string
	UpdateForm url.Values
	Error      string
	Msg        string
}

// optionalBackend returns the area's backend as B, the interface of an
// optional part of Checks (incidents, maintenance windows), or answers
// 404 when the backend does not offer that part.
func optionalBackend[B any](a *Area, w http.ResponseWriter, r *http.Request) (B, bool) {
	b, ok := a.b.(B)
	if !ok {
		a.k.NotFound(w, r)
	}
	return b, ok
}

func (a *Area) incidentsPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "checks"); !ok {
		return
	}
	q := r.URL.Query()
	d := incidentsData{Form: url.Values{"status": {checksstore.IncidentInvestigating}}, Error: q.Get("error"),
		Msg: map[string]string{"created": "Incident published.", "updated": "Update published.", "resolved": "Incident resolved."}[q.Get("msg")]}
	a.renderIncidents(w, r, http.StatusOK, d)
}

func (a *Area) renderIncidents(w http.ResponseWriter, r *http.Request, status int, d incidentsData) {
	ss, _ := a.k.Session(w, r)
	if _, ok := optionalBackend[IncidentBackend](a, w, r); !ok {
		return
	}
	ins, err := a.b.Incidents(r.Context(), ss.Subject)
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	for _, in := range ins {
		v := statusIncident{Incident: in, Timeline: slices.Clone(in.Updates)}
		slices.Reverse(v.Timeline)
		if in.Status == checksstore.IncidentResolved {
			d.Resolved = append(d.Resolved, v)
		} else {
			d.Open = append(d.Open, v)
		}
	}
	d.Statuses = checksstore.IncidentStatuses
	a.k.Render(w, r, status, "incidents", d)
}

// incidentStatus reads a form's status: the resolve button's, else the
// select's.
func incidentStatus(f url.Values) string {
	if f.Get("resolve") == "yes" {
		return checksstore.IncidentResolved
	}
	return strings.TrimSpace(f.Get("status"))
}

func (a *Area) incidentCreate(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	ib, ok := optionalBackend[IncidentBackend](a, w, r)
	if !ok {
		return
	}
	f := r.PostForm
	if err := ib.CreateIncident(r.Context(), ss.Subject, strings.TrimSpace(f.Get("title")), incidentStatus(f), strings.TrimSpace(f.Get("message"))); err != nil {
		a.renderIncidents(w, r, http.StatusBadRequest, incidentsData{Form: f, Error: err.Error()})
		return
	}
	a.dropStatus(ss.Subject)
	http.Redirect(w, r, "/console/checks/incidents?msg=created", http.StatusSeeOther)
}

func (a *Area) incidentUpdate(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "checks")
	if !ok {
		return
	}
	ib, ok := optionalBackend[IncidentBackend](a, w, r)
	if !ok {
		return
	}
	id, f := r.PathValue("id"), r.PostForm
	st := incidentStatus(f)
	err := ib.UpdateIncident(r.Context(), ss.Subject, id, st, strings.TrimSpace(f.Get("message")))
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		a.renderIncidents(w, r, http.StatusBadRequest, incidentsData{Form: url.Values{"status": {checksstore.IncidentInvestigating}},
			UpdateID: id, UpdateForm: f, Error: err.Error()})
		return
	}
	a.dropStatus(ss.Subject)
	msg := "updated"
	if st == checksstore.IncidentResolved {
		msg = "resolved"
	}
	http.Redirect(w, r, "/console/checks/incidents?msg="+msg, http.StatusSeeOther)
}

var _ IncidentBackend = (*Adapter)(nil)

// CreateIncident implements IncidentBackend through POST
// /v1/me/incidents.
func (k *Adapter) CreateIncident(ctx context.Context, userID, title, status, message string) error {
	return k.call(ctx, userID, http.MethodPost, "/v1/me/incidents", map[string]string{"title": title, "status": status, "message": message}, nil)
}

// UpdateIncident implements IncidentBackend through POST
// /v1/me/incidents/{id}/updates.
func (k *Adapter) UpdateIncident(ctx context.Context, userID, id, status, message string) error {
	return k.call(ctx, userID, http.MethodPost, "/v1/me/incidents/"+url.PathEscape(id)+"/updates", map[string]string{"status": status, "message": message}, nil)
}
