package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// TestQueueAtScale: 8 workers claim 10,000 jobs in batches (FOR UPDATE SKIP
// LOCKED) and complete them; no job is claimed twice and none is lost.
func TestQueueAtScale(t *testing.T) {
	const (
		jobs    = 10000
		workers = 8
		batch   = 25
	)
	s := openTest(t, nil).(*Store)
	ctx := context.Background()
	// Bulk insert (Enqueue's dedup path is covered by the contract suite);
	// mixed priorities so that claims interleave across the index.
	if _, err := s.pool.Exec(ctx, `INSERT INTO scrape_job (type, target_url, priority, run_after)
		SELECT 'product', 'https://x/p/' || i, i % 7, now() - interval '1 minute'
		FROM generate_series(1, $1) AS i`, jobs); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		claimed = make(map[string]string, jobs) // id → worker
		dups    []string
		wg      sync.WaitGroup
		errc    = make(chan error, workers)
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			name := fmt.Sprintf("worker-%d", w)
			for {
				got, err := s.Claim(ctx, name, batch)
				if err != nil {
					errc <- err
					return
				}
				if len(got) == 0 {
					return
				}
				for _, j := range got {
					if j.Status != store.StatusRunning || j.LockedBy == nil || *j.LockedBy != name || j.Attempts != 1 {
						errc <- fmt.Errorf("claimed job %+v", j)
						return
					}
					mu.Lock()
					if prev, ok := claimed[j.ID]; ok {
						dups = append(dups, fmt.Sprintf("%s by %s and %s", j.ID, prev, name))
					}
					claimed[j.ID] = name
					mu.Unlock()
					if err := s.Complete(ctx, j.ID, name); err != nil {
						errc <- fmt.Errorf("complete %s by %s: %w", j.ID, name, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("%d workers claimed and completed %d jobs in %s (%.0f jobs/s)", workers, len(claimed), elapsed.Round(time.Millisecond),
		float64(len(claimed))/elapsed.Seconds())
	if len(dups) > 0 {
		t.Fatalf("%d jobs claimed twice, e.g. %s", len(dups), dups[0])
	}
	if len(claimed) != jobs {
		t.Fatalf("claimed %d distinct jobs, want %d", len(claimed), jobs)
	}
	perWorker := map[string]int{}
	for _, w := range claimed {
		perWorker[w]++
	}
	t.Logf("jobs per worker: %v", perWorker)
	// The database agrees: every job completed once, by the worker that
	// claimed it; nothing left queued or running.
	rows, err := s.pool.Query(ctx, `SELECT id::text, status, attempts, completed_at IS NOT NULL FROM scrape_job`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, status string
		var attempts int
		var done bool
		if err := rows.Scan(&id, &status, &attempts, &done); err != nil {
			t.Fatal(err)
		}
		n++
		if _, ok := claimed[id]; !ok {
			t.Errorf("job %s never claimed (status %s)", id, status)
		}
		if status != string(store.StatusCompleted) || attempts != 1 || !done {
			t.Errorf("job %s: status %s, attempts %d, completed_at set %v", id, status, attempts, done)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != jobs {
		t.Fatalf("%d jobs in the table, want %d", n, jobs)
	}
}
