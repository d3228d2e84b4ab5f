package datashelf

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// DataShelf's crawl control for operators: the queue's statistics, the
// throughput over time (an SVG bar chart), the recent failures with their
// errors, retrying failed jobs, and starting a crawl whose progress the
// page shows.

// Job is a crawl job as the crawl page shows it.
type Job struct {
	ID         string
	Type       string
	URL        string
	Attempts   int
	Error      string
	FinishedAt time.Time
}

// CrawlStatus is the progress of this process's crawl.
type CrawlStatus struct {
	Running   bool
	RunID     string
	URL       string
	Started   time.Time
	Finished  time.Time
	Pages     int64
	Products  int64
	Images    int64
	Completed int64
	Failures  int64
	Queued    int64
	PerSecond float64
	// Error is why the last crawl stopped early ("" when it drained).
	Error string
}

// Run is a crawl run as the crawl and run pages show it.
type Run struct {
	ID       string
	StartURL string
	Node     string
	MaxPages int
	// State is running, succeeded, failed or aborted.
	State    string
	Pages    int64
	Products int64
	Failures int64
	// Error is why the run failed or was aborted.
	Error string
	// Log is the run's log tail, oldest first (the run page only).
	Log     []string
	Started time.Time
	Updated time.Time
	// Ended is zero while the run runs.
	Ended time.Time
	// Here is set when this process runs the run (its Abort works here).
	Here bool
}

// Running reports whether the run has not ended.
func (r Run) Running() bool { return r.State == "running" }

// Errors of crawl runs.
var (
	// ErrBusy is a crawl started while another runs.
	ErrBusy = errors.New("datashelf: a crawl is already running")
	// ErrRunEnded is an abort of a run that has ended.
	ErrRunEnded = errors.New("datashelf: the run has ended")
	// ErrRunElsewhere is an abort of a run another process runs.
	ErrRunElsewhere = errors.New("datashelf: the run runs in another process")
)

// CrawlControl is what the crawl page needs of DataShelf besides its store.
type CrawlControl interface {
	// Failures returns up to limit failed jobs, the newest first.
	Failures(ctx context.Context, limit int) ([]Job, error)
	// Throughput counts the jobs finished since since, per bucket.
	Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]ThroughputPoint, error)
	// Retry queues failed jobs again (ids; none: all) and says how many.
	Retry(ctx context.Context, ids []string) (int, error)
	// StartCrawl starts a crawl from startURL in the background and
	// returns its run id (ErrBusy while one runs; an console.ErrInvalid
	// error's message is shown).
	StartCrawl(ctx context.Context, startURL string, maxPages int) (string, error)
	// Crawl is the progress of the crawl running or last run.
	Crawl() CrawlStatus
	// Runs returns a page of crawl runs, the newest first, without their
	// logs, and how many there are.
	Runs(ctx context.Context, limit, offset int) ([]Run, int, error)
	// Run returns one run with its log tail (console.ErrNotFound).
	Run(ctx context.Context, id string) (Run, error)
	// AbortRun stops a run this process runs and returns it, ended;
	// ErrRunEnded (with the run) if it had ended, ErrRunElsewhere (with
	// the run) if another process runs it, console.ErrNotFound.
	AbortRun(ctx context.Context, id string) (Run, error)
	// ExportRun writes the run's products to w in format ("jsonl" or
	// "csv"), streamed, and returns how many.
	ExportRun(ctx context.Context, id, format string, w io.Writer) (int, error)
}

// crawlFailures is how many failures the crawl page lists.
const crawlFailures = 20

// throughput ranges: the chart's span and its buckets.
var crawlRanges = []struct {
	Name   string
	Span   time.Duration
	Bucket time.Duration
}{{"1h", time.Hour, time.Minute}, {"24h", 24 * time.Hour, 30 * time.Minute}, {"7d", 7 * 24 * time.Hour, 4 * time.Hour}}

type crawlData struct {
	Queue    []QueueRow
	Control  bool // CrawlControl is set
	Crawl    CrawlStatus
	Failures []Job
	Runs     runsList
	Chart    bars
	Range    string
	Ranges   []string
	Form     url.Values
	Error    string
	Msg      string
}

func (a *Area) crawlPage(w http.ResponseWriter, r *http.Request, status int, d crawlData) {
	rows, err := a.cat.Queue(r.Context())
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d.Queue = rows
	if cc := a.crawl; cc != nil {
		d.Control = true
		d.Crawl = cc.Crawl()
		// "Crawl started." holds while that crawl runs; once it ended the
		// progress card says how (and why, when it stopped early).
		if d.Msg == msgStarted && !d.Crawl.Running {
			d.Msg = ""
		}
		if d.Runs, err = a.listRuns(r); err != nil {
			a.k.Failure(w, r, err)
			return
		}
		if d.Failures, err = cc.Failures(r.Context(), crawlFailures); err != nil {
			a.k.Failure(w, r, err)
			return
		}
		rg := crawlRanges[0]
		for _, x := range crawlRanges {
			d.Ranges = append(d.Ranges, x.Name)
			if x.Name == r.URL.Query().Get("range") {
				rg = x
			}
		}
		d.Range = rg.Name
		now := a.k.Now()
		pts, err := cc.Throughput(r.Context(), now.Add(-rg.Span), rg.Bucket)
		if err != nil {
			a.k.Failure(w, r, err)
			return
		}
		d.Chart = throughputBars(pts, rg.Bucket)
	}
	if d.Form == nil {
		d.Form = url.Values{"max": {"100"}}
	}
	a.k.Render(w, r, status, "crawl", d)
}

func (a *Area) crawlStart(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	f := r.PostForm
	startURL := strings.TrimSpace(f.Get("url"))
	maxPages, err := strconv.Atoi(strings.TrimSpace(f.Get("max")))
	if err != nil || maxPages < 0 {
		a.crawlPage(w, r, http.StatusBadRequest, crawlData{Form: f, Error: "The page limit must be a whole number (0 for no limit)."})
		return
	}
	_, err = a.crawl.StartCrawl(r.Context(), startURL, maxPages)
	switch {
	case errors.Is(err, ErrBusy):
		a.crawlPage(w, r, http.StatusConflict, crawlData{Form: f, Error: "A crawl is already running; wait for it to finish."})
		return
	case errors.Is(err, console.ErrInvalid):
		a.crawlPage(w, r, http.StatusBadRequest, crawlData{Form: f, Error: console.InvalidMessage(err)})
		return
	case err != nil:
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/datashelf/crawl?msg=started", http.StatusSeeOther)
}

func (a *Area) crawlRetry(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	var ids []string
	if id := r.PostForm.Get("id"); id != "" {
		ids = []string{id}
	}
	n, err := a.crawl.Retry(r.Context(), ids)
	if errors.Is(err, console.ErrInvalid) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/datashelf/crawl?msg=retried&n="+strconv.Itoa(n), http.StatusSeeOther)
}

// msgStarted is the crawl page's message after a crawl started.
const msgStarted = "Crawl started."

func crawlMessage(r *http.Request) string {
	q := r.URL.Query()
	switch q.Get("msg") {
	case "started":
		return msgStarted
	case "retried":
		n := q.Get("n")
		if _, err := strconv.Atoi(n); err != nil {
			n = "0"
		}
		return n + " failed job(s) queued again; a crawl processes them."
	}
	return ""
}
