package datashelf

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Adapter is DataShelf as the catalogue and the crawl page see it: a
// Catalogue over DataShelf's store (read only) and a CrawlControl (the
// crawl page: failures, throughput, retries, crawl runs, and the crawls
// run in this process by a crawler.Runner).
type Adapter struct {
	st     store.Store
	runner *crawler.Runner
}

var _ Catalogue = (*Adapter)(nil)

// Adapt returns the pages' view of st; runner runs (and aborts) the
// crawls the crawl page starts (nil: the page shows the queue only; see
// Crawl).
func Adapt(st store.Store, runner *crawler.Runner) *Adapter { return &Adapter{st: st, runner: runner} }

// maxTreeCategories bounds the categories the catalogue's tree lists.
const maxTreeCategories = 1000

// Tree implements Catalogue.
func (s *Adapter) Tree(ctx context.Context) ([]Node, error) {
	nav, err := s.st.NavigationTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("datashelf: navigation: %w", err)
	}
	byNav := map[string][]Category{}
	for off := 0; off < maxTreeCategories; off += store.MaxListLimit {
		cats, _, err := s.st.ListCategories(ctx, store.CategoryFilter{Limit: store.MaxListLimit, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("datashelf: categories: %w", err)
		}
		for _, c := range cats {
			nav := ""
			if c.NavigationID != nil {
				nav = *c.NavigationID
			}
			byNav[nav] = append(byNav[nav], shelfCategory(c))
		}
		if len(cats) < store.MaxListLimit {
			break
		}
	}
	var conv func(ns []*store.NavigationNode) []Node
	conv = func(ns []*store.NavigationNode) []Node {
		out := make([]Node, 0, len(ns))
		for _, n := range ns {
			out = append(out, Node{ID: n.ID, Title: n.Title, Categories: byNav[n.ID], Children: conv(n.Children)})
			delete(byNav, n.ID)
		}
		return out
	}
	tree := conv(nav)
	var other []Category
	for _, cs := range byNav { // without a navigation row, or under one not in the tree
		other = append(other, cs...)
	}
	if len(other) > 0 {
		tree = append(tree, Node{Title: "Other", Categories: other})
	}
	return tree, nil
}

func shelfCategory(c store.Category) Category {
	return Category{ID: c.ID, Title: c.Title, Products: c.ProductCount}
}

// Category implements Catalogue.
func (s *Adapter) Category(ctx context.Context, id string) (Category, error) {
	c, err := s.st.GetCategory(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return Category{}, console.ErrNotFound
	}
	if err != nil {
		return Category{}, fmt.Errorf("datashelf: category: %w", err)
	}
	return shelfCategory(c), nil
}

// Products implements Catalogue.
func (s *Adapter) Products(ctx context.Context, f Filter) (Page, error) {
	pf := store.ProductFilter{CategoryID: f.CategoryID, Q: f.Q, Author: f.Author, Format: f.Format, Condition: f.Condition,
		MinPrice: f.MinPrice, MaxPrice: f.MaxPrice, Available: f.Available, Sort: f.Sort, Limit: f.Limit, SkipTotal: true}
	if f.After != "" {
		b, err := base64.RawURLEncoding.DecodeString(f.After)
		var k store.ProductKey
		if err == nil {
			err = json.Unmarshal(b, &k)
		}
		if err != nil {
			return Page{}, fmt.Errorf("%w: this page's position is not valid; start again from the first page", console.ErrInvalid)
		}
		pf.After = &k
	}
	ps, _, err := s.st.ListProducts(ctx, pf)
	if errors.Is(err, store.ErrInvalid) {
		return Page{}, fmt.Errorf("%w: %s", console.ErrInvalid, strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return Page{}, fmt.Errorf("datashelf: products: %w", err)
	}
	page := Page{}
	for _, p := range ps {
		page.Products = append(page.Products, shelfProduct(p))
	}
	if len(ps) == f.Limit && f.Limit > 0 {
		b, err := json.Marshal(store.KeyOf(ps[len(ps)-1], f.Sort))
		if err != nil {
			return Page{}, err
		}
		page.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	return page, nil
}

func shelfProduct(p store.Product) Product {
	sp := Product{ID: p.ID, Title: p.Title, SourceURL: p.SourceURL, Price: p.Price, Currency: p.Currency,
		Available: p.Available, ScrapedAt: p.LastScrapedAt}
	if p.CategoryID != nil {
		sp.CategoryID = *p.CategoryID
	}
	if p.Summary != nil {
		sp.Summary = *p.Summary
	}
	for _, u := range p.ImageURLs {
		if strings.HasPrefix(u, crawler.DefaultImageURLPrefix) { // mirrored, served by the API
			sp.Images = append(sp.Images, u)
		}
	}
	for _, k := range sortedKeys(p.Specs) {
		v := p.Specs[k]
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		sp.Specs = append(sp.Specs, [2]string{k, s})
	}
	return sp
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Product implements Catalogue.
func (s *Adapter) Product(ctx context.Context, id string) (Product, error) {
	p, err := s.st.GetProduct(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return Product{}, console.ErrNotFound
	}
	if err != nil {
		return Product{}, fmt.Errorf("datashelf: product: %w", err)
	}
	return shelfProduct(p), nil
}

// Queue implements Catalogue.
func (s *Adapter) Queue(ctx context.Context) ([]QueueRow, error) {
	stats, err := s.st.QueueStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("datashelf: queue: %w", err)
	}
	out := make([]QueueRow, 0, len(stats))
	for _, q := range stats {
		out = append(out, QueueRow{Status: string(q.Status), Type: string(q.Type), Count: q.Count, AvgAttempts: q.AvgAttempts, Oldest: q.OldestJob, Newest: q.NewestJob})
	}
	return out, nil
}
