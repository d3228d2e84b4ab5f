// Package extract parses storefront pages into navigation items, category
// pages and products, driven by a Profile of CSS selectors (World of Books by
// default). Parsers never panic on malformed or truncated input: they return
// whatever they found, and an error only when nothing usable was found.
package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"

	"github.com/andybalholm/cascadia"
)

// Profile describes a site's markup as CSS selectors. Selectors marked
// "within" are evaluated inside the element matched by the preceding one.
// The zero value of a field means "not used"; WorldOfBooks returns a
// complete profile and ParseProfile fills omitted fields from it.
type Profile struct {
	// Name identifies the profile.
	Name string `json:"name"`

	// NavTopItem matches one top-level mega-menu entry (an li).
	NavTopItem string `json:"nav_top_item"`
	// NavTopLink matches the entry's own link, within NavTopItem.
	NavTopLink string `json:"nav_top_link"`
	// NavSubmenu matches the entry's submenu, within NavTopItem; when absent
	// there, NavSubmenuByID (a fmt pattern taking the 1-based entry number)
	// is looked up in the whole document.
	NavSubmenu     string `json:"nav_submenu"`
	NavSubmenuByID string `json:"nav_submenu_by_id"`
	// NavHeading matches a submenu column heading, within the submenu.
	NavHeading string `json:"nav_heading"`
	// NavLink matches a submenu link, within the submenu.
	NavLink string `json:"nav_link"`

	// CategoryContainer matches the collection's container element;
	// CategoryIDAttr is its attribute holding the collection id.
	CategoryContainer string `json:"category_container"`
	CategoryIDAttr    string `json:"category_id_attr"`
	// CategoryTitle matches the collection heading.
	CategoryTitle string `json:"category_title"`
	// RelatedLinks matches links to related sub-collections.
	RelatedLinks string `json:"related_links"`
	// ProductCard matches one product card; CardLink, CardTitle,
	// CardAuthor and CardImage are evaluated within it.
	ProductCard string `json:"product_card"`
	CardLink    string `json:"card_link"`
	CardTitle   string `json:"card_title"`
	CardAuthor  string `json:"card_author"`
	CardImage   string `json:"card_image"`
	// NextLink (usually link[rel=next]) and PaginationNext (a visible
	// "Next" link) give the next page; NextLink wins.
	NextLink       string `json:"next_link"`
	PaginationNext string `json:"pagination_next"`
	// ProductCount matches an element whose text holds "N products".
	ProductCount string `json:"product_count"`

	// ProductTitle, Price, Summary and Images match product page parts.
	ProductTitle string `json:"product_title"`
	Price        string `json:"price"`
	Summary      string `json:"summary"`
	Images       string `json:"images"`
	// SpecRows matches specification rows whose first two cells (th or td)
	// are key and value; SpecItems matches elements whose text is
	// "Key: Value".
	SpecRows  string `json:"spec_rows"`
	SpecItems string `json:"spec_items"`
	// Availability matches elements whose text says whether the product can
	// be bought; when none match, the page body is searched.
	Availability string `json:"availability"`
	// SoldOutPhrases are case-insensitive phrases meaning "unavailable".
	SoldOutPhrases []string `json:"sold_out_phrases"`
	// SourceIDPattern is a regular expression applied to the product URL;
	// its first group is the product's source id.
	SourceIDPattern string `json:"source_id_pattern"`
	// Shopify enables the Shopify JSON endpoints (/products/{handle}.js,
	// /collections/{handle}/products.json).
	Shopify bool `json:"shopify"`
}

// WorldOfBooks returns the profile of worldofbooks.com.
func WorldOfBooks() Profile {
	return Profile{
		Name:              "worldofbooks",
		NavTopItem:        "onstate-mega-menu.header__inline-menu > nav > ul.list-menu--inline > li.has-submenu",
		NavTopLink:        "a.header__menu-item[data-menu_category]",
		NavSubmenu:        "div.onstate-mega-menu__submenu",
		NavSubmenuByID:    "#onstate-mega-menu-submenu-%d",
		NavHeading:        "div.header__menu-item.caption-large",
		NavLink:           `ul.list-menu > li > a[href*="/collections/"]`,
		CategoryContainer: "div.plp-container[data-collection-id]",
		CategoryIDAttr:    "data-collection-id",
		CategoryTitle:     "h1.h2",
		RelatedLinks:      "div.plp-related-collections__list > a[href]",
		ProductCard:       "div.product, li.ais-InfiniteHits-item, .main-product-card",
		CardLink:          `a[href*="/products/"]`,
		CardTitle:         "h2, h3.card__heading",
		CardAuthor:        "p.author, p",
		CardImage:         "img",
		NextLink:          `link[rel="next"]`,
		PaginationNext:    `div.pagination > a[aria-label="Next"]`,
		ProductCount:      "div.plp-sorting__product_count",
		ProductTitle:      ".product__title h1",
		Price:             ".price-item, .price",
		Summary:           ".product__description .rte",
		Images:            ".product__media img",
		SpecRows:          "table tr",
		SpecItems:         "ul.product-specs > li, .product__specs li",
		Availability:      ".product-form__submit, .price__badge-sold-out, .product__inventory",
		SoldOutPhrases:    []string{"sold out", "out of stock", "unavailable"},
		SourceIDPattern:   `/products/(?:[^/?#]*-)?(\d{13})(?:\.js(?:on)?)?(?:[/?#]|$)`,
		Shopify:           true,
	}
}

// ParseProfile decodes a JSON profile; fields it omits keep the values of
// WorldOfBooks. The result is validated.
func ParseProfile(data []byte) (Profile, error) {
	p := WorldOfBooks()
	if err := json.Unmarshal(data, &p); err != nil {
		return Profile{}, fmt.Errorf("extract: profile: %w", err)
	}
	return p, p.Validate()
}

// LoadProfile reads a JSON profile from r (see ParseProfile).
func LoadProfile(r io.Reader) (Profile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Profile{}, fmt.Errorf("extract: profile: %w", err)
	}
	return ParseProfile(data)
}

// Validate reports the first selector or pattern that does not compile.
func (p Profile) Validate() error {
	v := reflect.ValueOf(p)
	t := v.Type()
	var errs []error
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Kind() != reflect.String {
			continue
		}
		s := v.Field(i).String()
		switch f.Name {
		case "Name", "CategoryIDAttr":
			continue
		case "SourceIDPattern":
			if _, err := regexp.Compile(s); err != nil {
				errs = append(errs, fmt.Errorf("extract: profile %s: %w", f.Tag.Get("json"), err))
			}
			continue
		case "NavSubmenuByID":
			if s == "" {
				continue
			}
			s = fmt.Sprintf(s, 1)
		}
		if s == "" {
			continue
		}
		if _, err := cascadia.ParseGroup(s); err != nil {
			errs = append(errs, fmt.Errorf("extract: profile %s: %w", f.Tag.Get("json"), err))
		}
	}
	return errors.Join(errs...)
}
