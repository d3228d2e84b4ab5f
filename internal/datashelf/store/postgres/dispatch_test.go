package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// TestDispatcherCommitsPerJob measures the dispatcher's commits from the
// rows' xmin (the id of the transaction that last wrote a row): with one
// worker and a completion delay of an hour, each job is claimed in the
// transaction that completes the one before, so n jobs take n+1 commits.
func TestDispatcherCommitsPerJob(t *testing.T) {
	const n = 5
	s := openTest(t, nil).(*Store)
	ctx := context.Background()
	for i := range n {
		if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: fmt.Sprintf("https://x/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	xmin := func(ctx context.Context, id string) string {
		var x string
		if err := s.pool.QueryRow(ctx, `SELECT xmin::text FROM scrape_job WHERE id = $1`, id).Scan(&x); err != nil {
			t.Errorf("xmin of %s: %v", id, err)
		}
		return x
	}
	xids := map[string]bool{}
	var prev string
	d, err := dispatch.New(dispatch.Options{Store: s, Worker: "w", Workers: 1, PollInterval: time.Hour, CompleteDelay: time.Hour,
		Idle: func(context.Context) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(ctx, func(ctx context.Context, j store.Job) bool {
		claimedIn := xmin(ctx, j.ID)
		xids[claimedIn] = true
		if prev != "" {
			if p, err := s.GetJob(ctx, prev); err != nil || p.Status != store.StatusCompleted {
				t.Errorf("previous job %s when %s started: %s, %v; want completed", prev, j.ID, p.Status, err)
			}
			if completedIn := xmin(ctx, prev); completedIn != claimedIn {
				t.Errorf("job %s claimed in transaction %s, the job before it completed in %s; want one commit", j.ID, claimedIn, completedIn)
			}
		}
		prev = j.ID
		return true
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	p, err := s.GetJob(ctx, prev)
	if err != nil || p.Status != store.StatusCompleted {
		t.Fatalf("last job after Run: %s, %v", p.Status, err)
	}
	xids[xmin(ctx, prev)] = true
	if len(xids) != n+1 {
		t.Fatalf("%d jobs took %d commits, want %d", n, len(xids), n+1)
	}
}
