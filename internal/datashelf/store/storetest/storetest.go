// Package storetest is the contract suite of store.Store: every
// implementation runs the same cases (riverdrivertest style).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Clock is a stub clock for tests, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t.UTC()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Opener opens a fresh, empty store using opts (whose Now is a stub clock).
// It must register the store's cleanup with t.Cleanup.
type Opener func(t *testing.T, opts *store.Options) store.Store

// Start is the stub clock's initial time in every case.
var Start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Options tunes the suite to a store.
type Options struct {
	// ClaimConcurrentJobs is how many jobs ClaimConcurrent's 8 workers
	// drain (default 2000). A store that runs one transaction at a time
	// (SQLite on its one connection) cannot interleave two claims, so a
	// shorter queue checks it as well, in a fraction of the time.
	ClaimConcurrentJobs int
}

type bundle struct {
	s     store.Store
	clock *Clock
	ctx   context.Context
	opts  Options
}

func setup(t *testing.T, open Opener, opts Options) *bundle {
	t.Helper()
	clock := NewClock(Start)
	s := open(t, &store.Options{Now: clock.Now, BackoffBase: 30 * time.Second, BackoffMax: time.Hour})
	return &bundle{s: s, clock: clock, ctx: context.Background(), opts: opts}
}

func ptr[T any](v T) *T { return &v }

// mustFailure is the panic value of must; Run turns it into t.Fatal.
type mustFailure struct {
	err  error
	file string
	line int
}

// must returns v or, if err is not nil, ends the current case (it must be
// called on the test's goroutine).
func must[T any](v T, err error) T {
	if err != nil {
		_, file, line, _ := runtime.Caller(1)
		panic(mustFailure{err, file, line})
	}
	return v
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// Run runs the contract suite against the stores that open returns.
func Run(t *testing.T, open Opener) { RunWith(t, open, Options{}) }

// RunWith is Run with options.
func RunWith(t *testing.T, open Opener, opts Options) {
	if opts.ClaimConcurrentJobs <= 0 {
		opts.ClaimConcurrentJobs = 2000
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, b *bundle)
	}{
		{"Ping", testPing},
		{"NavigationUpsertAndTree", testNavigation},
		{"Categories", testCategories},
		{"ProductUpsert", testProductUpsert},
		{"ProductValidation", testProductValidation},
		{"ProductCategoryMove", testProductCategoryMove},
		{"ListProductsFilters", testListProductsFilters},
		{"ListProductsSortAndPage", testListProductsSort},
		{"ListProductsKeysetUnderWrites", testKeysetUnderWrites},
		{"EnqueueDedup", testEnqueueDedup},
		{"EnqueueConcurrentDedup", testEnqueueConcurrent},
		{"ClaimOrder", testClaimOrder},
		{"ClaimConcurrent", testClaimConcurrent},
		{"LeaseRescue", testLeaseRescue},
		{"Heartbeat", testHeartbeat},
		{"StaleWorkerCannotFinish", testStaleWorker},
		{"CompleteManyOwnership", testCompleteManyOwnership},
		{"CompleteAndClaim", testCompleteAndClaim},
		{"Wake", testWake},
		{"DispatcherWakes", testDispatcherWakes},
		{"DispatcherLostLease", testDispatcherLostLease},
		{"DispatcherRescues", testDispatcherRescues},
		{"BackoffSchedule", testBackoff},
		{"FailPermanently", testFailPermanently},
		{"EnqueueResetSkipsBackoff", testEnqueueReset},
		{"FailedCompletedAtAndCleanup", testCleanup},
		{"QueueStats", testStats},
		{"FailedJobsAndRetry", testFailedJobsAndRetry},
		{"Throughput", testThroughput},
		{"JobStateErrors", testJobErrors},
		{"SpecFilters", testSpecFilters},
		{"ActiveProducts", testActiveProducts},
		{"Maintain", testMaintain},
		{"Export", testExport},
		{"CheckIntegrityClean", testCheckClean},
		{"RunLifecycle", testRunLifecycle},
		{"RunLogBounded", testRunLogBounded},
		{"ListRuns", testListRuns},
		{"EndStaleRuns", testEndStaleRuns},
		{"RunProducts", testRunProducts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer recoverMust(t)
			tc.fn(t, setup(t, open, opts))
		})
	}
}

// recoverMust turns must's panic into t.Fatal; it must be deferred.
func recoverMust(t *testing.T) {
	if r := recover(); r != nil {
		f, ok := r.(mustFailure)
		if !ok {
			panic(r)
		}
		t.Fatalf("%s:%d: %v", filepath.Base(f.file), f.line, f.err)
	}
}

func testPing(t *testing.T, b *bundle) {
	if err := b.s.Ping(b.ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testNavigation(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	fiction := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Fiction", SourceURL: "https://x/fiction"}))
	scifi := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Science Fiction", SourceURL: "https://x/fiction/sci-fi", ParentID: &fiction.ID}))
	crime := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Crime", SourceURL: "https://x/fiction/crime", ParentID: &fiction.ID}))
	_ = must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Art", SourceURL: "https://x/art"}))
	b.clock.Advance(time.Minute)
	again := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Sci-Fi", SourceURL: "https://x/fiction/sci-fi", ParentID: &fiction.ID}))
	if again.ID != scifi.ID || again.Title != "Sci-Fi" || !again.UpdatedAt.Equal(Start.Add(time.Minute)) || !again.CreatedAt.Equal(Start) {
		t.Fatalf("re-upsert = %+v, want same id, new title and updated_at", again)
	}
	tree := must(s.NavigationTree(ctx))
	if len(tree) != 2 || tree[0].Title != "Art" || tree[1].Title != "Fiction" {
		t.Fatalf("roots = %v", titles(tree))
	}
	kids := tree[1].Children
	if len(kids) != 2 || kids[0].ID != crime.ID || kids[1].ID != scifi.ID {
		t.Fatalf("children of Fiction = %v", titles(kids))
	}
	got := must(s.GetNavigation(ctx, crime.ID))
	if got.ParentID == nil || *got.ParentID != fiction.ID {
		t.Fatalf("parent_id = %v", got.ParentID)
	}
	_, err := s.GetNavigation(ctx, "00000000-0000-4000-8000-000000000000")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetNavigation(ctx, "nope")
	wantErr(t, err, store.ErrInvalid)
}

func titles(ns []*store.NavigationNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Title)
	}
	return out
}

func testCategories(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	root := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Fiction", SourceURL: "https://x/fiction"}))
	n1 := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Sci-Fi", SourceURL: "https://x/sf", ParentID: &root.ID}))
	n2 := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Crime", SourceURL: "https://x/crime", ParentID: &root.ID}))
	other := must(s.UpsertNavigation(ctx, store.NavigationInput{Title: "Art", SourceURL: "https://x/art"}))
	var ids []string
	for i, nav := range []string{n1.ID, n1.ID, n2.ID, other.ID} {
		c := must(s.UpsertCategory(ctx, store.CategoryInput{NavigationID: ptr(nav), Title: fmt.Sprintf("Cat %d", i), SourceURL: fmt.Sprintf("https://x/c/%d", i)}))
		ids = append(ids, c.ID)
	}
	up := must(s.UpsertCategory(ctx, store.CategoryInput{NavigationID: &n1.ID, Title: "Cat 0 renamed", SourceURL: "https://x/c/0"}))
	if up.ID != ids[0] || up.Title != "Cat 0 renamed" || up.ProductCount != 0 {
		t.Fatalf("re-upsert = %+v", up)
	}
	got := must(s.GetCategory(ctx, ids[2]))
	if got.Title != "Cat 2" || got.NavigationID == nil || *got.NavigationID != n2.ID {
		t.Fatalf("get = %+v", got)
	}
	_, err := s.GetCategory(ctx, "00000000-0000-4000-8000-000000000000")
	wantErr(t, err, store.ErrNotFound)

	cases := []struct {
		name  string
		f     store.CategoryFilter
		want  []string
		total int
	}{
		{"all", store.CategoryFilter{}, []string{ids[0], ids[1], ids[2], ids[3]}, 4},
		{"navId", store.CategoryFilter{NavID: n1.ID}, []string{ids[0], ids[1]}, 2},
		{"parentId", store.CategoryFilter{ParentID: root.ID}, []string{ids[0], ids[1], ids[2]}, 3},
		{"limit", store.CategoryFilter{Limit: 2}, []string{ids[0], ids[1]}, 4},
		{"offset", store.CategoryFilter{Limit: 2, Offset: 3}, []string{ids[3]}, 4},
		{"none", store.CategoryFilter{NavID: "00000000-0000-4000-8000-000000000000"}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cats, total, err := s.ListCategories(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, c := range cats {
				gotIDs = append(gotIDs, c.ID)
			}
			if fmt.Sprint(gotIDs) != fmt.Sprint(tc.want) || total != tc.total {
				t.Fatalf("got %v total %d, want %v total %d", gotIDs, total, tc.want, tc.total)
			}
		})
	}
	_, _, err = s.ListCategories(ctx, store.CategoryFilter{Limit: -1})
	wantErr(t, err, store.ErrInvalid)
}

func newCategory(t *testing.T, b *bundle, name string) store.Category {
	t.Helper()
	return must(b.s.UpsertCategory(b.ctx, store.CategoryInput{Title: name, SourceURL: "https://x/c/" + name}))
}

func testProductUpsert(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	c := newCategory(t, b, "sf")
	in := store.ProductInput{
		CategoryID: &c.ID, Title: "Dune", SourceURL: "https://x/p/dune", SourceID: ptr("WOB-1"),
		Price: ptr(4.99), Currency: "GBP", ImageURLs: []string{"https://i/1.jpg", "https://i/2.jpg"},
		Summary: ptr("Spice."), Specs: map[string]any{"author": "Frank Herbert", "isbn": "978-0441172719", "pages": float64(688)},
		Available: true,
	}
	p := must(s.UpsertProduct(ctx, in))
	got := must(s.GetProduct(ctx, p.ID))
	if got.Title != "Dune" || *got.SourceID != "WOB-1" || *got.Price != 4.99 || got.Currency != "GBP" ||
		len(got.ImageURLs) != 2 || got.ImageURLs[1] != "https://i/2.jpg" || *got.Summary != "Spice." ||
		got.Specs["author"] != "Frank Herbert" || got.Specs["pages"] != float64(688) || !got.Available ||
		*got.CategoryID != c.ID || !got.CreatedAt.Equal(Start) {
		t.Fatalf("product = %+v", got)
	}
	if must(s.GetCategory(ctx, c.ID)).ProductCount != 1 {
		t.Fatal("product_count after insert != 1")
	}
	b.clock.Advance(time.Hour)
	in.Title, in.Price, in.Currency, in.Available, in.ImageURLs, in.Specs = "Dune (new)", nil, "EUR", false, nil, nil
	up := must(s.UpsertProduct(ctx, in))
	if up.ID != p.ID || up.Title != "Dune (new)" || up.Price != nil || up.Currency != "EUR" || up.Available ||
		len(up.ImageURLs) != 0 || len(up.Specs) != 0 || !up.CreatedAt.Equal(Start) ||
		!up.UpdatedAt.Equal(Start.Add(time.Hour)) || !up.LastScrapedAt.Equal(Start.Add(time.Hour)) {
		t.Fatalf("upserted = %+v", up)
	}
	if must(s.GetCategory(ctx, c.ID)).ProductCount != 1 {
		t.Fatal("product_count after update != 1")
	}
	_, err := s.GetProduct(ctx, "00000000-0000-4000-8000-000000000000")
	wantErr(t, err, store.ErrNotFound)
}

func testProductValidation(t *testing.T, b *bundle) {
	cases := []store.ProductInput{
		{Title: "x", SourceURL: "https://x/1", Currency: "JPY"},
		{Title: "x", SourceURL: "https://x/2", Price: ptr(-1.0)},
		{Title: "", SourceURL: "https://x/3"},
		{Title: "x", SourceURL: "https://x/4", CategoryID: ptr("00000000-0000-4000-8000-000000000000")},
	}
	for i, in := range cases {
		_, err := b.s.UpsertProduct(b.ctx, in)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("case %d: error = %v, want ErrInvalid", i, err)
		}
	}
}

func testProductCategoryMove(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	c1, c2 := newCategory(t, b, "c1"), newCategory(t, b, "c2")
	in := store.ProductInput{CategoryID: &c1.ID, Title: "Moving", SourceURL: "https://x/p/m", Available: true}
	must(s.UpsertProduct(ctx, in))
	must(s.UpsertProduct(ctx, store.ProductInput{CategoryID: &c1.ID, Title: "Stays", SourceURL: "https://x/p/s", Available: true}))
	check := func(w1, w2 int) {
		t.Helper()
		g1, g2 := must(s.GetCategory(ctx, c1.ID)).ProductCount, must(s.GetCategory(ctx, c2.ID)).ProductCount
		if g1 != w1 || g2 != w2 {
			t.Fatalf("product_count C1=%d C2=%d, want %d %d", g1, g2, w1, w2)
		}
	}
	check(2, 0)
	in.CategoryID = &c2.ID
	must(s.UpsertProduct(ctx, in))
	check(1, 1)
	must(s.UpsertProduct(ctx, in)) // same category again: no change
	check(1, 1)
	in.CategoryID = nil
	must(s.UpsertProduct(ctx, in))
	check(1, 0)
	in.CategoryID = &c1.ID
	must(s.UpsertProduct(ctx, in))
	check(2, 0)
}

// seedProducts stores six books, each one clock second apart, and returns
// their ids by short name.
func seedProducts(t *testing.T, b *bundle) (map[string]string, store.Category, store.Category) {
	t.Helper()
	c1, c2 := newCategory(t, b, "fiction"), newCategory(t, b, "history")
	type row struct {
		name, title    string
		cat            *string
		price          *float64
		author, isbn   string
		format, cond   string
		available      bool
		currency       string
		imageURLs      []string
		sourceIDSuffix string
	}
	rows := []row{
		{"dune", "Dune", &c1.ID, ptr(4.99), "Frank Herbert", "978-0441172719", "Paperback", "Very Good", true, "GBP", nil, "1"},
		{"messiah", "Dune Messiah", &c1.ID, ptr(7.50), "Frank Herbert", "978-0593098233", "Hardcover", "Good", true, "GBP", nil, "2"},
		{"gardens", "Gardening Through The Ages", &c2.ID, ptr(12.00), "Ann Smith", "111", "Paperback", "Like New", false, "GBP", nil, "3"},
		{"rome", "The History of Rome", &c2.ID, ptr(2.25), "Mary Beard", "222", "paperback", "Good", true, "USD", nil, "4"},
		{"empires", "Empires Rising", &c2.ID, nil, "Mary Beard", "333", "Hardcover", "Well Read", true, "GBP", nil, "5"},
		{"running", "Runners and Running", &c1.ID, ptr(9.99), "Zoe Ball", "444", "Paperback", "Good", true, "EUR", nil, "6"},
	}
	ids := map[string]string{}
	for _, r := range rows {
		p := must(b.s.UpsertProduct(b.ctx, store.ProductInput{
			CategoryID: r.cat, Title: r.title, SourceURL: "https://x/p/" + r.name, SourceID: ptr("S" + r.sourceIDSuffix),
			Price: r.price, Currency: r.currency, Available: r.available,
			Specs: map[string]any{"author": r.author, "isbn": r.isbn, "format": r.format, "condition": r.cond},
		}))
		ids[r.name] = p.ID
		b.clock.Advance(time.Second)
	}
	return ids, c1, c2
}

func names(ids map[string]string, ps []store.Product) []string {
	rev := map[string]string{}
	for k, v := range ids {
		rev[v] = k
	}
	out := []string{}
	for _, p := range ps {
		out = append(out, rev[p.ID])
	}
	return out
}

func testListProductsFilters(t *testing.T, b *bundle) {
	ids, c1, c2 := seedProducts(t, b)
	_ = c2
	cases := []struct {
		name string
		f    store.ProductFilter
		want []string // sorted by title_asc
	}{
		{"all", store.ProductFilter{}, []string{"dune", "messiah", "empires", "gardens", "running", "rome"}},
		{"category", store.ProductFilter{CategoryID: c1.ID}, []string{"dune", "messiah", "running"}},
		{"q one word", store.ProductFilter{Q: "dune"}, []string{"dune", "messiah"}},
		{"q two words", store.ProductFilter{Q: "Dune messiah"}, []string{"messiah"}},
		{"q stemmed", store.ProductFilter{Q: "run"}, []string{"running"}},
		{"q stemmed plural", store.ProductFilter{Q: "empire"}, []string{"empires"}},
		{"q no match", store.ProductFilter{Q: "zebra"}, []string{}},
		{"author case-insensitive", store.ProductFilter{Author: "mary beard"}, []string{"empires", "rome"}},
		{"isbn", store.ProductFilter{ISBN: "978-0441172719"}, []string{"dune"}},
		{"format", store.ProductFilter{Format: "Paperback"}, []string{"dune", "gardens", "running", "rome"}},
		{"condition", store.ProductFilter{Condition: "good"}, []string{"messiah", "running", "rome"}},
		{"minPrice", store.ProductFilter{MinPrice: ptr(7.5)}, []string{"messiah", "gardens", "running"}},
		{"maxPrice", store.ProductFilter{MaxPrice: ptr(4.99)}, []string{"dune", "rome"}},
		{"price range", store.ProductFilter{MinPrice: ptr(3.0), MaxPrice: ptr(10.0)}, []string{"dune", "messiah", "running"}},
		{"available", store.ProductFilter{Available: ptr(true)}, []string{"dune", "messiah", "empires", "running", "rome"}},
		{"unavailable", store.ProductFilter{Available: ptr(false)}, []string{"gardens"}},
		{"combined", store.ProductFilter{CategoryID: c1.ID, Author: "Frank Herbert", Format: "hardcover"}, []string{"messiah"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.Sort = store.SortTitleAsc
			ps, total, err := b.s.ListProducts(b.ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ids, ps); fmt.Sprint(got) != fmt.Sprint(tc.want) || total != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, tc.want)
			}
		})
	}
	_, _, err := b.s.ListProducts(b.ctx, store.ProductFilter{Sort: "random"})
	wantErr(t, err, store.ErrInvalid)
}

func testListProductsSort(t *testing.T, b *bundle) {
	ids, _, _ := seedProducts(t, b)
	cases := []struct {
		sort  string
		limit int
		off   int
		want  []string
	}{
		{store.SortPriceAsc, 0, 0, []string{"rome", "dune", "messiah", "running", "gardens", "empires"}},
		{store.SortPriceDesc, 0, 0, []string{"gardens", "running", "messiah", "dune", "rome", "empires"}},
		{store.SortTitleAsc, 0, 0, []string{"dune", "messiah", "empires", "gardens", "running", "rome"}},
		{store.SortTitleDesc, 0, 0, []string{"rome", "running", "gardens", "empires", "messiah", "dune"}},
		{store.SortCreatedAtDesc, 0, 0, []string{"running", "empires", "rome", "gardens", "messiah", "dune"}},
		{"", 0, 0, []string{"running", "empires", "rome", "gardens", "messiah", "dune"}},
		{store.SortPriceAsc, 2, 0, []string{"rome", "dune"}},
		{store.SortPriceAsc, 2, 2, []string{"messiah", "running"}},
		{store.SortPriceAsc, 2, 5, []string{"empires"}},
		{store.SortPriceAsc, 2, 6, []string{}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d/%d", tc.sort, tc.limit, tc.off), func(t *testing.T) {
			ps, total, err := b.s.ListProducts(b.ctx, store.ProductFilter{Sort: tc.sort, Limit: tc.limit, Offset: tc.off})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(ids, ps); fmt.Sprint(got) != fmt.Sprint(tc.want) || total != 6 {
				t.Fatalf("got %v (total %d), want %v (total 6)", got, total, tc.want)
			}
		})
	}
}

func enqueue(t *testing.T, b *bundle, typ store.JobType, url string, prio int) store.Job {
	t.Helper()
	return must(b.s.Enqueue(b.ctx, store.NewJob{Type: typ, TargetURL: url, Priority: prio}))
}

func testEnqueueDedup(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j1 := must(s.Enqueue(ctx, store.NewJob{Type: store.JobCategory, TargetURL: "https://x/c/1", Priority: 1, Metadata: map[string]any{"page": float64(2)}}))
	if j1.Status != store.StatusQueued || j1.Attempts != 0 || j1.MaxAttempts != store.DefaultMaxAttempts || j1.Metadata["page"] != float64(2) {
		t.Fatalf("job = %+v", j1)
	}
	j2 := enqueue(t, b, store.JobCategory, "https://x/c/1", 5)
	if j2.ID != j1.ID || j2.Priority != 5 {
		t.Fatalf("dedup: got %s prio %d, want %s prio 5", j2.ID, j2.Priority, j1.ID)
	}
	j3 := enqueue(t, b, store.JobCategory, "https://x/c/1", 2)
	if j3.ID != j1.ID || j3.Priority != 5 {
		t.Fatalf("lower priority must not lower: %+v", j3)
	}
	if other := enqueue(t, b, store.JobProduct, "https://x/c/1", 0); other.ID == j1.ID {
		t.Fatal("different type must be a different job")
	}
	claimed := must(s.Claim(ctx, "w", 1))
	if len(claimed) != 1 || claimed[0].ID != j1.ID {
		t.Fatalf("claimed %+v", claimed)
	}
	if j4 := enqueue(t, b, store.JobCategory, "https://x/c/1", 9); j4.ID != j1.ID || j4.Status != store.StatusRunning || j4.Priority != 9 {
		t.Fatalf("running job must be returned: %+v", j4)
	}
	if err := s.Complete(ctx, j1.ID, "w"); err != nil {
		t.Fatal(err)
	}
	if j5 := enqueue(t, b, store.JobCategory, "https://x/c/1", 0); j5.ID == j1.ID || j5.Status != store.StatusQueued {
		t.Fatalf("after completion a new job is expected: %+v", j5)
	}
	_, err := s.Enqueue(ctx, store.NewJob{Type: "video", TargetURL: "https://x"})
	wantErr(t, err, store.ErrInvalid)
}

func testEnqueueConcurrent(t *testing.T, b *bundle) {
	const n = 20
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			j, err := b.s.Enqueue(b.ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/p/same", Priority: i})
			ids[i], errs[i] = j.ID, err
		}(i)
	}
	close(start)
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("enqueue %d returned %s, enqueue 0 returned %s", i, ids[i], ids[0])
		}
	}
	stats := must(b.s.QueueStats(b.ctx))
	if len(stats) != 1 || stats[0].Count != 1 {
		t.Fatalf("stats = %+v, want one queued job", stats)
	}
	if j := must(b.s.GetJob(b.ctx, ids[0])); j.Priority != n-1 {
		t.Fatalf("priority = %d, want %d", j.Priority, n-1)
	}
}

func testClaimOrder(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	var want []string
	low1 := enqueue(t, b, store.JobProduct, "https://x/low1", 0)
	b.clock.Advance(time.Second)
	high1 := enqueue(t, b, store.JobProduct, "https://x/high1", 10)
	b.clock.Advance(time.Second)
	low2 := enqueue(t, b, store.JobProduct, "https://x/low2", 0)
	b.clock.Advance(time.Second)
	high2 := enqueue(t, b, store.JobProduct, "https://x/high2", 10)
	b.clock.Advance(time.Second)
	mid := enqueue(t, b, store.JobProduct, "https://x/mid", 5)
	later := must(s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/later", Priority: 100, RunAfter: b.clock.Now().Add(time.Minute)}))
	want = []string{high1.ID, high2.ID, mid.ID, low1.ID, low2.ID}
	first := must(s.Claim(ctx, "w1", 3))
	second := must(s.Claim(ctx, "w2", 10))
	var got []string
	for _, j := range append(first, second...) {
		got = append(got, j.ID)
		if j.Status != store.StatusRunning || j.Attempts != 1 || j.LockedAt == nil || !j.LockedAt.Equal(b.clock.Now()) {
			t.Fatalf("claimed job = %+v", j)
		}
	}
	if len(first) != 3 || *first[0].LockedBy != "w1" || *second[0].LockedBy != "w2" {
		t.Fatalf("batch sizes/workers wrong: %d %d", len(first), len(second))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
	if none := must(s.Claim(ctx, "w3", 10)); len(none) != 0 {
		t.Fatalf("job with future run_after claimed: %+v", none)
	}
	b.clock.Advance(time.Minute)
	if l := must(s.Claim(ctx, "w3", 10)); len(l) != 1 || l[0].ID != later.ID {
		t.Fatalf("claim after run_after = %+v", l)
	}
	if z := must(s.Claim(ctx, "w3", 0)); len(z) != 0 {
		t.Fatal("n=0 must claim nothing")
	}
}

func testClaimConcurrent(t *testing.T, b *bundle) {
	const workers = 8
	jobs := b.opts.ClaimConcurrentJobs
	for i := 0; i < jobs; i++ {
		must(b.s.Enqueue(b.ctx, store.NewJob{Type: store.JobProduct, TargetURL: fmt.Sprintf("https://x/p/%d", i), Priority: i % 7}))
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var dups []string
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			for {
				batch, err := b.s.Claim(b.ctx, name, 10)
				if err != nil {
					errc <- err
					return
				}
				if len(batch) == 0 {
					return
				}
				for _, j := range batch {
					mu.Lock()
					if prev, ok := seen[j.ID]; ok {
						dups = append(dups, j.ID+" by "+prev+" and "+name)
					}
					seen[j.ID] = name
					mu.Unlock()
					if err := b.s.Complete(b.ctx, j.ID, name); err != nil {
						errc <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(dups) > 0 {
		t.Fatalf("%d jobs claimed twice, e.g. %s", len(dups), dups[0])
	}
	if len(seen) != jobs {
		t.Fatalf("claimed %d distinct jobs, want %d", len(seen), jobs)
	}
	stats := must(b.s.QueueStats(b.ctx))
	if len(stats) != 1 || stats[0].Status != store.StatusCompleted || stats[0].Count != jobs || stats[0].AvgAttempts != 1 {
		t.Fatalf("stats = %+v", stats)
	}
}

func testLeaseRescue(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := enqueue(t, b, store.JobNavigation, "https://x/", 0)
	must(s.Claim(ctx, "dead", 1))
	b.clock.Advance(9 * time.Minute)
	if n := must(s.RescueExpired(ctx, b.clock.Now(), 0)); n != 0 {
		t.Fatalf("rescued %d before the lease expired", n)
	}
	if got := must(s.Claim(ctx, "w2", 1)); len(got) != 0 {
		t.Fatal("a live running job was claimed again")
	}
	b.clock.Advance(2 * time.Minute)
	if n := must(s.RescueExpired(ctx, b.clock.Now(), 0)); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	got := must(s.GetJob(ctx, j.ID))
	if got.Status != store.StatusQueued || got.LockedAt != nil || got.LockedBy != nil || got.LastError == nil || got.Attempts != 1 {
		t.Fatalf("rescued job = %+v", got)
	}
	again := must(s.Claim(ctx, "w2", 1))
	if len(again) != 1 || again[0].ID != j.ID || again[0].Attempts != 2 {
		t.Fatalf("re-claim = %+v", again)
	}
	// Claim never rescues: an expired lease waits for RescueExpired.
	b.clock.Advance(11 * time.Minute)
	if got := must(s.Claim(ctx, "w3", 1)); len(got) != 0 {
		t.Fatalf("Claim took a job whose lease expired without a rescue: %+v", got)
	}
	if n := must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	third := must(s.Claim(ctx, "w3", 1))
	if len(third) != 1 || third[0].ID != j.ID || third[0].Attempts != 3 {
		t.Fatalf("claim after rescue = %+v", third)
	}
	// Out of attempts: rescue fails it, with completed_at.
	b.clock.Advance(11 * time.Minute)
	if n := must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	got = must(s.GetJob(ctx, j.ID))
	if got.Status != store.StatusFailed || got.CompletedAt == nil {
		t.Fatalf("exhausted rescued job = %+v", got)
	}
}

func testHeartbeat(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := enqueue(t, b, store.JobCategory, "https://x/c", 0)
	must(s.Claim(ctx, "w1", 1))
	b.clock.Advance(9 * time.Minute)
	if err := s.Heartbeat(ctx, j.ID, "w1"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Heartbeat(ctx, j.ID, "w2"), store.ErrNotRunning)
	b.clock.Advance(9 * time.Minute)
	if n := must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)); n != 0 {
		t.Fatal("heartbeat did not extend the lease")
	}
	if got := must(s.GetJob(ctx, j.ID)); got.LockedAt == nil || !got.LockedAt.Equal(Start.Add(9*time.Minute)) {
		t.Fatalf("locked_at = %v", got.LockedAt)
	}
	b.clock.Advance(2 * time.Minute)
	if n := must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease)); n != 1 {
		t.Fatal("expired lease not rescued")
	}
	wantErr(t, s.Heartbeat(ctx, j.ID, "w1"), store.ErrNotRunning)
}

// testStaleWorker: worker A's lease expires, the job is rescued and claimed
// by B; A can then neither complete nor fail it, while B can.
func testStaleWorker(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := enqueue(t, b, store.JobProduct, "https://x/stale", 0)
	if got := must(s.Claim(ctx, "A", 1)); len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("A claimed %+v", got)
	}
	b.clock.Advance(store.DefaultLease + time.Second)
	must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease))
	if got := must(s.Claim(ctx, "B", 1)); len(got) != 1 || got[0].ID != j.ID || got[0].Attempts != 2 {
		t.Fatalf("B claimed %+v", got)
	}
	wantErr(t, s.Complete(ctx, j.ID, "A"), store.ErrNotRunning)
	_, err := s.Fail(ctx, j.ID, "A", "late failure")
	wantErr(t, err, store.ErrNotRunning)
	if got := must(s.GetJob(ctx, j.ID)); got.Status != store.StatusRunning || got.LockedBy == nil || *got.LockedBy != "B" {
		t.Fatalf("after A's stale calls: %+v", got)
	}
	if err := s.Complete(ctx, j.ID, "B"); err != nil {
		t.Fatal(err)
	}
	if got := must(s.GetJob(ctx, j.ID)); got.Status != store.StatusCompleted || got.CompletedAt == nil {
		t.Fatalf("after B's Complete: %+v", got)
	}
	// Finished: nobody can complete or fail it again.
	wantErr(t, s.Complete(ctx, j.ID, "B"), store.ErrNotRunning)
	_, err = s.Fail(ctx, j.ID, "B", "x")
	wantErr(t, err, store.ErrNotRunning)

	// The same for Fail: a stale worker cannot fail the new holder's run.
	k := enqueue(t, b, store.JobProduct, "https://x/stale2", 0)
	must(s.Claim(ctx, "A", 1))
	b.clock.Advance(store.DefaultLease + time.Second)
	must(s.RescueExpired(ctx, b.clock.Now(), store.DefaultLease))
	must(s.Claim(ctx, "B", 1))
	_, err = s.Fail(ctx, k.ID, "A", "late")
	wantErr(t, err, store.ErrNotRunning)
	f := must(s.Fail(ctx, k.ID, "B", "real cause"))
	if f.Status != store.StatusQueued || f.LastError == nil || *f.LastError != "real cause" {
		t.Fatalf("after B's Fail: %+v", f)
	}
}

func testBackoff(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := must(s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/p", MaxAttempts: 4}))
	delays := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute}
	for i, d := range delays {
		got := must(s.Claim(ctx, "w", 1))
		if len(got) != 1 || got[0].Attempts != i+1 {
			t.Fatalf("attempt %d: claim = %+v", i+1, got)
		}
		msg := fmt.Sprintf("boom %d", i+1)
		f := must(s.Fail(ctx, j.ID, "w", msg))
		if f.Status != store.StatusQueued || f.LastError == nil || *f.LastError != msg || f.CompletedAt != nil ||
			!f.RunAfter.Equal(b.clock.Now().Add(d)) || f.LockedBy != nil {
			t.Fatalf("attempt %d: after fail = %+v, want run_after now+%v", i+1, f, d)
		}
		b.clock.Advance(d - time.Second)
		if early := must(s.Claim(ctx, "w", 1)); len(early) != 0 {
			t.Fatalf("attempt %d: retried before its backoff", i+1)
		}
		b.clock.Advance(time.Second)
	}
	last := must(s.Claim(ctx, "w", 1))
	if len(last) != 1 || last[0].Attempts != 4 {
		t.Fatalf("last claim = %+v", last)
	}
	f := must(s.Fail(ctx, j.ID, "w", "final"))
	if f.Status != store.StatusFailed || f.CompletedAt == nil || !f.CompletedAt.Equal(b.clock.Now()) || *f.LastError != "final" {
		t.Fatalf("exhausted job = %+v", f)
	}
	if got := store.ExponentialBackoff(30*time.Second, time.Hour, 20); got != time.Hour {
		t.Fatalf("backoff cap = %v", got)
	}
}

// testFailPermanently: a permanent failure fails the job at once, on its
// first attempt, with no retry scheduled; it is refused for a job the
// worker does not hold.
func testFailPermanently(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/blocked", MaxAttempts: 5}))
	_, err := s.FailPermanently(ctx, j.ID, "w", "not claimed")
	wantErr(t, err, store.ErrNotRunning)
	must(s.Claim(ctx, "w", 1))
	_, err = s.FailPermanently(ctx, j.ID, "other", "not mine")
	wantErr(t, err, store.ErrNotRunning)
	f := must(s.FailPermanently(ctx, j.ID, "w", "address blocked"))
	if f.Status != store.StatusFailed || f.Attempts != 1 || f.CompletedAt == nil || !f.CompletedAt.Equal(b.clock.Now()) ||
		f.LastError == nil || *f.LastError != "address blocked" || f.LockedBy != nil {
		t.Fatalf("after a permanent failure: %+v", f)
	}
	b.clock.Advance(2 * time.Hour)
	if again := must(s.Claim(ctx, "w", 1)); len(again) != 0 {
		t.Fatalf("a permanently failed job was claimed again: %+v", again)
	}
	// A new job for the URL can be enqueued and runs at once.
	n := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/blocked"}))
	if n.ID == j.ID || n.Status != store.StatusQueued || n.Attempts != 0 {
		t.Fatalf("new job after a permanent failure: %+v", n)
	}
	_, err = s.FailPermanently(ctx, "not-a-uuid", "w", "x")
	wantErr(t, err, store.ErrInvalid)
}

// testEnqueueReset: enqueueing with Reset makes a queued job waiting out
// its backoff due at once with its attempts counted afresh; without Reset
// the backoff stands; a running job is never touched.
func testEnqueueReset(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/seed", Priority: 30}))
	must(s.Claim(ctx, "w", 1))
	f := must(s.Fail(ctx, j.ID, "w", "connection refused"))
	if f.Status != store.StatusQueued || !f.RunAfter.After(b.clock.Now()) || f.Attempts != 1 {
		t.Fatalf("after a failure: %+v", f)
	}
	// Without Reset the job keeps its backoff.
	same := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/seed", Priority: 30}))
	if same.ID != j.ID || !same.RunAfter.Equal(f.RunAfter) || same.Attempts != 1 {
		t.Fatalf("enqueue without Reset: %+v", same)
	}
	if got := must(s.Claim(ctx, "w", 1)); len(got) != 0 {
		t.Fatalf("claimed during the backoff: %+v", got)
	}
	r := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/seed", Priority: 30, Reset: true}))
	if r.ID != j.ID || r.Status != store.StatusQueued || !r.RunAfter.Equal(b.clock.Now()) || r.Attempts != 0 ||
		r.LastError == nil || *r.LastError != "connection refused" {
		t.Fatalf("enqueue with Reset: %+v", r)
	}
	got := must(s.Claim(ctx, "w", 1))
	if len(got) != 1 || got[0].ID != j.ID || got[0].Attempts != 1 {
		t.Fatalf("claim after Reset: %+v", got)
	}
	// A running job is left alone.
	run := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/seed", Reset: true}))
	if run.ID != j.ID || run.Status != store.StatusRunning || run.Attempts != 1 || run.LockedBy == nil || *run.LockedBy != "w" {
		t.Fatalf("Reset of a running job: %+v", run)
	}
	// Reset with no existing job is a plain enqueue.
	n := must(s.Enqueue(ctx, store.NewJob{Type: store.JobNavigation, TargetURL: "https://x/other", Reset: true}))
	if n.ID == j.ID || n.Status != store.StatusQueued || n.Attempts != 0 {
		t.Fatalf("Reset of a new job: %+v", n)
	}
}

func testCleanup(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	failed := must(s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/f", MaxAttempts: 1}))
	done := enqueue(t, b, store.JobProduct, "https://x/d", 0)
	queued := enqueue(t, b, store.JobProduct, "https://x/q", -1)
	for _, j := range must(s.Claim(ctx, "w", 2)) {
		if j.ID == failed.ID {
			f := must(s.Fail(ctx, j.ID, "w", "gone"))
			if f.Status != store.StatusFailed || f.CompletedAt == nil {
				t.Fatalf("failed job without completed_at: %+v", f)
			}
		} else if err := s.Complete(ctx, j.ID, "w"); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(6 * 24 * time.Hour)
	recent := enqueue(t, b, store.JobProduct, "https://x/r", 5)
	must(s.Claim(ctx, "w", 1))
	if err := s.Complete(ctx, recent.ID, "w"); err != nil {
		t.Fatal(err)
	}
	if n := must(s.CleanupFinished(ctx, 0)); n != 0 {
		t.Fatalf("cleaned %d jobs younger than 7 days", n)
	}
	b.clock.Advance(24*time.Hour + time.Second)
	if n := must(s.CleanupFinished(ctx, 0)); n != 2 {
		t.Fatalf("cleaned %d, want 2", n)
	}
	for _, id := range []string{failed.ID, done.ID} {
		_, err := s.GetJob(ctx, id)
		wantErr(t, err, store.ErrNotFound)
	}
	must(s.GetJob(ctx, queued.ID))
	must(s.GetJob(ctx, recent.ID))
}

func testStats(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	if st := must(s.QueueStats(ctx)); len(st) != 0 {
		t.Fatalf("empty queue stats = %+v", st)
	}
	enqueue(t, b, store.JobProduct, "https://x/1", 9)
	b.clock.Advance(time.Second)
	enqueue(t, b, store.JobProduct, "https://x/2", 8)
	b.clock.Advance(time.Second)
	enqueue(t, b, store.JobProduct, "https://x/3", 0)
	enqueue(t, b, store.JobCategory, "https://x/c", 0)
	claimed := must(s.Claim(ctx, "w", 2)) // products 1 and 2
	if err := s.Complete(ctx, claimed[0].ID, "w"); err != nil {
		t.Fatal(err)
	}
	st := must(s.QueueStats(ctx))
	type key struct {
		status store.JobStatus
		typ    store.JobType
	}
	got := map[key]store.QueueStat{}
	for _, q := range st {
		got[key{q.Status, q.Type}] = q
	}
	want := map[key]int{
		{store.StatusCompleted, store.JobProduct}: 1,
		{store.StatusRunning, store.JobProduct}:   1,
		{store.StatusQueued, store.JobProduct}:    1,
		{store.StatusQueued, store.JobCategory}:   1,
	}
	if len(got) != len(want) {
		t.Fatalf("stats = %+v", st)
	}
	for k, n := range want {
		if got[k].Count != n {
			t.Fatalf("stats[%v] = %+v, want count %d", k, got[k], n)
		}
	}
	if q := got[key{store.StatusCompleted, store.JobProduct}]; q.AvgAttempts != 1 || !q.OldestJob.Equal(Start) || !q.NewestJob.Equal(Start) {
		t.Fatalf("completed stats = %+v", q)
	}
	if q := got[key{store.StatusQueued, store.JobProduct}]; q.AvgAttempts != 0 || !q.OldestJob.Equal(Start.Add(2*time.Second)) {
		t.Fatalf("queued stats = %+v", q)
	}
}

func testJobErrors(t *testing.T, b *bundle) {
	ctx, s := b.ctx, b.s
	j := enqueue(t, b, store.JobProduct, "https://x/p", 0)
	wantErr(t, s.Complete(ctx, j.ID, "w"), store.ErrNotRunning)
	_, err := s.Fail(ctx, j.ID, "w", "x")
	wantErr(t, err, store.ErrNotRunning)
	missing := "00000000-0000-4000-8000-000000000000"
	wantErr(t, s.Complete(ctx, missing, "w"), store.ErrNotFound)
	_, err = s.Fail(ctx, missing, "w", "x")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetJob(ctx, missing)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.Heartbeat(ctx, "bad", "w"), store.ErrInvalid)
}

// keysetCase describes one sort for testKeysetUnderWrites: the values an
// inserted product takes to sort first or last, a value that moves a
// product past every other (forward) or before every other (back), and a
// comparator of positions for the sorts whose order is collation-free.
type keysetCase struct {
	sort string
	// first and last set a new product's sort value so that it sorts
	// before (after) every product so far; n numbers the write round.
	first, last func(in *store.ProductInput, n int)
	// forward and back change an existing product's sort value so that it
	// moves after (before) every other product; nil when the sort value
	// cannot change (created_at).
	forward, back func(in *store.ProductInput, n int)
}

func keysetCases() []keysetCase {
	setPrice := func(v float64) func(in *store.ProductInput, n int) {
		return func(in *store.ProductInput, n int) { in.Price = ptr(v + float64(n)/100) }
	}
	setPriceDown := func(v float64) func(in *store.ProductInput, n int) {
		return func(in *store.ProductInput, n int) { in.Price = ptr(v - float64(n)/100) }
	}
	setTitle := func(prefix string, up bool) func(in *store.ProductInput, n int) {
		return func(in *store.ProductInput, n int) {
			if !up {
				n = 99 - n
			}
			in.Title = fmt.Sprintf("%s%02d", prefix, n)
		}
	}
	return []keysetCase{
		// Nulls sort last in both price orders, so "last" is a product
		// without a price, ordered among them by id.
		{sort: store.SortPriceAsc, first: setPriceDown(0.50), last: func(in *store.ProductInput, n int) { in.Price = nil },
			forward: setPrice(900), back: setPriceDown(0.49)},
		{sort: store.SortPriceDesc, first: setPrice(900), last: func(in *store.ProductInput, n int) { in.Price = nil },
			forward: setPriceDown(0.50), back: setPrice(950)},
		{sort: store.SortTitleAsc, first: setTitle("0000", false), last: setTitle("zzzz", true),
			forward: setTitle("zzzy", true), back: setTitle("0001", false)},
		{sort: store.SortTitleDesc, first: setTitle("zzzz", true), last: setTitle("0000", false),
			forward: setTitle("0001", false), back: setTitle("zzzy", true)},
		{sort: store.SortCreatedAtDesc},
	}
}

// keyAfter reports whether the product at position p comes after the
// position at in sort's order, for the positions testKeysetUnderWrites
// cannot place by construction (price and created_at: no collation).
func keyAfter(sort string, p, at store.ProductKey) bool {
	switch sort {
	case store.SortPriceAsc, store.SortPriceDesc:
		switch {
		case (p.Price == nil) != (at.Price == nil):
			return p.Price == nil
		case p.Price != nil && *p.Price != *at.Price:
			return (*p.Price > *at.Price) == (sort == store.SortPriceAsc)
		}
	case store.SortCreatedAtDesc:
		if !p.CreatedAt.Equal(at.CreatedAt) {
			return p.CreatedAt.Before(at.CreatedAt)
		}
	default:
		panic("keyAfter: no collation-free order for " + sort)
	}
	return p.ID > at.ID
}

// testKeysetUnderWrites pages through the products in every sort with
// After (keyset pagination), three at a time, while products are written
// between pages: inserts that sort before the position (never seen) and
// after it (seen once), updates of fields outside the sort (seen once),
// and updates that move a product's sort value past the position either
// way (such a product may be seen twice or not at all). Every product whose
// sort value never changed must be seen exactly once, and each page must be
// in the sort's order. Offsets fail this: an insert before the position
// shifts the next page back by one and repeats a product.
func testKeysetUnderWrites(t *testing.T, b *bundle) {
	seq := 0
	for _, kc := range keysetCases() {
		t.Run(kc.sort, func(t *testing.T) {
			// Each sort pages through its own category, so the values
			// another case wrote do not change what sorts first or last.
			cat := newCategory(t, b, "keyset-"+kc.sort)
			inputs := map[string]store.ProductInput{} // by id
			put := func(in store.ProductInput) store.Product {
				p := must(b.s.UpsertProduct(b.ctx, in))
				inputs[p.ID] = in
				return p
			}
			newInput := func(title string, price *float64) store.ProductInput {
				seq++
				return store.ProductInput{CategoryID: &cat.ID, Title: title, SourceURL: fmt.Sprintf("https://x/keyset/%d", seq),
					Price: price, Specs: map[string]any{"format": "Paperback"}}
			}
			// 16 products with ties on every sort value: titles repeat (and
			// differ only by case), prices repeat (some are null), and
			// three products share each created_at.
			titles := []string{"Alpha", "alpha", "Beta", "Gamma", "Alpha", "Delta", "beta", "Gamma"}
			prices := []*float64{ptr(1.99), ptr(2.50), nil, ptr(1.99), ptr(7.00), ptr(2.50), nil, ptr(3.10)}
			for i := 0; i < 16; i++ {
				put(newInput(titles[i%len(titles)], prices[(i*3)%len(prices)]))
				if i%3 == 2 {
					b.clock.Advance(time.Second)
				}
			}
			existing := map[string]bool{}
			for id := range inputs {
				existing[id] = true
			}
			seen := map[string]int{}
			changed := map[string]int{}    // times the sort value changed while paging
			wantOnce := map[string]bool{}  // inserted after the position
			wantNever := map[string]bool{} // inserted before the position
			var behind, ahead []string     // ids seen / not yet seen, for updates
			var at *store.ProductKey
			for round := 1; ; round++ {
				if round > 60 {
					t.Fatal("paging does not terminate")
				}
				page, _ := must2(b.s.ListProducts(b.ctx, store.ProductFilter{CategoryID: cat.ID, Sort: kc.sort, Limit: 3, After: at, SkipTotal: true}))
				for i, p := range page {
					seen[p.ID]++
					if i > 0 && !pageOrdered(kc.sort, page[i-1], p) {
						t.Errorf("round %d: %q (%v) before %q (%v)", round, page[i-1].Title, page[i-1].Price, p.Title, p.Price)
					}
				}
				if len(page) == 0 {
					break
				}
				k := store.KeyOf(page[len(page)-1], kc.sort)
				at = &k
				behind, ahead = behind[:0], ahead[:0]
				for id := range inputs {
					if seen[id] > 0 {
						behind = append(behind, id)
					} else {
						ahead = append(ahead, id)
					}
				}
				sortStrings(behind)
				sortStrings(ahead)

				// Writes between the first pages (writing after the position
				// at every page would keep the listing from ending).
				if round > 6 {
					continue
				}
				b.clock.Advance(time.Second)
				if kc.first != nil {
					in := newInput("", nil)
					in.Title, in.Price = "Inserted", ptr(5.0)
					kc.first(&in, round)
					wantNever[put(in).ID] = true
					in = newInput("", nil)
					in.Title, in.Price = "Inserted", ptr(5.0)
					kc.last(&in, round)
					p := put(in)
					if kc.sort == store.SortPriceAsc || kc.sort == store.SortPriceDesc {
						if keyAfter(kc.sort, store.KeyOf(p, kc.sort), *at) {
							wantOnce[p.ID] = true
						} else {
							wantNever[p.ID] = true
						}
					} else {
						wantOnce[p.ID] = true
					}
				} else {
					// created_at_desc: a new product is the newest (sorts
					// first); one stored with an old clock ties with the
					// oldest products and lands by id.
					wantNever[put(newInput("Newest", ptr(1.0))).ID] = true
					b.clock.Advance(-time.Hour)
					p := put(newInput("Backdated", ptr(1.0)))
					b.clock.Advance(time.Hour)
					if keyAfter(kc.sort, store.KeyOf(p, kc.sort), *at) {
						wantOnce[p.ID] = true
					} else {
						wantNever[p.ID] = true
					}
				}
				// An update outside the sort: the product stays put.
				if len(ahead) > 0 {
					id := ahead[round%len(ahead)]
					in := inputs[id]
					in.Available = !in.Available
					in.Summary = ptr(fmt.Sprintf("touched in round %d", round))
					put(in)
				}
				// Updates moving a product past the position both ways.
				if kc.forward != nil && len(behind) > 0 && len(ahead) > 1 {
					id := behind[round%len(behind)]
					in := inputs[id]
					kc.forward(&in, round)
					put(in)
					changed[id]++
					id = ahead[(round+1)%len(ahead)]
					in = inputs[id]
					kc.back(&in, round)
					put(in)
					changed[id]++
				}
			}
			for id := range inputs {
				n := seen[id]
				switch {
				case changed[id] > 0:
					// Each move past the position may show it once more.
					if n > changed[id]+1 {
						t.Errorf("product %q moved %d times seen %d times", inputs[id].Title, changed[id], n)
					}
				case wantNever[id]:
					if n != 0 {
						t.Errorf("product %q inserted before the position seen %d times", inputs[id].Title, n)
					}
				case existing[id] || wantOnce[id]:
					if n != 1 {
						t.Errorf("product %q (%v) seen %d times, want once", inputs[id].Title, inputs[id].Price, n)
					}
				}
			}
			if len(changed) == 0 && kc.forward != nil {
				t.Error("no sort value changed while paging: the case tests nothing")
			}
			if len(wantOnce) == 0 {
				t.Error("no product inserted after the position: the case tests nothing")
			}
		})
	}
	// After cannot be combined with Offset, and its id must be a UUID.
	_, _, err := b.s.ListProducts(b.ctx, store.ProductFilter{Offset: 3, After: &store.ProductKey{ID: "00000000-0000-0000-0000-000000000000"}})
	wantErr(t, err, store.ErrInvalid)
	_, _, err = b.s.ListProducts(b.ctx, store.ProductFilter{After: &store.ProductKey{ID: "x"}})
	wantErr(t, err, store.ErrInvalid)
}

// pageOrdered reports whether a may precede c in sort's order, on the sort
// value alone (ties are ordered by id, checked elsewhere).
func pageOrdered(sort string, a, c store.Product) bool {
	switch sort {
	case store.SortPriceAsc:
		return c.Price == nil || (a.Price != nil && *a.Price <= *c.Price)
	case store.SortPriceDesc:
		return c.Price == nil || (a.Price != nil && *a.Price >= *c.Price)
	case store.SortCreatedAtDesc:
		return !a.CreatedAt.Before(c.CreatedAt)
	}
	return true // title orders depend on the database's collation
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		_, file, line, _ := runtime.Caller(1)
		panic(mustFailure{err, file, line})
	}
	return a, b
}

func sortStrings(s []string) { slices.Sort(s) }
