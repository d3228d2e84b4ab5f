package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// shopifyProduct covers both /products/{handle}.js (price in minor units,
// images as strings, description) and products.json / {handle}.json
// (variant prices as decimal strings, images as objects, body_html).
type shopifyProduct struct {
	ID          json.Number       `json:"id"`
	Title       string            `json:"title"`
	Handle      string            `json:"handle"`
	Description string            `json:"description"`
	BodyHTML    string            `json:"body_html"`
	Vendor      string            `json:"vendor"`
	Type        string            `json:"type"`
	ProductType string            `json:"product_type"`
	Tags        json.RawMessage   `json:"tags"`
	Price       json.RawMessage   `json:"price"`
	Available   *bool             `json:"available"`
	Images      []json.RawMessage `json:"images"`
	Variants    []struct {
		ID        json.Number     `json:"id"`
		Title     string          `json:"title"`
		Price     json.RawMessage `json:"price"`
		Available *bool           `json:"available"`
		SKU       string          `json:"sku"`
		Barcode   string          `json:"barcode"`
	} `json:"variants"`
}

// ErrNotShopify is returned for JSON that is not a Shopify product or
// product list.
var ErrNotShopify = errors.New("extract: not Shopify product JSON")

// ShopifyProduct parses a Shopify product as served at /products/{handle}.js
// or /products/{handle}.json ({"product": {...}}). Image URLs are returned
// as found (Shopify uses protocol-relative "//cdn..." URLs); resolve them
// against the page URL. Currency is left empty: Shopify's product JSON does
// not carry it. Specs are filled from tags of the form "key:value" and from
// the vendor (author), barcode (isbn) and product type (format).
func ShopifyProduct(data []byte) (*ProductPage, error) {
	var wrap struct {
		Product *shopifyProduct `json:"product"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("extract: shopify product: %w", err)
	}
	if err := json.Unmarshal(raw, &wrap); err == nil && wrap.Product != nil {
		return wrap.Product.convert(true)
	}
	var sp shopifyProduct
	if err := json.Unmarshal(raw, &sp); err != nil {
		return nil, fmt.Errorf("extract: shopify product: %w", err)
	}
	return sp.convert(false)
}

// ShopifyCollection parses /collections/{handle}/products.json; an empty
// list (past the last page) is not an error.
func ShopifyCollection(data []byte) ([]*ProductPage, error) {
	var v struct {
		Products *[]shopifyProduct `json:"products"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("extract: shopify collection: %w", err)
	}
	if v.Products == nil {
		return nil, ErrNotShopify
	}
	out := make([]*ProductPage, 0, len(*v.Products))
	var errs []error
	for i := range *v.Products {
		p, err := (*v.Products)[i].convert(true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// convert builds a ProductPage; decimalPrices says whether variant prices
// are decimal strings (products.json) rather than minor units (.js).
func (sp *shopifyProduct) convert(decimalPrices bool) (*ProductPage, error) {
	if sp.Title == "" && sp.Handle == "" && sp.ID == "" {
		return nil, ErrNotShopify
	}
	p := &ProductPage{Title: clean(sp.Title), Handle: sp.Handle, Specs: map[string]string{}, PriceCents: -1, Available: true}
	desc := sp.Description
	if desc == "" {
		desc = sp.BodyHTML
	}
	if desc != "" {
		if doc, err := parse(strings.NewReader(desc)); err == nil {
			p.Summary = blockText(doc.Find("body"))
		}
	}
	var tags []string
	if len(sp.Tags) > 0 {
		if err := json.Unmarshal(sp.Tags, &tags); err != nil {
			var s string
			if json.Unmarshal(sp.Tags, &s) == nil {
				tags = strings.Split(s, ",")
			}
		}
	}
	for _, t := range tags {
		if i := strings.Index(t, ":"); i > 0 {
			p.setSpec(t[:i], t[i+1:])
		}
	}
	if sp.Vendor != "" {
		p.setSpec("author", sp.Vendor)
	}
	if typ := sp.Type + sp.ProductType; typ != "" {
		p.setSpec("format", typ)
	}
	if len(sp.Variants) > 0 {
		v := sp.Variants[0]
		if v.Barcode != "" {
			p.setSpec("isbn", v.Barcode)
		}
		if v.Title != "" && !strings.EqualFold(v.Title, "Default Title") {
			p.setSpec("condition", v.Title)
		}
		if cents, ok := jsonPrice(v.Price, decimalPrices); ok {
			p.PriceCents = cents
		}
		if v.Available != nil {
			p.Available = false
			for _, v := range sp.Variants {
				if v.Available != nil && *v.Available {
					p.Available = true
				}
			}
		}
	}
	if cents, ok := jsonPrice(sp.Price, false); ok && p.PriceCents < 0 {
		p.PriceCents = cents
	}
	if p.PriceCents >= 0 {
		p.Price = fmt.Sprintf("%d.%02d", p.PriceCents/100, p.PriceCents%100)
	}
	if sp.Available != nil {
		p.Available = *sp.Available
	}
	for _, raw := range sp.Images {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var o struct {
				Src string `json:"src"`
			}
			if json.Unmarshal(raw, &o) != nil {
				continue
			}
			s = o.Src
		}
		if s != "" {
			p.Images = append(p.Images, s)
		}
	}
	p.Author = p.Specs["author"]
	p.ISBN = p.Specs["isbn"]
	switch {
	case len(p.ISBN) == 13:
		p.SourceID = p.ISBN
	default:
		if id := SourceID("/products/"+sp.Handle, WorldOfBooks()); id != "" {
			p.SourceID = id
		} else {
			p.SourceID = sp.ID.String()
		}
	}
	return p, nil
}

// jsonPrice reads a price that is a number or string, either in minor units
// or as a decimal amount.
func jsonPrice(raw json.RawMessage, decimal bool) (int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	s := strings.Trim(string(raw), `"`)
	if !decimal && !strings.ContainsAny(s, ".,") {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil && n >= 0
	}
	_, cents, _, ok := ParsePrice(s)
	return cents, ok
}
