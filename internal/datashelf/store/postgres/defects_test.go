package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Regression tests for the DataShelf defects of DESIGN.md §5. Each test
// runs a check of the correct behaviour against the document's original
// SQL (testdata/original.sql), where it must fail, and against quarry's
// schema, where it must pass.

// originalChunks parses testdata/original.sql into named chunks.
func originalChunks(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/original.sql")
	if err != nil {
		t.Fatal(err)
	}
	chunks := map[string]string{}
	name := ""
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "-- name: "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		if name != "" {
			chunks[name] += line + "\n"
		}
	}
	return chunks
}

// schemaConn connects with search_path set to schema.
func schemaConn(t *testing.T, url, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// original creates a fresh schema, runs the named chunks of the original
// SQL in the given order, and returns the schema name. The first failing
// chunk's error is returned.
func original(t *testing.T, url string, names ...string) (string, error) {
	t.Helper()
	ctx := context.Background()
	schema := freshSchema(t, url)
	if err := createSchema(ctx, url, schema); err != nil {
		t.Fatal(err)
	}
	chunks := originalChunks(t)
	conn := schemaConn(t, url, schema)
	for _, n := range names {
		sql, ok := chunks[n]
		if !ok {
			t.Fatalf("no chunk %q in testdata/original.sql", n)
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			return schema, fmt.Errorf("chunk %s: %w", n, err)
		}
	}
	return schema, nil
}

// quarry opens quarry's store on a fresh schema.
func quarry(t *testing.T, url string) (*Store, string) {
	t.Helper()
	schema := freshSchema(t, url)
	s, err := Open(context.Background(), url, &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, schema
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Defect: USING gin((specs->>'author')) fails (text has no default GIN
// operator class).
func TestDefectGINIndexOnText(t *testing.T) {
	url := testURL(t)
	for _, idx := range []string{"product_author_index", "product_isbn_index"} {
		_, err := original(t, url, "navigation", "category", "product", idx)
		if err == nil || sqlState(err) != "42704" {
			t.Fatalf("original %s: error = %v, want SQLSTATE 42704 (no default operator class)", idx, err)
		}
		t.Logf("original fails as documented: %v", err)
	}
	s, _ := quarry(t, url)
	for _, name := range []string{"idx_product_author", "idx_product_isbn"} {
		var def string
		if err := s.pool.QueryRow(context.Background(),
			`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, name).Scan(&def); err != nil {
			t.Fatalf("quarry %s: %v", name, err)
		}
		if !strings.Contains(def, "USING btree") {
			t.Fatalf("quarry %s = %s, want a btree expression index", name, def)
		}
	}
}

// Defect: the trigger is declared before the product table exists.
func TestDefectTriggerBeforeTable(t *testing.T) {
	url := testURL(t)
	_, err := original(t, url, "navigation", "category", "count_function", "count_trigger", "product")
	if err == nil || sqlState(err) != "42P01" || !strings.Contains(err.Error(), "count_trigger") {
		t.Fatalf("original in document order: error = %v, want SQLSTATE 42P01 at count_trigger", err)
	}
	t.Logf("original fails as documented: %v", err)
	s, _ := quarry(t, url)
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_trigger
		WHERE tgname = 'trigger_update_category_count' AND tgrelid = 'product'::regclass`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("quarry trigger count = %d, %v", n, err)
	}
}

// checkMoveKeepsCounts moves a product between categories with
// upsert_product and checks both product_count values.
func checkMoveKeepsCounts(ctx context.Context, conn *pgx.Conn) error {
	var c1, c2 string
	if err := conn.QueryRow(ctx, `INSERT INTO category (title, source_url) VALUES ('C1', 'https://x/c1') RETURNING id::text`).Scan(&c1); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `INSERT INTO category (title, source_url) VALUES ('C2', 'https://x/c2') RETURNING id::text`).Scan(&c2); err != nil {
		return err
	}
	for _, c := range []string{c1, c2} {
		if _, err := conn.Exec(ctx, `SELECT upsert_product($1::uuid, 'Book', 'https://x/p/book')`, c); err != nil {
			return err
		}
	}
	var n1, n2 int
	if err := conn.QueryRow(ctx, `SELECT (SELECT product_count FROM category WHERE id = $1::uuid),
		(SELECT product_count FROM category WHERE id = $2::uuid)`, c1, c2).Scan(&n1, &n2); err != nil {
		return err
	}
	if n1 != 0 || n2 != 1 {
		return fmt.Errorf("product_count drift: C1=%d C2=%d with the product in C2 (want 0 and 1)", n1, n2)
	}
	return nil
}

// Defect: product_count drifts when upsert_product moves a product.
func TestDefectProductCountDriftOnMove(t *testing.T) {
	url := testURL(t)
	ctx := context.Background()
	// The trigger chunks run after product here, past the ordering defect.
	schema, err := original(t, url, "navigation", "category", "product", "count_function", "count_trigger", "upsert_product")
	if err != nil {
		t.Fatal(err)
	}
	err = checkMoveKeepsCounts(ctx, schemaConn(t, url, schema))
	if err == nil || !strings.Contains(err.Error(), "C1=1 C2=0") {
		t.Fatalf("original: %v, want drift C1=1 C2=0", err)
	}
	t.Logf("original fails as documented: %v", err)
	_, qs := quarry(t, url)
	if err := checkMoveKeepsCounts(ctx, schemaConn(t, url, qs)); err != nil {
		t.Fatalf("quarry: %v", err)
	}
}

const staleJobSQL = `INSERT INTO scrape_job (type, target_url, status, attempts, locked_at, locked_by)
	VALUES ('product', 'https://x/p/stale', 'running', 1, now() - interval '1 hour', 'dead-worker') RETURNING id::text`

// Defect: a job whose worker died while running is never claimed again.
func TestDefectStaleRunningJobNeverClaimed(t *testing.T) {
	url := testURL(t)
	ctx := context.Background()
	schema, err := original(t, url, "scrape_job")
	if err != nil {
		t.Fatal(err)
	}
	conn := schemaConn(t, url, schema)
	var id string
	if err := conn.QueryRow(ctx, staleJobSQL).Scan(&id); err != nil {
		t.Fatal(err)
	}
	next := originalChunks(t)["get_next_job"]
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var got string
		var typ, u string
		var meta map[string]any
		return tx.QueryRow(ctx, next).Scan(&got, &typ, &u, &meta)
	})
	if !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("original get-next-job: %v, want no rows (stale running job is invisible)", err)
	}
	t.Log("original fails as documented: a running job locked an hour ago is never claimed")

	s, qs := quarry(t, url)
	if err := schemaConn(t, url, qs).QueryRow(ctx, staleJobSQL).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RescueExpired(ctx, time.Now(), store.DefaultLease); err != nil || n != 1 {
		t.Fatalf("quarry rescue = %d, %v; want the stale job rescued", n, err)
	}
	jobs, err := s.Claim(ctx, "w", 1)
	if err != nil || len(jobs) != 1 || jobs[0].ID != id || jobs[0].Attempts != 2 {
		t.Fatalf("quarry claim = %+v, %v; want the stale job rescued and claimed", jobs, err)
	}
}

const exhaustedJobSQL = `INSERT INTO scrape_job (type, target_url, status, attempts, max_attempts, locked_at, locked_by)
	VALUES ('product', 'https://x/p/broken', 'running', 3, 3, now(), 'w') RETURNING id::text`

// Defect: failing a job for the last time leaves completed_at NULL, so
// cleanup never deletes it.
func TestDefectFailedJobWithoutCompletedAt(t *testing.T) {
	url := testURL(t)
	ctx := context.Background()
	check := func(conn *pgx.Conn, id string) error {
		var status string
		var completed *time.Time
		if err := conn.QueryRow(ctx, `SELECT status, completed_at FROM scrape_job WHERE id = $1::uuid`, id).Scan(&status, &completed); err != nil {
			return err
		}
		if status != "failed" || completed == nil {
			return fmt.Errorf("status %s, completed_at %v: want failed with completed_at", status, completed)
		}
		return nil
	}
	schema, err := original(t, url, "scrape_job")
	if err != nil {
		t.Fatal(err)
	}
	conn := schemaConn(t, url, schema)
	var id string
	if err := conn.QueryRow(ctx, exhaustedJobSQL).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, originalChunks(t)["fail_job"], id, "boom"); err != nil {
		t.Fatal(err)
	}
	if err := check(conn, id); err == nil {
		t.Fatal("original fail-job set completed_at; expected the documented defect")
	} else {
		t.Logf("original fails as documented: %v", err)
	}

	s, qs := quarry(t, url)
	qconn := schemaConn(t, url, qs)
	if err := qconn.QueryRow(ctx, exhaustedJobSQL).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, id, "w", "boom"); err != nil {
		t.Fatal(err)
	}
	if err := check(qconn, id); err != nil {
		t.Fatalf("quarry: %v", err)
	}
}

// checkConcurrentEnqueue interleaves two enqueue_scrape_job calls for the
// same URL in overlapping transactions and checks that one job results.
func checkConcurrentEnqueue(t *testing.T, url, schema string) error {
	ctx := context.Background()
	c1, c2 := schemaConn(t, url, schema), schemaConn(t, url, schema)
	tx1, err := c1.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx1.Rollback(ctx)
	if _, err := tx1.Exec(ctx, `SELECT enqueue_scrape_job('product', 'https://x/p/dup')`); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, c2, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT enqueue_scrape_job('product', 'https://x/p/dup')`)
			return err
		})
	}()
	var err2 error
	finished := false
	select {
	case err2 = <-done: // the original's check-then-insert does not wait
		finished = true
	case <-time.After(time.Second): // quarry's insert waits on the unique index
	}
	if err := tx1.Commit(ctx); err != nil {
		return err
	}
	if !finished {
		err2 = <-done
	}
	if err2 != nil {
		return err2
	}
	var n int
	if err := c1.QueryRow(ctx, `SELECT count(*) FROM scrape_job WHERE target_url = 'https://x/p/dup'
		AND status IN ('queued', 'running')`).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%d queued jobs for one URL after two concurrent enqueues (want 1)", n)
	}
	return nil
}

// Defect: enqueue_scrape_job checks then inserts, so concurrent calls
// enqueue the same URL twice.
func TestDefectConcurrentEnqueueDuplicates(t *testing.T) {
	url := testURL(t)
	schema, err := original(t, url, "scrape_job", "enqueue_scrape_job")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkConcurrentEnqueue(t, url, schema); err == nil {
		t.Fatal("original enqueue_scrape_job did not duplicate; expected the documented defect")
	} else {
		t.Logf("original fails as documented: %v", err)
	}
	_, qs := quarry(t, url)
	if err := checkConcurrentEnqueue(t, url, qs); err != nil {
		t.Fatalf("quarry: %v", err)
	}
}
