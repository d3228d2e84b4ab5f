package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// clock is a stub clock safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// storeClock ticks one second per call so created_at values are distinct.
type storeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

type bundle struct {
	h        http.Handler
	st       store.Store
	clock    *clock
	blobs    *blob.Dir
	navs     []store.Navigation
	cats     []store.Category
	products []store.Product
	secret   []byte
}

var (
	formats    = []string{"Paperback", "Hardback", "Audio CD"}
	conditions = []string{"Very Good", "Good", "Well Read"}
	authors    = []string{"Ursula K. Le Guin", "Terry Pratchett", "Jane Austen", "Hilary Mantel"}
	words      = []string{"Dragon", "Garden", "Winter", "Ocean", "Silent", "Golden", "Hidden", "River"}
)

const numProducts = 45

// seeded is the database every test starts from, seeded once (by the first
// setup) and copied for each test: seeding one per test was half of the
// package's time under -race.
var seeded struct {
	once     sync.Once
	err      error
	dir      string // removed by TestMain
	navs     []store.Navigation
	cats     []store.Category
	products []store.Product
	clockAt  time.Time // the store clock after seeding
}

func TestMain(m *testing.M) {
	code := m.Run()
	if seeded.dir != "" {
		os.RemoveAll(seeded.dir)
	}
	os.Exit(code)
}

// seed writes the fixture into a new database in seeded.dir: 5 navigation
// rows, 4 categories and numProducts products.
func seed() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "datashelf-api-test-")
	if err != nil {
		return err
	}
	seeded.dir = dir
	sc := &storeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ds.db"), &sqlite.Options{Options: store.Options{Now: sc.Now}})
	if err != nil {
		return err
	}
	defer st.Close()
	nav := func(title string, parent *string) (store.Navigation, error) {
		n, err := st.UpsertNavigation(ctx, store.NavigationInput{Title: title, SourceURL: "https://wob.example/nav/" + title, ParentID: parent})
		seeded.navs = append(seeded.navs, n)
		return n, err
	}
	books, err := nav("Books", nil)
	if err != nil {
		return err
	}
	music, err := nav("Music", nil)
	if err != nil {
		return err
	}
	fiction, err := nav("Fiction", &books.ID)
	if err != nil {
		return err
	}
	nonfiction, err := nav("Non-fiction", &books.ID)
	if err != nil {
		return err
	}
	if _, err := nav("Vinyl", &music.ID); err != nil {
		return err
	}
	for i, nid := range []string{fiction.ID, fiction.ID, nonfiction.ID, music.ID} {
		c, err := st.UpsertCategory(ctx, store.CategoryInput{NavigationID: &nid, Title: fmt.Sprintf("Category %c", 'A'+i), SourceURL: fmt.Sprintf("https://wob.example/collections/c%d", i)})
		if err != nil {
			return err
		}
		seeded.cats = append(seeded.cats, c)
	}
	for i := 0; i < numProducts; i++ {
		in := store.ProductInput{
			CategoryID: &seeded.cats[i%len(seeded.cats)].ID,
			Title:      fmt.Sprintf("The %s %s %02d", words[i%len(words)], words[(i*3+1)%len(words)], i),
			SourceURL:  fmt.Sprintf("https://wob.example/products/p%d", i),
			Currency:   "GBP",
			Available:  i%3 != 0,
			Specs: map[string]any{
				"author":    authors[i%len(authors)],
				"isbn":      fmt.Sprintf("97800000%05d", i),
				"format":    formats[i%len(formats)],
				"condition": conditions[(i/2)%len(conditions)],
			},
		}
		if i%10 != 9 { // every tenth product has no price
			p := float64(100+(i*37)%900) / 100
			in.Price = &p
		}
		p, err := st.UpsertProduct(ctx, in)
		if err != nil {
			return err
		}
		seeded.products = append(seeded.products, p)
	}
	seeded.clockAt = sc.Now()
	return nil
}

// setup builds an API over a SQLite store holding 5 navigation rows, 4
// categories and numProducts products. rateLimit 0 means a limit high enough
// not to interfere.
func setup(t *testing.T, rateLimit int) *bundle {
	t.Helper()
	seeded.once.Do(func() { seeded.err = seed() })
	if seeded.err != nil {
		t.Fatalf("seed: %v", seeded.err)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ds.db")
	data, err := os.ReadFile(filepath.Join(seeded.dir, "ds.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sc := &storeClock{now: seeded.clockAt}
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Options: store.Options{Now: sc.Now}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{st: st, clock: &clock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}, secret: []byte("s3cret"),
		navs: append([]store.Navigation(nil), seeded.navs...), cats: append([]store.Category(nil), seeded.cats...),
		products: append([]store.Product(nil), seeded.products...)}
	b.blobs, err = blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if rateLimit == 0 {
		rateLimit = 1_000_000
	}
	h := api.New(api.Options{
		Store:     st,
		Blobs:     b.blobs,
		Keys:      map[string][]byte{"crawler": b.secret},
		RateLimit: rateLimit,
		Now:       b.clock.Now,
	})
	mux := http.NewServeMux()
	mux.Handle("/datashelf/", http.StripPrefix("/datashelf", h))
	b.h = mux
	return b
}

func (b *bundle) do(t *testing.T, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, req)
	return w
}

func (b *bundle) get(t *testing.T, target string) *httptest.ResponseRecorder {
	t.Helper()
	return b.do(t, httptest.NewRequest("GET", "/datashelf"+target, nil))
}

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", w.Body.String(), err)
	}
	return v
}

type errBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func ids(ps []store.Product) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	sort.Strings(out)
	return out
}

func (b *bundle) where(pred func(i int, p store.Product) bool) []string {
	var out []store.Product
	for i, p := range b.products {
		if pred(i, p) {
			out = append(out, p)
		}
	}
	return ids(out)
}

func TestProductFilters(t *testing.T) {
	b := setup(t, 0)
	cat := b.cats[1].ID
	price := func(p store.Product) float64 {
		if p.Price == nil {
			return -1
		}
		return *p.Price
	}
	tests := []struct {
		name  string
		query string
		want  func(i int, p store.Product) bool
	}{
		{"all", "", func(int, store.Product) bool { return true }},
		{"categoryId", "categoryId=" + cat, func(i int, p store.Product) bool { return *p.CategoryID == cat }},
		{"categoryId upper case", "categoryId=" + strings.ToUpper(cat), func(i int, p store.Product) bool { return *p.CategoryID == cat }},
		{"author", "author=terry+pratchett", func(i int, p store.Product) bool { return p.Specs["author"] == "Terry Pratchett" }},
		{"isbn", "isbn=9780000000007", func(i int, p store.Product) bool { return i == 7 }},
		{"format", "format=hardback", func(i int, p store.Product) bool { return p.Specs["format"] == "Hardback" }},
		{"condition", "condition=Well%20Read", func(i int, p store.Product) bool { return p.Specs["condition"] == "Well Read" }},
		{"minPrice", "minPrice=5", func(i int, p store.Product) bool { return price(p) >= 5 }},
		{"maxPrice", "maxPrice=4.5", func(i int, p store.Product) bool { return p.Price != nil && price(p) <= 4.5 }},
		{"price range", "minPrice=2&maxPrice=6", func(i int, p store.Product) bool { return price(p) >= 2 && price(p) <= 6 }},
		{"available", "available=true", func(i int, p store.Product) bool { return p.Available }},
		{"unavailable", "available=false", func(i int, p store.Product) bool { return !p.Available }},
		{"combined", "categoryId=" + cat + "&available=true&format=Hardback", func(i int, p store.Product) bool {
			return *p.CategoryID == cat && p.Available && p.Specs["format"] == "Hardback"
		}},
		{"q one word", "q=dragon", func(i int, p store.Product) bool { return strings.Contains(p.Title, "Dragon") }},
		{"q two words", "q=winter+ocean", func(i int, p store.Product) bool {
			return strings.Contains(p.Title, "Winter") && strings.Contains(p.Title, "Ocean")
		}},
		{"q no match", "q=zyzzyva", func(int, store.Product) bool { return false }},
		{"q punctuation only", "q=%22%29%28", func(int, store.Product) bool { return true }},
		{"q fts syntax no match", "q=NEAR%28+%2A+OR", func(int, store.Product) bool { return false }},
		{"q stemming", "q=gardens", func(i int, p store.Product) bool { return strings.Contains(p.Title, "Garden") }},
		{"q case insensitive", "q=SILENT", func(i int, p store.Product) bool { return strings.Contains(p.Title, "Silent") }},
		{"no match", "author=nobody", func(int, store.Product) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := b.get(t, "/api/products?limit=100&"+tt.query)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			page := decode[api.ProductPage](t, w)
			want := b.where(tt.want)
			if got := ids(page.Items); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %d items, want %d\n got %v\nwant %v", len(got), len(want), got, want)
			}
			if page.Total != len(want) {
				t.Errorf("total %d, want %d", page.Total, len(want))
			}
			if !strings.Contains(tt.name, "no match") && (len(want) == 0 || len(want) > numProducts-3 && tt.name != "all" && tt.name != "q punctuation only") {
				t.Fatalf("fixture does not exercise the filter: %d matches", len(want))
			}
			if tt.name == "all" && len(want) != numProducts {
				t.Fatalf("fixture: %d products", len(want))
			}
		})
	}
}

func TestProductSort(t *testing.T) {
	b := setup(t, 0)
	less := map[string]func(a, c store.Product) bool{
		"price_asc": func(a, c store.Product) bool {
			return c.Price == nil || (a.Price != nil && *a.Price <= *c.Price)
		},
		"price_desc": func(a, c store.Product) bool {
			return c.Price == nil || (a.Price != nil && *a.Price >= *c.Price)
		},
		"title_asc":       func(a, c store.Product) bool { return strings.ToLower(a.Title) <= strings.ToLower(c.Title) },
		"title_desc":      func(a, c store.Product) bool { return strings.ToLower(a.Title) >= strings.ToLower(c.Title) },
		"created_at_desc": func(a, c store.Product) bool { return !a.CreatedAt.Before(c.CreatedAt) },
		"":                func(a, c store.Product) bool { return !a.CreatedAt.Before(c.CreatedAt) },
	}
	for sortName, ok := range less {
		t.Run("sort="+sortName, func(t *testing.T) {
			target := "/api/products?limit=100"
			if sortName != "" {
				target += "&sort=" + sortName
			}
			w := b.get(t, target)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			items := decode[api.ProductPage](t, w).Items
			if len(items) != numProducts {
				t.Fatalf("%d items", len(items))
			}
			for i := 1; i < len(items); i++ {
				if !ok(items[i-1], items[i]) {
					t.Fatalf("items %d and %d out of order: %q %v / %q %v", i-1, i,
						items[i-1].Title, items[i-1].Price, items[i].Title, items[i].Price)
				}
			}
		})
	}
}

func TestPagination(t *testing.T) {
	b := setup(t, 0)
	for _, sortName := range []string{"price_asc", "price_desc", "title_asc", "title_desc", "created_at_desc"} {
		t.Run("offset/"+sortName, func(t *testing.T) {
			seen := map[string]int{}
			for off := 0; ; off += 7 {
				w := b.get(t, fmt.Sprintf("/api/products?sort=%s&limit=7&offset=%d", sortName, off))
				if w.Code != 200 {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				page := decode[api.ProductPage](t, w)
				if page.Pagination.Limit != 7 || page.Pagination.Offset != off || page.Total != numProducts {
					t.Fatalf("pagination %+v total %d", page.Pagination, page.Total)
				}
				if len(page.Items) == 0 {
					break
				}
				for _, p := range page.Items {
					seen[p.ID]++
				}
			}
			checkOnce(t, b, seen)
		})
		t.Run("cursor/"+sortName, func(t *testing.T) {
			seen := map[string]int{}
			target := "/api/products?sort=" + sortName + "&limit=6&available=true"
			next := target
			pages := 0
			for {
				w := b.get(t, next)
				if w.Code != 200 {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				page := decode[api.ProductPage](t, w)
				pages++
				for _, p := range page.Items {
					seen[p.ID]++
				}
				if page.Pagination.NextCursor == nil {
					break
				}
				if pages > 20 {
					t.Fatal("cursor does not terminate")
				}
				next = target + "&cursor=" + *page.Pagination.NextCursor
			}
			want := b.where(func(i int, p store.Product) bool { return p.Available })
			if len(seen) != len(want) {
				t.Fatalf("saw %d products, want %d", len(seen), len(want))
			}
			for _, id := range want {
				if seen[id] != 1 {
					t.Errorf("product %s seen %d times", id, seen[id])
				}
			}
			if wantPages := (len(want) + 5) / 6; pages != wantPages {
				t.Errorf("%d pages, want %d", pages, wantPages)
			}
		})
	}
	t.Run("cursor of another query", func(t *testing.T) {
		page := decode[api.ProductPage](t, b.get(t, "/api/products?limit=5&sort=price_asc"))
		w := b.get(t, "/api/products?limit=5&sort=title_asc&cursor="+*page.Pagination.NextCursor)
		expectError(t, w, 400, "cursor")
		w = b.get(t, "/api/products?limit=5&sort=price_asc&offset=5&cursor="+*page.Pagination.NextCursor)
		expectError(t, w, 400, "cursor")
	})
	t.Run("last page has no cursor", func(t *testing.T) {
		page := decode[api.ProductPage](t, b.get(t, "/api/products?limit=100"))
		if page.Pagination.NextCursor != nil {
			t.Errorf("nextCursor %q on the last page", *page.Pagination.NextCursor)
		}
	})
}

func checkOnce(t *testing.T, b *bundle, seen map[string]int) {
	t.Helper()
	if len(seen) != numProducts {
		t.Errorf("saw %d products, want %d", len(seen), numProducts)
	}
	for _, p := range b.products {
		if seen[p.ID] != 1 {
			t.Errorf("product %s seen %d times", p.ID, seen[p.ID])
		}
	}
}

func expectError(t *testing.T, w *httptest.ResponseRecorder, status int, mention string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	e := decode[errBody](t, w)
	if e.Error.Code == "" || !strings.Contains(e.Error.Message, mention) {
		t.Errorf("error %+v does not mention %q", e.Error, mention)
	}
}

func TestBadParameters(t *testing.T) {
	b := setup(t, 0)
	tests := []struct {
		target string
		param  string
	}{
		{"/api/products?limit=0", "limit"},
		{"/api/products?limit=101", "limit"},
		{"/api/products?limit=-1", "limit"},
		{"/api/products?limit=abc", "limit"},
		{"/api/products?limit=99999999999999999999999", "limit"},
		{"/api/products?offset=-3", "offset"},
		{"/api/products?offset=1.5", "offset"},
		{"/api/products?sort=cheapest", "sort"},
		{"/api/products?sort=", "sort"},
		{"/api/products?categoryId=42", "categoryId"},
		{"/api/products?categoryId=", "categoryId"},
		{"/api/products?minPrice=cheap", "minPrice"},
		{"/api/products?minPrice=-1", "minPrice"},
		{"/api/products?maxPrice=NaN", "maxPrice"},
		{"/api/products?maxPrice=Inf", "maxPrice"},
		{"/api/products?minPrice=9&maxPrice=1", "minPrice"},
		{"/api/products?available=maybe", "available"},
		{"/api/products?cursor=!!!", "cursor"},
		{"/api/products?cursor=e30", "cursor"},
		{"/api/products?q=" + strings.Repeat("x", 300), "q"},
		{"/api/products?author=%00", "author"},
		{"/api/products?limit=5&limit=6", "limit"},
		{"/api/products?category_id=x", "category_id"},
		{"/api/products?%zz", "query"},
		{"/api/products/not-a-uuid", "id"},
		{"/api/categories?limit=500", "limit"},
		{"/api/categories?offset=x", "offset"},
		{"/api/categories?navId=nope", "navId"},
		{"/api/categories?parentId=nope", "parentId"},
		{"/api/categories/123", "id"},
		{"/api/navigation?x=1", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			expectError(t, b.get(t, tt.target), 400, tt.param)
		})
	}
}

func TestNotFound(t *testing.T) {
	b := setup(t, 0)
	const missing = "00000000-0000-4000-8000-000000000000"
	for _, target := range []string{"/api/products/" + missing, "/api/categories/" + missing, "/api/nothing", "/images/images/ab/missing.jpg"} {
		t.Run(target, func(t *testing.T) { expectError(t, b.get(t, target), 404, "found") })
	}
	t.Run("method not allowed", func(t *testing.T) {
		w := b.do(t, httptest.NewRequest("DELETE", "/datashelf/api/products", nil))
		expectError(t, w, 405, "DELETE")
		if w.Header().Get("Allow") == "" {
			t.Error("no Allow header")
		}
	})
}

func TestGetByID(t *testing.T) {
	b := setup(t, 0)
	p := b.products[3]
	got := decode[store.Product](t, b.get(t, "/api/products/"+p.ID))
	if got.ID != p.ID || got.Title != p.Title || got.Specs["isbn"] != p.Specs["isbn"] {
		t.Errorf("got %+v, want %+v", got, p)
	}
	c := decode[store.Category](t, b.get(t, "/api/categories/"+strings.ToUpper(b.cats[2].ID)))
	if c.ID != b.cats[2].ID || c.ProductCount != 11 {
		t.Errorf("category %+v", c)
	}
}

func TestCategoriesAndNavigation(t *testing.T) {
	b := setup(t, 0)
	books, fiction := b.navs[0], b.navs[2]
	tests := []struct {
		query string
		want  int
		total int
	}{
		{"", 4, 4},
		{"limit=2", 2, 4},
		{"limit=2&offset=3", 1, 4},
		{"navId=" + fiction.ID, 2, 2},
		{"parentId=" + books.ID, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			w := b.get(t, "/api/categories?"+tt.query)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			page := decode[api.CategoryPage](t, w)
			if len(page.Items) != tt.want || page.Total != tt.total {
				t.Errorf("%d items, total %d; want %d, %d", len(page.Items), page.Total, tt.want, tt.total)
			}
		})
	}
	t.Run("navigation tree", func(t *testing.T) {
		tree := decode[api.NavigationTree](t, b.get(t, "/api/navigation"))
		if len(tree.Items) != 2 || tree.Items[0].Title != "Books" || len(tree.Items[0].Children) != 2 || len(tree.Items[1].Children) != 1 {
			t.Errorf("tree %+v", tree.Items)
		}
	})
}

func TestETag(t *testing.T) {
	b := setup(t, 0)
	w := b.get(t, "/api/products?limit=3")
	etag := w.Header().Get("ETag")
	if etag == "" || w.Header().Get("Cache-Control") == "" {
		t.Fatalf("headers %v", w.Header())
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		req := httptest.NewRequest("GET", "/datashelf/api/products?limit=3", nil)
		req.Header.Set("If-None-Match", inm)
		w2 := b.do(t, req)
		if w2.Code != 304 || w2.Body.Len() != 0 || w2.Header().Get("ETag") != etag {
			t.Errorf("If-None-Match %s: status %d, body %q", inm, w2.Code, w2.Body)
		}
	}
	req := httptest.NewRequest("GET", "/datashelf/api/products?limit=3", nil)
	req.Header.Set("If-None-Match", `"stale"`)
	if w2 := b.do(t, req); w2.Code != 200 {
		t.Errorf("stale ETag: status %d", w2.Code)
	}
	if w2 := b.get(t, "/api/products?limit=4"); w2.Header().Get("ETag") == etag {
		t.Error("different bodies share an ETag")
	}
}

func TestRateLimit(t *testing.T) {
	b := setup(t, 0)
	// The default limit (100/min); the stub clock stands still, so all 101
	// requests fall within one minute.
	h := api.New(api.Options{Store: b.st, Now: b.clock.Now})
	get := func(ip string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/api/navigation", nil)
		req.RemoteAddr = ip + ":5555"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := 1; i <= 100; i++ {
		w := get("198.51.100.7")
		if w.Code != 200 {
			t.Fatalf("request %d: status %d", i, w.Code)
		}
		if got := w.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(100-i) {
			t.Fatalf("request %d: remaining %s", i, got)
		}
		if w.Header().Get("X-RateLimit-Limit") != "100" || w.Header().Get("X-RateLimit-Reset") == "" {
			t.Fatalf("headers %v", w.Header())
		}
	}
	w := get("198.51.100.7")
	expectError(t, w, 429, "rate limit")
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", w.Header().Get("Retry-After"))
	}
	if w := get("203.0.113.9"); w.Code != 200 {
		t.Errorf("another IP: status %d", w.Code)
	}
	b.clock.Advance(time.Duration(ra) * time.Second)
	if w := get("198.51.100.7"); w.Code != 200 {
		t.Errorf("after Retry-After: status %d", w.Code)
	}
	if w := get("198.51.100.7"); w.Code != 429 {
		t.Errorf("bucket refilled too fast: status %d", w.Code)
	}
	b.clock.Advance(time.Minute)
	if w := get("198.51.100.7"); w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != "99" {
		t.Errorf("after a minute: status %d, remaining %s", w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
}

// TestRateLimitConcurrent checks that concurrent requests from one IP get
// exactly the limit between them.
func TestRateLimitConcurrent(t *testing.T) {
	b := setup(t, 0)
	h := api.New(api.Options{Store: b.st, Now: b.clock.Now, RateLimit: 20})
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest("GET", "/api/categories", nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			mu.Lock()
			codes[w.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] != 20 || codes[429] != 20 {
		t.Errorf("codes %v", codes)
	}
}

func TestImages(t *testing.T) {
	b := setup(t, 0)
	data := []byte("\x89PNG\r\n\x1a\nfake image")
	key := blob.ContentKey("images", data, ".png")
	if err := b.blobs.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	w := b.get(t, "/images/"+key)
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), data) {
		t.Fatalf("status %d body %q", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "image/png" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := w.Header().Get("Cache-Control"); !strings.Contains(cc, "max-age=31536000") {
		t.Errorf("Cache-Control %q", cc)
	}
	req := httptest.NewRequest("GET", "/datashelf/images/"+key, nil)
	req.Header.Set("If-None-Match", w.Header().Get("ETag"))
	if w := b.do(t, req); w.Code != 304 {
		t.Errorf("If-None-Match: status %d", w.Code)
	}
	for _, bad := range []string{"/images/../secret", "/images/a/%2e%2e/%2e%2e/x"} {
		if w := b.get(t, bad); w.Code != 400 && w.Code != 404 && w.Code != 301 && w.Code != 307 {
			t.Errorf("%s: status %d", bad, w.Code)
		}
	}
}

// signedReq builds a signed scraper request.
func (b *bundle) signedReq(method, target string, body []byte, keyID string, secret []byte, now time.Time, nonce string) *http.Request {
	req := httptest.NewRequest(method, "/datashelf"+target, bytes.NewReader(body))
	api.Sign(keyID, secret, req, body, now, nonce)
	return req
}

func TestHMAC(t *testing.T) {
	b := setup(t, 0)
	now := b.clock.Now()
	body := []byte(`{"url":"https://wob.example/collections/new","type":"category","priority":5}`)
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
	}{
		{"good enqueue", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", body, "crawler", b.secret, now, "n-1")
		}, 202},
		{"good status", func() *http.Request {
			return b.signedReq("GET", "/api/scraper/status?verbose=1", nil, "crawler", b.secret, now, "n-2")
		}, 200},
		{"timestamp 4 min old", func() *http.Request {
			return b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now.Add(-4*time.Minute), "n-3")
		}, 200},
		{"replayed nonce", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", body, "crawler", b.secret, now, "n-1")
		}, 401},
		{"bad signature (wrong secret)", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", body, "crawler", []byte("wrong"), now, "n-4")
		}, 401},
		{"bad signature (body tampered)", func() *http.Request {
			req := b.signedReq("POST", "/api/scraper/enqueue", body, "crawler", b.secret, now, "n-5")
			req.Body = http.NoBody
			tampered := bytes.Replace(body, []byte("5"), []byte("9"), 1)
			req2 := httptest.NewRequest("POST", "/datashelf/api/scraper/enqueue", bytes.NewReader(tampered))
			req2.Header = req.Header
			return req2
		}, 401},
		{"bad signature (query tampered)", func() *http.Request {
			req := b.signedReq("GET", "/api/scraper/status?a=1", nil, "crawler", b.secret, now, "n-6")
			req2 := httptest.NewRequest("GET", "/datashelf/api/scraper/status?a=2", nil)
			req2.Header = req.Header
			return req2
		}, 401},
		{"bad signature (not hex)", func() *http.Request {
			req := b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now, "n-7")
			req.Header.Set("X-Signature", "zz")
			return req
		}, 401},
		{"stale timestamp", func() *http.Request {
			return b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now.Add(-6*time.Minute), "n-8")
		}, 401},
		{"future timestamp", func() *http.Request {
			return b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now.Add(6*time.Minute), "n-9")
		}, 401},
		{"unknown key", func() *http.Request {
			return b.signedReq("GET", "/api/scraper/status", nil, "intruder", b.secret, now, "n-10")
		}, 401},
		{"missing headers", func() *http.Request {
			return httptest.NewRequest("GET", "/datashelf/api/scraper/status", nil)
		}, 401},
		{"missing nonce", func() *http.Request {
			req := b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now, "")
			return req
		}, 401},
		{"bad body, good signature", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", []byte(`{"url":"ftp://x","type":"category"}`), "crawler", b.secret, now, "n-11")
		}, 400},
		{"bad type, good signature", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", []byte(`{"url":"https://x/y","type":"book"}`), "crawler", b.secret, now, "n-12")
		}, 400},
		{"unknown field, good signature", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", []byte(`{"url":"https://x/y","type":"product","prio":1}`), "crawler", b.secret, now, "n-13")
		}, 400},
		{"wrong field type, good signature", func() *http.Request {
			return b.signedReq("POST", "/api/scraper/enqueue", []byte(`{"url":"https://x/y","type":"product","priority":"high"}`), "crawler", b.secret, now, "n-14")
		}, 400},
	}
	for _, tt := range tests { // sequential: the replay case depends on the first
		t.Run(tt.name, func(t *testing.T) {
			w := b.do(t, tt.req())
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.status >= 400 {
				expectError(t, w, tt.status, "")
			}
		})
	}

	t.Run("enqueue result and status", func(t *testing.T) {
		w := b.do(t, b.signedReq("POST", "/api/scraper/enqueue", []byte(`{"url":"https://wob.example/collections/new","type":"category","priority":9}`), "crawler", b.secret, now, "n-20"))
		job := decode[store.Job](t, w)
		if w.Code != 202 || job.Type != store.JobCategory || job.Priority != 9 || job.Status != store.StatusQueued {
			t.Fatalf("status %d job %+v", w.Code, job)
		}
		w = b.do(t, b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, now, "n-21"))
		st := decode[api.QueueStatus](t, w)
		if st.Totals["queued"] != 1 || len(st.Stats) != 1 {
			t.Errorf("status %+v", st)
		}
	})
	t.Run("nonce accepted again after the window", func(t *testing.T) {
		later := now.Add(11 * time.Minute)
		b.clock.Advance(11 * time.Minute)
		w := b.do(t, b.signedReq("GET", "/api/scraper/status", nil, "crawler", b.secret, later, "n-2"))
		if w.Code != 200 {
			t.Errorf("status %d", w.Code)
		}
	})
}

// TestKeyRateLimit checks the per-key limit of signed requests.
func TestKeyRateLimit(t *testing.T) {
	b := setup(t, 0)
	h := api.New(api.Options{Store: b.st, Keys: map[string][]byte{"k": b.secret}, Now: b.clock.Now, KeyRateLimit: 2})
	for i, want := range []int{200, 200, 429} {
		req := httptest.NewRequest("GET", "/api/scraper/status", nil)
		api.Sign("k", b.secret, req, nil, b.clock.Now(), fmt.Sprint("nonce-", i))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want || w.Header().Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("request %d: status %d, headers %v", i, w.Code, w.Header())
		}
	}
}

// TestNonceBound checks the replay cache never grows past MaxNonces.
func TestNonceBound(t *testing.T) {
	b := setup(t, 0)
	h := api.New(api.Options{Store: b.st, Keys: map[string][]byte{"k": b.secret}, Now: b.clock.Now, MaxNonces: 3})
	send := func(nonce string) int {
		req := httptest.NewRequest("GET", "/api/scraper/status", nil)
		api.Sign("k", b.secret, req, nil, b.clock.Now(), nonce)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for i := 0; i < 3; i++ {
		if c := send(fmt.Sprint("a", i)); c != 200 {
			t.Fatalf("nonce %d: %d", i, c)
		}
	}
	if c := send("a3"); c != 503 {
		t.Fatalf("full cache: %d", c)
	}
	b.clock.Advance(6 * time.Minute)
	if c := send("a4"); c != 200 {
		t.Fatalf("after expiry: %d", c)
	}
}

// TestIndex asks the API's root: it lists the endpoints under the prefix
// the API is mounted at, and each listed endpoint is one the API serves
// (not the catch-all's 404).
func TestIndex(t *testing.T) {
	b := setup(t, 0)
	w := b.get(t, "/")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /datashelf/ = %d %s: %s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	idx := decode[struct {
		Service   string         `json:"service"`
		Endpoints []api.Endpoint `json:"endpoints"`
	}](t, w)
	if idx.Service != "datashelf" || len(idx.Endpoints) != len(api.Endpoints) {
		t.Fatalf("index %+v, want service datashelf and %d endpoints", idx, len(api.Endpoints))
	}
	for _, e := range idx.Endpoints {
		if !strings.HasPrefix(e.Path, "/datashelf/") || e.About == "" {
			t.Errorf("endpoint %+v: want a path under /datashelf/ and what it answers", e)
			continue
		}
		target := strings.NewReplacer("{id}", b.products[0].ID, "{key}", "images/ab/missing.jpg").Replace(e.Path)
		w := b.do(t, httptest.NewRequest(e.Method, target, strings.NewReader("{}")))
		if w.Code == http.StatusNotFound && strings.Contains(w.Body.String(), "endpoint not found") {
			t.Errorf("%s %s is listed but not served", e.Method, target)
		}
	}
	if w := b.do(t, httptest.NewRequest("POST", "/datashelf/", nil)); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /datashelf/ = %d, want 405", w.Code)
	}
}
