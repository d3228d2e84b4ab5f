package datashelf

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/quarrydb/quarry/internal/console"
)

// Crawl runs for operators: the runs list on the crawl page, a page per
// run (live counters and log tail while it runs, refreshed by the
// Refresh header, which needs no script), its abort (confirmed, then
// POST/redirect/GET) and the export of its products.

// runsPageSize is how many runs the crawl page lists at a time.
const runsPageSize = 10

// runRefresh is how often (seconds) a running run's page reloads itself.
const runRefresh = "3"

// runsList is one page of the runs list.
type runsList struct {
	Runs  []Run
	Total int
	From  int // 1-based position of the first run shown
	To    int
	Prev  string // query of the newer page ("" on the first)
	Next  string // query of the older page ("" on the last)
}

// listRuns reads the page of runs that the crawl page's "runs" parameter
// (an offset) names.
func (a *Area) listRuns(r *http.Request) (runsList, error) {
	off, err := strconv.Atoi(r.URL.Query().Get("runs"))
	if err != nil || off < 0 {
		off = 0
	}
	rs, total, err := a.crawl.Runs(r.Context(), runsPageSize, off)
	if err != nil {
		return runsList{}, err
	}
	l := runsList{Runs: rs, Total: total}
	if len(rs) > 0 {
		l.From, l.To = off+1, off+len(rs)
	}
	if off > 0 {
		l.Prev = "?" + url.Values{"runs": {strconv.Itoa(max(off-runsPageSize, 0))}}.Encode()
	}
	if off+len(rs) < total {
		l.Next = "?" + url.Values{"runs": {strconv.Itoa(off + runsPageSize)}}.Encode()
	}
	return l, nil
}

type runData struct {
	Run Run
	Msg string
	// Error is an abort the run refused.
	Error string
}

func runPath(id string) string { return "/console/datashelf/runs/" + url.PathEscape(id) }

// operatorRun is the start of every page of one run: the operator's
// session and the run the path names; when either fails it has answered
// (sign-in, 404, or the store's error).
func (a *Area) operatorRun(w http.ResponseWriter, r *http.Request) (Run, bool) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return Run{}, false
	}
	run, err := a.crawl.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return Run{}, false
	}
	return run, true
}

// runPage shows one run; while it runs the page reloads itself.
func (a *Area) runPage(w http.ResponseWriter, r *http.Request) {
	run, ok := a.operatorRun(w, r)
	if !ok {
		return
	}
	d := runData{Run: run}
	switch r.URL.Query().Get("msg") {
	case "aborted":
		d.Msg = "Run aborted."
	case "ended":
		d.Error = "This run had already ended (" + run.State + "): there was nothing to abort."
	case "elsewhere":
		if run.Running() {
			d.Error = "This run runs on " + run.Node + ", not in this server: abort it on that node's console or API."
		}
	}
	if run.Running() {
		w.Header().Set("Refresh", runRefresh)
	}
	a.k.Render(w, r, http.StatusOK, "run", d)
}

// confirmAbort asks to confirm an abort (the path without script: the
// button's data-confirm asks in the browser otherwise).
func (a *Area) confirmAbort(w http.ResponseWriter, r *http.Request) {
	run, ok := a.operatorRun(w, r)
	if !ok {
		return
	}
	a.k.Confirm(w, r, console.Confirm{Title: "Abort this crawl?",
		Message: "The crawl from " + run.StartURL + " stops now. Pages being fetched are dropped; their jobs, and those still queued, are crawled by a later crawl.",
		Action:  runPath(run.ID) + "/abort", Back: runPath(run.ID), Button: "Abort crawl"})
}

// abortRun aborts a run and redirects to its page, which says how it
// went.
func (a *Area) abortRun(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	id := r.PathValue("id")
	if r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, runPath(id)+"/abort", http.StatusSeeOther)
		return
	}
	run, err := a.crawl.AbortRun(r.Context(), id)
	msg := "aborted"
	switch {
	case errors.Is(err, ErrRunEnded):
		msg = "ended"
	case errors.Is(err, ErrRunElsewhere):
		msg = "elsewhere"
	case err != nil:
		a.k.NotFoundOr(w, r, err)
		return
	}
	http.Redirect(w, r, runPath(run.ID)+"?msg="+msg, http.StatusSeeOther)
}

// exportRun streams the run's products as JSON lines or CSV.
func (a *Area) exportRun(w http.ResponseWriter, r *http.Request) {
	run, ok := a.operatorRun(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	ctype := "application/x-ndjson"
	switch format {
	case "jsonl":
	case "csv":
		ctype = "text/csv; charset=utf-8"
	default:
		a.k.Error(w, r, http.StatusBadRequest, "Export refused", "Choose the export's format: format=jsonl (JSON lines) or format=csv.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", `attachment; filename="run-`+run.ID+`-products.`+format+`"`)
	if _, err := a.crawl.ExportRun(r.Context(), run.ID, format, w); err != nil {
		if r.Context().Err() == nil {
			a.k.Logger().Error("datashelf run export", "run", run.ID, "err", err)
		}
		// The status is sent: abort the answer so the client sees a
		// broken download rather than a short file that looks whole.
		panic(http.ErrAbortHandler)
	}
}
