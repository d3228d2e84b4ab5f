package checks

import (
	"fmt"
	"net/url"
	"reflect"
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

// TestInputOfTypes: each check type's fields are read into what the API
// is sent, and a value the form cannot read is refused in the unit the
// field asks for.
func TestInputOfTypes(t *testing.T) {
	days := 30
	tests := []struct {
		name string
		form url.Values
		want CheckInput
		msg  string
	}{
		{"http request", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "method": {"post"}, "headers": {"X-Token: abc\r\n\r\nAccept:  application/json "},
			"body": {`{"q":1}`}, "maxResponseMs": {" 500 "}, "jsonPath": {"data.status"}, "jsonExpected": {"ok"}, "channel": {"chn_a", " chn_b ", "chn_a"},
			"daysBeforeExpiry": {"x"}, "recordType": {"MX"}},
			CheckInput{Type: "AVAILABILITY", DelayMs: 60000, Method: "POST", Headers: map[string]string{"X-Token": "abc", "Accept": "application/json"},
				Body: `{"q":1}`, MaxResponseMs: 500, JSONPath: "data.status", Expected: "ok", Channels: []string{"chn_a", "chn_b"}}, ""},
		{"GET is the default method", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "method": {"GET"}},
			CheckInput{Type: "AVAILABILITY", DelayMs: 60000}, ""},
		{"tcp", url.Values{"type": {"TCP"}, "delay": {"60"}, "keyword": {"ignored"}, "maxResponseMs": {"soon"}},
			CheckInput{Type: "TCP", DelayMs: 60000}, ""},
		{"tls", url.Values{"type": {"tls"}, "delay": {"60"}, "daysBeforeExpiry": {"30"}},
			CheckInput{Type: "TLS", DelayMs: 60000, DaysBeforeExpiry: &days}, ""},
		{"tls default days", url.Values{"type": {"TLS"}, "delay": {"60"}, "daysBeforeExpiry": {" "}},
			CheckInput{Type: "TLS", DelayMs: 60000}, ""},
		{"dns", url.Values{"type": {"DNS"}, "delay": {"60"}, "recordType": {"mx"}, "dnsExpected": {" mail.example. "}, "jsonExpected": {"ignored"}},
			CheckInput{Type: "DNS", DelayMs: 60000, RecordType: "MX", Expected: "mail.example."}, ""},
		{"tls days not a number", url.Values{"type": {"TLS"}, "delay": {"60"}, "daysBeforeExpiry": {"2 weeks"}}, CheckInput{},
			`Days before expiry must be a whole number of days from 0 to 365, not "2 weeks".`},
		{"tls days too many", url.Values{"type": {"TLS"}, "delay": {"60"}, "daysBeforeExpiry": {"400"}}, CheckInput{},
			`Days before expiry must be a whole number of days from 0 to 365, not "400".`},
		{"response time zero", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "maxResponseMs": {"0"}}, CheckInput{},
			`The maximum response time must be a whole number of milliseconds from 1 to 600000, not "0".`},
		{"response time in seconds", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "maxResponseMs": {"0.5"}}, CheckInput{},
			`The maximum response time must be a whole number of milliseconds from 1 to 600000, not "0.5".`},
		{"header without colon", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "headers": {"X-A: 1\nBearer abc"}}, CheckInput{},
			`Headers: line 2 must be "Name: value", not "Bearer abc".`},
		{"header twice", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "headers": {"X-A: 1\nx-a: 2"}}, CheckInput{},
			"Headers: x-a is given twice."},
		{"expected without path", url.Values{"type": {"AVAILABILITY"}, "delay": {"60"}, "jsonExpected": {"ok"}}, CheckInput{},
			"An expected JSON value needs the JSON path it is read at."},
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
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestBodyAttributes: the form's attributes of the check's type are sent,
// an edit drops the form's attributes left empty and keeps the others,
// an expected value typed as it was keeps its JSON type, and no channel
// ticked sends [] (the user's defaults).
func TestBodyAttributes(t *testing.T) {
	cur := map[string]any{"method": "POST", "body": "x", "expected": float64(3), "jsonPath": "n", "expectedStatus": float64(201)}
	b := body(CheckInput{Type: "AVAILABILITY", JSONPath: "n", Expected: "3", Headers: map[string]string{"X-A": "1"}}, cur)
	want := map[string]any{"jsonPath": "n", "expected": float64(3), "headers": map[string]string{"X-A": "1"}, "expectedStatus": float64(201)}
	if !reflect.DeepEqual(b["attributes"], want) {
		t.Errorf("attributes %#v, want %#v", b["attributes"], want)
	}
	if ch, ok := b["channels"].([]string); !ok || ch == nil || len(ch) != 0 {
		t.Errorf("channels %#v, want []", b["channels"])
	}
	b = body(CheckInput{Type: "AVAILABILITY", JSONPath: "n", Expected: "4"}, cur)
	if got := b["attributes"].(map[string]any)["expected"]; got != "4" {
		t.Errorf("a changed expected value is sent as %#v, want \"4\"", got)
	}
	days := 0
	b = body(CheckInput{Type: "TLS", DaysBeforeExpiry: &days, Channels: []string{"chn_a"}}, nil)
	if a := b["attributes"].(map[string]any); a["daysBeforeExpiry"] != 0 || len(a) != 1 || fmt.Sprint(b["channels"]) != "[chn_a]" {
		t.Errorf("TLS body %#v", b)
	}
}
