package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Aborter stops crawl runs (crawler.Runner is one): Abort stops the run
// of id if this process runs it, and returns it as it is afterwards;
// store.ErrRunEnded if it had already ended, crawler.ErrNotHere if
// another process runs it.
type Aborter interface {
	Abort(ctx context.Context, id string) (store.Run, error)
}

// RunPage is the body of GET /api/runs.
type RunPage struct {
	Items      []store.Run `json:"items"`
	Total      int         `json:"total"`
	Pagination Pagination  `json:"pagination"`
}

func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "limit", "offset")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var f store.RunFilter
	if f.Limit, err = q.intRange("limit", store.DefaultRunLimit, 1, store.MaxListLimit); err == nil {
		f.Offset, err = q.intRange("offset", 0, 0, maxOffset)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, total, err := s.opts.Store.ListRuns(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, cacheNone, RunPage{Items: items, Total: total, Pagination: Pagination{Limit: f.Limit, Offset: f.Offset}})
}

// runID reads the {id} of a run's path and refuses query parameters
// other than allowed.
func (s *server) runID(w http.ResponseWriter, r *http.Request, allowed ...string) (string, query, bool) {
	id, err := pathID(r)
	var q query
	if err == nil {
		q, err = parseQuery(r, allowed...)
	}
	if err != nil {
		s.fail(w, r, err)
		return "", q, false
	}
	return id, q, true
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.runID(w, r)
	if !ok {
		return
	}
	run, err := s.opts.Store.GetRun(r.Context(), id)
	if err != nil {
		s.runFail(w, r, id, err)
		return
	}
	writeJSON(w, r, http.StatusOK, cacheNone, run)
}

// runFail is fail with a 404 that names the run.
func (s *server) runFail(w http.ResponseWriter, r *http.Request, id string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no crawl run %s", id))
		return
	}
	s.fail(w, r, err)
}

func (s *server) abortRun(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.runID(w, r)
	if !ok {
		return
	}
	if s.opts.Runs == nil {
		writeError(w, http.StatusConflict, "not_here", "this server runs no crawls; abort the run where it runs")
		return
	}
	run, err := s.opts.Runs.Abort(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrRunEnded):
		writeError(w, http.StatusConflict, "run_ended",
			fmt.Sprintf("crawl run %s has already ended (%s); there is nothing to abort", run.ID, run.State))
	case errors.Is(err, crawler.ErrNotHere):
		writeError(w, http.StatusConflict, "not_here",
			fmt.Sprintf("crawl run %s runs on node %s, not on this server; abort it on that node", run.ID, run.Node))
	case err != nil:
		s.runFail(w, r, id, err)
	default:
		writeJSON(w, r, http.StatusOK, cacheNone, run)
	}
}

// exportRun streams the products of a run (store.Runs.RunProducts) as
// JSON lines (the default) or CSV. Once the first bytes are out an error
// can no longer change the status: the connection is then cut, so that
// a client never takes a partial export for a whole one.
func (s *server) exportRun(w http.ResponseWriter, r *http.Request) {
	id, q, ok := s.runID(w, r, "format")
	if !ok {
		return
	}
	format := q.v.Get("format")
	switch format {
	case "":
		format = store.FormatJSONL
	case store.FormatJSONL, store.FormatCSV:
	default:
		s.fail(w, r, badParam("format", "must be jsonl or csv"))
		return
	}
	run, err := s.opts.Store.GetRun(r.Context(), id)
	if err != nil {
		s.runFail(w, r, id, err)
		return
	}
	h := w.Header()
	if format == store.FormatCSV {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/x-ndjson")
	}
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="run-%s-products.%s"`, run.ID, format))
	h.Set("Cache-Control", cacheNone)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	_, err = store.WriteProducts(format, w, func(fn func(store.Product) error) error {
		return s.opts.Store.RunProducts(r.Context(), run.ID, fn)
	})
	if err != nil {
		if r.Context().Err() == nil {
			s.opts.Logger.Error("datashelf api: run export", "run", run.ID, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}
