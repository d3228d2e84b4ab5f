package importer

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readPlan(t *testing.T, file string, parse func([]byte, time.Duration) (Plan, error)) Plan {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse(data, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// want is what a check of a plan must be; notes are substrings, one per
// note, in order.
type want struct {
	name, typ, url string
	delayMs        int64
	tags           []string
	attrs          map[string]any
	notes          []string
}

func checkPlan(t *testing.T, p Plan, checks []want, skipped map[string]string) {
	t.Helper()
	if len(p.Checks) != len(checks) {
		for _, c := range p.Checks {
			t.Logf("check %s %q %s %s", c.Source, c.Name, c.Type, c.URL)
		}
		t.Fatalf("%d checks, want %d", len(p.Checks), len(checks))
	}
	for i, w := range checks {
		c := p.Checks[i]
		if c.Name != w.name || c.Type != w.typ || c.URL != w.url || c.DelayMs != w.delayMs {
			t.Errorf("check %d: %q %s %s %d, want %q %s %s %d", i, c.Name, c.Type, c.URL, c.DelayMs, w.name, w.typ, w.url, w.delayMs)
		}
		if !reflect.DeepEqual(c.Tags, w.tags) {
			t.Errorf("check %q: tags %v, want %v", c.Name, c.Tags, w.tags)
		}
		if !reflect.DeepEqual(c.Attributes, w.attrs) {
			t.Errorf("check %q: attributes %#v, want %#v", c.Name, c.Attributes, w.attrs)
		}
		if len(c.Notes) != len(w.notes) {
			t.Errorf("check %q: notes %q, want %d like %q", c.Name, c.Notes, len(w.notes), w.notes)
			continue
		}
		for j, n := range w.notes {
			if !strings.Contains(c.Notes[j], n) {
				t.Errorf("check %q: note %d %q, want it to contain %q", c.Name, j, c.Notes[j], n)
			}
		}
	}
	if len(p.Skipped) != len(skipped) {
		t.Errorf("skipped %v, want %d", p.Skipped, len(skipped))
	}
	for _, s := range p.Skipped {
		if w, ok := skipped[s.Source]; !ok || !strings.Contains(s.Reason, w) {
			t.Errorf("skipped %s: %q, want %q", s.Source, s.Reason, w)
		}
	}
}

// TestFromGatus maps testdata/gatus.yaml: each supported condition to its
// attribute, a certificate condition to a TLS check of its own, and each
// condition, type and setting Checks cannot express to a note or a skip.
func TestFromGatus(t *testing.T) {
	p := readPlan(t, "testdata/gatus.yaml", FromGatus)
	checkPlan(t, p, []want{
		{name: "website", typ: "AVAILABILITY", url: "https://example.org/health", delayMs: 300_000, tags: []string{"core"},
			attrs: map[string]any{"expectedStatus": 200, "keyword": "healthy", "maxResponseMs": 499},
			notes: []string{`"[CERTIFICATE_EXPIRATION] > 48h" becomes the TLS check "website certificate"`}},
		{name: "website certificate", typ: "TLS", url: "https://example.org:443", delayMs: 300_000, tags: []string{"core"},
			attrs: map[string]any{"daysBeforeExpiry": 2}},
		{name: "api", typ: "AVAILABILITY", url: "https://api.example.org/v1/status", delayMs: 10_000, tags: []string{"core"},
			attrs: map[string]any{"method": "POST", "headers": map[string]any{"Content-Type": "application/json"}, "body": `{"ping":true}`,
				"expectedStatus": []any{200, 201}, "jsonPath": "data.items.0.status", "expected": "UP"},
			notes: []string{"interval 5s is below the minimum 10s: rounded up to 10s", "alerts not carried over",
				`"[BODY].version == pat(1.*)" not carried over`, `"[IP] == 93.184.216.34" not carried over`}},
		{name: "postgres", typ: "TCP", url: "tcp://db.example.org:5432", delayMs: 60_000, attrs: map[string]any{},
			notes: []string{`"[RESPONSE_TIME] < 100" not carried over: a TCP check only connects`}},
		{name: "cert", typ: "TLS", url: "https://example.org:443", delayMs: 60_000, attrs: map[string]any{"daysBeforeExpiry": 30}},
		{name: "dns", typ: "DNS", url: "dns://example.org", delayMs: 60_000, attrs: map[string]any{"recordType": "A", "expected": "93.184.215.14"},
			notes: []string{`DNS server "8.8.8.8" not carried over`}},
	}, map[string]string{
		`endpoint "ping"`:                "its type is not supported",
		`endpoint "soa"`:                 "query-type SOA is not supported",
		`endpoint "old"`:                 "disabled",
		`external endpoint "backup-job"`: "pushed by another program",
	})
}

// TestFromKuma maps testdata/kuma.json: http, keyword, json-query, port
// and dns monitors with their settings, and what Checks cannot do.
func TestFromKuma(t *testing.T) {
	p := readPlan(t, "testdata/kuma.json", FromKuma)
	checkPlan(t, p, []want{
		{name: "Shop", typ: "AVAILABILITY", url: "https://shop.example.org/", delayMs: 60_000, tags: []string{"prod", "team:web"},
			attrs: map[string]any{}, notes: []string{"expiryNotification not carried over"}},
		{name: "Search", typ: "AVAILABILITY", url: "https://shop.example.org/search?q=books", delayMs: 20_000,
			attrs: map[string]any{"method": "POST", "headers": map[string]any{"X-Api-Key": "abc"}, "body": "q=books",
				"expectedStatus": []any{200, 301, 302}, "keyword": "Out of stock", "opposite": true}},
		{name: "Health JSON", typ: "AVAILABILITY", url: "https://api.example.org/health", delayMs: 30_000,
			attrs: map[string]any{"jsonPath": "checks.0.status", "expected": "ok"}},
		{name: "SSH", typ: "TCP", url: "tcp://ssh.example.org:22", delayMs: 10_000, attrs: map[string]any{},
			notes: []string{"interval 5s is below the minimum 10s: rounded up to 10s"}},
		{name: "MX", typ: "DNS", url: "dns://example.org", delayMs: 300_000, attrs: map[string]any{"recordType": "MX"},
			notes: []string{`DNS server "1.1.1.1" not carried over`}},
	}, map[string]string{
		`monitor "Router"`:   `type "ping" is not supported`,
		`monitor "Old"`:      "paused in Uptime Kuma",
		`monitor "Inverted"`: "upside down",
		`monitor "CAA"`:      "CAA is not supported",
		`monitor "Jsonata"`:  "not a plain path",
	})
}

// TestTagsAndNamesFitTheAPI cuts what the API would refuse: a group with
// a comma or longer than 32 characters, a name over 100.
func TestTagsAndNamesFitTheAPI(t *testing.T) {
	var c Check
	name(&c, strings.Repeat("n", 120))
	addTag(&c, "a, b")
	addTag(&c, strings.Repeat("t", 40))
	addTag(&c, "A  B")
	if len([]rune(c.Name)) != 100 || !reflect.DeepEqual(c.Tags, []string{"a  b", strings.Repeat("t", 32)}) || len(c.Notes) != 2 {
		t.Fatalf("name %d, tags %q, notes %q", len(c.Name), c.Tags, c.Notes)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := FromGatus([]byte("endpoints: [\n"), time.Second); err == nil {
		t.Error("FromGatus accepted broken YAML")
	}
	if _, err := FromKuma([]byte("{"), time.Second); err == nil {
		t.Error("FromKuma accepted broken JSON")
	}
}
