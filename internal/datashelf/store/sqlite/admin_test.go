package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/datashelf/store/storetest"
)

// TestIntegrityFindings breaks the catalogue with foreign keys and CHECK
// constraints off (PRAGMA foreign_keys, ignore_check_constraints; the
// store has one connection, so the pragmas apply to it) and expects
// CheckIntegrity to name each broken row.
func TestIntegrityFindings(t *testing.T) {
	storetest.RunIntegrity(t, open, func(ctx context.Context, st store.Store, c storetest.Corruption) error {
		db := st.(*sqlite.Store).DB()
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`PRAGMA foreign_keys = OFF`, nil},
			{`PRAGMA ignore_check_constraints = ON`, nil},
			{`DELETE FROM category WHERE id = ?`, []any{c.DeleteCategory}},
			{`DELETE FROM navigation WHERE id = ?`, []any{c.DeleteNavigation}},
			{`UPDATE scrape_job SET status = ? WHERE id = ?`, []any{c.BadStatus, c.JobID}},
			{`PRAGMA ignore_check_constraints = OFF`, nil},
			{`PRAGMA foreign_keys = ON`, nil},
		} {
			if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
				return fmt.Errorf("%s: %w", q.sql, err)
			}
		}
		return nil
	})
}

// TestMaintainStatements checks SQLite's maintenance statements and that
// ANALYZE reached the file (sqlite_stat1 holds the product indexes).
func TestMaintainStatements(t *testing.T) {
	ctx := context.Background()
	st := open(t, &store.Options{})
	for i := 0; i < 3; i++ {
		if _, err := st.UpsertProduct(ctx, store.ProductInput{Title: fmt.Sprint("b", i), SourceURL: fmt.Sprint("https://x/", i)}); err != nil {
			t.Fatal(err)
		}
	}
	s := st.(*sqlite.Store)
	steps, err := s.Maintain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, st := range steps {
		stmts = append(stmts, st.Statement)
	}
	if got := strings.Join(stmts, "; "); got != "ANALYZE; PRAGMA optimize; VACUUM; REINDEX" {
		t.Fatalf("statements %q", got)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'product'`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("sqlite_stat1 rows for product: %d, %v", n, err)
	}
}

// TestQueueIndexHasNoRunAfter: as on PostgreSQL, run_after is a filter of
// the claim, not a key of the queue index.
func TestQueueIndexHasNoRunAfter(t *testing.T) {
	s := open(t, &store.Options{}).(*sqlite.Store)
	var def string
	if err := s.DB().QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'idx_scrape_job_queue'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(def, "run_after") || !strings.Contains(def, "priority DESC, created_at ASC") {
		t.Fatalf("idx_scrape_job_queue = %s", def)
	}
}
