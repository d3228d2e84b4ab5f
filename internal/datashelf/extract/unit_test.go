package extract_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/fixture"
)

func TestParsePrice(t *testing.T) {
	tests := []struct {
		in, dec, cur string
		cents        int64
		ok           bool
	}{
		{"£7.49", "7.49", "GBP", 749, true},
		{" £ 12 ", "12.00", "GBP", 1200, true},
		{"$1,234.50", "1234.50", "USD", 123450, true},
		{"€7,49", "7.49", "EUR", 749, true},
		{"7,49 €", "7.49", "EUR", 749, true},
		{"1.234,56 €", "1234.56", "EUR", 123456, true},
		{"EUR 3.5", "3.50", "EUR", 350, true},
		{"From £0.99", "0.99", "GBP", 99, true},
		{"4.99", "4.99", "", 499, true},
		{"£", "", "GBP", -1, false},
		{"", "", "", -1, false},
		{"99999999999999999999", "", "", -1, false},
	}
	for _, tt := range tests {
		dec, cents, cur, ok := extract.ParsePrice(tt.in)
		if dec != tt.dec || cents != tt.cents || cur != tt.cur || ok != tt.ok {
			t.Errorf("ParsePrice(%q) = %q %d %q %v, want %q %d %q %v", tt.in, dec, cents, cur, ok, tt.dec, tt.cents, tt.cur, tt.ok)
		}
	}
}

func TestNormalizeSpecKey(t *testing.T) {
	tests := []struct {
		in, key string
		known   bool
	}{
		{"Author", "author", true},
		{"AUTHOR(S):", "author", true},
		{"Written by", "author", true},
		{"ISBN-13", "isbn", true},
		{"isbn 13", "isbn", true},
		{"Publisher name", "publisher", true},
		{"No. of Pages", "pages", true},
		{"  Number   of pages ", "pages", true},
		{"LANGUAGE", "language", true},
		{"Binding", "format", true},
		{"Publication_date", "publication_date", true},
		{"Date Published", "publication_date", true},
		{"Release date", "publication_date", true},
		{"Size", "dimensions", true},
		{"Item weight", "weight", true},
		{"Book condition", "condition", true},
		{"Edition number", "edition", true},
		{"ISBN-10", "isbn_10", false},
		{"Reading Age", "reading_age", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if key, known := extract.NormalizeSpecKey(tt.in); key != tt.key || known != tt.known {
			t.Errorf("NormalizeSpecKey(%q) = %q %v, want %q %v", tt.in, key, known, tt.key, tt.known)
		}
	}
}

func TestSourceID(t *testing.T) {
	p := extract.WorldOfBooks()
	tests := []struct{ in, want string }{
		{"/en-gb/products/the-hobbit-book-j-r-r-tolkien-9780261102217", "9780261102217"},
		{"https://www.worldofbooks.com/en-gb/products/x-book-y-9780261102217?variant=1#top", "9780261102217"},
		{"/products/x-book-y-9780261102217.js", "9780261102217"},
		{"/products/7000000012345", "7000000012345"},
		{"/product/x-book-y-9780261102217", ""},
		{"/en-gb/products/x-book-y-97802611022", ""},
		{"/en-gb/collections/x-9780261102217", ""},
	}
	for _, tt := range tests {
		if got := extract.SourceID(tt.in, p); got != tt.want {
			t.Errorf("SourceID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseProfile(t *testing.T) {
	p, err := extract.ParseProfile([]byte(`{"name":"other","product_title":"h1.title","shopify":false}`))
	if err != nil {
		t.Fatal(err)
	}
	def := extract.WorldOfBooks()
	if p.Name != "other" || p.ProductTitle != "h1.title" || p.Shopify || p.Price != def.Price {
		t.Fatalf("%+v", p)
	}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"price":"[["}`, `{"source_id_pattern":"("}`, `{`} {
		if _, err := extract.LoadProfile(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// A custom profile parses custom markup.
	p.ProductTitle = "h1.title"
	p.Price = "span.cost"
	html := `<h1 class="title">X</h1><span class="cost">$3</span><table><tr><td>Pages</td><td>12</td></tr></table>`
	got, err := extract.Product(mustURL(t, origin+"/products/a-book-b-9780261102217"), strings.NewReader(html), p)
	if err != nil || got.Title != "X" || got.Price != "3.00" || got.Currency != "USD" || got.Specs["pages"] != "12" || got.SourceID != "9780261102217" {
		t.Fatalf("%v %+v", err, got)
	}
}

func seeds(f *testing.F, category bool) {
	s := fixture.New(fixture.Options{Products: 200, Seed: 1})
	if category {
		for _, c := range s.Categories()[:5] {
			body, _ := fetch(f, s, c.URL())
			f.Add(body)
			f.Add(body[:len(body)/2])
		}
	} else {
		for i := 0; i < 5; i++ {
			body, _ := fetch(f, s, s.Product(i).URL())
			f.Add(body)
			f.Add(body[:len(body)*3/4])
		}
	}
	f.Add([]byte("<table><tr><th>ISBN</th><td>978-x</td></tr><tr><td></td></tr></table><div class=price>€,</div>"))
	f.Add([]byte("<noscript><div class=product><a href='%zz'>"))
	f.Add([]byte{})
}

func FuzzProduct(f *testing.F) {
	seeds(f, false)
	base := mustURL(f, origin+"/en-gb/products/a-book-b-9780261102217")
	p := extract.WorldOfBooks()
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := extract.Product(base, bytes.NewReader(data), p)
		if err == nil && got.Title == "" {
			t.Fatal("no error without a title")
		}
		if got != nil && got.PriceCents < -1 {
			t.Fatal("negative price")
		}
		_, _ = extract.ShopifyProduct(data)
	})
}

func FuzzCategory(f *testing.F) {
	seeds(f, true)
	base := mustURL(f, origin+"/en-gb/collections/fiction-books")
	p := extract.WorldOfBooks()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := extract.Category(base, bytes.NewReader(data), p)
		if err == nil && c == nil {
			t.Fatal("nil page without error")
		}
		_, _ = extract.Navigation(base, bytes.NewReader(data), p)
		_, _ = extract.ShopifyCollection(data)
	})
}
