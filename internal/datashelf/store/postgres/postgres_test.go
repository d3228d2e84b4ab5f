package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/storetest"

	"github.com/quarrydb/quarry/internal/testenv"
)

// testURL returns QUARRY_TEST_POSTGRES_URL or skips the test (fails it
// when QUARRY_REQUIRE_PEERS=1).
func testURL(t *testing.T) string {
	t.Helper()
	return testenv.PostgresURL(t)
}

// freshSchema creates an empty schema for t and drops it in Cleanup.
func freshSchema(t *testing.T, url string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("quarry_test_%x", b)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return name
}

func openTest(t *testing.T, opts *store.Options) store.Store {
	t.Helper()
	url := testURL(t)
	schema := freshSchema(t, url)
	var o store.Options
	if opts != nil {
		o = *opts
	}
	s, err := Open(context.Background(), url, &Options{Options: o, Schema: schema, MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	testURL(t)
	storetest.Run(t, openTest)
}

func TestReopenAppliesMigrationsOnce(t *testing.T) {
	url := testURL(t)
	schema := freshSchema(t, url)
	ctx := context.Background()
	files, err := fs.Glob(migrationsFS, "migrations/*.sql")
	if err != nil || len(files) < 2 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, url, &Options{Schema: schema})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(files) {
			t.Fatalf("schema_migrations rows = %d, %v; want one per migration file (%d)", n, err, len(files))
		}
		s.Close()
	}
}

// TestConcurrentOpen checks that migrations are serialised by the advisory
// lock: four stores opened at once on one schema all succeed.
func TestConcurrentOpen(t *testing.T) {
	url := testURL(t)
	schema := freshSchema(t, url)
	if err := createSchema(context.Background(), url, schema); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			s, err := Open(context.Background(), url, &Options{Schema: schema})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
