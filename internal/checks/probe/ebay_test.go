package probe

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1,234.56", 1234.56, true},
		{"1.234,56", 1234.56, true},
		{"15,00", 15, true},
		{"12.99", 12.99, true},
		{"1,234", 1234, true},
		{"1,234,567", 1234567, true},
		{"1.234.567", 1234567, true},
		{"1.234.567,89", 1234567.89, true},
		{"1 234,56", 1234.56, true},
		{"1\u00a0234,56", 1234.56, true},
		{"0,99", 0.99, true},
		{"5", 5, true},
		{"", 0, false},
		{"abc", 0, false},
		{"1-2", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseAmount(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseAmount(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFindMoney(t *testing.T) {
	tests := []struct {
		in       string
		amount   float64
		currency string
		ok       bool
	}{
		{"US $1,234.56", 1234.56, "USD", true},
		{"$12.00", 12, "USD", true},
		{"£12.99", 12.99, "GBP", true},
		{"GBP 12.99", 12.99, "GBP", true},
		{"EUR 15,00", 15, "EUR", true},
		{"EUR 1.140,17", 1140.17, "EUR", true},
		{"15,00 €", 15, "EUR", true},
		{"€ 1.299,00", 1299, "EUR", true},
		{"AU $45.10", 45.10, "AUD", true},
		{"C $20.00", 20, "CAD", true},
		{"US\u00a0$7.50", 7.5, "USD", true},
		{"$10.00 to $20.00", 10, "USD", true},
		{"Approximately EUR 9,99 (including shipping)", 9.99, "EUR", true},
		{"+$4.99 shipping", 4.99, "USD", true},
		{"Estimated between Tue, Dec 8 and Mon, Dec 14", 0, "", false},
		{"2 available", 0, "", false},
	}
	for _, tc := range tests {
		amount, currency, _, ok := findMoney(tc.in)
		if ok != tc.ok || amount != tc.amount || currency != tc.currency {
			t.Errorf("findMoney(%q) = %v %q %v; want %v %q %v", tc.in, amount, currency, ok, tc.amount, tc.currency, tc.ok)
		}
	}
}

func TestParseShipping(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"Free shipping", 0, true},
		{"Free delivery", 0, true},
		{"Free Standard Shipping. See details", 0, true},
		{"FREE postage", 0, true},
		{"Free 2-day shipping", 0, true},
		{"+$4.99 shipping", 4.99, true},
		{"US $5.99 Economy Shipping. See details. Free returns", 5.99, true},
		{"Postage: £3.50 Royal Mail 2nd Class", 3.5, true},
		{"+EUR 4,90 Versand", 4.9, true},
		{"Shipping not specified", 0, false},
		{"Free returns", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseShipping(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseShipping(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseEbaySnippets(t *testing.T) {
	tests := []struct {
		name     string
		html     string
		price    float64
		shipping float64
		hasShip  bool
		currency string
		ok       bool
	}{
		{
			name: "UK listing with postage",
			html: `<div class="x-price-primary"><span class="ux-textspans">£12.99</span></div>
<div class="ux-labels-values ux-labels-values--shipping"><div class="ux-labels-values__labels"><span class="ux-textspans">Postage:</span></div>
<div class="ux-labels-values__values"><span class="ux-textspans ux-textspans--BOLD">£3.50</span> <span class="ux-textspans">Royal Mail 2nd Class</span></div></div>`,
			price: 12.99, shipping: 3.5, hasShip: true, currency: "GBP", ok: true,
		},
		{
			name: "DE listing, EU number style",
			html: `<div class="x-price-primary"><span class="ux-textspans">EUR 1.299,00</span></div>
<div class="ux-labels-values--shipping"><span class="ux-textspans">Versand:</span><div class="ux-labels-values__values"><span class="ux-textspans ux-textspans--BOLD">EUR 6,99</span> DHL Paket</div></div>`,
			price: 1299, shipping: 6.99, hasShip: true, currency: "EUR", ok: true,
		},
		{
			name: "listing with free shipping in the minview",
			html: `<div class="x-price-primary"><span class="ux-textspans">US $89.00</span></div>
<div class="d-shipping-minview"><div class="ux-labels-values__values"><span class="ux-textspans ux-textspans--POSITIVE ux-textspans--BOLD">Free shipping</span> <span class="ux-textspans">USPS Ground Advantage®.</span></div></div>`,
			price: 89, shipping: 0, hasShip: true, currency: "USD", ok: true,
		},
		{
			name:  "listing without shipping line",
			html:  `<div class="x-price-primary"><span class="ux-textspans">US $89.00</span></div>`,
			price: 89, currency: "USD", ok: true,
		},
		{
			name:  "microdata only",
			html:  `<span itemprop="price" content="42.5">42,50 EUR</span><meta itemprop="priceCurrency" content="EUR">`,
			price: 42.5, currency: "EUR", ok: true,
		},
		{
			name:  "legacy prcIsum",
			html:  `<span class="notranslate" id="prcIsum" itemprop="price" content="19.95">US $19.95</span>`,
			price: 19.95, currency: "USD", ok: true,
		},
		{
			name: "s-card search results",
			html: `<ul class="srp-results srp-list">
<li class="s-card s-card--horizontal"><div class="su-card-container"><div class="s-card__title"><span class="su-styled-text primary default">Shop on eBay</span></div><div class="s-card__attribute-row"><span class="su-styled-text primary bold large-1 s-card__price">$20.00</span></div></div></li>
<li class="s-card s-card--horizontal"><div class="su-card-container"><div class="s-card__title"><span>Item A</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text primary bold large-1 s-card__price">$15.00</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text strikethrough secondary large">$30.00</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text secondary large">+$6.00 delivery</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text secondary large">Located in United States</span></div></div></li>
<li class="s-card s-card--horizontal"><div class="su-card-container"><div class="s-card__title"><span>Item B</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text primary bold large-1 s-card__price">$19.50</span></div>
<div class="s-card__attribute-row"><span class="su-styled-text secondary large">Free delivery</span></div></div></li>
</ul>`,
			price: 19.5, shipping: 0, hasShip: true, currency: "USD", ok: true,
		},
		{
			name: "UK search results",
			html: `<ul class="srp-results"><li class="s-item"><div class="s-item__title">Widget</div><span class="s-item__price">£8.00</span><span class="s-item__shipping">+£2.10 postage</span></li>
<li class="s-item"><div class="s-item__title">Widget 2</div><span class="s-item__price">£9.00</span><span class="s-item__logisticsCost">Free postage</span></li></ul>`,
			price: 9, shipping: 0, hasShip: true, currency: "GBP", ok: true,
		},
		{
			name: "search page with only the placeholder",
			html: `<ul class="srp-results"><li class="s-item"><div class="s-item__title"><span>Shop on eBay</span></div><span class="s-item__price">$20.00</span></li></ul>`,
		},
		{name: "nothing", html: `<p>Was: $19.99</p>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := goquery.NewDocumentFromReader(strings.NewReader("<html><body>" + tc.html + "</body></html>"))
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
			if q.price != tc.price || q.shipping != tc.shipping || q.hasShipping != tc.hasShip || q.currency != tc.currency {
				t.Fatalf("got %+v, want price %v shipping %v (%v) %s", q, tc.price, tc.shipping, tc.hasShip, tc.currency)
			}
		})
	}
}
