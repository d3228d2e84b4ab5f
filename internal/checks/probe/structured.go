package probe

import (
	"encoding/json"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// Structured data: eBay listing pages describe the item as a schema.org
// Product whose offers carry the price, currency, availability and
// shipping (shippingDetails → OfferShippingDetails.shippingRate, a
// MonetaryAmount), as JSON-LD (<script type="application/ld+json">) and,
// on older pages, as microdata (itemprop attributes).

// parseJSONLD reads the offer of the first schema.org Product (or bare
// Offer) with a price in the page's JSON-LD blocks.
func parseJSONLD(doc *goquery.Document) (quote, bool) {
	var q quote
	found := false
	doc.Find(`script[type="application/ld+json"]`).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		var v any
		if json.Unmarshal([]byte(s.Text()), &v) != nil {
			return true
		}
		q, found = findOffer(v, 0)
		return !found
	})
	if found {
		q.source = "json-ld"
	}
	return q, found
}

// findOffer walks a decoded JSON-LD value for a Product's offer or an
// Offer with a price.
func findOffer(v any, depth int) (quote, bool) {
	if depth > 8 {
		return quote{}, false
	}
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if q, ok := findOffer(e, depth+1); ok {
				return q, true
			}
		}
	case map[string]any:
		switch {
		case hasType(t, "Product"), hasType(t, "ProductGroup"):
			if q, ok := offerQuote(t["offers"], depth+1); ok {
				return q, true
			}
		case hasType(t, "Offer"), hasType(t, "AggregateOffer"):
			if q, ok := offerQuote(t, depth+1); ok {
				return q, true
			}
		}
		if g, ok := t["@graph"]; ok {
			return findOffer(g, depth+1)
		}
	}
	return quote{}, false
}

// offerQuote reads an Offer, an AggregateOffer (its lowPrice) or the first
// usable one of a list of offers.
func offerQuote(v any, depth int) (quote, bool) {
	if depth > 8 {
		return quote{}, false
	}
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if q, ok := offerQuote(e, depth+1); ok {
				return q, true
			}
		}
	case map[string]any:
		var q quote
		price, ok := jsonAmount(t["price"])
		if !ok {
			price, ok = jsonAmount(t["lowPrice"])
		}
		spec, _ := t["priceSpecification"].(map[string]any)
		if !ok && spec != nil {
			price, ok = jsonAmount(spec["price"])
		}
		if !ok {
			if q, ok := offerQuote(t["offers"], depth+1); ok { // AggregateOffer.offers
				return q, true
			}
			return q, false
		}
		q.price = price
		q.currency = currencyISO(t["priceCurrency"])
		if q.currency == "" && spec != nil {
			q.currency = currencyISO(spec["priceCurrency"])
		}
		q.availability = availabilityName(jsonString(t["availability"]))
		q.shipping, q.hasShipping = jsonShipping(t["shippingDetails"], depth+1)
		return q, true
	}
	return quote{}, false
}

// jsonShipping reads the lowest shippingRate of shippingDetails (one
// OfferShippingDetails or a list).
func jsonShipping(v any, depth int) (float64, bool) {
	if depth > 8 {
		return 0, false
	}
	best, found := 0.0, false
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			if s, ok := jsonShipping(e, depth+1); ok && (!found || s < best) {
				best, found = s, true
			}
		}
	case map[string]any:
		rate := t["shippingRate"]
		if list, ok := rate.([]any); ok && len(list) > 0 {
			rate = list[0]
		}
		switch r := rate.(type) {
		case map[string]any:
			if s, ok := jsonAmount(r["value"]); ok {
				return s, true
			}
			if s, ok := jsonAmount(r["price"]); ok {
				return s, true
			}
		default:
			return jsonAmount(r)
		}
	}
	return best, found
}

// hasType reports whether a JSON-LD node's @type is (or includes) typ,
// with or without a schema.org prefix.
func hasType(m map[string]any, typ string) bool {
	match := func(v any) bool {
		s, _ := v.(string)
		return availabilityName(s) == typ
	}
	switch t := m["@type"].(type) {
	case string:
		return match(t)
	case []any:
		for _, e := range t {
			if match(e) {
				return true
			}
		}
	}
	return false
}

// jsonAmount reads a price given as a JSON number or a string ("12.99",
// "1,234.56").
func jsonAmount(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, t >= 0
	case string:
		return parseAmount(t)
	}
	return 0, false
}

func jsonString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		s, _ := t["@id"].(string)
		return s
	}
	return ""
}

// currencyISO reads a three-letter currency code.
func currencyISO(v any) string {
	s, _ := v.(string)
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != 3 {
		return ""
	}
	return s
}

// availabilityName strips the schema.org prefix of an enumeration value or
// type ("https://schema.org/InStock" → "InStock").
func availabilityName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 { // "schema:InStock"
		s = s[i+1:]
	}
	return s
}

// parseMicrodata reads schema.org Offer microdata: itemprop="price"
// (content attribute, else text), priceCurrency, availability (href or
// content) and shippingRate's value.
func parseMicrodata(doc *goquery.Document) (quote, bool) {
	var q quote
	found := false
	doc.Find("[itemprop=price]").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		raw := itemValue(s)
		if v, ok := parseAmount(raw); ok {
			q.price, found = v, true
			return false
		}
		if v, cur, _, ok := findMoney(raw); ok {
			q.price, q.currency, found = v, cur, true
			return false
		}
		return true
	})
	if !found {
		return q, false
	}
	q.source = "microdata"
	if c := currencyISO(itemValue(doc.Find("[itemprop=priceCurrency]").First())); c != "" {
		q.currency = c
	}
	q.availability = availabilityName(itemValue(doc.Find("[itemprop=availability]").First()))
	rate := doc.Find("[itemprop=shippingRate]").First()
	if rate.Length() > 0 {
		val := rate.Find("[itemprop=value]").First()
		if val.Length() == 0 {
			val = rate
		}
		if v, ok := parseAmount(itemValue(val)); ok {
			q.shipping, q.hasShipping = v, true
		}
	}
	return q, true
}

// itemValue is a microdata property's value: its content, href or value
// attribute, else its text.
func itemValue(s *goquery.Selection) string {
	if s.Length() == 0 {
		return ""
	}
	for _, a := range []string{"content", "href", "value"} {
		if v, ok := s.Attr(a); ok {
			return strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(s.Text())
}
