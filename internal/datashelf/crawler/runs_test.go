package crawler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/fixture"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// TestRunRecord crawls the fixture shop and checks the run record the
// crawl leaves: its state, its counters (those of the crawl's Stats), its
// log tail and the products attributed to it.
func TestRunRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults fixture.Faults
	}{
		{"clean", fixture.Faults{}},
		{"with failures", fixture.Faults{ErrorRate: 0.1, ErrorTimes: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, fixture.Options{Products: 60, PerPage: 8, Seed: 3, CrawlDelay: -1, Faults: tt.faults})
			st := e.crawl(t, Options{MaxAttempts: 4})
			ctx := context.Background()
			runs, total, err := e.st.ListRuns(ctx, store.RunFilter{})
			if err != nil || total != 1 {
				t.Fatalf("runs: %v, total %d, want 1", err, total)
			}
			r, err := e.st.GetRun(ctx, runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.State != store.RunSucceeded || r.EndedAt == nil || r.LastError != nil || r.StartURL != e.srv.URL+fixture.Locale {
				t.Fatalf("run = %+v", r)
			}
			if r.Pages != st.Pages || r.Products != st.Products || r.Failures != st.Failures || r.Products != 60 {
				t.Errorf("run counters %+v, crawl stats %s", r.RunCounters, st)
			}
			if tt.faults.ErrorRate > 0 && r.Failures == 0 {
				t.Error("no failure counted despite faults")
			}
			if len(r.Log) == 0 || len(r.Log) > store.RunLogLines {
				t.Fatalf("log of %d lines", len(r.Log))
			}
			log := strings.Join(r.Log, "\n")
			for _, want := range []string{"product stored: ", "finished"} {
				if !strings.Contains(log, want) {
					t.Errorf("log tail lacks %q:\n%s", want, log)
				}
			}
			if tt.faults.ErrorRate > 0 && !strings.Contains(log, "retried later") {
				t.Errorf("log tail lacks the retried failures:\n%s", log)
			}
			n := 0
			if err := e.st.RunProducts(ctx, r.ID, func(store.Product) error { n++; return nil }); err != nil || n != 60 {
				t.Errorf("the run's products: %d (%v), want 60", n, err)
			}
		})
	}
}

// TestRunRecordSeedFailed: a crawl whose start URL fails ends its run as
// failed, with the cause.
func TestRunRecordSeedFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 4, Seed: 3, CrawlDelay: -1})
	ctx := context.Background()
	_, err := Crawl(ctx, Options{Store: e.st, Fetcher: e.fetch, PollInterval: 5 * time.Millisecond}, e.srv.URL+"/no-such-shop")
	if !errors.Is(err, ErrSeedFailed) {
		t.Fatalf("crawl: %v", err)
	}
	runs, _, err := e.st.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v: %v", runs, err)
	}
	r := runs[0]
	if r.State != store.RunFailed || r.LastError == nil || !strings.Contains(*r.LastError, "HTTP 404") || r.Pages != 1 {
		t.Fatalf("run = %+v", r)
	}
}

// waitRun polls the run record until ok holds (the record is updated
// every RunFlushInterval) or the test's patience runs out.
func waitRun(t *testing.T, st store.Store, id string, ok func(store.Run) bool) store.Run {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		r, err := st.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(r) {
			return r
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run never reached the expected state: %+v", r)
		}
	}
}

// TestRunnerAbort aborts a slow crawl: its record shows live counters
// and log while it runs, the abort stops it and ends its run as aborted,
// and every other abort says why it cannot.
func TestRunnerAbort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixture.Options{Products: 200, Seed: 3, CrawlDelay: -1,
		Faults: fixture.Faults{SlowRate: 1, SlowDelay: 200 * time.Millisecond}})
	ctx := context.Background()
	r := NewRunner(ctx, Options{Store: e.st, Fetcher: e.fetch, Blobs: e.blobs, Workers: 2, PollInterval: 5 * time.Millisecond})
	t.Cleanup(r.Stop)
	if _, err := r.Start(ctx, "ftp://x/", 0); !errors.Is(err, ErrBadStart) {
		t.Fatalf("a bad start URL: %v", err)
	}
	id, err := r.Start(ctx, e.srv.URL+fixture.Locale, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx, e.srv.URL+fixture.Locale, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second crawl while one runs: %v", err)
	}
	live := waitRun(t, e.st, id, func(r store.Run) bool { return r.Pages > 0 && len(r.Log) > 1 })
	if live.State != store.RunRunning || live.EndedAt != nil {
		t.Fatalf("live run = %+v", live)
	}

	// A run another process runs cannot be aborted here.
	other, err := e.st.StartRun(ctx, store.NewRun{StartURL: "https://elsewhere.example/", Node: "node-b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Abort(ctx, other.ID); !errors.Is(err, ErrNotHere) || !strings.Contains(err.Error(), "node-b") {
		t.Fatalf("abort of another node's run: %v", err)
	}
	if _, err := r.Abort(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("abort of an unknown run: %v", err)
	}

	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := r.Abort(actx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.RunAborted || got.EndedAt == nil || got.LastError == nil || *got.LastError != "aborted by an operator" {
		t.Fatalf("aborted run = %+v", got)
	}
	if s := r.Status(); s.Running || s.RunID != id || !errors.Is(s.Err, ErrAborted) {
		t.Fatalf("status after the abort: %+v", s)
	}
	if got.Products >= 200 {
		t.Fatalf("the crawl finished (%d products) before the abort", got.Products)
	}
	if _, err := r.Abort(ctx, id); !errors.Is(err, store.ErrRunEnded) || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("a second abort: %v", err)
	}
	// The next crawl starts.
	id2, err := r.Start(ctx, e.srv.URL+fixture.Locale, 1)
	if err != nil || id2 == id {
		t.Fatalf("a crawl after the abort: %q, %v", id2, err)
	}
}

// TestNoteBounded: the log tail keeps the last store.RunLogLines lines,
// each one line of at most store.RunLogLineBytes, stamped with the time.
func TestNoteBounded(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &Crawler{o: Options{Now: func() time.Time { return at }}}
	for i := range store.RunLogLines + 5 {
		c.note("product stored: %s (%d)", "Title\nwith a newline\tand a tab", i)
	}
	c.note("%s", strings.Repeat("x", 2*store.RunLogLineBytes))
	log := c.progress().Log
	if len(log) != store.RunLogLines {
		t.Fatalf("%d lines kept", len(log))
	}
	if want := "03:04:05 product stored: Title with a newline and a tab (6)"; log[0] != want {
		t.Errorf("oldest line kept %q, want %q", log[0], want)
	}
	if last := log[len(log)-1]; len(last) > store.RunLogLineBytes || !strings.HasSuffix(last, "…") {
		t.Errorf("long line kept as %d bytes", len(last))
	}
}
