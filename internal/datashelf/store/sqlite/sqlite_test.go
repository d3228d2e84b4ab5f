package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/datashelf/store/storetest"
)

func open(t *testing.T, opts *store.Options) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "datashelf.db"), &sqlite.Options{Options: *opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	// 400 jobs: 50 claims of 10 by 8 workers, which one connection
	// serializes; 2000 took 80 s of the package's 90 under -race.
	storetest.RunWith(t, open, storetest.Options{ClaimConcurrentJobs: 400})
}

// TestReopen checks that migrations are tracked: opening an existing
// database applies nothing twice and keeps the data.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "d.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertNavigation(ctx, store.NavigationInput{Title: "A", SourceURL: "https://x/a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tree, err := s.NavigationTree(ctx)
	if err != nil || len(tree) != 1 {
		t.Fatalf("tree = %v, %v", tree, err)
	}
}
