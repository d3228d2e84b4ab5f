package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

func (s *SQL) scanNav(row Row) (Navigation, error) {
	var n Navigation
	if err := row.Scan(&n.ID, &n.Title, &n.SourceURL, &n.ParentID, &n.LastScrapedAt, &n.CreatedAt, &n.UpdatedAt); err != nil {
		return n, s.mapErr(err)
	}
	n.LastScrapedAt, n.CreatedAt, n.UpdatedAt = n.LastScrapedAt.UTC(), n.CreatedAt.UTC(), n.UpdatedAt.UTC()
	return n, nil
}

// UpsertNavigation implements Store.
func (s *SQL) UpsertNavigation(ctx context.Context, in NavigationInput) (Navigation, error) {
	if in.Title == "" || in.SourceURL == "" {
		return Navigation{}, fmt.Errorf("%w: navigation title and source_url are required", ErrInvalid)
	}
	if in.ParentID != nil {
		if err := ValidateID(*in.ParentID); err != nil {
			return Navigation{}, err
		}
	}
	return s.scanNav(s.db.QueryRow(ctx, s.d.UpsertNavigation,
		s.insertArgs(in.Title, in.SourceURL, lowerID(in.ParentID), s.opts.Clock())...))
}

// GetNavigation implements Store.
func (s *SQL) GetNavigation(ctx context.Context, id string) (Navigation, error) {
	if err := ValidateID(id); err != nil {
		return Navigation{}, err
	}
	return s.scanNav(s.db.QueryRow(ctx, `SELECT `+s.d.NavCols+` FROM navigation WHERE id = `+s.p(1), strings.ToLower(id)))
}

// NavigationTree implements Store.
func (s *SQL) NavigationTree(ctx context.Context) ([]*NavigationNode, error) {
	rows, err := s.db.Query(ctx, `SELECT `+s.d.NavCols+` FROM navigation ORDER BY lower(title), title, id`)
	if err != nil {
		return nil, s.mapErr(err)
	}
	all, err := collect(s, rows, s.scanNav)
	if err != nil {
		return nil, err
	}
	return BuildTree(all), nil
}

func (s *SQL) scanCat(row Row) (Category, error) {
	var c Category
	if err := row.Scan(&c.ID, &c.NavigationID, &c.Title, &c.SourceURL, &c.ProductCount, &c.LastScrapedAt, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, s.mapErr(err)
	}
	c.LastScrapedAt, c.CreatedAt, c.UpdatedAt = c.LastScrapedAt.UTC(), c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// UpsertCategory implements Store.
func (s *SQL) UpsertCategory(ctx context.Context, in CategoryInput) (Category, error) {
	if in.Title == "" || in.SourceURL == "" {
		return Category{}, fmt.Errorf("%w: category title and source_url are required", ErrInvalid)
	}
	if in.NavigationID != nil {
		if err := ValidateID(*in.NavigationID); err != nil {
			return Category{}, err
		}
	}
	return s.scanCat(s.db.QueryRow(ctx, s.d.UpsertCategory,
		s.insertArgs(lowerID(in.NavigationID), in.Title, in.SourceURL, s.opts.Clock())...))
}

// GetCategory implements Store.
func (s *SQL) GetCategory(ctx context.Context, id string) (Category, error) {
	if err := ValidateID(id); err != nil {
		return Category{}, err
	}
	return s.scanCat(s.db.QueryRow(ctx, `SELECT `+s.d.CatCols+` FROM category WHERE id = `+s.p(1), strings.ToLower(id)))
}

// ListCategories implements Store.
func (s *SQL) ListCategories(ctx context.Context, f CategoryFilter) ([]Category, int, error) {
	f, err := NormalizeCategoryFilter(f)
	if err != nil {
		return nil, 0, err
	}
	w := NewWhere(s.d.Placeholder)
	if f.NavID != "" {
		w.Add("navigation_id = ?", strings.ToLower(f.NavID))
	}
	if f.ParentID != "" {
		w.Add("navigation_id IN (SELECT id FROM navigation WHERE parent_id = ?)", strings.ToLower(f.ParentID))
	}
	where := w.String()
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM category`+where, w.Args()...).Scan(&total); err != nil {
		return nil, 0, s.mapErr(err)
	}
	rows, err := s.db.Query(ctx, `SELECT `+s.d.CatCols+` FROM category`+where+` ORDER BY lower(title), title, id LIMIT `+
		w.Arg(f.Limit)+` OFFSET `+w.Arg(f.Offset), w.Args()...)
	if err != nil {
		return nil, 0, s.mapErr(err)
	}
	out, err := collect(s, rows, s.scanCat)
	return out, total, err
}

func (s *SQL) scanProduct(row Row) (Product, error) {
	var p Product
	var images, specs string
	if err := row.Scan(&p.ID, &p.CategoryID, &p.Title, &p.SourceURL, &p.SourceID, &p.Price, &p.Currency,
		&images, &p.Summary, &specs, &p.Available, &p.LastScrapedAt, &p.CreatedAt, &p.UpdatedAt); err != nil {
		return p, s.mapErr(err)
	}
	p.LastScrapedAt, p.CreatedAt, p.UpdatedAt = p.LastScrapedAt.UTC(), p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	if err := json.Unmarshal([]byte(images), &p.ImageURLs); err != nil {
		return p, fmt.Errorf("%s: image_urls: %w", s.d.Name, err)
	}
	if err := json.Unmarshal([]byte(specs), &p.Specs); err != nil {
		return p, fmt.Errorf("%s: specs: %w", s.d.Name, err)
	}
	return p, nil
}

// UpsertProduct implements Store: the document's upsert_product (ON
// CONFLICT (source_url) updates every field), with the store's clock; the
// database's triggers keep product_count right when category_id changes.
func (s *SQL) UpsertProduct(ctx context.Context, in ProductInput) (Product, error) {
	in, err := ValidateProduct(in)
	if err != nil {
		return Product{}, err
	}
	args := s.insertArgs(lowerID(in.CategoryID), in.Title, in.SourceURL, in.SourceID, s.d.Price(in.Price), in.Currency,
		JSONText(in.ImageURLs), in.Summary, JSONText(in.Specs), in.Available, s.opts.Clock())
	for attempt := 0; ; attempt++ {
		p, err := s.scanProduct(s.db.QueryRow(ctx, s.d.UpsertProduct, args...))
		if err != nil && s.d.Retryable != nil && s.d.Retryable(err) && attempt < 5 {
			continue
		}
		return p, err
	}
}

// GetProduct implements Store.
func (s *SQL) GetProduct(ctx context.Context, id string) (Product, error) {
	if err := ValidateID(id); err != nil {
		return Product{}, err
	}
	return s.scanProduct(s.db.QueryRow(ctx, `SELECT `+s.d.ProdCols+` FROM product WHERE id = `+s.p(1), strings.ToLower(id)))
}

// productOrder returns the ORDER BY list of a normalized sort.
func productOrder(sort string) string {
	switch sort {
	case SortPriceAsc:
		return "price ASC NULLS LAST, id"
	case SortPriceDesc:
		return "price DESC NULLS LAST, id"
	case SortTitleAsc:
		return "lower(title) ASC, title ASC, id"
	case SortTitleDesc:
		return "lower(title) DESC, title DESC, id"
	}
	return "created_at DESC, id"
}

// ProductWhere returns the WHERE clause selecting the products of f
// (normalized) in dialect d, without f.After's keyset condition.
func ProductWhere(f ProductFilter, d *Dialect) *Where {
	w := NewWhere(d.Placeholder)
	fl := &d.Filters
	if f.CategoryID != "" {
		w.Add("category_id = ?", strings.ToLower(f.CategoryID))
	}
	if q := fl.SearchArg(f.Q); q != "" {
		w.Add(fl.Search, q)
	}
	if f.Author != "" {
		w.Add("lower("+fl.Spec("author")+") = lower(?)", f.Author)
	}
	if f.ISBN != "" {
		w.Add(fl.Spec("isbn")+" = ?", f.ISBN)
	}
	if f.Format != "" {
		w.Add("lower("+fl.Spec("format")+") = lower(?)", f.Format)
	}
	if f.Condition != "" {
		w.Add("lower("+fl.Spec("condition")+") = lower(?)", f.Condition)
	}
	for _, k := range f.HasSpec {
		fl.HasSpec(w, k)
	}
	if len(f.Specs) > 0 {
		fl.Specs(w, f.Specs)
	}
	if f.MinPrice != nil {
		w.Add("price >= "+fl.Price, *f.MinPrice)
	}
	if f.MaxPrice != nil {
		w.Add("price <= "+fl.Price, *f.MaxPrice)
	}
	if f.Available != nil {
		w.Add("available = ?", *f.Available)
	}
	if f.Active != nil {
		if *f.Active {
			w.Raw("id IN (SELECT id FROM active_products)")
		} else {
			w.Raw("id NOT IN (SELECT id FROM active_products)")
		}
	}
	return w
}

// ListProducts implements Store.
func (s *SQL) ListProducts(ctx context.Context, f ProductFilter) ([]Product, int, error) {
	f, err := NormalizeProductFilter(f)
	if err != nil {
		return nil, 0, err
	}
	w := ProductWhere(f, s.d)
	total := -1
	if !f.SkipTotal {
		if err := s.db.QueryRow(ctx, `SELECT count(*) FROM product`+w.String(), w.Args()...).Scan(&total); err != nil {
			return nil, 0, s.mapErr(err)
		}
	}
	// The keyset condition narrows the page, not the total.
	if cond, kargs := KeysetCondition(f, s.d.Filters.Keyset); cond != "" {
		w.Add(cond, kargs...)
	}
	where := w.String()
	rows, err := s.db.Query(ctx, `SELECT `+s.d.ProdCols+` FROM product`+where+` ORDER BY `+productOrder(f.Sort)+
		` LIMIT `+w.Arg(f.Limit)+` OFFSET `+w.Arg(f.Offset), w.Args()...)
	if err != nil {
		return nil, 0, s.mapErr(err)
	}
	out, err := collect(s, rows, s.scanProduct)
	return out, total, err
}
