package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The DataShelf catalogue: public and read-only (no sign-in): the
// navigation tree, a category's products with filters, sorting, full-text
// search and keyset pagination, a product's page with its mirrored images
// and specs; for operators, the crawl page (datashelfcrawl.go).

// ShelfNode is a navigation row and its children, with its categories.
type ShelfNode struct {
	ID         string
	Title      string
	Children   []ShelfNode
	Categories []ShelfCategory
}

// ShelfCategory is a category of the catalogue.
type ShelfCategory struct {
	ID       string
	Title    string
	Products int
}

// ShelfProduct is a product as the catalogue shows it.
type ShelfProduct struct {
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

// ShelfFilter selects a page of products. After is the cursor of the
// previous page (opaque; "" the first page).
type ShelfFilter struct {
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

// ShelfPage is a page of products: Next is the cursor of the next page
// ("" on the last).
type ShelfPage struct {
	Products []ShelfProduct
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

// DataShelf is what the catalogue needs of DataShelf's store.
type DataShelf interface {
	// Tree is the navigation tree with each node's categories.
	Tree(ctx context.Context) ([]ShelfNode, error)
	// Category returns a category (ErrNotFound when none).
	Category(ctx context.Context, id string) (ShelfCategory, error)
	// Products returns a page of products (ErrInvalid for a bad filter).
	Products(ctx context.Context, f ShelfFilter) (ShelfPage, error)
	// Product returns a product (ErrNotFound when none).
	Product(ctx context.Context, id string) (ShelfProduct, error)
	// Queue is the crawl queue's statistics by state and type.
	Queue(ctx context.Context) ([]QueueRow, error)
}

// shelfPageSize is the product list's page size.
const shelfPageSize = 24

func (c *Console) dataShelfRoutes(m *http.ServeMux) {
	if c.opts.DataShelf == nil {
		return
	}
	m.HandleFunc("GET /console/datashelf/{$}", c.shelfHome)
	m.HandleFunc("GET /console/datashelf/c/{id}", c.shelfCategory)
	m.HandleFunc("GET /console/datashelf/p/{id}", c.shelfProduct)
	m.HandleFunc("GET /console/datashelf/crawl", c.shelfCrawl)
	c.crawlRoutes(m)
}

type shelfHomeData struct {
	Tree []ShelfNode
}

func (c *Console) shelfHome(w http.ResponseWriter, r *http.Request) {
	tree, err := c.opts.DataShelf.Tree(r.Context())
	if err != nil {
		c.failure(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "shelf", shelfHomeData{Tree: tree})
}

type shelfListData struct {
	Cat   ShelfCategory
	Q     url.Values
	Page  ShelfPage
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

func (c *Console) shelfCategory(w http.ResponseWriter, r *http.Request) {
	cat, err := c.opts.DataShelf.Category(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		c.notFound(w, r)
		return
	}
	if err != nil {
		c.failure(w, r, err)
		return
	}
	q := r.URL.Query()
	d := shelfListData{Cat: cat, Q: q, Sorts: shelfSorts}
	f := ShelfFilter{CategoryID: cat.ID, Q: strings.TrimSpace(q.Get("q")), Author: strings.TrimSpace(q.Get("author")),
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
	} else if d.Page, err = c.opts.DataShelf.Products(r.Context(), f); errors.Is(err, ErrInvalid) {
		d.Error, status = strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "), http.StatusBadRequest
	} else if err != nil {
		c.failure(w, r, err)
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
	c.render(w, r, status, "shelfcat", d)
}

func ptrBool(b bool) *bool { return &b }

func (c *Console) shelfProduct(w http.ResponseWriter, r *http.Request) {
	p, err := c.opts.DataShelf.Product(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		c.notFound(w, r)
		return
	}
	if err != nil {
		c.failure(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "shelfproduct", p)
}

func (c *Console) shelfCrawl(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.require(w, r, "operator"); !ok {
		return
	}
	c.crawlPage(w, r, http.StatusOK, crawlData{Msg: crawlMessage(r)})
}
