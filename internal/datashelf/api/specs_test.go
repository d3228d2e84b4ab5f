package api_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// backends opens an empty store per database: SQLite always, PostgreSQL
// (in a schema of its own) when QUARRY_TEST_POSTGRES_URL is set.
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	out := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ds.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	if url := os.Getenv("QUARRY_TEST_POSTGRES_URL"); url != "" {
		out["postgres"] = func(t *testing.T) store.Store {
			var b [6]byte
			_, _ = rand.Read(b[:])
			schema := fmt.Sprintf("quarry_test_%x", b)
			t.Cleanup(func() {
				ctx := context.Background()
				if conn, err := pgx.Connect(ctx, url); err == nil {
					_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
					conn.Close(ctx)
				}
			})
			s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema, MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	} else {
		t.Log("QUARRY_TEST_POSTGRES_URL is not set: PostgreSQL skipped")
	}
	return out
}

// TestSpecAndActiveFilters checks hasSpec, spec.<key> and active on both
// databases: the design's specs ? 'isbn' and specs @> '{"format": …}', and
// the active_products view.
func TestSpecAndActiveFilters(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			nav, err := st.UpsertNavigation(ctx, store.NavigationInput{Title: "Books", SourceURL: "https://x/nav"})
			if err != nil {
				t.Fatal(err)
			}
			cat, err := st.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nav.ID, Title: "Fiction", SourceURL: "https://x/c"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				title     string
				cat       *string
				available bool
				specs     map[string]any
			}{
				{"Dune", &cat.ID, true, map[string]any{"isbn": "9780441172719", "format": "Paperback"}},
				{"Emma", &cat.ID, false, map[string]any{"isbn": "9780141439587", "format": "Hardback"}},
				{"Loose", nil, true, map[string]any{"format": "Paperback", "edition": "First Edition"}},
			} {
				if _, err := st.UpsertProduct(ctx, store.ProductInput{CategoryID: p.cat, Title: p.title,
					SourceURL: "https://x/p/" + p.title, Available: p.available, Specs: p.specs}); err != nil {
					t.Fatal(err)
				}
			}
			h := api.New(api.Options{Store: st, RateLimit: -1})
			get := func(query string) *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/api/products?sort=title_asc&"+query, nil))
				return w
			}
			for _, tc := range []struct {
				query string
				want  string
			}{
				{"hasSpec=isbn", "Dune Emma"},
				{"hasSpec=isbn,edition", ""},
				{"hasSpec=edition", "Loose"},
				{"spec.format=Paperback", "Dune Loose"},
				{"spec.format=paperback", ""},
				{"spec.format=Paperback&hasSpec=isbn", "Dune"},
				{"spec.edition=First+Edition&spec.format=Paperback", "Loose"},
				{"active=true", "Dune"},
				{"active=false", "Emma Loose"},
				{"active=true&spec.format=Hardback", ""},
			} {
				w := get(tc.query)
				if w.Code != http.StatusOK {
					t.Fatalf("%s: status %d %s", tc.query, w.Code, w.Body)
				}
				page := decode[api.ProductPage](t, w)
				var titles []string
				for _, p := range page.Items {
					titles = append(titles, p.Title)
				}
				if got := strings.Join(titles, " "); got != tc.want || page.Total != len(titles) {
					t.Errorf("%s: got %q (total %d), want %q", tc.query, got, page.Total, tc.want)
				}
			}
			for _, tc := range []struct{ query, param string }{
				{"hasSpec=", "hasSpec"},
				{"hasSpec=is'bn", "hasSpec"},
				{"spec.=x", "spec."},
				{"spec.a-b=x", "spec.a-b"},
				{"spec.format=", "spec.format"},
				{"active=maybe", "active"},
				{"specs.format=x", "specs.format"},
			} {
				w := get(tc.query)
				if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.param) {
					t.Errorf("%s: status %d %s, want 400 naming %s", tc.query, w.Code, w.Body, tc.param)
				}
			}
			// A cursor is bound to the spec filters too.
			w := get("limit=1&spec.format=Paperback")
			page := decode[api.ProductPage](t, w)
			if page.Pagination.NextCursor == nil {
				t.Fatalf("no cursor: %s", w.Body)
			}
			if w := get("limit=1&spec.format=Hardback&cursor=" + *page.Pagination.NextCursor); w.Code != http.StatusBadRequest {
				t.Errorf("cursor reused with another spec filter: status %d", w.Code)
			}
			if w := get("limit=1&spec.format=Paperback&cursor=" + *page.Pagination.NextCursor); w.Code != http.StatusOK ||
				!strings.Contains(w.Body.String(), "Loose") {
				t.Errorf("second page: %d %s", w.Code, w.Body)
			}
		})
	}
}
