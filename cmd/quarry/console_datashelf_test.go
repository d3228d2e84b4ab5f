package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
)

// TestConsoleDataShelf drives the public catalogue in Chromium: the tree
// lists the fixture's category, a filter narrows its products, a
// product's page shows its specs.
func TestConsoleDataShelf(t *testing.T) {
	s := startChecksServer(t)
	base := "http://" + s.api
	ctx0 := context.Background()
	st, err := sqlite.Open(ctx0, filepath.Join(s.dir, "datashelf.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nav, err := st.UpsertNavigation(ctx0, store.NavigationInput{Title: "Books", SourceURL: "https://shop.example/books"})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := st.UpsertCategory(ctx0, store.CategoryInput{NavigationID: &nav.ID, Title: "Fiction", SourceURL: "https://shop.example/fiction"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []struct {
		title, author, format string
		price                 float64
	}{{"The Quiet Harbour", "Ann Lee", "Paperback", 4.5}, {"Winter Roads", "Bo Park", "Hardback", 12}, {"Salt and Stone", "Ann Lee", "Hardback", 8.25}} {
		if _, err := st.UpsertProduct(ctx0, store.ProductInput{CategoryID: &cat.ID, Title: p.title, SourceURL: "https://shop.example/p/" + string(rune('a'+i)),
			Price: &p.price, Available: true, Specs: map[string]any{"author": p.author, "format": p.format, "isbn": "97800000000" + string(rune('0'+i))}}); err != nil {
			t.Fatal(err)
		}
	}

	ctx := consoleBrowser(t)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	// Signed out, the catalogue is public.
	run("catalogue", chromedp.Navigate(base+"/console/datashelf/"), chromedp.WaitVisible(chromedp.CSS("#shelf-tree")))
	if got := text("#shelf-tree"); !strings.Contains(got, "Books") || !strings.Contains(got, "Fiction") {
		t.Fatalf("tree: %q", got)
	}
	run("category", chromedp.Click(chromedp.CSS(`#shelf-tree a`)), chromedp.WaitVisible(chromedp.CSS("#products")))
	all := text("#products")
	// The filters are a bar above the results, which start on the first
	// screen of the 1100×800 window.
	if top := eval(`String(Math.round(document.querySelector("#products").getBoundingClientRect().top))`); atoi(top) >= 800 {
		t.Errorf("the results start %spx down, below the fold", top)
	}
	for _, want := range []string{"The Quiet Harbour", "Winter Roads", "Salt and Stone"} {
		if !strings.Contains(all, want) {
			t.Errorf("category lacks %q:\n%s", want, all)
		}
	}
	run("filter", chromedp.SendKeys(chromedp.CSS("#format"), "hardback"), chromedp.SendKeys(chromedp.CSS("#max"), "10"),
		chromedp.Click(chromedp.CSS("#apply")), chromedp.WaitVisible(chromedp.CSS(`#format[value="hardback"]`)))
	got := text("#products")
	if !strings.Contains(got, "Salt and Stone") || strings.Contains(got, "Winter Roads") || strings.Contains(got, "Quiet Harbour") {
		t.Errorf("filtered list (hardback, at most 10):\n%s", got)
	}
	run("product", chromedp.Click(chromedp.CSS(`#products a`)), chromedp.WaitVisible(chromedp.CSS("#specs")))
	if got := text("#product-title"); got != "Salt and Stone" {
		t.Errorf("product title %q", got)
	}
	if got := text("p.num"); !strings.HasPrefix(got, "8.25 GBP") {
		t.Errorf("product price %q", got)
	}
	if got := text("#crumb-category"); got != "Fiction" {
		t.Errorf("the product's breadcrumb names %q", got)
	}
	if got := text("#specs"); !strings.Contains(got, "Ann Lee") || !strings.Contains(got, "Hardback") || !strings.Contains(got, "isbn") {
		t.Errorf("specs: %q", got)
	}
}
