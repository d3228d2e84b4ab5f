package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestCheckTypeValidation: create and PATCH accept the TCP, TLS and DNS
// types and AVAILABILITY's request attributes, and refuse (400, naming
// the field) what no run could use.
func TestCheckTypeValidation(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "types@example.com", store.TierPro)
	hostPort := strings.TrimPrefix(e.site.URL, "http://")
	headers := map[string]any{}
	for i := range 21 {
		headers[fmt.Sprintf("X-H%d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		strict bool // through the API whose network policy refuses loopback
		typ    string
		url    string
		attrs  map[string]any
		errHas string // "": created
	}{
		{name: "TCP", typ: "TCP", url: "tcp://" + hostPort},
		{name: "TCP lower-case type", typ: "tcp", url: "tcp://" + hostPort},
		{name: "TLS", typ: "TLS", url: "https://" + hostPort + "/", attrs: map[string]any{"daysBeforeExpiry": 30}},
		{name: "DNS", typ: "DNS", url: "dns://example.com", attrs: map[string]any{"recordType": "TXT", "expected": "v=spf1 -all"}},
		{name: "AVAILABILITY request", typ: "AVAILABILITY", url: e.site.URL + "/", attrs: map[string]any{
			"method": "POST", "headers": map[string]any{"Authorization": "Bearer x"}, "body": "{}",
			"maxResponseMs": 2000, "jsonPath": "data.items.0.status", "expected": "ok"}},
		{name: "TCP with an http URL", typ: "TCP", url: e.site.URL, errHas: "url: want a tcp://host:port URL for TCP checks"},
		{name: "TCP without a port", typ: "TCP", url: "tcp://example.com", errHas: "port from 1 to 65535"},
		{name: "TCP refused by the policy", strict: true, typ: "TCP", url: "tcp://" + hostPort, errHas: "--allow-networks"},
		{name: "TLS with an http URL", typ: "TLS", url: e.site.URL, errHas: "want an https:// URL for TLS checks"},
		{name: "TLS refused by the policy", strict: true, typ: "TLS", url: "https://" + hostPort + "/", errHas: "--allow-networks"},
		{name: "TLS days", typ: "TLS", url: "https://" + hostPort + "/", attrs: map[string]any{"daysBeforeExpiry": -1}, errHas: "daysBeforeExpiry must be a whole number from 0 to 365"},
		{name: "DNS with a server", typ: "DNS", url: "dns://10.0.0.53:53", errHas: "a name only"},
		{name: "DNS record type", typ: "DNS", url: "dns://example.com", attrs: map[string]any{"recordType": "PTR"}, errHas: "recordType must be one of"},
		{name: "bad method", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"method": "CONNECT"}, errHas: "attributes.method must be one of"},
		{name: "too many headers", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"headers": headers}, errHas: "at most 20 headers (got 21)"},
		{name: "headers not an object", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"headers": []any{"X-A: b"}}, errHas: "attributes.headers must be an object of strings"},
		{name: "body with GET", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"body": "x"}, errHas: "attributes.body needs attributes.method"},
		{name: "maxResponseMs not a number", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"maxResponseMs": "fast"}, errHas: "maxResponseMs must be a whole number"},
		{name: "expected without jsonPath", typ: "AVAILABILITY", url: e.site.URL, attrs: map[string]any{"expected": "ok"}, errHas: "needs attributes.jsonPath"},
		{name: "unknown type", typ: "PING", url: e.site.URL, errHas: "unknown check type \"PING\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := e.srv.URL
			if tc.strict {
				base = e.strict.URL
			}
			body := map[string]any{"url": tc.url, "checkType": tc.typ, "delayMs": 60000}
			if tc.attrs != nil {
				body["attributes"] = tc.attrs
			}
			r := call(t, base, "POST", "/v1/checks", token, body)
			if tc.errHas == "" {
				if r.code != http.StatusCreated {
					t.Fatalf("= %d %s", r.code, r.raw)
				}
				if c := r.obj(t); c["checkType"] != strings.ToUpper(tc.typ) {
					t.Errorf("checkType %v, want %s", c["checkType"], strings.ToUpper(tc.typ))
				}
				return
			}
			if r.code != http.StatusBadRequest || !strings.Contains(r.errMsg(t), tc.errHas) {
				t.Errorf("= %d %s, want 400 containing %q", r.code, r.raw, tc.errHas)
			}
		})
	}

	// PATCH validates the check as it would be: a type whose URL form
	// differs changes only with a URL of that form.
	c := e.createCheck(t, token, 60000, nil)
	path := "/v1/checks/" + c["id"].(string)
	if r := call(t, e.srv.URL, "PATCH", path, token, map[string]any{"checkType": "TCP"}); r.code != http.StatusBadRequest ||
		!strings.Contains(r.errMsg(t), "want a tcp://host:port URL") {
		t.Errorf("PATCH to TCP keeping the http URL = %d %s, want 400", r.code, r.raw)
	}
	r := call(t, e.srv.URL, "PATCH", path, token, map[string]any{"checkType": "tcp", "url": "tcp://" + hostPort})
	if r.code != http.StatusOK || r.obj(t)["checkType"] != "TCP" {
		t.Errorf("PATCH to TCP with its URL = %d %s", r.code, r.raw)
	}
}
