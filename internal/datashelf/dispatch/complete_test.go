package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// TestTakeLeavesJobsOnTheClock: jobs the dispatcher's take moved out of
// the completer's queue and left behind (over CompleteBatch) are still
// committed CompleteDelay later, with no other job arriving and no flush.
// The take and the jobs reach the completer together, and which it serves
// first is random, so each of 20 rounds has an even chance of taking that
// path.
func TestTakeLeavesJobsOnTheClock(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for round := range 20 {
		reported := make(chan string, 2)
		o := Options{Store: s, Worker: "w", CompleteDelay: time.Millisecond, CompleteBatch: 1,
			Completed: func(j store.Job, _ error) { reported <- j.ID }}
		c := newCompleter(o, slog.New(slog.DiscardHandler))
		ids := map[string]bool{}
		for i := range 2 {
			id := fmt.Sprintf("00000000-0000-0000-%04d-%012d", i, round)
			ids[id] = true
			c.add(store.Job{ID: id})
		}
		took := make(chan []store.Job, 1)
		go func() { took <- c.take() }()
		time.Sleep(time.Millisecond) // the take waits for the completer
		runDone := make(chan struct{})
		go func() {
			defer close(runDone)
			c.run(context.Background())
		}()
		for _, j := range <-took {
			delete(ids, j.ID)
		}
		for len(ids) > 0 {
			select {
			case id := <-reported:
				if !ids[id] {
					t.Fatalf("round %d: completer committed %s, which it did not hold", round, id)
				}
				delete(ids, id)
			case <-time.After(2 * time.Second):
				t.Fatalf("round %d: %d jobs not committed 2 s after they finished (CompleteDelay 1 ms)", round, len(ids))
			}
		}
		c.close()
		<-runDone
	}
}
