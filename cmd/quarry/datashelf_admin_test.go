package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// dataShelfAdminBackend is a database the admin commands are tested on:
// the flags selecting it, how to open it for seeding, and how to break it
// (delete the given category, bypassing the foreign key).
type dataShelfAdminBackend struct {
	flags  []string
	open   func(t *testing.T) store.Store
	orphan func(t *testing.T, categoryID string)
}

func dataShelfAdminBackends(t *testing.T) map[string]func(t *testing.T) dataShelfAdminBackend {
	out := map[string]func(t *testing.T) dataShelfAdminBackend{
		"sqlite": func(t *testing.T) dataShelfAdminBackend {
			dir := t.TempDir()
			path := filepath.Join(dir, "datashelf.db")
			return dataShelfAdminBackend{
				flags: []string{"--data-dir", dir},
				open: func(t *testing.T) store.Store {
					s, err := sqlite.Open(context.Background(), path, nil)
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
				orphan: func(t *testing.T, id string) {
					db, err := sql.Open("sqlite", "file:"+path) // foreign keys are off on a new connection
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if _, err := db.Exec(`DELETE FROM category WHERE id = ?`, id); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
	}
	base := os.Getenv("QUARRY_TEST_POSTGRES_URL")
	if base == "" {
		t.Log("QUARRY_TEST_POSTGRES_URL is not set: PostgreSQL skipped")
		return out
	}
	out["postgres"] = func(t *testing.T) dataShelfAdminBackend {
		ctx := context.Background()
		// The command sees only the URL: search_path comes with it (pgx
		// sends unknown URL parameters as run-time parameters).
		u, schema := postgresSchema(t, base)
		dbURL := u.String()
		return dataShelfAdminBackend{
			flags: []string{"--data-dir", t.TempDir(), "--datashelf-db", dbURL},
			open: func(t *testing.T) store.Store {
				s, err := postgres.Open(ctx, dbURL, nil)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			orphan: func(t *testing.T, id string) {
				conn, err := pgx.Connect(ctx, base)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				qs := pgx.Identifier{schema}.Sanitize()
				if _, err := conn.Exec(ctx, "ALTER TABLE "+qs+".product DROP CONSTRAINT product_category_id_fkey"); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, "DELETE FROM "+qs+".category WHERE id = $1", id); err != nil {
					t.Fatal(err)
				}
			},
		}
	}
	return out
}

// TestDataShelfAdminCommands runs `quarry datashelf maintain`, `export` and
// `check` on SQLite and PostgreSQL: their output, their exit codes, the
// export's two formats and file output, and check's findings once a
// product is orphaned.
func TestDataShelfAdminCommands(t *testing.T) {
	t.Parallel()
	for name, backend := range dataShelfAdminBackends(t) {
		t.Run(name, func(t *testing.T) {
			be := backend(t)
			ctx := context.Background()
			st := be.open(t)
			nav, err := st.UpsertNavigation(ctx, store.NavigationInput{Title: "Books", SourceURL: "https://x/nav"})
			if err != nil {
				t.Fatal(err)
			}
			cat, err := st.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nav.ID, Title: "Fiction", SourceURL: "https://x/c"})
			if err != nil {
				t.Fatal(err)
			}
			var firstProduct string
			for i, title := range []string{"Dune", "Emma, \"a novel\"", "Line\nbreak"} {
				price := 4.5 + float64(i)
				p, err := st.UpsertProduct(ctx, store.ProductInput{CategoryID: &cat.ID, Title: title, SourceURL: fmt.Sprint("https://x/p/", i),
					Price: &price, Available: true, Specs: map[string]any{"format": "Paperback"}})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					firstProduct = p.ID
				}
			}
			st.Close()

			cmd := func(args ...string) (int, string, string) {
				var out, errs syncBuffer
				code := run(ctx, append(append([]string{"datashelf"}, args...), be.flags...), noEnv, &out, &errs)
				return code, out.String(), errs.String()
			}

			code, out, errs := cmd("maintain")
			if code != 0 || !strings.Contains(out, "ANALYZE") || !strings.Contains(out, "VACUUM") || !strings.Contains(out, "REINDEX") {
				t.Fatalf("maintain: exit %d\n%s\n%s", code, out, errs)
			}
			code, out, errs = cmd("maintain", "--ops", "vacuum")
			if code != 0 || strings.Contains(out, "REINDEX") || !strings.Contains(out, "VACUUM") {
				t.Fatalf("maintain --ops vacuum: exit %d\n%s\n%s", code, out, errs)
			}
			if code, _, errs = cmd("maintain", "--ops", "truncate"); code != 1 || !strings.Contains(errs, "truncate") {
				t.Fatalf("maintain --ops truncate: exit %d %s", code, errs)
			}

			code, out, errs = cmd("export")
			if code != 0 || !strings.Contains(errs, "exported 3 product rows") {
				t.Fatalf("export: exit %d\n%s", code, errs)
			}
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(store.ProductColumns, ",") {
				t.Fatalf("export csv: %v, %q", err, out)
			}
			titles := map[string]bool{}
			for _, r := range recs[1:] {
				titles[r[2]] = true
				if r[1] != cat.ID || r[9] != `{"format":"Paperback"}` {
					t.Errorf("csv record %q", r)
				}
			}
			if !titles["Emma, \"a novel\""] || !titles["Line\nbreak"] {
				t.Errorf("csv titles %v", titles)
			}

			file := filepath.Join(t.TempDir(), "categories.jsonl")
			code, out, errs = cmd("export", "--table", "category", "--format", "jsonl", "--out", file)
			if code != 0 || out != "" || !strings.Contains(errs, "exported 1 category rows to "+file) {
				t.Fatalf("export --out: exit %d\n%q\n%s", code, out, errs)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			var lines []store.Category
			for sc.Scan() {
				var c store.Category
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatalf("jsonl line %q: %v", sc.Text(), err)
				}
				lines = append(lines, c)
			}
			f.Close()
			if len(lines) != 1 || lines[0].ID != cat.ID || lines[0].ProductCount != 3 {
				t.Fatalf("category export %+v", lines)
			}
			for _, bad := range [][]string{{"--format", "xml"}, {"--table", "scrape_job"}} {
				if code, _, errs := cmd(append([]string{"export"}, bad...)...); code != 1 || !strings.Contains(errs, bad[1]) {
					t.Errorf("export %v: exit %d %s", bad, code, errs)
				}
			}

			code, out, errs = cmd("check")
			if code != 0 || strings.Count(out, "ok ") != len(store.IntegrityChecks) {
				t.Fatalf("check on a clean database: exit %d\n%s\n%s", code, out, errs)
			}
			be.orphan(t, cat.ID)
			code, out, errs = cmd("check")
			if code != 1 || !strings.Contains(out, "FAILED  orphaned_products: 3 rows") || !strings.Contains(out, firstProduct) ||
				!strings.Contains(errs, "integrity problems found") {
				t.Fatalf("check on an orphaned product: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}
