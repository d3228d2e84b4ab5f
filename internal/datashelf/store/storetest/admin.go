package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

func admin(t *testing.T, b *bundle) store.Admin {
	t.Helper()
	a, ok := b.s.(store.Admin)
	if !ok {
		t.Fatalf("%T does not implement store.Admin", b.s)
	}
	return a
}

// testSpecFilters checks HasSpec (PostgreSQL's specs ? key) and Specs
// (specs @> {key: value}) against their SQLite equivalents.
func testSpecFilters(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	c := newCategory(t, b, "specs")
	rows := []struct {
		name  string
		specs map[string]any
	}{
		{"dune", map[string]any{"isbn": "9780441172719", "format": "Paperback", "author": "Frank Herbert"}},
		{"messiah", map[string]any{"isbn": "9780593098233", "format": "Hardcover"}},
		{"lower", map[string]any{"format": "paperback"}},
		{"nullisbn", map[string]any{"isbn": nil, "format": "Paperback"}},
		{"pages", map[string]any{"pages": 688, "edition": "688"}},
		{"bare", nil},
	}
	ids := map[string]string{}
	for _, r := range rows {
		p := must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: &c.ID, Title: r.name, SourceURL: "https://x/spec/" + r.name,
			Specs: r.specs, Available: true}))
		ids[r.name] = p.ID
	}
	cases := []struct {
		name string
		f    store.ProductFilter
		want []string // by title
	}{
		{"has isbn (a JSON null counts)", store.ProductFilter{HasSpec: []string{"isbn"}}, []string{"dune", "messiah", "nullisbn"}},
		{"has isbn and author", store.ProductFilter{HasSpec: []string{"isbn", "author"}}, []string{"dune"}},
		{"has unknown key", store.ProductFilter{HasSpec: []string{"weight"}}, []string{}},
		{"format Paperback (exact case)", store.ProductFilter{Specs: map[string]string{"format": "Paperback"}}, []string{"dune", "nullisbn"}},
		{"format paperback", store.ProductFilter{Specs: map[string]string{"format": "paperback"}}, []string{"lower"}},
		{"two values", store.ProductFilter{Specs: map[string]string{"format": "Paperback", "author": "Frank Herbert"}}, []string{"dune"}},
		{"value and key", store.ProductFilter{Specs: map[string]string{"format": "Paperback"}, HasSpec: []string{"author"}}, []string{"dune"}},
		{"string value never matches a number", store.ProductFilter{Specs: map[string]string{"pages": "688"}}, []string{}},
		{"string value", store.ProductFilter{Specs: map[string]string{"edition": "688"}}, []string{"pages"}},
		{"with the case-insensitive filter", store.ProductFilter{Format: "PAPERBACK", HasSpec: []string{"isbn"}}, []string{"dune", "nullisbn"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.Sort = store.SortTitleAsc
			ps, total, err := s.ListProducts(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ids, ps); fmt.Sprint(got) != fmt.Sprint(tc.want) || total != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, tc.want)
			}
		})
	}
	for _, bad := range []store.ProductFilter{
		{HasSpec: []string{"is'bn"}},
		{HasSpec: []string{""}},
		{Specs: map[string]string{"a.b": "x"}},
		{Specs: map[string]string{strings.Repeat("k", 65): "x"}},
	} {
		_, _, err := s.ListProducts(ctx, bad)
		wantErr(t, err, store.ErrInvalid)
	}
}

// testActiveProducts checks the Active filter, which reads the
// active_products view (whose 30 days are counted by the database's clock,
// so the stub clock is first moved to the present).
func testActiveProducts(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	b.clock.Advance(time.Since(Start) - 40*24*time.Hour)
	nav := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Fiction", SourceURL: "https://x/nav/fiction"}))
	withNav := must(s.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nav.ID, Title: "Sci-Fi", SourceURL: "https://x/c/scifi"}))
	noNav := must(s.UpsertCategory(ctx, store.CategoryInput{Title: "Loose", SourceURL: "https://x/c/loose"}))
	ids := map[string]string{}
	up := func(name string, cat *string, available bool) {
		p := must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: cat, Title: name, SourceURL: "https://x/a/" + name, Available: available}))
		ids[name] = p.ID
	}
	up("stale", &withNav.ID, true) // scraped 40 days ago
	b.clock.Advance(40 * 24 * time.Hour)
	up("fresh", &withNav.ID, true)
	up("sold", &withNav.ID, false)
	up("nocat", nil, true)
	up("nonav", &noNav.ID, true)
	cases := []struct {
		name string
		f    store.ProductFilter
		want []string
	}{
		{"active", store.ProductFilter{Active: ptr(true)}, []string{"fresh"}},
		{"not active", store.ProductFilter{Active: ptr(false)}, []string{"nocat", "nonav", "sold", "stale"}},
		{"active and another filter", store.ProductFilter{Active: ptr(true), Q: "stale"}, []string{}},
		{"any", store.ProductFilter{}, []string{"fresh", "nocat", "nonav", "sold", "stale"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.Sort = store.SortTitleAsc
			ps, total, err := s.ListProducts(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ids, ps); fmt.Sprint(got) != fmt.Sprint(tc.want) || total != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, tc.want)
			}
		})
	}
}

// testMaintain runs every maintenance operation, then one alone, and
// checks that the store still answers (indexes rebuilt, full-text search
// intact).
func testMaintain(t *testing.T, b *bundle) {
	a := admin(t, b)
	seedProducts(t, b)
	steps := must(a.Maintain(b.ctx, nil))
	var ops []store.MaintenanceOp
	for _, st := range steps {
		if st.Statement == "" {
			t.Fatalf("step without statement: %+v", st)
		}
		if len(ops) == 0 || ops[len(ops)-1] != st.Op {
			ops = append(ops, st.Op)
		}
	}
	if !slices.Equal(ops, store.AllMaintenance) {
		t.Fatalf("operations run: %v, want %v", ops, store.AllMaintenance)
	}
	steps = must(a.Maintain(b.ctx, []store.MaintenanceOp{store.MaintainReindex}))
	for _, st := range steps {
		if st.Op != store.MaintainReindex || !strings.Contains(st.Statement, "REINDEX") {
			t.Fatalf("reindex ran %+v", st)
		}
	}
	_, err := a.Maintain(b.ctx, []store.MaintenanceOp{"truncate"})
	wantErr(t, err, store.ErrInvalid)
	ps, total, err := b.s.ListProducts(b.ctx, store.ProductFilter{Q: "dune", Format: "paperback"})
	if err != nil || total != 1 || len(ps) != 1 || ps[0].Title != "Dune" {
		t.Fatalf("after maintenance: %v, %d, %v", ps, total, err)
	}
}

// testExport checks both formats of both tables and that an export stops
// at its consumer's error (it is fed row by row).
func testExport(t *testing.T, b *bundle) {
	ctx, a := b.ctx, admin(t, b)
	ids, c1, _ := seedProducts(t, b)
	must(b.s.UpsertProduct(ctx, store.ProductInput{Title: "Bare, \"quoted\"\nbook", SourceURL: "https://x/p/bare", Summary: ptr("a, b")}))
	want, _ := must2(b.s.ListProducts(ctx, store.ProductFilter{Limit: 100}))
	if len(want) != len(ids)+1 {
		t.Fatalf("listed %d products, want %d", len(want), len(ids)+1)
	}
	slices.SortFunc(want, func(x, y store.Product) int { return strings.Compare(x.ID, y.ID) })

	var buf bytes.Buffer
	n, err := store.Export(ctx, a, store.ExportProduct, store.FormatCSV, &buf)
	if err != nil || n != len(want) {
		t.Fatalf("csv export: %d rows, %v", n, err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v", err)
	}
	if !slices.Equal(recs[0], store.ProductColumns) || len(recs) != len(want)+1 {
		t.Fatalf("csv header %v, %d records", recs[0], len(recs))
	}
	for i, p := range want {
		r := recs[i+1]
		price := ""
		if p.Price != nil {
			price = fmt.Sprintf("%.2f", *p.Price)
		}
		cat, sum := "", ""
		if p.CategoryID != nil {
			cat = *p.CategoryID
		}
		if p.Summary != nil {
			sum = *p.Summary
		}
		if r[0] != p.ID || r[1] != cat || r[2] != p.Title || r[5] != price || r[8] != sum ||
			r[10] != fmt.Sprint(p.Available) || r[12] != p.CreatedAt.Format(time.RFC3339Nano) {
			t.Fatalf("csv record %d = %q, product %+v", i, r, p)
		}
		var specs map[string]any
		if err := json.Unmarshal([]byte(r[9]), &specs); err != nil || fmt.Sprint(specs) != fmt.Sprint(p.Specs) {
			t.Fatalf("csv specs %q: %v", r[9], err)
		}
	}

	buf.Reset()
	if n, err := store.Export(ctx, a, store.ExportProduct, store.FormatJSONL, &buf); err != nil || n != len(want) {
		t.Fatalf("jsonl export: %d rows, %v", n, err)
	}
	sc := bufio.NewScanner(&buf)
	i := 0
	for ; sc.Scan(); i++ {
		wantLine, _ := json.Marshal(want[i])
		var got, exp any
		_ = json.Unmarshal(wantLine, &exp)
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil || fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("jsonl line %d = %s, want %s (%v)", i, sc.Bytes(), wantLine, err)
		}
	}
	if i != len(want) {
		t.Fatalf("jsonl lines = %d, want %d", i, len(want))
	}

	buf.Reset()
	if n, err := store.Export(ctx, a, store.ExportCategory, store.FormatCSV, &buf); err != nil || n != 2 {
		t.Fatalf("category export: %d rows, %v", n, err)
	}
	recs, err = csv.NewReader(&buf).ReadAll()
	if err != nil || !slices.Equal(recs[0], store.CategoryColumns) || len(recs) != 3 {
		t.Fatalf("category csv %v, %v", recs, err)
	}
	for _, r := range recs[1:] {
		if r[0] == c1.ID && r[4] != "3" {
			t.Fatalf("category %s product_count %q, want 3", r[0], r[4])
		}
	}

	stop := errors.New("consumer gone")
	seen := 0
	err = a.ExportProducts(ctx, func(store.Product) error { seen++; return stop })
	if !errors.Is(err, stop) || seen != 1 {
		t.Fatalf("export after the consumer's error: %d rows, %v", seen, err)
	}
	// The store is usable once an export was abandoned.
	must(b.s.GetProduct(ctx, want[0].ID))
	for _, bad := range [][2]string{{"scrape_job", store.FormatCSV}, {store.ExportProduct, "xml"}} {
		_, err := store.Export(ctx, a, bad[0], bad[1], &buf)
		wantErr(t, err, store.ErrInvalid)
	}
}

// testCheckClean checks that a consistent database has no findings.
func testCheckClean(t *testing.T, b *bundle) {
	seedProducts(t, b)
	enqueue(t, b, store.JobProduct, "https://x/p/1", 0)
	fs := must(admin(t, b).CheckIntegrity(b.ctx))
	var checks []string
	for _, f := range fs {
		checks = append(checks, f.Check)
		if f.Count != 0 || len(f.Examples) != 0 {
			t.Fatalf("finding on a clean database: %+v", f)
		}
	}
	if !slices.Equal(checks, store.IntegrityChecks) {
		t.Fatalf("checks %v, want %v", checks, store.IntegrityChecks)
	}
}

// Corruption names the rows a backend's test must break (with its
// constraints off) for RunIntegrity.
type Corruption struct {
	// DeleteCategory is a category to delete, leaving its product orphaned.
	DeleteCategory string
	// DeleteNavigation is a navigation row to delete, leaving its category
	// orphaned.
	DeleteNavigation string
	// JobID is a job whose status must become BadStatus.
	JobID     string
	BadStatus string
}

// RunIntegrity checks CheckIntegrity's findings: it stores a consistent
// catalogue, lets corrupt break it as c says (corrupt must bypass the
// schema's foreign keys and CHECK constraints, which forbid this), and
// expects one finding per check naming the broken rows.
func RunIntegrity(t *testing.T, open Opener, corrupt func(ctx context.Context, s store.Store, c Corruption) error) {
	defer recoverMust(t)
	b := setup(t, open, Options{})
	ctx, s := b.ctx, b.s
	nav := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Fiction", SourceURL: "https://x/nav/f"}))
	nav2 := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "History", SourceURL: "https://x/nav/h"}))
	doomed := must(s.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nav.ID, Title: "Doomed", SourceURL: "https://x/c/doomed"}))
	orphanCat := must(s.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nav2.ID, Title: "Orphan", SourceURL: "https://x/c/orphan"}))
	orphan := must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: &doomed.ID, Title: "Orphan", SourceURL: "https://x/p/orphan", Available: true}))
	must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: &orphanCat.ID, Title: "Fine", SourceURL: "https://x/p/fine", Available: true}))
	must(s.UpsertProduct(ctx, store.ProductInput{Title: "No category", SourceURL: "https://x/p/none", Available: true}))
	job := enqueue(t, b, store.JobProduct, "https://x/p/orphan", 0)
	enqueue(t, b, store.JobCategory, "https://x/c/doomed", 0)
	c := Corruption{DeleteCategory: doomed.ID, DeleteNavigation: nav2.ID, JobID: job.ID, BadStatus: "paused"}
	if err := corrupt(ctx, s, c); err != nil {
		t.Fatalf("corrupt: %v", err)
	}
	fs, err := s.(store.Admin).CheckIntegrity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		store.CheckOrphanedProducts:   {orphan.ID, doomed.ID},
		store.CheckOrphanedCategories: {orphanCat.ID, nav2.ID},
		store.CheckInvalidJobStatus:   {job.ID, "paused"},
	}
	if len(fs) != len(store.IntegrityChecks) {
		t.Fatalf("findings %+v", fs)
	}
	for _, f := range fs {
		if f.Count != 1 || len(f.Examples) != 1 {
			t.Fatalf("finding %+v, want one row", f)
		}
		for _, m := range want[f.Check] {
			if !strings.Contains(f.Examples[0], m) {
				t.Errorf("finding %s: example %q does not mention %q", f.Check, f.Examples[0], m)
			}
		}
	}
}
