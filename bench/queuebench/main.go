// Command queuebench measures DataShelf's job queue: N workers claim jobs in
// batches and complete them, against PostgreSQL (and SQLite for
// comparison); it reports jobs/s and checks that no job ran twice and none
// was lost. Results are appended to a Markdown file.
//
//	go run ./bench/queuebench -postgres "$(bash scripts/pg-start.sh)" -jobs 20000 -workers 8 -out bench/RESULTS.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

type result struct {
	backend         string
	jobs            int
	enqueuePerSec   float64
	claimDonePerSec float64
	dup, lost       int
}

func main() {
	pgURL := flag.String("postgres", os.Getenv("QUARRY_TEST_POSTGRES_URL"), "PostgreSQL URL (a fresh schema is created and dropped)")
	jobs := flag.Int("jobs", 20000, "jobs to enqueue and process")
	workers := flag.Int("workers", 8, "concurrent workers")
	batch := flag.Int("batch", 50, "jobs claimed per Claim call")
	out := flag.String("out", "", "Markdown file to append the results to")
	flag.Parse()
	ctx := context.Background()
	var results []result
	if *pgURL != "" {
		schema := fmt.Sprintf("queuebench_%d", time.Now().UnixNano())
		s, err := postgres.Open(ctx, *pgURL, &postgres.Options{Schema: schema, MaxConns: *workers + 2})
		if err != nil {
			fail(err)
		}
		r, err := run(ctx, "PostgreSQL 15", s, *jobs, *workers, *batch)
		s.Close()
		dropSchema(ctx, *pgURL, schema)
		if err != nil {
			fail(err)
		}
		results = append(results, r)
	}
	dir, _ := os.MkdirTemp("", "queuebench-")
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(ctx, filepath.Join(dir, "q.db"), nil)
	if err != nil {
		fail(err)
	}
	r, err := run(ctx, "SQLite (embedded)", s, *jobs, *workers, *batch)
	s.Close()
	if err != nil {
		fail(err)
	}
	results = append(results, r)

	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — DataShelf job queue (queuebench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average: %s\n- Command: `go run ./bench/queuebench %s`\n", report.Machine(), report.LoadAvg(), strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- %d jobs enqueued one by one, then %d workers Claim batches of %d (lease 10 min) and Complete each job.\n\n", *jobs, *workers, *batch)
	fmt.Fprintf(&b, "| backend | enqueue jobs/s | claim+complete jobs/s | ran twice | lost |\n|---|--:|--:|--:|--:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %d | %d |\n", r.backend, r.enqueuePerSec, r.claimDonePerSec, r.dup, r.lost)
	}
	fmt.Fprintf(&b, "\nTarget: at least 5,000 claim+complete jobs/s on PostgreSQL with 8 workers.\n")
	fmt.Print(b.String())
	if *out != "" {
		if err := report.Append(*out, b.String()); err != nil {
			fail(err)
		}
	}
}

func run(ctx context.Context, name string, s store.Store, jobs, workers, batch int) (result, error) {
	r := result{backend: name, jobs: jobs}
	t0 := time.Now()
	for i := 0; i < jobs; i++ {
		if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: fmt.Sprintf("https://shop.example/products/p-%d", i), Priority: i % 10}); err != nil {
			return r, err
		}
	}
	r.enqueuePerSec = float64(jobs) / time.Since(t0).Seconds()
	var mu sync.Mutex
	seen := make(map[string]int, jobs)
	var done atomic.Int64
	var firstErr atomic.Value
	t1 := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("bench-%d", w)
			for done.Load() < int64(jobs) {
				got, err := s.Claim(ctx, worker, batch)
				if err != nil {
					firstErr.Store(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, j := range got {
					if err := s.Complete(ctx, j.ID, worker); err != nil {
						firstErr.Store(err)
						return
					}
					mu.Lock()
					seen[j.ID]++
					mu.Unlock()
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	r.claimDonePerSec = float64(done.Load()) / time.Since(t1).Seconds()
	if e, ok := firstErr.Load().(error); ok {
		return r, e
	}
	for _, n := range seen {
		if n > 1 {
			r.dup++
		}
	}
	r.lost = jobs - len(seen)
	return r, nil
}

func dropSchema(ctx context.Context, url, schema string) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "queuebench:", err)
	os.Exit(1)
}
