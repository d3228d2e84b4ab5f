package extract_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
)

const origin = "http://shop.test"

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// fetch serves path from the site and returns the body and absolute URL.
func fetch(t testing.TB, s *fixture.Site, path string) ([]byte, *url.URL) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, origin+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, rec.Code)
	}
	return rec.Body.Bytes(), mustURL(t, origin+path)
}

func abs(p string) string { return origin + p }

func TestNavigation(t *testing.T) {
	t.Parallel()
	for _, dup := range []bool{false, true} {
		s := fixture.New(fixture.Options{Products: 10, Seed: 1, Faults: fixture.Faults{DuplicateLinks: dup}})
		body, base := fetch(t, s, "/en-gb/")
		items, err := extract.Navigation(base, bytes.NewReader(body), extract.WorldOfBooks())
		if err != nil {
			t.Fatal(err)
		}
		// Expected: each top menu entry, then its collections in menu order.
		var want []extract.NavItem
		top := -1
		last := ""
		for _, c := range s.Categories() {
			if c.Group == "" {
				continue
			}
			if c.TopMenu != last {
				last = c.TopMenu
				top = len(want)
				want = append(want, extract.NavItem{Title: c.TopMenu, Parent: -1, MenuCategory: c.TopMenu})
			}
			want = append(want, extract.NavItem{Title: c.MenuTitle, URL: abs(c.URL()), Level: 1, Parent: top, Group: c.Group, MenuCategory: c.TopMenu, MenuSubcategory: c.MenuTitle})
		}
		if len(items) != len(want) {
			t.Fatalf("dup=%v: %d items, want %d", dup, len(items), len(want))
		}
		for i := range want {
			got := items[i]
			if got.Level == 0 {
				if !strings.HasPrefix(got.URL, origin+"/en-gb/pages/") {
					t.Errorf("top item %q URL %s", got.Title, got.URL)
				}
				got.URL = ""
			}
			if got != want[i] {
				t.Errorf("item %d: %+v, want %+v", i, got, want[i])
			}
		}
	}
}

func TestNavigationNoMenu(t *testing.T) {
	_, err := extract.Navigation(mustURL(t, origin), strings.NewReader("<html><body><p>hi"), extract.WorldOfBooks())
	if !errors.Is(err, extract.ErrNoNavigation) {
		t.Fatalf("err = %v", err)
	}
}

// TestCategoriesAgainstGroundTruth walks every page of every collection.
func TestCategoriesAgainstGroundTruth(t *testing.T) {
	t.Parallel()
	for _, f := range []fixture.Faults{{}, {DuplicateLinks: true}} {
		t.Run(fmt.Sprintf("duplicateLinks=%v", f.DuplicateLinks), func(t *testing.T) {
			t.Parallel()
			categoriesAgainstGroundTruth(t, f)
		})
	}
}

// categoriesAgainstGroundTruth extracts every page of every category of a
// 5,000-product fixture with faults f and compares it with the truth.
func categoriesAgainstGroundTruth(t *testing.T, f fixture.Faults) {
	s := fixture.New(fixture.Options{Products: 5000, Seed: 1, Faults: f})
	p := extract.WorldOfBooks()
	for _, c := range s.Categories() {
		var cards []extract.Card
		next := c.URL()
		pages := 0
		for next != "" {
			pages++
			u := mustURL(t, next)
			body, base := fetch(t, s, u.RequestURI())
			page, err := extract.Category(base, bytes.NewReader(body), p)
			if err != nil {
				t.Fatalf("%s: %v", next, err)
			}
			if page.Title != c.Title || page.CollectionID != itoa(c.ID) || page.ProductCount != -1 {
				t.Fatalf("%s: title %q id %q count %d", next, page.Title, page.CollectionID, page.ProductCount)
			}
			var rel []extract.Link
			for _, h := range c.Children {
				for _, cc := range s.Categories() {
					if cc.Handle == h {
						rel = append(rel, extract.Link{Title: cc.MenuTitle, URL: abs(cc.URL())})
					}
				}
			}
			if !reflect.DeepEqual(page.Related, rel) {
				t.Fatalf("%s: related %v, want %v", next, page.Related, rel)
			}
			if len(page.Cards) != len(page.ProductURLs) || len(page.Cards) > 20 {
				t.Fatalf("%s: %d cards", next, len(page.Cards))
			}
			cards = append(cards, page.Cards...)
			next = page.Next
			if pages > 1000 {
				t.Fatal("pagination does not end")
			}
		}
		want := s.CategoryProducts(c.Handle)
		if len(cards) != len(want) || len(want) != c.ProductCount {
			t.Fatalf("%s: %d cards, want %d", c.Handle, len(cards), c.ProductCount)
		}
		for k, i := range want {
			gp := s.Product(i)
			wc := extract.Card{URL: abs(gp.URL()), Title: gp.Title, Author: gp.Author, Image: abs(gp.CardImage)}
			if cards[k] != wc {
				t.Fatalf("%s card %d: %+v, want %+v", c.Handle, k, cards[k], wc)
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestCategoryCountAndLoop(t *testing.T) {
	t.Parallel()
	s := fixture.New(fixture.Options{Products: 3000, Seed: 2, ShowCount: true, Faults: fixture.Faults{PaginationLoop: true}})
	for _, c := range s.Categories() {
		if c.ProductCount <= 20 {
			continue
		}
		last := (c.ProductCount + 19) / 20
		body, base := fetch(t, s, c.URL()+"?page="+itoa(int64(last)))
		page, err := extract.Category(base, bytes.NewReader(body), extract.WorldOfBooks())
		if err != nil {
			t.Fatal(err)
		}
		if page.ProductCount != c.ProductCount {
			t.Errorf("%s: count %d, want %d", c.Handle, page.ProductCount, c.ProductCount)
		}
		if page.Next != abs(c.URL()+"?page=1") {
			t.Errorf("%s: next %s", c.Handle, page.Next)
		}
	}
}

func checkProduct(t *testing.T, got *extract.ProductPage, want fixture.Product) {
	t.Helper()
	var imgs []string
	for _, i := range want.Images {
		imgs = append(imgs, abs(i))
	}
	w := extract.ProductPage{
		URL: abs(want.URL()), SourceID: want.ISBN13, Handle: want.Handle, Title: want.Title, Author: want.Author, ISBN: want.ISBN13,
		Price: want.Price, PriceCents: want.PriceCents, Currency: want.Currency, Summary: want.Summary, Specs: want.Specs,
		Images: imgs, Available: want.Available,
	}
	g := *got
	g.Extra = nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("product %d:\n got %+v\nwant %+v", want.Index, g, w)
	}
}

// TestProductsAgainstGroundTruth parses 250 product pages (every 20th of
// 5,000) and compares every field with the fixture's ground truth.
func TestProductsAgainstGroundTruth(t *testing.T) {
	t.Parallel()
	s := fixture.New(fixture.Options{Products: 5000, Seed: 1})
	p := extract.WorldOfBooks()
	styles := map[string]bool{}
	for i := 0; i < 5000; i += 20 {
		want := s.Product(i)
		body, base := fetch(t, s, want.URL())
		got, err := extract.Product(base, bytes.NewReader(body), p)
		if err != nil {
			t.Fatalf("%s: %v", want.URL(), err)
		}
		checkProduct(t, got, want)
		styles[want.Currency] = true
		switch {
		case bytes.Contains(body, []byte("<th>")):
			styles["th"] = true
		case bytes.Contains(body, []byte("<li><strong>")):
			styles["li"] = true
		default:
			styles["td"] = true
		}
		if !want.Available {
			styles["sold out"] = true
		}
	}
	for _, k := range []string{"GBP", "USD", "EUR", "th", "td", "li", "sold out"} {
		if !styles[k] {
			t.Errorf("sample has no %s product", k)
		}
	}
}

func TestProductOverHTTP(t *testing.T) {
	t.Parallel()
	s := fixture.New(fixture.Options{Products: 20, Seed: 9})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	want := s.Product(3)
	res, err := http.Get(srv.URL + want.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := extract.Product(mustURL(t, srv.URL+want.URL()), res.Body, extract.WorldOfBooks())
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != want.Title || got.SourceID != want.ISBN13 || got.Images[0] != srv.URL+want.Images[0] {
		t.Fatalf("%+v", got)
	}
}

func TestTruncated(t *testing.T) {
	t.Parallel()
	s := fixture.New(fixture.Options{Products: 100, Seed: 1, Faults: fixture.Faults{TruncateRate: 1}})
	p := extract.WorldOfBooks()
	want := s.Product(1)
	body, base := fetch(t, s, want.URL())
	got, err := extract.Product(base, bytes.NewReader(body), p)
	if err != nil || got.Title != want.Title || got.SourceID != want.ISBN13 {
		t.Fatalf("truncated product: %v %+v", err, got)
	}
	c := s.Categories()[0]
	body, base = fetch(t, s, c.URL())
	page, err := extract.Category(base, bytes.NewReader(body), p)
	if err != nil || page.Title != c.Title {
		t.Fatalf("truncated category: %v %+v", err, page)
	}
	// Cut before anything useful: an error, and no panic.
	if _, err := extract.Product(base, bytes.NewReader(body[:200]), p); !errors.Is(err, extract.ErrNoProduct) {
		t.Fatalf("err = %v", err)
	}
	if _, err := extract.Category(base, bytes.NewReader(body[:200]), p); !errors.Is(err, extract.ErrNoCategory) {
		t.Fatalf("err = %v", err)
	}
}

func TestShopifyProduct(t *testing.T) {
	s := fixture.New(fixture.Options{Products: 300, Seed: 1})
	for i := 0; i < 300; i += 7 {
		want := s.Product(i)
		for _, suffix := range []string{".js", ".json"} {
			body, _ := fetch(t, s, "/products/"+want.Handle+suffix)
			got, err := extract.ShopifyProduct(body)
			if err != nil {
				t.Fatal(err)
			}
			if got.Title != want.Title || got.Handle != want.Handle || got.SourceID != want.ISBN13 || got.Price != want.Price ||
				got.Available != want.Available || got.Summary != want.Summary || !reflect.DeepEqual(got.Images, want.Images) ||
				got.Author != want.Author || got.Specs["condition"] != want.Specs["condition"] || got.Specs["format"] != want.Specs["format"] {
				t.Fatalf("%s%s: %+v\nwant %+v", want.Handle, suffix, got, want)
			}
		}
	}
	for _, bad := range []string{"", "{", "[]", "{}", `{"product":{}}`} {
		if _, err := extract.ShopifyProduct([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestShopifyCollection(t *testing.T) {
	s := fixture.New(fixture.Options{Products: 2000, Seed: 1})
	for _, c := range s.Categories()[:10] {
		var got []string
		for page := 1; page < 50; page++ {
			body, _ := fetch(t, s, "/collections/"+c.Handle+"/products.json?limit=10&page="+itoa(int64(page)))
			ps, err := extract.ShopifyCollection(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 0 {
				break
			}
			for _, p := range ps {
				got = append(got, p.SourceID)
			}
		}
		want := s.CategoryProducts(c.Handle)
		if len(got) != len(want) {
			t.Fatalf("%s: %d, want %d", c.Handle, len(got), len(want))
		}
		for k, i := range want {
			if got[k] != s.Product(i).ISBN13 {
				t.Fatalf("%s %d: %s", c.Handle, k, got[k])
			}
		}
	}
	if _, err := extract.ShopifyCollection([]byte(`{"nope":1}`)); !errors.Is(err, extract.ErrNotShopify) {
		t.Fatalf("err = %v", err)
	}
}
