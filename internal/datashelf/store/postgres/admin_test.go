package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/storetest"
)

// TestIntegrityFindings breaks the catalogue with the schema's foreign
// keys and status CHECK dropped (as a restored dump or a hand edit could)
// and expects CheckIntegrity to name each broken row.
func TestIntegrityFindings(t *testing.T) {
	testURL(t)
	storetest.RunIntegrity(t, openTest, func(ctx context.Context, st store.Store, c storetest.Corruption) error {
		s := st.(*Store)
		for _, q := range []string{
			`ALTER TABLE product DROP CONSTRAINT product_category_id_fkey`,
			`ALTER TABLE category DROP CONSTRAINT category_navigation_id_fkey`,
			`ALTER TABLE scrape_job DROP CONSTRAINT scrape_job_status_check`,
		} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM category WHERE id = $1`, c.DeleteCategory); err != nil {
			return err
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM navigation WHERE id = $1`, c.DeleteNavigation); err != nil {
			return err
		}
		_, err := s.pool.Exec(ctx, `UPDATE scrape_job SET status = $2 WHERE id = $1`, c.JobID, c.BadStatus)
		return err
	})
}

// TestSpecFiltersUseGINIndex checks that the API's spec filters reach
// PostgreSQL as the original design's JSONB queries (specs ? 'isbn',
// specs @> '{"format": …}') and that idx_product_specs_gin serves them:
// EXPLAIN of the WHERE clause ListProducts builds, on 3,000 products, with
// sequential scans discouraged.
func TestSpecFiltersUseGINIndex(t *testing.T) {
	s := openTest(t, nil).(*Store)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `INSERT INTO product (title, source_url, specs)
		SELECT 'Book ' || i, 'https://x/p/' || i,
			CASE WHEN i % 100 = 0 THEN jsonb_build_object('isbn', i::text, 'format', 'Paperback')
			     ELSE jsonb_build_object('format', CASE WHEN i % 2 = 0 THEN 'Hardcover' ELSE 'Audio' END) END
		FROM generate_series(1, 3000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE product`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		f       store.ProductFilter
		wantSQL string
		want    int
	}{
		{"hasSpec", store.ProductFilter{HasSpec: []string{"isbn"}}, "specs ? $1", 30},
		{"spec value", store.ProductFilter{Specs: map[string]string{"format": "Paperback"}}, "specs @> $1::jsonb", 30},
		{"both", store.ProductFilter{HasSpec: []string{"isbn"}, Specs: map[string]string{"format": "Paperback"}}, "specs ? $1 AND specs @> $2::jsonb", 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := store.NormalizeProductFilter(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			w := store.ProductWhere(f, newDialect())
			where, args := w.String(), w.Args()
			if !strings.Contains(where, tc.wantSQL) {
				t.Fatalf("where %q does not contain %q", where, tc.wantSQL)
			}
			var plan []string
			err = s.pool.BeginFunc(ctx, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, `EXPLAIN SELECT id FROM product`+where, args...)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if text := strings.Join(plan, "\n"); !strings.Contains(text, "idx_product_specs_gin") {
				t.Fatalf("plan does not use idx_product_specs_gin:\n%s", text)
			}
			_, total, err := s.ListProducts(ctx, tc.f)
			if err != nil || total != tc.want {
				t.Fatalf("total %d, %v; want %d", total, err, tc.want)
			}
		})
	}
}

// TestContractStatementCacheOff runs the contract suite through the
// connection settings a transaction-mode pooler (Supabase's on port 6543,
// PgBouncer) needs: no prepared statements kept across transactions. pgx
// reads them from the URL's query parameters.
func TestContractStatementCacheOff(t *testing.T) {
	base := testURL(t)
	for _, params := range []string{
		"default_query_exec_mode=exec",
		"default_query_exec_mode=simple_protocol",
		"statement_cache_capacity=0",
		"statement_cache_capacity=0&description_cache_capacity=0",
	} {
		t.Run(params, func(t *testing.T) {
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			extra, _ := url.ParseQuery(params)
			for k, v := range extra {
				q[k] = v
			}
			u.RawQuery = q.Encode()
			poolerURL := u.String()
			storetest.Run(t, func(t *testing.T, opts *store.Options) store.Store {
				t.Helper()
				s, err := Open(context.Background(), poolerURL, &Options{Options: *opts, Schema: freshSchema(t, base), MaxConns: 10})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				var n int
				if err := s.pool.QueryRow(context.Background(),
					`SELECT count(*) FROM pg_prepared_statements`).Scan(&n); err != nil || n != 0 {
					t.Fatalf("prepared statements on a fresh connection: %d, %v", n, err)
				}
				return s
			})
		})
	}
}

// TestQueueIndexHasNoRunAfter pins the migration's comment: the queue
// index is the design's (status, priority DESC, created_at) and run_after
// is only a filter.
func TestQueueIndexHasNoRunAfter(t *testing.T) {
	s := openTest(t, nil).(*Store)
	var def string
	if err := s.pool.QueryRow(context.Background(), `SELECT indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname = 'idx_scrape_job_queue'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(def, "run_after") || !strings.Contains(def, "status, priority DESC, created_at") {
		t.Fatalf("idx_scrape_job_queue = %s", def)
	}
	body, err := migrationsFS.ReadFile("migrations/0001_schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "orders by run_after") {
		t.Fatal("the migration still says the queue index orders by run_after")
	}
}

// TestMaintainUpdatesStatistics checks that Maintain's ANALYZE and VACUUM
// reach the server: pg_stat_user_tables records them for every table.
func TestMaintainUpdatesStatistics(t *testing.T) {
	s := openTest(t, nil).(*Store)
	ctx := context.Background()
	steps, err := s.Maintain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 10 {
		t.Fatalf("steps = %+v, want 4 ANALYZE, 4 VACUUM ANALYZE and 2 REINDEX", steps)
	}
	rows, err := s.pool.Query(ctx, `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND relname IN ('navigation', 'category', 'product', 'scrape_job')
		AND last_analyze IS NOT NULL AND last_vacuum IS NOT NULL ORDER BY relname`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(got, ",") != "category,navigation,product,scrape_job" {
		t.Fatalf("tables analyzed and vacuumed: %v, %v", got, err)
	}
}
