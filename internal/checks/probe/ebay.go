package probe

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// quote is a price read from an eBay page.
type quote struct {
	price       float64
	shipping    float64
	hasShipping bool
	currency    string
	// availability is the schema.org availability of the offer without
	// its URL prefix ("InStock", "OutOfStock", …); "" when not given.
	availability string
	// source says which part of the page the price came from: "json-ld",
	// "microdata", "listing" (visible price) or "search" (result cards).
	source string
}

func (q quote) total() float64 { return q.price + q.shipping }

// Money patterns: a currency marker then an amount ("US $1,234.56",
// "£12.99", "EUR 15,00", "AU $3.00"), or an amount then a marker
// ("15,00 €", "12.99 EUR"). Amounts may use "," or "." (or a space) as
// thousands and decimal separators.
var (
	moneyBefore = regexp.MustCompile(`(?i)(\bUS[\s\x{00a0}]?\$|\bAU[\s\x{00a0}]?\$|\bC[\s\x{00a0}]?\$|\bCA[\s\x{00a0}]?\$|\$|£|€|\bEUR\b|\bGBP\b|\bUSD\b|\bAUD\b|\bCAD\b)[\s\x{00a0}]*(\d+(?:[.,\x{00a0}]\d{3})*(?:[.,]\d{1,2})?)`)
	moneyAfter  = regexp.MustCompile(`(?i)(\d+(?:[.,\x{00a0} ]\d{3})*(?:[.,]\d{1,2})?)[\s\x{00a0}]*(€|£|\bEUR\b|\bGBP\b|\bUSD\b)`)
	freeRe      = regexp.MustCompile(`(?i)\bfree\b[^.|·]{0,40}?\b(shipping|delivery|postage|standard|economy|expedited|international)\b`)
)

// currencyCode maps a currency marker to its ISO code.
func currencyCode(marker string) string {
	m := strings.ToUpper(strings.Join(strings.Fields(strings.ReplaceAll(marker, "\u00a0", " ")), ""))
	switch m {
	case "US$", "$", "USD":
		return "USD"
	case "AU$", "AUD":
		return "AUD"
	case "C$", "CA$", "CAD":
		return "CAD"
	case "£", "GBP":
		return "GBP"
	case "€", "EUR":
		return "EUR"
	}
	return ""
}

// findMoney returns the first amount with a currency marker in s and the
// offset where it starts.
func findMoney(s string) (amount float64, currency string, at int, ok bool) {
	at = -1
	if m := moneyBefore.FindStringSubmatchIndex(s); m != nil {
		if v, good := parseAmount(s[m[4]:m[5]]); good {
			amount, currency, at, ok = v, currencyCode(s[m[2]:m[3]]), m[0], true
		}
	}
	if m := moneyAfter.FindStringSubmatchIndex(s); m != nil && (!ok || m[0] < at) {
		if v, good := parseAmount(s[m[2]:m[3]]); good {
			amount, currency, at, ok = v, currencyCode(s[m[4]:m[5]]), m[0], true
		}
	}
	return amount, currency, at, ok
}

// parseAmount parses a number written with US ("1,234.56") or European
// ("1.234,56", "15,00", "1 234,56") separators. With both "," and "."
// present, the later one is the decimal separator; with one kind only, it
// is a thousands separator when it occurs more than once or (",") is
// followed by exactly three digits, else the decimal separator.
func parseAmount(s string) (float64, bool) {
	s = strings.NewReplacer("\u00a0", "", " ", "").Replace(strings.TrimSpace(s))
	if s == "" {
		return 0, false
	}
	lastComma, lastDot := strings.LastIndexByte(s, ','), strings.LastIndexByte(s, '.')
	var decimal byte
	switch {
	case lastComma >= 0 && lastDot >= 0:
		decimal = '.'
		if lastComma > lastDot {
			decimal = ','
		}
	case lastComma >= 0:
		if strings.Count(s, ",") == 1 && len(s)-lastComma-1 != 3 {
			decimal = ','
		}
	case lastDot >= 0:
		if strings.Count(s, ".") == 1 {
			decimal = '.'
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == decimal && i == max(lastComma, lastDot):
			b.WriteByte('.')
		case c == ',' || c == '.':
			// thousands separator
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(b.String(), 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// parseShipping reads a shipping cost from a shipping line: 0 for "Free
// shipping" / "Free delivery" / "Free postage", else the first amount,
// whichever comes first. ok is false when the text states neither.
func parseShipping(s string) (float64, bool) {
	amount, _, at, hasMoney := findMoney(s)
	free := freeRe.FindStringIndex(s)
	switch {
	case free != nil && (!hasMoney || free[0] < at):
		return 0, true
	case hasMoney:
		return amount, true
	}
	return 0, false
}

// parseEbay reads a quote from an eBay page, from the most to the least
// reliable part: the schema.org Product/Offer data in JSON-LD, then the
// result cards of a search page, then schema.org microdata (itemprop
// price, priceCurrency, availability, shippingRate), then the visible
// price and shipping elements of a listing page. Structured data wins over
// the visible elements when both are present (they are what eBay publishes
// for machines, and survive layout changes); fields it lacks (shipping,
// currency) are taken from the visible elements.
func parseEbay(doc *goquery.Document) (quote, bool) {
	if q, ok := parseJSONLD(doc); ok {
		return completeFromVisible(doc, q), true
	}
	if q, ok := parseSearch(doc); ok {
		q.source = "search"
		return q, true
	}
	if q, ok := parseMicrodata(doc); ok {
		return completeFromVisible(doc, q), true
	}
	return parseListing(doc)
}

// completeFromVisible fills the currency and shipping a structured quote
// lacks from the visible listing elements.
func completeFromVisible(doc *goquery.Document, q quote) quote {
	if q.currency != "" && q.hasShipping {
		return q
	}
	v, ok := parseListing(doc)
	if q.currency == "" && ok {
		q.currency = v.currency
	}
	if !q.hasShipping {
		if ship, ok := visibleShipping(doc); ok {
			q.shipping, q.hasShipping = ship, true
		}
	}
	return q
}

// Listing page selectors, most specific first. The current ("x-") layout
// puts the price in div.x-price-primary; older layouts used #prcIsum and
// friends.
var listingPriceSelectors = []string{
	".x-price-primary .ux-textspans",
	".x-price-primary",
	".x-bin-price__content .ux-textspans",
	"#prcIsum",
	"#mm-saleDscPrc",
	"#prcIsum_bidPrice",
}

var listingShippingSelectors = []string{
	".ux-labels-values--shipping .ux-labels-values__values",
	".d-shipping-minview .ux-labels-values__values",
	".ux-labels-values--shipping",
	".d-shipping-minview",
	"#fshippingCost",
	"#shSummary",
}

// parseListing reads the visible price and shipping of an item page.
func parseListing(doc *goquery.Document) (quote, bool) {
	var q quote
	found := false
	for _, sel := range listingPriceSelectors {
		doc.Find(sel).EachWithBreak(func(_ int, s *goquery.Selection) bool {
			if v, cur, _, ok := findMoney(s.Text()); ok {
				q.price, q.currency, found = v, cur, true
				return false
			}
			return true
		})
		if found {
			break
		}
	}
	if !found {
		return q, false
	}
	q.source = "listing"
	q.shipping, q.hasShipping = visibleShipping(doc)
	return q, true
}

// visibleShipping reads the shipping cost shown on a listing page.
func visibleShipping(doc *goquery.Document) (float64, bool) {
	for _, sel := range listingShippingSelectors {
		s := doc.Find(sel).First()
		if s.Length() == 0 {
			continue
		}
		if v, ok := parseShipping(s.Text()); ok {
			return v, true
		}
	}
	return 0, false
}

// parseSearch reads the result with the lowest price + shipping of a search
// results page. It reads the main results list (ul.srp-results) when the
// page has one, so that carousels elsewhere on the page are ignored, and
// stops at the "results matching fewer words" separator. Placeholder cards
// ("Shop on eBay") and cards without a price are skipped. Both the classic
// li.s-item and the newer li.s-card markup are understood.
func parseSearch(doc *goquery.Document) (quote, bool) {
	scope := doc.Find("ul.srp-results").First()
	var items *goquery.Selection
	if scope.Length() > 0 {
		items = scope.Children()
	} else {
		items = doc.Find("li.s-item, li.s-card")
	}
	var best quote
	found := false
	items.EachWithBreak(func(_ int, li *goquery.Selection) bool {
		if li.HasClass("srp-river-answer--REWRITE_START") {
			return false
		}
		if !li.HasClass("s-item") && !li.HasClass("s-card") {
			return true
		}
		q, ok := parseCard(li)
		if ok && (!found || q.total() < best.total()) {
			best, found = q, true
		}
		return true
	})
	return best, found
}

// parseCard reads one search result card.
func parseCard(li *goquery.Selection) (quote, bool) {
	var q quote
	title := normalize(li.Find(".s-item__title, .s-card__title").First().Text())
	if strings.HasPrefix(title, "shop on ebay") {
		return q, false
	}
	priceSel := li.Find(".s-item__price, .s-card__price").First()
	if priceSel.Length() == 0 {
		return q, false
	}
	// For a range ("$10.00 to $20.00") the first amount is the low end.
	v, cur, _, ok := findMoney(priceSel.Text())
	if !ok {
		return q, false
	}
	q.price, q.currency = v, cur
	ship := li.Find(".s-item__shipping, .s-item__logisticsCost, .s-card__shipping").First()
	if ship.Length() > 0 {
		q.shipping, q.hasShipping = parseShipping(ship.Text())
		return q, true
	}
	// s-card: shipping is one of the attribute rows, unlabelled.
	li.Find(".s-card__attribute-row").EachWithBreak(func(_ int, row *goquery.Selection) bool {
		t := strings.ToLower(row.Text())
		if !strings.Contains(t, "shipping") && !strings.Contains(t, "delivery") && !strings.Contains(t, "postage") {
			return true
		}
		if v, ok := parseShipping(row.Text()); ok {
			q.shipping, q.hasShipping = v, true
			return false
		}
		return true
	})
	return q, true
}
