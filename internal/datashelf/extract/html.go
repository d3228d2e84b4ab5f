package extract

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// Navigation parses the site menu of a page (usually the home page). Items
// are returned in document order: each top-level entry (Level 0, Parent -1)
// followed by its submenu links (Level 1, Parent = the entry's index).
// Links are absolute; a link repeated within one submenu is kept once.
func Navigation(base *url.URL, r io.Reader, p Profile) ([]NavItem, error) {
	doc, err := parse(r)
	if err != nil {
		return nil, err
	}
	var items []NavItem
	find(doc.Selection, p.NavTopItem).Each(func(n int, li *goquery.Selection) {
		a := find(li, p.NavTopLink).First()
		title := clean(a.Text())
		if a.Length() == 0 {
			return
		}
		top := len(items)
		items = append(items, NavItem{Title: title, URL: resolve(base, a.AttrOr("href", "")), Parent: -1, MenuCategory: a.AttrOr("data-menu_category", "")})
		sub := find(li, p.NavSubmenu)
		if sub.Length() == 0 && p.NavSubmenuByID != "" {
			sub = find(doc.Selection, fmt.Sprintf(p.NavSubmenuByID, n+1))
		}
		if sub.Length() == 0 {
			return
		}
		group := ""
		seen := map[string]bool{}
		sel := p.NavLink
		if p.NavHeading != "" {
			sel = p.NavHeading + ", " + p.NavLink
		}
		headings := find(sub, p.NavHeading)
		find(sub, sel).Each(func(_ int, s *goquery.Selection) {
			if headings.Length() > 0 && isIn(s, headings) {
				group = clean(s.Text())
				return
			}
			u := resolve(base, s.AttrOr("href", ""))
			if u == "" || seen[u] {
				return
			}
			seen[u] = true
			items = append(items, NavItem{Title: clean(s.Text()), URL: u, Level: 1, Parent: top, Group: group,
				MenuCategory: s.AttrOr("data-menu_category", ""), MenuSubcategory: s.AttrOr("data-menu_subcategory", "")})
		})
	})
	if len(items) == 0 {
		return nil, ErrNoNavigation
	}
	return items, nil
}

func isIn(s, set *goquery.Selection) bool {
	for _, n := range set.Nodes {
		if n == s.Nodes[0] {
			return true
		}
	}
	return false
}

// Category parses a collection page. It returns ErrNoCategory (and the
// partial page) when it finds no title, collection id, card or link.
func Category(base *url.URL, r io.Reader, p Profile) (*CategoryPage, error) {
	doc, err := parse(r)
	if err != nil {
		return nil, err
	}
	c := &CategoryPage{ProductCount: -1}
	if p.CategoryContainer != "" {
		c.CollectionID = strings.TrimSpace(find(doc.Selection, p.CategoryContainer).First().AttrOr(p.CategoryIDAttr, ""))
	}
	c.Title = clean(find(doc.Selection, p.CategoryTitle).First().Text())
	seen := map[string]bool{}
	find(doc.Selection, p.RelatedLinks).Each(func(_ int, a *goquery.Selection) {
		u := resolve(base, a.AttrOr("href", ""))
		if u == "" || seen[u] {
			return
		}
		seen[u] = true
		t := clean(a.Text())
		if t == "" {
			t = clean(a.AttrOr("title", ""))
		}
		c.Related = append(c.Related, Link{Title: t, URL: u})
	})
	seen = map[string]bool{}
	find(doc.Selection, p.ProductCard).Each(func(_ int, card *goquery.Selection) {
		a := find(card, p.CardLink).First()
		u := resolve(base, a.AttrOr("href", ""))
		if u == "" || seen[u] {
			return
		}
		seen[u] = true
		cd := Card{URL: u, Title: clean(find(card, p.CardTitle).First().Text())}
		if cd.Title == "" {
			cd.Title = clean(a.Text())
		}
		au := clean(find(card, p.CardAuthor).First().Text())
		if i := strings.Index(au, ":"); i >= 0 && strings.EqualFold(strings.TrimSpace(au[:i]), "author") {
			au = strings.TrimSpace(au[i+1:])
		}
		cd.Author = au
		if img := find(card, p.CardImage).First(); img.Length() > 0 {
			src := img.AttrOr("src", "")
			if src == "" {
				src = img.AttrOr("data-src", "")
			}
			cd.Image = resolve(base, src)
		}
		c.Cards = append(c.Cards, cd)
		c.ProductURLs = append(c.ProductURLs, u)
	})
	if n := find(doc.Selection, p.NextLink).First(); n.Length() > 0 {
		c.Next = resolve(base, n.AttrOr("href", ""))
	}
	if c.Next == "" {
		c.Next = resolve(base, find(doc.Selection, p.PaginationNext).First().AttrOr("href", ""))
	}
	if t := clean(find(doc.Selection, p.ProductCount).First().Text()); t != "" {
		if f := strings.Fields(strings.ReplaceAll(t, ",", "")); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil && n >= 0 {
				c.ProductCount = n
			}
		}
	}
	if c.Title == "" && c.CollectionID == "" && len(c.Cards) == 0 && len(c.Related) == 0 {
		return c, ErrNoCategory
	}
	return c, nil
}

// Product parses a product page whose URL is base. It returns ErrNoProduct
// (and the partial product) when the page has no title.
func Product(base *url.URL, r io.Reader, p Profile) (*ProductPage, error) {
	doc, err := parse(r)
	if err != nil {
		return nil, err
	}
	pr := &ProductPage{Specs: map[string]string{}, PriceCents: -1, Available: true}
	if base != nil {
		pr.URL = base.String()
		pr.SourceID = SourceID(base.Path, p)
		if i := strings.Index(base.Path, "/products/"); i >= 0 {
			pr.Handle = strings.TrimSuffix(strings.TrimSuffix(base.Path[i+len("/products/"):], ".json"), ".js")
		}
	}
	pr.Title = clean(find(doc.Selection, p.ProductTitle).First().Text())
	find(doc.Selection, p.Price).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		d, cents, cur, ok := ParsePrice(clean(s.Text()))
		if !ok {
			return true
		}
		pr.Price, pr.PriceCents, pr.Currency = d, cents, cur
		return false
	})
	pr.Summary = blockText(find(doc.Selection, p.Summary).First())
	find(doc.Selection, p.SpecRows).Each(func(_ int, tr *goquery.Selection) {
		cells := tr.ChildrenFiltered("th, td")
		if cells.Length() < 2 {
			return
		}
		pr.setSpec(blockText(cells.Eq(0)), blockText(cells.Eq(1)))
	})
	find(doc.Selection, p.SpecItems).Each(func(_ int, li *goquery.Selection) {
		t := blockText(li)
		if i := strings.Index(t, ":"); i > 0 {
			pr.setSpec(t[:i], t[i+1:])
		}
	})
	pr.Author = pr.Specs["author"]
	pr.ISBN = pr.Specs["isbn"]
	seen := map[string]bool{}
	find(doc.Selection, p.Images).Each(func(_ int, img *goquery.Selection) {
		src := img.AttrOr("src", "")
		if src == "" {
			src = img.AttrOr("data-src", "")
		}
		u := resolve(base, src)
		if u == "" || seen[u] {
			return
		}
		seen[u] = true
		pr.Images = append(pr.Images, u)
	})
	avail := find(doc.Selection, p.Availability)
	text := ""
	if avail.Length() > 0 {
		text = blockText(avail)
	} else {
		text = blockText(doc.Find("body"))
	}
	text = strings.ToLower(text)
	for _, ph := range p.SoldOutPhrases {
		if ph != "" && strings.Contains(text, strings.ToLower(ph)) {
			pr.Available = false
			break
		}
	}
	if pr.SourceID == "" && len(pr.ISBN) == 13 {
		pr.SourceID = pr.ISBN
	}
	if pr.Title == "" {
		return pr, ErrNoProduct
	}
	return pr, nil
}
