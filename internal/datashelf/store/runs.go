package store

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// ErrRunEnded reports an update or an end of a crawl run that has already
// ended (succeeded, failed or aborted): a run ends once.
var ErrRunEnded = errors.New("store: crawl run has ended")

// Bounds of a crawl run's record.
const (
	// RunLogLines is how many log lines a run keeps: the last ones.
	RunLogLines = 200
	// RunLogLineBytes bounds one log line; a longer one is cut (at a
	// UTF-8 boundary) and ends with "…".
	RunLogLineBytes = 500
	// MaxRunURLBytes bounds a run's start URL.
	MaxRunURLBytes = 2048
	// DefaultRunLimit is ListRuns' page size when RunFilter.Limit is 0.
	DefaultRunLimit = 20
	// RunProductsPage is how many products RunProducts reads per query.
	RunProductsPage = 200
)

// RunState is crawl_run.state.
type RunState string

// Crawl run states: a run is running until it ends in one of the other
// three, once.
const (
	RunRunning   RunState = "running"
	RunSucceeded RunState = "succeeded"
	RunFailed    RunState = "failed"
	RunAborted   RunState = "aborted"
)

// Ended reports whether s is one of the final states.
func (s RunState) Ended() bool { return s == RunSucceeded || s == RunFailed || s == RunAborted }

// Run is a row of crawl_run: one crawl, from its start to its end.
type Run struct {
	ID       string   `json:"id"`
	StartURL string   `json:"start_url"`
	Node     string   `json:"node"`
	MaxPages int      `json:"max_pages"`
	State    RunState `json:"state"`
	RunCounters
	LastError *string `json:"last_error"`
	// Log is the run's last lines, oldest first (at most RunLogLines).
	// ListRuns leaves it nil.
	Log       []string   `json:"log,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	EndedAt   *time.Time `json:"ended_at"`
}

// RunCounters are a run's counters: pages fetched (any status), products
// stored and failed job attempts.
type RunCounters struct {
	Pages    int64 `json:"pages"`
	Products int64 `json:"products"`
	Failures int64 `json:"failures"`
}

// NewRun is StartRun's input. Node names the process running the crawl
// (the crawler's worker id), which alone can abort it.
type NewRun struct {
	StartURL string
	Node     string
	MaxPages int
}

// RunProgress is what a running crawl reports: its counters and its log
// tail, which replace the stored ones.
type RunProgress struct {
	RunCounters
	// Log is the run's last lines, oldest first; only the last
	// RunLogLines are kept, each cut to RunLogLineBytes.
	Log []string
}

// RunFilter pages through runs, newest first. Limit 0 means
// DefaultRunLimit; at most MaxListLimit.
type RunFilter struct {
	Limit  int
	Offset int
}

// Runs is the crawl_run table: the record of each crawl. A run is written
// by the one process that runs it (Node): started, updated as it goes,
// ended once.
type Runs interface {
	// StartRun records a crawl that starts now, running.
	StartRun(ctx context.Context, in NewRun) (Run, error)
	// UpdateRun replaces the counters and log of a running run and
	// returns it (updated_at = now, the run's heartbeat). It returns
	// ErrRunEnded if the run has ended, ErrNotFound if there is none.
	UpdateRun(ctx context.Context, id string, p RunProgress) (Run, error)
	// EndRun ends a running run in state (succeeded, failed or aborted)
	// with its final counters and log, and errMsg as last_error ("" for
	// none). Like UpdateRun it returns ErrRunEnded or ErrNotFound.
	EndRun(ctx context.Context, id string, state RunState, p RunProgress, errMsg string) (Run, error)
	// GetRun returns one run with its log, or ErrNotFound.
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns one page of runs, the newest (by started_at, then
	// id) first, without their logs, and how many there are.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, int, error)
	// EndStaleRuns fails the running runs not updated for idle (their
	// process stopped without ending them), with msg as last_error, and
	// returns how many.
	EndStaleRuns(ctx context.Context, idle time.Duration, msg string) (int, error)
	// RunProducts calls fn with each product run id touched: those whose
	// last_scraped_at lies between the run's start and its end (now while
	// it runs), ordered by last_scraped_at then id, read RunProductsPage
	// at a time, no connection held while fn runs. A product scraped
	// again later belongs to the later run. ErrNotFound if there is no
	// such run.
	RunProducts(ctx context.Context, id string, fn func(Product) error) error
}

// ValidateRun checks a NewRun.
func ValidateRun(in NewRun) error {
	switch {
	case in.StartURL == "" || len(in.StartURL) > MaxRunURLBytes:
		return fmt.Errorf("%w: a run's start URL must be 1 to %d bytes", ErrInvalid, MaxRunURLBytes)
	case in.Node == "":
		return fmt.Errorf("%w: a run needs the node running it", ErrInvalid)
	case in.MaxPages < 0:
		return fmt.Errorf("%w: negative max pages", ErrInvalid)
	}
	return nil
}

// NormalizeProgress checks p's counters and bounds its log: the last
// RunLogLines lines, each cut to RunLogLineBytes.
func NormalizeProgress(p RunProgress) (RunProgress, error) {
	if p.Pages < 0 || p.Products < 0 || p.Failures < 0 {
		return p, fmt.Errorf("%w: negative run counter", ErrInvalid)
	}
	log := p.Log
	if len(log) > RunLogLines {
		log = log[len(log)-RunLogLines:]
	}
	out := make([]string, len(log))
	for i, l := range log {
		out[i] = CutLine(l, RunLogLineBytes)
	}
	p.Log = out
	return p, nil
}

// CutLine returns s if it has at most n bytes, otherwise its longest
// prefix of whole runes that, with "…" appended, has at most n bytes.
func CutLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	cut := n - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + ell
}
