// Package datashelf is the console's DataShelf catalogue: public and
// read-only (no sign-in): the navigation tree, a category's products with
// filters, sorting, full-text search and keyset pagination, a product's
// page with its mirrored images and specs; and for operators, the crawl
// page (crawl.go). Catalogue and CrawlControl are DataShelf as the pages
// see it; Adapt makes both of DataShelf's store and a crawler.Runner.
package datashelf

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// Node is a navigation row and its children, with its categories.
type Node struct {
	ID         string
	Title      string
	Children   []Node
	Categories []Category
}

// Category is a category of the catalogue.
type Category struct {
	ID       string
	Title    string
	Products int
}

// Product is a product as the catalogue shows it.
type Product struct {
	ID         string
	CategoryID string
	Title      string
	SourceURL  string
	Price      *float64
	Currency   string
	Images     []string // mirrored images' paths (/datashelf/images/…); others are left out
	Summary    string
	Specs      [][2]string // key, value; sorted by key
	Available  bool
	ScrapedAt  time.Time
}

// Filter selects a page of products. After is the cursor of the
// previous page (opaque; "" the first page).
type Filter struct {
	CategoryID string
	Q          string
	Author     string
	Format     string
	Condition  string
	MinPrice   *float64
	MaxPrice   *float64
	Available  *bool
	Sort       string // price_asc, price_desc, title_asc, title_desc, created_at_desc ("")
	Limit      int
	After      string
}

// Page is a page of products: Next is the cursor of the next page
// ("" on the last).
type Page struct {
	Products []Product
	Next     string
}

// QueueRow is one line of the crawl queue's statistics.
type QueueRow struct {
	Status      string
	Type        string
	Count       int
	AvgAttempts float64
	Oldest      time.Time
	Newest      time.Time
}

// Catalogue is what the catalogue needs of DataShelf's store.
type Catalogue interface {
	// Tree is the navigation tree with each node's categories.
	Tree(ctx context.Context) ([]Node, error)
	// Category returns a category (console.ErrNotFound when none).
	Category(ctx context.Context, id string) (Category, error)
	// Products returns a page of products (console.ErrInvalid for a bad filter).
	Products(ctx context.Context, f Filter) (Page, error)
	// Product returns a product (console.ErrNotFound when none).
	Product(ctx context.Context, id string) (Product, error)
	// Queue is the crawl queue's statistics by state and type.
	Queue(ctx context.Context) ([]QueueRow, error)
}

// shelfPageSize is the product list's page size.
const shelfPageSize = 24

//go:embed templates/*.html
var templates embed.FS

// Area is the catalogue, and the crawl page of operators.
type Area struct {
	cat   Catalogue
	crawl CrawlControl
	k     *console.Kit
}

// New returns the catalogue of cat; crawl controls crawls from the crawl
// page (nil: the page shows the queue's statistics only).
func New(cat Catalogue, crawl CrawlControl) *Area { return &Area{cat: cat, crawl: crawl} }

// Name implements console.Area.
func (*Area) Name() string { return "datashelf" }

// PublicNav links everyone to the catalogue.
func (*Area) PublicNav() template.HTML {
	return `<nav><a href="/console/datashelf/" id="nav-shelf">Catalogue</a></nav>`
}

// Nav links operators to the crawl page.
func (*Area) Nav(_ *http.Request, s console.Session) template.HTML {
	if !s.Operator {
		return ""
	}
	return `<a href="/console/datashelf/crawl" id="nav-crawl">Crawl</a>`
}

// Mount implements console.Area.
func (a *Area) Mount(m *http.ServeMux, k *console.Kit) error {
	a.k = k
	err := k.Pages(templates, template.FuncMap{
		// amount formats a price (a *float64 in Product).
		"amount": func(p *float64) string { return strconv.FormatFloat(*p, 'f', 2, 64) },
	})
	if err != nil {
		return err
	}
	m.HandleFunc("GET /console/datashelf/{$}", a.cataloguePage)
	m.HandleFunc("GET /console/datashelf/c/{id}", a.categoryPage)
	m.HandleFunc("GET /console/datashelf/p/{id}", a.productPage)
	m.HandleFunc("GET /console/datashelf/crawl", a.crawlHome)
	if a.crawl != nil {
		m.HandleFunc("POST /console/datashelf/crawl/start", a.crawlStart)
		m.HandleFunc("POST /console/datashelf/crawl/retry", a.crawlRetry)
		m.HandleFunc("GET /console/datashelf/runs/{id}", a.runPage)
		m.HandleFunc("GET /console/datashelf/runs/{id}/abort", a.confirmAbort)
		m.HandleFunc("POST /console/datashelf/runs/{id}/abort", a.abortRun)
		m.HandleFunc("GET /console/datashelf/runs/{id}/export", a.exportRun)
	}
	return nil
}

type cataloguePageData struct {
	Tree []Node
}

func (a *Area) cataloguePage(w http.ResponseWriter, r *http.Request) {
	tree, err := a.cat.Tree(r.Context())
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	a.k.Render(w, r, http.StatusOK, "catalogue", cataloguePageData{Tree: tree})
}

type shelfListData struct {
	Cat   Category
	Q     url.Values
	Page  Page
	Next  string // the next page's query string
	Sorts [][2]string
	Error string
}

var shelfSorts = [][2]string{{"", "Newest"}, {"price_asc", "Price, low to high"}, {"price_desc", "Price, high to low"},
	{"title_asc", "Title, A–Z"}, {"title_desc", "Title, Z–A"}}

// price parses a price field; "" is nil.
func price(s string) (*float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v != v {
		return nil, errors.New("a price must be a number of at least 0")
	}
	return &v, nil
}

func (a *Area) categoryPage(w http.ResponseWriter, r *http.Request) {
	cat, err := a.cat.Category(r.Context(), r.PathValue("id"))
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	q := r.URL.Query()
	d := shelfListData{Cat: cat, Q: q, Sorts: shelfSorts}
	f := Filter{CategoryID: cat.ID, Q: strings.TrimSpace(q.Get("q")), Author: strings.TrimSpace(q.Get("author")),
		Format: strings.TrimSpace(q.Get("format")), Condition: strings.TrimSpace(q.Get("condition")),
		Sort: q.Get("sort"), Limit: shelfPageSize, After: q.Get("after")}
	if !slices.ContainsFunc(shelfSorts, func(s [2]string) bool { return s[0] == f.Sort }) {
		f.Sort = ""
	}
	switch q.Get("available") {
	case "yes":
		f.Available = ptrBool(true)
	case "no":
		f.Available = ptrBool(false)
	}
	var perr error
	if f.MinPrice, err = price(q.Get("min")); err != nil {
		perr = err
	}
	if f.MaxPrice, err = price(q.Get("max")); err != nil {
		perr = err
	}
	status := http.StatusOK
	if perr != nil {
		d.Error, status = perr.Error(), http.StatusBadRequest
	} else if d.Page, err = a.cat.Products(r.Context(), f); errors.Is(err, console.ErrInvalid) {
		d.Error, status = console.InvalidMessage(err), http.StatusBadRequest
	} else if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	if d.Page.Next != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("after", d.Page.Next)
		d.Next = next.Encode()
	}
	a.k.Render(w, r, status, "category", d)
}

func ptrBool(b bool) *bool { return &b }

func (a *Area) productPage(w http.ResponseWriter, r *http.Request) {
	p, err := a.cat.Product(r.Context(), r.PathValue("id"))
	if errors.Is(err, console.ErrNotFound) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	d := productData{Product: p}
	if p.CategoryID != "" {
		// The breadcrumb names the product's category; a category gone
		// since the product was stored is linked by its id.
		c, err := a.cat.Category(r.Context(), p.CategoryID)
		switch {
		case err == nil:
			d.CategoryTitle = c.Title
		case errors.Is(err, console.ErrNotFound):
			d.CategoryTitle = p.CategoryID
		default:
			a.k.Failure(w, r, err)
			return
		}
	}
	a.k.Render(w, r, http.StatusOK, "product", d)
}

// productData is a product's page: the product and its category's title.
type productData struct {
	Product
	CategoryTitle string
}

func (a *Area) crawlHome(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "operator"); !ok {
		return
	}
	a.crawlPage(w, r, http.StatusOK, crawlData{Msg: crawlMessage(r)})
}
