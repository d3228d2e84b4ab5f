package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// Example shows the queue's life cycle: enqueue (deduplicated), claim,
// complete.
func Example() {
	dir, _ := os.MkdirTemp("", "datashelf")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "datashelf.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	a, _ := s.Enqueue(ctx, store.NewJob{Type: store.JobCategory, TargetURL: "https://example.com/c/fiction"})
	b, _ := s.Enqueue(ctx, store.NewJob{Type: store.JobCategory, TargetURL: "https://example.com/c/fiction", Priority: 5})
	fmt.Println("deduplicated:", a.ID == b.ID, "priority:", b.Priority)

	jobs, _ := s.Claim(ctx, "worker-1", 10)
	fmt.Println("claimed:", len(jobs), jobs[0].Status, "attempts:", jobs[0].Attempts)
	_ = s.Complete(ctx, jobs[0].ID, "worker-1")

	stats, _ := s.QueueStats(ctx)
	fmt.Println(stats[0].Status, stats[0].Type, stats[0].Count)
	// Output:
	// deduplicated: true priority: 5
	// claimed: 1 running attempts: 1
	// completed category 1
}
