package importer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/checks/probe"
)

// kumaBackup is the part of an Uptime Kuma backup (Settings > Backup >
// Export, JSON) an import reads.
type kumaBackup struct {
	MonitorList []kumaMonitor `json:"monitorList"`
}

type kumaMonitor struct {
	Name                string           `json:"name"`
	Type                string           `json:"type"`
	Active              *json.RawMessage `json:"active"`
	URL                 string           `json:"url"`
	Method              string           `json:"method"`
	Headers             json.RawMessage  `json:"headers"`
	Body                string           `json:"body"`
	Interval            float64          `json:"interval"`
	Keyword             string           `json:"keyword"`
	InvertKeyword       bool             `json:"invertKeyword"`
	JSONPath            string           `json:"jsonPath"`
	ExpectedValue       string           `json:"expectedValue"`
	Hostname            string           `json:"hostname"`
	Port                json.RawMessage  `json:"port"`
	DNSResolveType      string           `json:"dns_resolve_type"`
	DNSResolveServer    string           `json:"dns_resolve_server"`
	AcceptedStatusCodes []string         `json:"accepted_statuscodes"`
	UpsideDown          bool             `json:"upsideDown"`
	IgnoreTLS           bool             `json:"ignoreTls"`
	ExpiryNotification  bool             `json:"expiryNotification"`
	AuthMethod          string           `json:"authMethod"`
	BasicAuthUser       string           `json:"basic_auth_user"`
	BasicAuthPass       string           `json:"basic_auth_pass"`
	Tags                []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"tags"`
}

// FromKuma reads an Uptime Kuma backup (JSON) and returns the checks its
// monitors become; minDelay is the shortest period a check may have.
func FromKuma(data []byte, minDelay time.Duration) (Plan, error) {
	var b kumaBackup
	if err := json.Unmarshal(data, &b); err != nil {
		return Plan{}, fmt.Errorf("importer: uptime kuma backup: %w", err)
	}
	var p Plan
	for _, m := range b.MonitorList {
		kumaMonitorCheck(&p, m, minDelay)
	}
	return p, nil
}

// active reads the backup's active flag: true, false, 1 or 0 (SQLite's
// booleans); absent is active.
func (m kumaMonitor) active() bool {
	if m.Active == nil {
		return true
	}
	s := strings.TrimSpace(string(*m.Active))
	return s != "false" && s != "0"
}

func kumaMonitorCheck(p *Plan, m kumaMonitor, minDelay time.Duration) {
	src := fmt.Sprintf("monitor %q", m.Name)
	skip := func(reason string, args ...any) {
		p.Skipped = append(p.Skipped, Skip{Source: src, Reason: fmt.Sprintf(reason, args...)})
	}
	if !m.active() {
		skip("paused in Uptime Kuma (active: false)")
		return
	}
	if m.UpsideDown {
		skip("upside down mode (UP when the target fails) is not supported")
		return
	}
	c := Check{Source: src, Attributes: map[string]any{}}
	name(&c, m.Name)
	for _, t := range m.Tags {
		if v := strings.TrimSpace(t.Value); v != "" {
			addTag(&c, t.Name+":"+v)
		} else {
			addTag(&c, t.Name)
		}
	}
	interval := time.Duration(m.Interval * float64(time.Second))
	if interval <= 0 {
		interval = time.Minute
	}
	delay(&c, interval, minDelay)
	switch m.Type {
	case "http", "keyword", "json-query":
		if !kumaHTTP(&c, m, skip) {
			return
		}
	case "port":
		port := strings.Trim(string(m.Port), `"`)
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || m.Hostname == "" {
			skip("port monitor without a hostname and port")
			return
		}
		c.Type, c.URL = probe.TypeTCP, "tcp://"+net.JoinHostPort(m.Hostname, port)
	case "dns":
		qtype := strings.ToUpper(m.DNSResolveType)
		if qtype == "" {
			qtype = "A"
		}
		if !dnsTypes[qtype] {
			skip("DNS record type %s is not supported (Checks: A, AAAA, CNAME, MX, TXT, NS)", qtype)
			return
		}
		c.Type, c.URL = probe.TypeDNS, "dns://"+strings.TrimSuffix(m.Hostname, ".")
		c.Attributes["recordType"] = qtype
		if m.DNSResolveServer != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("DNS server %q not carried over: Checks asks the system resolver", m.DNSResolveServer))
		}
	default:
		skip("type %q is not supported (Checks imports http, keyword, json-query, port and dns monitors)", m.Type)
		return
	}
	p.Checks = append(p.Checks, c)
}

// kumaHTTP fills c from an http, keyword or json-query monitor; false
// when the monitor was skipped.
func kumaHTTP(c *Check, m kumaMonitor, skip func(string, ...any)) bool {
	c.Type, c.URL = probe.TypeAvailability, m.URL
	if m.Method != "" && !strings.EqualFold(m.Method, "GET") {
		c.Attributes["method"] = strings.ToUpper(m.Method)
	}
	h := map[string]any{}
	if s := strings.TrimSpace(string(m.Headers)); s != "" && s != "null" && s != `""` {
		// Kuma keeps headers as a JSON object, stored as a string.
		var text string
		raw := []byte(s)
		if json.Unmarshal(raw, &text) == nil {
			raw = []byte(text)
		}
		var obj map[string]any
		if strings.TrimSpace(string(raw)) != "" {
			if err := json.Unmarshal(raw, &obj); err != nil {
				c.Notes = append(c.Notes, "headers not carried over: not a JSON object")
			}
		}
		for k, v := range obj {
			h[k] = fmt.Sprint(v)
		}
	}
	switch m.AuthMethod {
	case "", "null":
	case "basic":
		h["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(m.BasicAuthUser+":"+m.BasicAuthPass))
	default:
		c.Notes = append(c.Notes, fmt.Sprintf("authentication %q not carried over", m.AuthMethod))
	}
	if len(h) > 0 {
		c.Attributes["headers"] = h
	}
	if m.Body != "" {
		c.Attributes["body"] = m.Body
	}
	if codes, ok := kumaStatusCodes(m.AcceptedStatusCodes); !ok {
		c.Notes = append(c.Notes, fmt.Sprintf("accepted status codes %v not carried over: Checks expects any 2xx", m.AcceptedStatusCodes))
	} else if codes != nil {
		c.Attributes["expectedStatus"] = codes
	}
	switch m.Type {
	case "keyword":
		if m.Keyword == "" {
			skip("keyword monitor without a keyword")
			return false
		}
		c.Attributes["keyword"] = m.Keyword
		if m.InvertKeyword {
			c.Attributes["opposite"] = true
		}
	case "json-query":
		path, ok := kumaJSONPath(m.JSONPath)
		if !ok {
			skip("json query %q is not a plain path (Checks compares the value at a dotted path)", m.JSONPath)
			return false
		}
		c.Attributes["jsonPath"], c.Attributes["expected"] = path, m.ExpectedValue
	}
	if m.IgnoreTLS {
		c.Notes = append(c.Notes, "ignoreTls not carried over: certificates are verified")
	}
	if m.ExpiryNotification && strings.HasPrefix(m.URL, "https://") {
		c.Notes = append(c.Notes, "expiryNotification not carried over: add a TLS check for the certificate")
	}
	return true
}

// kumaStatusCodes maps accepted_statuscodes: nil for the default
// ["200-299"] (Checks' default too), else the codes listed or in ranges.
func kumaStatusCodes(list []string) ([]any, bool) {
	if len(list) == 0 || (len(list) == 1 && list[0] == "200-299") {
		return nil, true
	}
	var codes []any
	for _, s := range list {
		lo, hi, isRange := strings.Cut(s, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, false
			}
		}
		if a < 100 || b > 599 {
			return nil, false
		}
		for n := a; n <= b; n++ {
			codes = append(codes, n)
		}
	}
	return codes, true
}

// kumaPath matches the JSON queries Checks can follow: $.a.b[0].c, a.b.
var kumaPath = regexp.MustCompile(`^\$?\.?[A-Za-z0-9_]+(\.[A-Za-z0-9_]+|\[[0-9]+\])*$`)

func kumaJSONPath(q string) (string, bool) {
	q = strings.TrimSpace(q)
	if !kumaPath.MatchString(q) {
		return "", false
	}
	return jsonPathOf(strings.TrimPrefix(q, "$"))
}
