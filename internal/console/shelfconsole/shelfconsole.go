// Package shelfconsole is DataShelf as the web console sees it: it
// implements console.DataShelf over DataShelf's store (the catalogue,
// read only) and console.ShelfCrawl (the crawl page: failures, throughput,
// retries, and a crawl run in this process). cmd/quarry wires it;
// bench/consolebench measures it.
package shelfconsole

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

// Store implements console.DataShelf (and, with a Crawls, ShelfCrawl).
type Store struct {
	st     store.Store
	crawls *Crawls
}

var _ console.DataShelf = (*Store)(nil)

// New returns the console's view of st; crawls runs the crawls the crawl
// page starts (nil: the page shows the queue only; see Crawl).
func New(st store.Store, crawls *Crawls) *Store { return &Store{st: st, crawls: crawls} }

// maxTreeCategories bounds the categories the catalogue's tree lists.
const maxTreeCategories = 1000

// Tree implements console.DataShelf.
func (s *Store) Tree(ctx context.Context) ([]console.ShelfNode, error) {
	nav, err := s.st.NavigationTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("datashelf: navigation: %w", err)
	}
	byNav := map[string][]console.ShelfCategory{}
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
	var conv func(ns []*store.NavigationNode) []console.ShelfNode
	conv = func(ns []*store.NavigationNode) []console.ShelfNode {
		out := make([]console.ShelfNode, 0, len(ns))
		for _, n := range ns {
			out = append(out, console.ShelfNode{ID: n.ID, Title: n.Title, Categories: byNav[n.ID], Children: conv(n.Children)})
			delete(byNav, n.ID)
		}
		return out
	}
	tree := conv(nav)
	var other []console.ShelfCategory
	for _, cs := range byNav { // without a navigation row, or under one not in the tree
		other = append(other, cs...)
	}
	if len(other) > 0 {
		tree = append(tree, console.ShelfNode{Title: "Other", Categories: other})
	}
	return tree, nil
}

func shelfCategory(c store.Category) console.ShelfCategory {
	return console.ShelfCategory{ID: c.ID, Title: c.Title, Products: c.ProductCount}
}

// Category implements console.DataShelf.
func (s *Store) Category(ctx context.Context, id string) (console.ShelfCategory, error) {
	c, err := s.st.GetCategory(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return console.ShelfCategory{}, console.ErrNotFound
	}
	if err != nil {
		return console.ShelfCategory{}, fmt.Errorf("datashelf: category: %w", err)
	}
	return shelfCategory(c), nil
}

// Products implements console.DataShelf.
func (s *Store) Products(ctx context.Context, f console.ShelfFilter) (console.ShelfPage, error) {
	pf := store.ProductFilter{CategoryID: f.CategoryID, Q: f.Q, Author: f.Author, Format: f.Format, Condition: f.Condition,
		MinPrice: f.MinPrice, MaxPrice: f.MaxPrice, Available: f.Available, Sort: f.Sort, Limit: f.Limit, SkipTotal: true}
	if f.After != "" {
		b, err := base64.RawURLEncoding.DecodeString(f.After)
		var k store.ProductKey
		if err == nil {
			err = json.Unmarshal(b, &k)
		}
		if err != nil {
			return console.ShelfPage{}, fmt.Errorf("%w: this page's position is not valid; start again from the first page", console.ErrInvalid)
		}
		pf.After = &k
	}
	ps, _, err := s.st.ListProducts(ctx, pf)
	if errors.Is(err, store.ErrInvalid) {
		return console.ShelfPage{}, fmt.Errorf("%w: %s", console.ErrInvalid, strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return console.ShelfPage{}, fmt.Errorf("datashelf: products: %w", err)
	}
	page := console.ShelfPage{}
	for _, p := range ps {
		page.Products = append(page.Products, shelfProduct(p))
	}
	if len(ps) == f.Limit && f.Limit > 0 {
		b, err := json.Marshal(store.KeyOf(ps[len(ps)-1], f.Sort))
		if err != nil {
			return console.ShelfPage{}, err
		}
		page.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	return page, nil
}

func shelfProduct(p store.Product) console.ShelfProduct {
	sp := console.ShelfProduct{ID: p.ID, Title: p.Title, SourceURL: p.SourceURL, Price: p.Price, Currency: p.Currency,
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

// Product implements console.DataShelf.
func (s *Store) Product(ctx context.Context, id string) (console.ShelfProduct, error) {
	p, err := s.st.GetProduct(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return console.ShelfProduct{}, console.ErrNotFound
	}
	if err != nil {
		return console.ShelfProduct{}, fmt.Errorf("datashelf: product: %w", err)
	}
	return shelfProduct(p), nil
}

// Queue implements console.DataShelf.
func (s *Store) Queue(ctx context.Context) ([]console.QueueRow, error) {
	stats, err := s.st.QueueStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("datashelf: queue: %w", err)
	}
	out := make([]console.QueueRow, 0, len(stats))
	for _, q := range stats {
		out = append(out, console.QueueRow{Status: string(q.Status), Type: string(q.Type), Count: q.Count, AvgAttempts: q.AvgAttempts, Oldest: q.OldestJob, Newest: q.NewestJob})
	}
	return out, nil
}
