package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Bounds of a status page's settings and incidents.
const (
	// MaxPageTitleRunes bounds a status page's title, a group's name and
	// an incident's title.
	MaxPageTitleRunes = 100
	// MaxPageTextRunes bounds a status page's description and an
	// incident update's message.
	MaxPageTextRunes = 2000
	// MaxPageGroups is the most groups a status page has.
	MaxPageGroups = 20
	// maxGroupChecks bounds the check ids a group names.
	maxGroupChecks = 100
)

// statusPageRoutes adds the status page and incident routes to h's mux.
func (h *Handler) statusPageRoutes() {
	h.mux.HandleFunc("GET /v1/me/statuspage", h.getStatusPage)
	h.mux.HandleFunc("PUT /v1/me/statuspage", h.putStatusPage)
	h.mux.HandleFunc("POST /v1/me/incidents", h.createIncident)
	h.mux.HandleFunc("GET /v1/me/incidents", h.listIncidents)
	h.mux.HandleFunc("GET /v1/me/incidents/{id}", h.getIncident)
	h.mux.HandleFunc("POST /v1/me/incidents/{id}/updates", h.addIncidentUpdate)
}

// StatusPagePath is where the console serves the public status page of
// token.
func StatusPagePath(token string) string { return "/console/status/" + token }

// statusPageView is GET and PUT /v1/me/statuspage's answer.
type statusPageView struct {
	Enabled bool `json:"enabled"`
	// Token and URL are the page's secret address, "" when off.
	Token string `json:"token"`
	URL   string `json:"url"`
	store.StatusPageSettings
}

// statusPageInput is the body of PUT /v1/me/statuspage.
type statusPageInput struct {
	Enabled     *bool  `json:"enabled"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Groups      []struct {
		Name     string          `json:"name"`
		Tags     json.RawMessage `json:"tags"`
		CheckIDs []string        `json:"checkIds"`
	} `json:"groups"`
	// NewToken replaces the page's address (the old one answers 404).
	NewToken bool `json:"newToken"`
}

// validText trims s and checks it: at most max characters, no control
// characters but newlines when multiline; the error names field.
func validText(field, s string, max int, multiline bool) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", invalid("%s must be UTF-8", field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", invalid("%s must be at most %d characters (it has %d)", field, max, n)
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t'))
	}) >= 0 {
		return "", invalid("%s must not contain control characters", field)
	}
	return s, nil
}

func (h *Handler) validStatusPage(r *http.Request, in statusPageInput) (store.StatusPageSettings, error) {
	var (
		p   store.StatusPageSettings
		err error
	)
	if p.Title, err = validText("title", in.Title, MaxPageTitleRunes, false); err != nil {
		return p, err
	}
	if p.Description, err = validText("description", in.Description, MaxPageTextRunes, true); err != nil {
		return p, err
	}
	if len(in.Groups) > MaxPageGroups {
		return p, invalid("groups: at most %d (got %d)", MaxPageGroups, len(in.Groups))
	}
	p.Groups = []store.StatusGroup{}
	for i, g := range in.Groups {
		f := fmt.Sprintf("groups[%d]", i)
		sg := store.StatusGroup{Tags: []string{}, CheckIDs: []string{}}
		if sg.Name, err = validText(f+".name", g.Name, MaxPageTitleRunes, false); err != nil {
			return p, err
		}
		if sg.Name == "" {
			return p, invalid("%s.name: required", f)
		}
		if len(g.Tags) > 0 && string(g.Tags) != "null" {
			tags, err := validTags(g.Tags)
			if err != nil {
				return p, invalid("%s.%s", f, plainReason(err))
			}
			if tags != nil {
				sg.Tags = tags
			}
		}
		if len(g.CheckIDs) > maxGroupChecks {
			return p, invalid("%s.checkIds: at most %d (got %d)", f, maxGroupChecks, len(g.CheckIDs))
		}
		for j, id := range g.CheckIDs {
			if slices.Contains(sg.CheckIDs, id) {
				continue
			}
			if _, err := h.st.GetCheck(r.Context(), user(r).ID, id); errors.Is(err, store.ErrNotFound) {
				return p, invalid("%s.checkIds[%d]: %q is not one of your checks", f, j, id)
			} else if err != nil {
				return p, err
			}
			sg.CheckIDs = append(sg.CheckIDs, id)
		}
		if len(sg.Tags) == 0 && len(sg.CheckIDs) == 0 {
			return p, invalid("%s: give tags or checkIds (the checks the group shows)", f)
		}
		p.Groups = append(p.Groups, sg)
	}
	return p, nil
}

// statusPageURL is the absolute address of token's page as r reached
// this server.
func statusPageURL(r *http.Request, token string) string {
	if token == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host + StatusPagePath(token)
}

func (h *Handler) statusPageView(r *http.Request, token string, p store.StatusPageSettings) statusPageView {
	return statusPageView{Enabled: token != "", Token: token, URL: statusPageURL(r, token), StatusPageSettings: p}
}

func (h *Handler) getStatusPage(w http.ResponseWriter, r *http.Request) {
	p, err := h.st.StatusPageSettings(r.Context(), user(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, h.statusPageView(r, user(r).StatusPage, p))
}

// putStatusPage replaces the page's settings and turns it on or off. An
// enabled page keeps its token (its address goes on working) unless
// newToken asks for another.
func (h *Handler) putStatusPage(w http.ResponseWriter, r *http.Request) {
	var in statusPageInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	if in.Enabled == nil {
		jsonhttp.Error(w, http.StatusBadRequest, "enabled: required (true publishes the page, false turns it off)")
		return
	}
	p, err := h.validStatusPage(r, in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u := user(r)
	if err := h.st.PutStatusPageSettings(r.Context(), u.ID, p); err != nil {
		h.fail(w, r, err)
		return
	}
	token := u.StatusPage
	switch {
	case !*in.Enabled && token != "":
		err, token = h.st.DisableStatusPage(r.Context(), u.ID), ""
	case *in.Enabled && (token == "" || in.NewToken):
		token, err = h.st.EnableStatusPage(r.Context(), u.ID)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, h.statusPageView(r, token, p))
}

// incidentInput is the body of POST /v1/me/incidents and of an update.
type incidentInput struct {
	Title   string `json:"title"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func validUpdate(in incidentInput) (store.IncidentUpdate, error) {
	st := strings.ToLower(strings.TrimSpace(in.Status))
	if st == "" {
		return store.IncidentUpdate{}, invalid("status: required, one of %s", strings.Join(store.IncidentStatuses, ", "))
	}
	if !slices.Contains(store.IncidentStatuses, st) {
		return store.IncidentUpdate{}, invalid("status: %q is not one of %s", in.Status, strings.Join(store.IncidentStatuses, ", "))
	}
	msg, err := validText("message", in.Message, MaxPageTextRunes, true)
	if err != nil {
		return store.IncidentUpdate{}, err
	}
	if msg == "" {
		return store.IncidentUpdate{}, invalid("message: required (what the page's readers are told)")
	}
	return store.IncidentUpdate{Status: st, Message: msg}, nil
}

// incidentFail answers an incident request's store error.
func (h *Handler) incidentFail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonhttp.Error(w, http.StatusNotFound, "incident not found")
	case errors.Is(err, store.ErrLimit):
		jsonhttp.Error(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), store.ErrLimit.Error()+": "))
	default:
		h.fail(w, r, err)
	}
}

func (h *Handler) createIncident(w http.ResponseWriter, r *http.Request) {
	var in incidentInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	title, err := validText("title", in.Title, MaxPageTitleRunes, false)
	if err == nil && title == "" {
		err = invalid("title: required")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	u, err := validUpdate(in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	inc, err := h.st.CreateIncident(r.Context(), user(r).ID, title, u)
	if err != nil {
		h.incidentFail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, inc)
}

func (h *Handler) addIncidentUpdate(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	if _, err := h.st.GetIncident(r.Context(), user(r).ID, r.PathValue("id")); err != nil {
		h.incidentFail(w, r, err)
		return
	}
	u, err := validUpdate(incidentInput{Status: in.Status, Message: in.Message})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	inc, err := h.st.AddIncidentUpdate(r.Context(), user(r).ID, r.PathValue("id"), u)
	if err != nil {
		h.incidentFail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, inc)
}

func (h *Handler) listIncidents(w http.ResponseWriter, r *http.Request) {
	l, err := h.st.ListIncidents(r.Context(), user(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if l == nil {
		l = []store.Incident{}
	}
	jsonhttp.Write(w, http.StatusOK, l)
}

func (h *Handler) getIncident(w http.ResponseWriter, r *http.Request) {
	inc, err := h.st.GetIncident(r.Context(), user(r).ID, r.PathValue("id"))
	if err != nil {
		h.incidentFail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, inc)
}
