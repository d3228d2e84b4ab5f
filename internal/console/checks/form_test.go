package checks

import (
	"net/url"
	"slices"
	"testing"
)

// TestInputOf: the create and edit form read into what the API is sent.
func TestInputOf(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want CheckInput
		msg  string
	}{
		{"availability", url.Values{"name": {" Shop "}, "url": {" https://shop.example/ "}, "type": {"availability"}, "delay": {"60"},
			"keyword": {" In stock "}, "threshold": {"9"}, "tags": {"prod, eu,, "}},
			CheckInput{Name: "Shop", URL: "https://shop.example/", Type: "AVAILABILITY", DelayMs: 60000, Keyword: "In stock", Tags: []string{"prod", "eu"}}, ""},
		{"fractional seconds", url.Values{"type": {"AVAILABILITY"}, "delay": {"1.5"}},
			CheckInput{Type: "AVAILABILITY", DelayMs: 1500}, ""},
		{"ebay", url.Values{"type": {"EBAY"}, "delay": {"600"}, "threshold": {"49.5"}, "keyword": {"ignored"}},
			CheckInput{Type: "EBAY", DelayMs: 600000, Threshold: 49.5}, ""},
		{"ebay without threshold", url.Values{"type": {"EBAY"}, "delay": {"600"}}, CheckInput{}, "An EBAY check needs a price threshold."},
		{"ebay bad threshold", url.Values{"type": {"EBAY"}, "delay": {"600"}, "threshold": {"-1"}}, CheckInput{}, "The price threshold must be a number above 0."},
		{"interval not a number", url.Values{"type": {"AVAILABILITY"}, "delay": {"soon"}}, CheckInput{}, "The interval must be a number of seconds."},
	}
	for _, tc := range tests {
		got, msg := inputOf(tc.form)
		if msg != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, msg, tc.msg)
			continue
		}
		if msg != "" {
			continue
		}
		if got.Name != tc.want.Name || got.URL != tc.want.URL || got.Type != tc.want.Type || got.DelayMs != tc.want.DelayMs ||
			got.Keyword != tc.want.Keyword || got.Threshold != tc.want.Threshold || !slices.Equal(got.Tags, tc.want.Tags) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestBody: the edit form replaces the keyword and threshold and keeps
// the attributes it does not show.
func TestBody(t *testing.T) {
	b := body(CheckInput{Name: "n", URL: "https://a.example/", Type: "AVAILABILITY", DelayMs: 1000},
		map[string]any{"keyword": "old", "opposite": true, "expectedStatus": float64(204)})
	a := b["attributes"].(map[string]any)
	if _, ok := a["keyword"]; ok || a["opposite"] != true || a["expectedStatus"] != float64(204) {
		t.Errorf("attributes %v: want the keyword removed, the others kept", a)
	}
	if tags, ok := b["tags"].([]string); !ok || tags == nil || len(tags) != 0 {
		t.Errorf("tags %#v, want [] (clears them on an edit)", b["tags"])
	}
}
