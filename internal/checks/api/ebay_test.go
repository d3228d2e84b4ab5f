package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestEbayStructuredData runs EBAY checks through the API against
// eBay-like listing pages on loopback: the price, currency, availability
// and shipping come from the schema.org Product/Offer data (JSON-LD or
// microdata) when the page has it, from the visible price elements
// otherwise, and the structured data wins when they disagree.
func TestEbayStructuredData(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, token := e.user(t, "a@example.com", store.TierPro)
	pages := httptest.NewServer(http.StripPrefix("/itm/", http.FileServer(http.Dir("testdata"))))
	t.Cleanup(pages.Close)

	const threshold = 30.0
	tests := []struct {
		page         string
		price        float64
		currency     string
		shipping     any // nil: not given
		availability any // nil: not given
		source       string
		condition    string
	}{
		{"ebay_jsonld.html", 24.99, "USD", 5.0, "InStock", "json-ld", "price-below-threshold"},
		{"ebay_visible.html", 31.5, "USD", 4.25, nil, "listing", "ok"},
		{"ebay_microdata.html", 18, "GBP", 2.5, "OutOfStock", "microdata", "price-below-threshold"},
		{"ebay_both.html", 25, "EUR", 0.0, "LimitedAvailability", "json-ld", "price-below-threshold"},
	}
	ids := map[string]string{}
	for _, tt := range tests {
		r := call(t, e.srv.URL, "POST", "/v1/checks", token, map[string]any{
			"url": pages.URL + "/itm/" + tt.page, "checkType": "EBAY", "delayMs": 60000,
			"attributes": map[string]any{"threshold": threshold},
		})
		if r.code != http.StatusCreated {
			t.Fatalf("create %s = %d %s", tt.page, r.code, r.raw)
		}
		ids[tt.page] = r.obj(t)["id"].(string)
	}
	if n := e.sched.RunDue(ctx, time.Now().Add(61*time.Second)); n != len(tests) {
		t.Fatalf("%d runs, want %d", n, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			c := call(t, e.srv.URL, "GET", "/v1/checks/"+ids[tt.page], token, nil).obj(t)
			res, _ := c["lastResult"].(map[string]any)
			if res["status"] != "UP" || res["price"] != tt.price || res["currency"] != tt.currency ||
				res["shipping"] != tt.shipping || res["availability"] != tt.availability ||
				res["priceSource"] != tt.source || res["condition"] != tt.condition {
				t.Fatalf("lastResult %v\nwant UP, price %v %s, shipping %v, availability %v, priceSource %s, condition %s",
					res, tt.price, tt.currency, tt.shipping, tt.availability, tt.source, tt.condition)
			}
			if c["status"] != store.CheckActive {
				t.Fatalf("check %s: %v", c["status"], fmt.Sprint(c["failureReason"]))
			}
		})
	}
}
