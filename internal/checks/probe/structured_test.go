package probe

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func TestParseEbayStructured(t *testing.T) {
	ld := func(js string) string { return `<script type="application/ld+json">` + js + `</script>` }
	tests := []struct {
		name         string
		html         string
		price        float64
		currency     string
		shipping     float64
		hasShip      bool
		availability string
		source       string
		ok           bool
	}{
		{"JSON-LD offer", ld(`{"@type":"Product","offers":{"@type":"Offer","price":"1,234.50","priceCurrency":"usd","availability":"http://schema.org/InStock"}}`),
			1234.5, "USD", 0, false, "InStock", "json-ld", true},
		{"JSON-LD @graph, AggregateOffer", ld(`{"@context":"https://schema.org","@graph":[{"@type":"WebPage"},{"@type":["Product","Thing"],"offers":{"@type":"AggregateOffer","lowPrice":12,"highPrice":20,"priceCurrency":"GBP"}}]}`),
			12, "GBP", 0, false, "", "json-ld", true},
		{"JSON-LD priceSpecification, schema: prefix", ld(`{"@type":"Offer","priceSpecification":{"price":"7.5","priceCurrency":"EUR"},"availability":"schema:SoldOut"}`),
			7.5, "EUR", 0, false, "SoldOut", "json-ld", true},
		{"JSON-LD lowest shipping rate", ld(`{"@type":"Product","offers":{"@type":"Offer","price":10,"priceCurrency":"USD","shippingDetails":[{"shippingRate":{"value":"4.00"}},{"shippingRate":{"value":"3.25"}}]}}`),
			10, "USD", 3.25, true, "", "json-ld", true},
		{"JSON-LD without currency takes the visible one, and visible shipping",
			ld(`{"@type":"Product","offers":{"price":"20.00"}}`) + `<div class="x-price-primary"><span class="ux-textspans">£22.00</span></div><div class="d-shipping-minview">Free postage</div>`,
			20, "GBP", 0, true, "", "json-ld", true},
		{"broken JSON-LD falls back to visible", ld(`{"@type":"Product",`) + `<div class="x-price-primary">US $5.00</div>`,
			5, "USD", 0, false, "", "listing", true},
		{"JSON-LD Product without a price falls back", ld(`{"@type":"Product","name":"x"}`) + `<div class="x-price-primary">US $6.00</div>`,
			6, "USD", 0, false, "", "listing", true},
		{"microdata price as text", `<span itemprop="price">US $8.40</span><link itemprop="availability" href="https://schema.org/InStock">`,
			8.4, "USD", 0, false, "InStock", "microdata", true},
		{"microdata wins over the visible price", `<div class="x-price-primary">US $50.00</div><meta itemprop="price" content="40"><meta itemprop="priceCurrency" content="USD">`,
			40, "USD", 0, false, "", "microdata", true},
		{"nothing", ld(`{"@type":"BreadcrumbList"}`), 0, "", 0, false, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := goquery.NewDocumentFromReader(strings.NewReader("<html><head></head><body>" + tc.html + "</body></html>"))
			if err != nil {
				t.Fatal(err)
			}
			q, ok := parseEbay(doc)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, q)
			}
			if !ok {
				return
			}
			want := quote{price: tc.price, currency: tc.currency, shipping: tc.shipping, hasShipping: tc.hasShip, availability: tc.availability, source: tc.source}
			if q != want {
				t.Fatalf("got %+v, want %+v", q, want)
			}
		})
	}
}
