package crawler_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// TestRunCleansUpOldJobs checks that a crawl removes finished jobs older
// than RetainFinished and keeps younger ones.
func TestRunCleansUpOldJobs(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ds.db"), &sqlite.Options{Options: store.Options{Now: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	finish := func(url string) string {
		j, err := st.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: url})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := st.Claim(ctx, "w", 1)
		if err != nil || len(claimed) != 1 || claimed[0].ID != j.ID {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		if err := st.Complete(ctx, j.ID, "w"); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	old := finish("https://shop.example/products/old")
	now = now.Add(6 * 24 * time.Hour)
	young := finish("https://shop.example/products/young")
	now = now.Add(2 * 24 * time.Hour) // old is 8 days old, young 2

	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := crawler.New(crawler.Options{Store: st, Fetcher: fetch.New(fetch.Options{}), Blobs: blobs, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx); err != nil { // nothing queued: returns after the cleanup
		t.Fatal(err)
	}
	if _, err := st.GetJob(ctx, old); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("job finished 8 days ago: %v, want ErrNotFound", err)
	}
	if _, err := st.GetJob(ctx, young); err != nil {
		t.Errorf("job finished 2 days ago: %v", err)
	}
}
