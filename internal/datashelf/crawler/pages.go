package crawler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/datashelf/extract"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// fetchPage fetches a page and checks it: a fetch error, a non-2xx status or
// a truncated body is an error. htmlPage requires a closing </html> tag.
func (c *Crawler) fetchPage(ctx context.Context, rawURL string, htmlPage bool) (*fetch.Response, *url.URL, error) {
	c.pages.Add(1)
	resp, err := c.o.Fetcher.Get(ctx, rawURL)
	if err != nil {
		return nil, nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, nil, errStatus(resp.Status, rawURL)
	}
	if resp.Truncated {
		return nil, nil, fmt.Errorf("%w: %s longer than the size limit", ErrTruncated, rawURL)
	}
	if htmlPage && !hasHTMLEnd(resp.Body) {
		return nil, nil, fmt.Errorf("%w: %s has no closing </html> tag (%d bytes)", ErrTruncated, rawURL, len(resp.Body))
	}
	c.note("fetched %s (HTTP %d, %d bytes)", rawURL, resp.Status, len(resp.Body))
	final := resp.URL
	if final == "" {
		final = rawURL
	}
	base, err := url.Parse(final)
	if err != nil {
		return nil, nil, fmt.Errorf("crawler: final URL %q: %w", final, err)
	}
	return resp, base, nil
}

// hasHTMLEnd reports whether the last 1 KiB of body holds "</html".
func hasHTMLEnd(body []byte) bool {
	tail := body
	if len(tail) > 1024 {
		tail = tail[len(tail)-1024:]
	}
	return bytes.Contains(bytes.ToLower(tail), []byte("</html"))
}

// navigation parses the site menu into navigation rows and enqueues a
// category job per collection link.
func (c *Crawler) navigation(ctx context.Context, j store.Job) error {
	resp, base, err := c.fetchPage(ctx, j.TargetURL, true)
	if err != nil {
		return err
	}
	items, err := extract.Navigation(base, bytes.NewReader(resp.Body), c.o.Profile)
	if err != nil {
		return err
	}
	ids := make([]string, len(items))
	urls := make([]string, len(items))
	for i, it := range items {
		u, err := url.Parse(it.URL)
		if err != nil || it.Title == "" || it.URL == "" {
			continue
		}
		urls[i] = canonical(u)
		in := store.NavigationInput{Title: it.Title, SourceURL: urls[i]}
		if it.Parent >= 0 && it.Parent < i && ids[it.Parent] != "" {
			in.ParentID = ptr(ids[it.Parent])
		}
		n, err := c.o.Store.UpsertNavigation(ctx, in)
		if err != nil {
			return fmt.Errorf("upsert navigation %s: %w", urls[i], err)
		}
		ids[i] = n.ID
		c.mu.Lock()
		if _, ok := c.navIDs[urls[i]]; !ok {
			c.navIDs[urls[i]] = n.ID
		}
		c.mu.Unlock()
	}
	for i, it := range items {
		if ids[i] == "" || !isCollectionLink(it) {
			continue
		}
		if err := c.enqueue(ctx, store.JobCategory, urls[i], PriorityCategory, map[string]any{metaNavigationID: ids[i]}); err != nil {
			return err
		}
	}
	return nil
}

// category stores a collection page's category row and enqueues its
// products, related collections and next page.
func (c *Crawler) category(ctx context.Context, j store.Job) error {
	u, err := url.Parse(j.TargetURL)
	if err != nil {
		return fmt.Errorf("crawler: job URL: %w", err)
	}
	resp, base, err := c.fetchPage(ctx, j.TargetURL, true)
	if err != nil {
		return err
	}
	cp, err := extract.Category(base, bytes.NewReader(resp.Body), c.o.Profile)
	if err != nil {
		return err
	}
	catURL := withoutQuery(u)
	c.mu.Lock()
	old, known := c.cats[catURL]
	navID := metaString(j.Metadata, metaNavigationID)
	if navID == "" {
		navID = c.navIDs[catURL]
	}
	c.mu.Unlock()
	in := store.CategoryInput{Title: cp.Title, SourceURL: catURL}
	if in.Title == "" {
		in.Title = old.Title
	}
	if in.Title == "" {
		in.Title = catURL
	}
	switch {
	case navID != "":
		in.NavigationID = ptr(navID)
	case known:
		in.NavigationID = old.NavigationID
	}
	cat, err := c.o.Store.UpsertCategory(ctx, in)
	if err != nil {
		return fmt.Errorf("upsert category %s: %w", catURL, err)
	}
	c.mu.Lock()
	c.cats[catURL] = cat
	c.mu.Unlock()

	productURLs := cp.ProductURLs
	if c.o.ShopifyJSON && c.o.Profile.Shopify && canonical(u) == catURL {
		// On a collection's first page, list every product of the collection
		// from Shopify's JSON (the HTML grid may be filled by JavaScript).
		more, err := c.shopifyCollection(ctx, u)
		if err != nil {
			return err
		}
		productURLs = append(productURLs, more...)
	}
	for _, p := range productURLs {
		pu, err := url.Parse(p)
		if err != nil {
			continue
		}
		if err := c.enqueue(ctx, store.JobProduct, withoutQuery(pu), PriorityProduct, map[string]any{metaCategoryID: cat.ID}); err != nil {
			return err
		}
	}
	c.note("category %s: %d product link(s) found", j.TargetURL, len(productURLs))
	for _, r := range cp.Related {
		ru, err := url.Parse(r.URL)
		if err != nil {
			continue
		}
		target := canonical(ru)
		meta := map[string]any{}
		c.mu.Lock()
		if id := c.navIDs[withoutQuery(ru)]; id != "" {
			meta[metaNavigationID] = id
		}
		c.mu.Unlock()
		if err := c.enqueue(ctx, store.JobCategory, target, PriorityCategory, meta); err != nil {
			return err
		}
	}
	if cp.Next != "" {
		nu, err := url.Parse(cp.Next)
		if err == nil && withoutQuery(nu) == catURL {
			next := canonical(nu)
			if next != canonical(u) {
				meta := map[string]any{metaCategoryID: cat.ID}
				if navID != "" {
					meta[metaNavigationID] = navID
				}
				if err := c.enqueue(ctx, store.JobCategory, next, PriorityCategory, meta); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// product fetches a product (or reuses a fresh stored one), downloads its
// images and upserts it.
func (c *Crawler) product(ctx context.Context, j store.Job) error {
	u, err := url.Parse(j.TargetURL)
	if err != nil {
		return fmt.Errorf("crawler: job URL: %w", err)
	}
	src := withoutQuery(u)
	var catID *string
	if id := metaString(j.Metadata, metaCategoryID); id != "" {
		catID = ptr(id)
	}
	c.mu.Lock()
	old, known := c.prods[src]
	c.mu.Unlock()
	if known && c.o.RefreshAge > 0 && c.o.Now().Sub(old.LastScrapedAt) < c.o.RefreshAge {
		if catID == nil || (old.CategoryID != nil && *old.CategoryID == *catID) {
			return nil
		}
		// Fresh, but listed in another category: move it without fetching.
		return c.upsert(ctx, store.ProductInput{
			CategoryID: catID, Title: old.Title, SourceURL: old.SourceURL, SourceID: old.SourceID,
			Price: old.Price, Currency: old.Currency, ImageURLs: old.ImageURLs, Summary: old.Summary,
			Specs: old.Specs, Available: old.Available,
		})
	}
	if catID == nil && known {
		catID = old.CategoryID
	}

	var pp *extract.ProductPage
	var base *url.URL
	if c.o.ShopifyJSON && c.o.Profile.Shopify {
		var resp *fetch.Response
		resp, base, err = c.fetchPage(ctx, src+".js", false)
		if err != nil {
			return err
		}
		if pp, err = extract.ShopifyProduct(resp.Body); err != nil {
			return err
		}
		if pp.Currency == "" {
			pp.Currency = c.o.Currency
		}
	} else {
		var resp *fetch.Response
		resp, base, err = c.fetchPage(ctx, src, true)
		if err != nil {
			return err
		}
		if pp, err = extract.Product(base, bytes.NewReader(resp.Body), c.o.Profile); err != nil {
			return err
		}
	}

	in := store.ProductInput{
		CategoryID: catID,
		Title:      pp.Title,
		SourceURL:  src,
		Currency:   pp.Currency,
		Specs:      map[string]any{},
		Available:  pp.Available,
		ImageURLs:  []string{},
	}
	if pp.Price != "" {
		if f, err := strconv.ParseFloat(pp.Price, 64); err == nil {
			in.Price = &f
		}
	}
	if pp.Summary != "" {
		in.Summary = ptr(pp.Summary)
	}
	for k, v := range pp.Specs {
		in.Specs[k] = v
	}
	sid := pp.SourceID
	if sid == "" {
		sid = extract.SourceID(src, c.o.Profile)
	}
	if sid != "" {
		in.SourceID = ptr(sid)
	}
	for _, img := range pp.Images {
		iu, err := base.Parse(img)
		if err != nil {
			continue
		}
		if c.o.Blobs == nil {
			in.ImageURLs = append(in.ImageURLs, iu.String())
			continue
		}
		key, err := c.image(ctx, iu.String())
		if err != nil && permanent(err) {
			// An image the network policy or robots.txt refuses is left
			// out, like one the site does not have.
			c.log.Info("crawler: image refused", "url", iu.String(), "err", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("image %s: %w", iu, err)
		}
		if key != "" {
			in.ImageURLs = append(in.ImageURLs, c.o.ImageURLPrefix+key)
		}
	}
	return c.upsert(ctx, in)
}

func (c *Crawler) upsert(ctx context.Context, in store.ProductInput) error {
	p, err := c.o.Store.UpsertProduct(ctx, in)
	if err != nil {
		return fmt.Errorf("upsert product %s: %w", in.SourceURL, err)
	}
	c.products.Add(1)
	c.note("product stored: %s (%s)", p.Title, p.SourceURL)
	c.mu.Lock()
	c.prods[p.SourceURL] = p
	c.mu.Unlock()
	return nil
}

// image downloads an image once per crawler and stores it under its
// content key; it returns the key, or "" for an image the site does not
// have (4xx other than 429).
func (c *Crawler) image(ctx context.Context, rawURL string) (string, error) {
	c.mu.Lock()
	e := c.imgs[rawURL]
	if e == nil {
		e = &imageEntry{}
		c.imgs[rawURL] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.key, e.err = c.download(ctx, rawURL) })
	if e.err != nil {
		// Let a later attempt try again.
		c.mu.Lock()
		if c.imgs[rawURL] == e {
			delete(c.imgs, rawURL)
		}
		c.mu.Unlock()
	}
	return e.key, e.err
}

var imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".avif": true, ".svg": true}

func (c *Crawler) download(ctx context.Context, rawURL string) (string, error) {
	resp, err := c.o.Fetcher.Get(ctx, rawURL)
	if err != nil {
		return "", err
	}
	switch {
	case resp.Status >= 400 && resp.Status < 500 && resp.Status != http.StatusTooManyRequests:
		c.log.Info("crawler: image missing", "url", rawURL, "status", resp.Status)
		return "", nil
	case resp.Status < 200 || resp.Status > 299:
		return "", errStatus(resp.Status, rawURL)
	case resp.Truncated:
		return "", fmt.Errorf("%w: image longer than the size limit", ErrTruncated)
	}
	ext := ""
	if u, err := url.Parse(rawURL); err == nil {
		ext = strings.ToLower(path.Ext(u.Path))
	}
	if !imageExts[ext] {
		ext = ""
		if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
			if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
				ext = exts[0]
			}
		}
	}
	key := blob.ContentKey("images", resp.Body, ext)
	r, err := c.o.Blobs.Get(ctx, key)
	if err == nil {
		r.Close()
		return key, nil
	}
	if !errors.Is(err, blob.ErrNotFound) {
		return "", err
	}
	if err := c.o.Blobs.Put(ctx, key, bytes.NewReader(resp.Body)); err != nil {
		return "", err
	}
	c.images.Add(1)
	return key, nil
}

// maxShopifyPages bounds the pages read from one collection's products.json.
const maxShopifyPages = 1000

// shopifyCollection lists the product URLs of the collection at u through
// Shopify's /collections/{handle}/products.json?page=N, page by page until
// an empty page.
func (c *Crawler) shopifyCollection(ctx context.Context, u *url.URL) ([]string, error) {
	prefix, handle, ok := strings.Cut(u.Path, "/collections/")
	if !ok || handle == "" || strings.Contains(handle, "/") {
		return nil, nil
	}
	var out []string
	for page := 1; page <= maxShopifyPages; page++ {
		api := *u
		api.Path = "/collections/" + handle + "/products.json"
		api.RawQuery = fmt.Sprintf("page=%d&limit=250", page)
		resp, _, err := c.fetchPage(ctx, api.String(), false)
		if err != nil {
			return nil, err
		}
		products, err := extract.ShopifyCollection(resp.Body)
		if err != nil {
			return nil, err
		}
		if len(products) == 0 {
			return out, nil
		}
		for _, p := range products {
			if p.Handle == "" {
				continue
			}
			pu := *u
			pu.Path = prefix + "/products/" + p.Handle
			pu.RawQuery = ""
			out = append(out, pu.String())
		}
	}
	return out, nil
}
