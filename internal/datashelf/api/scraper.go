package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// maxURLLen bounds enqueued URLs.
const maxURLLen = 2048

// maxPriority bounds |priority| of enqueued jobs.
const maxPriority = 1_000_000

// EnqueueRequest is the body of POST /api/scraper/enqueue. Type is
// navigation, category or product; Priority defaults to 0 (higher runs
// first).
type EnqueueRequest struct {
	URL      string `json:"url"`
	Type     string `json:"type"`
	Priority int    `json:"priority"`
}

// QueueStatus is the body of GET /api/scraper/status: the job_queue_stats
// rows and the number of jobs per status.
type QueueStatus struct {
	Stats  []store.QueueStat `json:"stats"`
	Totals map[string]int    `json:"totals"`
}

func (s *server) enqueue(w http.ResponseWriter, r *http.Request) {
	var in EnqueueRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute) && ute.Field != "":
			s.fail(w, r, badParam(ute.Field, "wrong type"))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			s.fail(w, r, badParam(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown field"))
		default:
			s.fail(w, r, badParam("body", "must be a JSON object {url, type, priority}"))
		}
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		s.fail(w, r, badParam("body", "trailing data after the JSON object"))
		return
	}
	u, err := url.Parse(in.URL)
	switch {
	case in.URL == "":
		s.fail(w, r, badParam("url", "required"))
		return
	case len(in.URL) > maxURLLen:
		s.fail(w, r, badParam("url", "too long"))
		return
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		s.fail(w, r, badParam("url", "must be an absolute http or https URL"))
		return
	}
	typ := store.JobType(in.Type)
	switch typ {
	case store.JobNavigation, store.JobCategory, store.JobProduct:
	default:
		s.fail(w, r, badParam("type", "must be navigation, category or product"))
		return
	}
	if in.Priority > maxPriority || in.Priority < -maxPriority {
		s.fail(w, r, badParam("priority", "out of range"))
		return
	}
	job, err := s.opts.Store.Enqueue(r.Context(), store.NewJob{Type: typ, TargetURL: in.URL, Priority: in.Priority})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusAccepted, cacheNone, job)
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	stats, err := s.opts.Store.QueueStats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if stats == nil {
		stats = []store.QueueStat{}
	}
	totals := map[string]int{}
	for _, st := range []store.JobStatus{store.StatusQueued, store.StatusRunning, store.StatusCompleted, store.StatusFailed} {
		totals[string(st)] = 0
	}
	for _, st := range stats {
		totals[string(st.Status)] += st.Count
	}
	writeJSON(w, r, http.StatusOK, cacheNone, QueueStatus{Stats: stats, Totals: totals})
}
