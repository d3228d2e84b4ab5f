package extract

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// Errors returned when a page holds nothing usable.
var (
	ErrNoNavigation = errors.New("extract: no navigation menu found")
	ErrNoCategory   = errors.New("extract: no collection found")
	ErrNoProduct    = errors.New("extract: no product found")
)

// NavItem is one entry of the site's menu.
type NavItem struct {
	// Title is the link text.
	Title string `json:"title"`
	// URL is the absolute link target.
	URL string `json:"url"`
	// Level is 0 for top-level entries and 1 for submenu links.
	Level int `json:"level"`
	// Parent is the index in the returned slice of the parent entry, or -1.
	Parent int `json:"parent"`
	// Group is the submenu column heading above the link ("" for top items).
	Group string `json:"group,omitempty"`
	// MenuCategory and MenuSubcategory are the data-menu_category and
	// data-menu_subcategory attributes, when present.
	MenuCategory    string `json:"menu_category,omitempty"`
	MenuSubcategory string `json:"menu_subcategory,omitempty"`
}

// Link is a titled absolute URL.
type Link struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Card is a product card of a collection page.
type Card struct {
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	Author string `json:"author,omitempty"`
	Image  string `json:"image,omitempty"`
}

// CategoryPage is what a collection page holds.
type CategoryPage struct {
	// Title is the collection heading.
	Title string `json:"title"`
	// CollectionID is the platform's collection id ("" when absent).
	CollectionID string `json:"collection_id,omitempty"`
	// Related are links to related sub-collections, deduplicated.
	Related []Link `json:"related,omitempty"`
	// Cards are the product cards, deduplicated by URL, in page order.
	Cards []Card `json:"cards,omitempty"`
	// ProductURLs are the cards' absolute URLs.
	ProductURLs []string `json:"product_urls,omitempty"`
	// Next is the absolute URL of the next page ("" on the last page).
	Next string `json:"next,omitempty"`
	// ProductCount is the count the page states, or -1 when it states none.
	ProductCount int `json:"product_count"`
}

// ProductPage is what a product page (or Shopify JSON) holds. (The
// type is not named Product because the Product function parses it.)
type ProductPage struct {
	// URL is the page's absolute URL (the base passed to Product).
	URL string `json:"url,omitempty"`
	// SourceID is the ISBN-13 or Shopify id taken from the URL (or, for
	// JSON, the barcode, handle or id).
	SourceID string `json:"source_id,omitempty"`
	// Handle is the Shopify handle when known.
	Handle string `json:"handle,omitempty"`
	Title  string `json:"title"`
	// Author and ISBN repeat Specs["author"] and Specs["isbn"].
	Author string `json:"author,omitempty"`
	ISBN   string `json:"isbn,omitempty"`
	// Price is a decimal string with two decimals ("7.49"), "" if unknown;
	// PriceCents is the same amount in minor units (-1 if unknown).
	Price      string `json:"price,omitempty"`
	PriceCents int64  `json:"price_cents"`
	// Currency is GBP, USD or EUR ("" if unknown).
	Currency string `json:"currency,omitempty"`
	// Summary is the description as text with whitespace collapsed.
	Summary string `json:"summary,omitempty"`
	// Specs maps normalised keys (see SpecKeys) to values; isbn holds
	// digits only.
	Specs map[string]string `json:"specs"`
	// Extra holds specification rows with other keys (key normalised to
	// lower snake case).
	Extra map[string]string `json:"extra,omitempty"`
	// Images are absolute image URLs, deduplicated, in page order.
	Images []string `json:"images,omitempty"`
	// Available is false when the page says the product is sold out.
	Available bool `json:"available"`
}

// parse reads an HTML document with scripting disabled, so that the
// contents of <noscript> are parsed as elements.
func parse(r io.Reader) (*goquery.Document, error) {
	if r == nil {
		return nil, errors.New("extract: nil reader")
	}
	root, err := html.ParseWithOptions(r, html.ParseOptionEnableScripting(false))
	if err != nil {
		return nil, fmt.Errorf("extract: parse html: %w", err)
	}
	return goquery.NewDocumentFromNode(root), nil
}

// find is Selection.Find that tolerates an empty selector.
func find(s *goquery.Selection, sel string) *goquery.Selection {
	if sel == "" {
		return s.Slice(0, 0)
	}
	return s.Find(sel)
}

// resolve returns ref resolved against base, or "" if ref is empty or
// unusable. Fragments are dropped.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "javascript:") || strings.HasPrefix(ref, "data:") {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// clean collapses whitespace.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

// blockText returns the text of the selection with a space at element
// boundaries, whitespace collapsed.
func blockText(s *goquery.Selection) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			if n.Data == "script" || n.Data == "style" {
				return
			}
			if blockElems[n.Data] {
				b.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && blockElems[n.Data] {
			b.WriteByte(' ')
		}
	}
	for _, n := range s.Nodes {
		walk(n)
	}
	return clean(b.String())
}

var blockElems = map[string]bool{"p": true, "div": true, "br": true, "li": true, "ul": true, "ol": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "tr": true, "td": true, "th": true, "table": true, "section": true, "blockquote": true}

var (
	reCache sync.Map // pattern -> *regexp.Regexp (nil if invalid)
)

func compiled(pattern string) *regexp.Regexp {
	if v, ok := reCache.Load(pattern); ok {
		return v.(*regexp.Regexp)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		re = nil
	}
	reCache.Store(pattern, re)
	return re
}

// SourceID returns the first group of p.SourceIDPattern in rawURL, or "".
func SourceID(rawURL string, p Profile) string {
	re := compiled(p.SourceIDPattern)
	if re == nil {
		return ""
	}
	m := re.FindStringSubmatch(rawURL)
	if len(m) < 2 {
		return ""
	}
	return m[1]
}

// ParsePrice parses a displayed price such as "£7.49", "$1,234.50",
// "€7,49" or "7,49 €" into a decimal string with two decimals, the amount in
// minor units and an ISO 4217 currency code ("" when no symbol or code is
// present). ok is false when no amount is found.
func ParsePrice(s string) (decimal string, cents int64, currency string, ok bool) {
	switch {
	case strings.Contains(s, "£") || strings.Contains(strings.ToUpper(s), "GBP"):
		currency = "GBP"
	case strings.Contains(s, "€") || strings.Contains(strings.ToUpper(s), "EUR"):
		currency = "EUR"
	case strings.Contains(s, "$") || strings.Contains(strings.ToUpper(s), "USD"):
		currency = "USD"
	}
	// First run of digits and separators.
	start := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if start < 0 {
		return "", -1, currency, false
	}
	end := start
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || s[end] == ',') {
		end++
	}
	num := strings.TrimRight(s[start:end], ".,")
	intPart, frac := num, ""
	if i := strings.LastIndexAny(num, ".,"); i >= 0 {
		tail := num[i+1:]
		if len(tail) <= 2 { // decimal separator; otherwise thousands
			intPart, frac = num[:i], tail
		}
	}
	intPart = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, intPart)
	if intPart == "" {
		intPart = "0"
	}
	for len(frac) < 2 {
		frac += "0"
	}
	units, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || units > (1<<62)/100 {
		return "", -1, currency, false
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	cents = units*100 + f
	return fmt.Sprintf("%d.%02d", cents/100, cents%100), cents, currency, true
}

// digits keeps the digits (and a final X) of an ISBN.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) && r < 128 || r == 'X' || r == 'x' {
			return unicode.ToUpper(r)
		}
		return -1
	}, s)
}
