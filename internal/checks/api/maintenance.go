package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Bounds of a maintenance window.
const (
	// MaxMaintenanceDuration bounds a one-off window.
	MaxMaintenanceDuration = 30 * 24 * time.Hour
	// MaxWeeklyMinutes bounds a weekly window's duration: one day, so
	// that occurrences never overlap and a check is never silenced for
	// good by one window.
	MaxWeeklyMinutes = 24 * 60
	// maxMaintenanceChecks bounds the check ids a window names.
	maxMaintenanceChecks = 100
)

// maintenanceRoutes adds the maintenance window routes to h's mux.
func (h *Handler) maintenanceRoutes() {
	h.mux.HandleFunc("POST /v1/me/maintenance", h.createMaintenance)
	h.mux.HandleFunc("GET /v1/me/maintenance", h.listMaintenance)
	h.mux.HandleFunc("DELETE /v1/me/maintenance/{id}", h.deleteMaintenance)
}

// maintenanceInput is the body of POST /v1/me/maintenance.
type maintenanceInput struct {
	Name     string          `json:"name"`
	Start    string          `json:"start"`
	End      string          `json:"end"`
	Weekly   *store.Weekly   `json:"weekly"`
	CheckIDs []string        `json:"checkIds"`
	Tags     json.RawMessage `json:"tags"`
}

// maintenanceView is a window as the API answers it, with whether it is
// in force now.
type maintenanceView struct {
	store.Maintenance
	Active bool `json:"active"`
}

// invalid is a validation error: a 400 with the message.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{store.ErrInvalid}, args...)...)
}

// validMaintenance checks a window against the bounds and the user's
// checks, at now; the error is a 400's message naming the field.
func (h *Handler) validMaintenance(r *http.Request, in maintenanceInput, now time.Time) (store.Maintenance, error) {
	name, err := validName(in.Name)
	if err != nil {
		return store.Maintenance{}, err
	}
	if name == "" {
		return store.Maintenance{}, invalid("name: required")
	}
	m := store.Maintenance{Name: name}
	switch {
	case in.Weekly != nil && (in.Start != "" || in.End != ""):
		return m, invalid("give either start and end (a one-off window) or weekly, not both")
	case in.Weekly == nil && in.Start == "" && in.End == "":
		return m, invalid(`start and end (RFC 3339, such as "2026-12-01T02:00:00Z") or weekly ({day, start, durationMinutes, timezone}): required`)
	case in.Weekly == nil:
		start, err := time.Parse(time.RFC3339, in.Start)
		if err != nil {
			return m, invalid("start: %q is not an RFC 3339 time, such as \"2026-12-01T02:00:00Z\"", in.Start)
		}
		end, err := time.Parse(time.RFC3339, in.End)
		if err != nil {
			return m, invalid("end: %q is not an RFC 3339 time, such as \"2026-12-01T04:00:00+01:00\"", in.End)
		}
		switch {
		case !end.After(start):
			return m, invalid("end must be after start")
		case end.Sub(start) > MaxMaintenanceDuration:
			return m, invalid("a window lasts at most %s (this one lasts %s)", human(MaxMaintenanceDuration), human(end.Sub(start).Round(time.Minute)))
		case !end.After(now):
			return m, invalid("end is in the past: the window would never apply")
		}
		m.Start, m.End = start.Format(time.RFC3339), end.Format(time.RFC3339)
	default:
		w := *in.Weekly
		w.Day = strings.ToLower(strings.TrimSpace(w.Day))
		if len(w.Day) > 3 {
			w.Day = w.Day[:3] // "sunday" is "sun"
		}
		if !slices.Contains(store.Weekdays, w.Day) {
			return m, invalid("weekly.day: %q is not one of %s", in.Weekly.Day, strings.Join(store.Weekdays, ", "))
		}
		if t, err := time.Parse("15:04", w.Start); err != nil || t.Format("15:04") != w.Start {
			return m, invalid("weekly.start: %q is not a time of day as HH:MM (24-hour, such as \"02:00\")", w.Start)
		}
		if w.DurationMinutes < 1 || w.DurationMinutes > MaxWeeklyMinutes {
			return m, invalid("weekly.durationMinutes must be between 1 and %d (one day)", MaxWeeklyMinutes)
		}
		w.Timezone = strings.TrimSpace(w.Timezone)
		if w.Timezone == "" {
			w.Timezone = "UTC"
		}
		if _, err := time.LoadLocation(w.Timezone); err != nil || w.Timezone == "Local" {
			return m, invalid("weekly.timezone: %q is not an IANA time zone, such as \"Europe/Paris\" or \"UTC\"", w.Timezone)
		}
		m.Weekly = &w
	}
	if len(in.CheckIDs) > maxMaintenanceChecks {
		return m, invalid("checkIds: at most %d (got %d)", maxMaintenanceChecks, len(in.CheckIDs))
	}
	for i, id := range in.CheckIDs {
		if slices.Contains(in.CheckIDs[:i], id) {
			continue
		}
		if _, err := h.st.GetCheck(r.Context(), user(r).ID, id); errors.Is(err, store.ErrNotFound) {
			return m, invalid("checkIds[%d]: %q is not one of your checks", i, id)
		} else if err != nil {
			return m, err
		}
		m.CheckIDs = append(m.CheckIDs, id)
	}
	if len(in.Tags) > 0 && string(in.Tags) != "null" {
		if m.Tags, err = validTags(in.Tags); err != nil {
			return m, err
		}
	}
	return m, nil
}

func (h *Handler) createMaintenance(w http.ResponseWriter, r *http.Request) {
	var in maintenanceInput
	if !jsonhttp.Decode(w, r, &in, 64<<10, true) {
		return
	}
	m, err := h.validMaintenance(r, in, h.o.Now())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m, err = h.st.CreateMaintenance(r.Context(), user(r).ID, m)
	if errors.Is(err, store.ErrLimit) {
		jsonhttp.Error(w, http.StatusBadRequest, fmt.Sprintf("at most %d maintenance windows: delete one first", store.MaxMaintenance))
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, maintenanceView{Maintenance: m, Active: m.ActiveAt(h.o.Now())})
}

func (h *Handler) listMaintenance(w http.ResponseWriter, r *http.Request) {
	ms, err := h.st.ListMaintenance(r.Context(), user(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.o.Now()
	out := make([]maintenanceView, len(ms))
	for i, m := range ms {
		out[i] = maintenanceView{Maintenance: m, Active: m.ActiveAt(now)}
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) deleteMaintenance(w http.ResponseWriter, r *http.Request) {
	err := h.st.DeleteMaintenance(r.Context(), user(r).ID, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		jsonhttp.Error(w, http.StatusNotFound, "maintenance window not found")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
