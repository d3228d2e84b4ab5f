package importer

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/quarrydb/quarry/internal/checks/probe"
)

// gatusConfig is the part of a Gatus configuration file an import reads.
type gatusConfig struct {
	Endpoints         []gatusEndpoint `yaml:"endpoints"`
	ExternalEndpoints []struct {
		Name string `yaml:"name"`
	} `yaml:"external-endpoints"`
}

type gatusEndpoint struct {
	Name       string            `yaml:"name"`
	Group      string            `yaml:"group"`
	Enabled    *bool             `yaml:"enabled"`
	URL        string            `yaml:"url"`
	Method     string            `yaml:"method"`
	Headers    map[string]string `yaml:"headers"`
	Body       string            `yaml:"body"`
	Interval   string            `yaml:"interval"`
	Conditions []string          `yaml:"conditions"`
	DNS        *struct {
		QueryName string `yaml:"query-name"`
		QueryType string `yaml:"query-type"`
	} `yaml:"dns"`
	Alerts []yaml.Node `yaml:"alerts"`
	Client *struct {
		Insecure bool `yaml:"insecure"`
	} `yaml:"client"`
}

// gatusCondition is "[PLACEHOLDER]suffix OP value".
var gatusCondition = regexp.MustCompile(`^\s*\[([A-Z_]+)\](\S*)\s*(==|!=|<=|>=|<|>)\s*(.*?)\s*$`)

// gatusDefaultInterval is Gatus's interval when an endpoint gives none.
const gatusDefaultInterval = time.Minute

// FromGatus reads a Gatus configuration (YAML) and returns the checks
// its endpoints become; minDelay is the shortest period a check may have.
func FromGatus(data []byte, minDelay time.Duration) (Plan, error) {
	var cfg gatusConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return Plan{}, fmt.Errorf("importer: gatus configuration: %w", err)
	}
	var p Plan
	for _, e := range cfg.Endpoints {
		gatusEndpointChecks(&p, e, minDelay)
	}
	for _, e := range cfg.ExternalEndpoints {
		p.Skipped = append(p.Skipped, Skip{Source: fmt.Sprintf("external endpoint %q", e.Name),
			Reason: "its results are pushed by another program; Checks has no push checks"})
	}
	return p, nil
}

func gatusEndpointChecks(p *Plan, e gatusEndpoint, minDelay time.Duration) {
	src := fmt.Sprintf("endpoint %q", e.Name)
	skip := func(reason string, args ...any) {
		p.Skipped = append(p.Skipped, Skip{Source: src, Reason: fmt.Sprintf(reason, args...)})
	}
	if e.Enabled != nil && !*e.Enabled {
		skip("disabled (enabled: false)")
		return
	}
	interval := gatusDefaultInterval
	if e.Interval != "" {
		d, err := time.ParseDuration(e.Interval)
		if err != nil || d <= 0 {
			skip("interval %q is not a duration", e.Interval)
			return
		}
		interval = d
	}
	c := Check{Source: src, Attributes: map[string]any{}}
	name(&c, e.Name)
	if e.Group != "" {
		addTag(&c, e.Group)
	}
	delay(&c, interval, minDelay)
	if len(e.Alerts) > 0 {
		c.Notes = append(c.Notes, "alerts not carried over: give the check notification channels")
	}
	if e.Client != nil && e.Client.Insecure {
		c.Notes = append(c.Notes, "client.insecure not carried over: certificates are verified")
	}
	var conds []gatusCond
	for _, raw := range e.Conditions {
		m := gatusCondition.FindStringSubmatch(raw)
		if m == nil {
			c.Notes = append(c.Notes, fmt.Sprintf("condition %q not carried over: not understood", raw))
			continue
		}
		conds = append(conds, gatusCond{raw: raw, ph: m[1], suffix: m[2], op: m[3], val: strings.Trim(m[4], `"`)})
	}
	scheme, _, _ := strings.Cut(e.URL, "://")
	switch {
	case e.DNS != nil:
		gatusDNS(p, c, e, conds, skip)
	case scheme == "http" || scheme == "https":
		gatusHTTP(p, c, e, conds)
	case scheme == "tcp":
		c.Type, c.URL = probe.TypeTCP, e.URL
		for _, k := range conds {
			if !(k.ph == "CONNECTED" && k.op == "==" && k.val == "true") {
				c.Notes = append(c.Notes, k.unsupported("a TCP check only connects"))
			}
		}
		p.Checks = append(p.Checks, c)
	case scheme == "tls":
		c.Type, c.URL = probe.TypeTLS, "https://"+strings.TrimPrefix(e.URL, "tls://")
		c.Attributes["daysBeforeExpiry"] = 0
		for _, k := range conds {
			switch {
			case k.ph == "CONNECTED" && k.op == "==" && k.val == "true":
			case k.ph == "CERTIFICATE_EXPIRATION":
				if days, ok := k.days(); ok {
					c.Attributes["daysBeforeExpiry"] = days
				} else {
					c.Notes = append(c.Notes, k.unsupported("want [CERTIFICATE_EXPIRATION] > a duration of at most 365 days"))
				}
			default:
				c.Notes = append(c.Notes, k.unsupported("a TLS check only verifies the certificate"))
			}
		}
		p.Checks = append(p.Checks, c)
	default:
		skip("url %q: its type is not supported (Checks has HTTP(S), TCP, TLS and DNS checks)", e.URL)
	}
}

type gatusCond struct{ raw, ph, suffix, op, val string }

func (k gatusCond) unsupported(why string) string {
	return fmt.Sprintf("condition %q not carried over: %s", k.raw, why)
}

// days reads [CERTIFICATE_EXPIRATION] > D as whole days, rounded up.
func (k gatusCond) days() (int, bool) {
	if k.suffix != "" || (k.op != ">" && k.op != ">=") {
		return 0, false
	}
	d, err := time.ParseDuration(k.val)
	if err != nil || d < 0 {
		return 0, false
	}
	days := int(math.Ceil(d.Hours() / 24))
	return days, days <= probe.MaxDaysBeforeExpiry
}

// isLiteral reports whether a condition's value is a plain value, not
// one of Gatus's functions or another placeholder.
func isLiteral(v string) bool {
	for _, f := range []string{"pat(", "any(", "len(", "has(", "["} {
		if strings.HasPrefix(v, f) {
			return false
		}
	}
	return true
}

// jsonPathOf turns Gatus's [BODY] suffix (".data.items[0].status") into
// attributes.jsonPath ("data.items.0.status").
func jsonPathOf(suffix string) (string, bool) {
	s := strings.TrimPrefix(suffix, ".")
	s = strings.NewReplacer("[", ".", "]", "").Replace(s)
	if s == "" || strings.Contains(s, "..") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") {
		return "", false
	}
	return s, true
}

func gatusHTTP(p *Plan, c Check, e gatusEndpoint, conds []gatusCond) {
	c.Type, c.URL = probe.TypeAvailability, e.URL
	if e.Method != "" && !strings.EqualFold(e.Method, "GET") {
		c.Attributes["method"] = strings.ToUpper(e.Method)
	}
	if len(e.Headers) > 0 {
		h := map[string]any{}
		for k, v := range e.Headers {
			h[k] = v
		}
		c.Attributes["headers"] = h
	}
	if e.Body != "" {
		c.Attributes["body"] = e.Body
	}
	var cert *Check
	status := false
	for _, k := range conds {
		switch k.ph {
		case "STATUS":
			status = true
			switch {
			case k.suffix != "":
				c.Notes = append(c.Notes, k.unsupported("not understood"))
			case k.op == "==" && strings.HasPrefix(k.val, "any("):
				var codes []any
				ok := true
				for _, s := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(k.val, "any("), ")"), ",") {
					n, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil {
						ok = false
						break
					}
					codes = append(codes, n)
				}
				if ok {
					c.Attributes["expectedStatus"] = codes
				} else {
					c.Notes = append(c.Notes, k.unsupported("want any() of status codes"))
				}
			case k.op == "==":
				if n, err := strconv.Atoi(k.val); err == nil {
					c.Attributes["expectedStatus"] = n
				} else {
					c.Notes = append(c.Notes, k.unsupported("want a status code"))
				}
			case (k.op == "<" && k.val == "300") || (k.op == "<=" && k.val == "299"):
				// Checks' default: any 2xx.
			default:
				c.Notes = append(c.Notes, k.unsupported("Checks expects one status, a list of them, or any 2xx (the default)"))
			}
		case "RESPONSE_TIME":
			n, err := strconv.Atoi(k.val)
			switch {
			case err != nil || k.suffix != "" || (k.op != "<" && k.op != "<="):
				c.Notes = append(c.Notes, k.unsupported("Checks bounds the response time from above only (attributes.maxResponseMs)"))
			case k.op == "<":
				n--
				fallthrough
			default:
				if n < 1 || n > probe.MaxResponseMs {
					c.Notes = append(c.Notes, k.unsupported(fmt.Sprintf("the limit must be 1 to %d ms", probe.MaxResponseMs)))
				} else {
					c.Attributes["maxResponseMs"] = n
				}
			}
		case "BODY":
			gatusBody(&c, k)
		case "CONNECTED":
			if !(k.op == "==" && k.val == "true") {
				c.Notes = append(c.Notes, k.unsupported("not understood"))
			}
		case "CERTIFICATE_EXPIRATION":
			days, ok := k.days()
			switch {
			case !strings.HasPrefix(e.URL, "https://"):
				c.Notes = append(c.Notes, k.unsupported("the URL is not https"))
			case !ok:
				c.Notes = append(c.Notes, k.unsupported("want [CERTIFICATE_EXPIRATION] > a duration of at most 365 days"))
			default:
				// A certificate is a TLS check of its own in Checks.
				cert = &Check{Source: c.Source, Tags: c.Tags, URL: certURL(e.URL), Type: probe.TypeTLS, DelayMs: c.DelayMs,
					Attributes: map[string]any{"daysBeforeExpiry": days}}
				name(cert, strings.TrimSpace(e.Name)+" certificate")
				c.Notes = append(c.Notes, fmt.Sprintf("condition %q becomes the TLS check %q", k.raw, cert.Name))
			}
		default:
			c.Notes = append(c.Notes, k.unsupported("Checks has no such condition"))
		}
	}
	if !status && len(conds) > 0 {
		c.Notes = append(c.Notes, "no [STATUS] condition: Checks expects a 2xx status")
	}
	p.Checks = append(p.Checks, c)
	if cert != nil {
		p.Checks = append(p.Checks, *cert)
	}
}

// certURL is the https URL of a TLS check on u's host and port.
func certURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	host := pu.Host
	if pu.Port() == "" {
		host = net.JoinHostPort(pu.Hostname(), "443")
	}
	return "https://" + host
}

// gatusBody maps a [BODY] condition: a keyword (pat(*x*)), or a JSON
// value (the first [BODY].path == value; Checks has one per check).
func gatusBody(c *Check, k gatusCond) {
	if k.suffix == "" {
		pat, ok := strings.CutPrefix(k.val, "pat(*")
		pat, ok2 := strings.CutSuffix(pat, "*)")
		switch {
		case !ok || !ok2 || pat == "" || strings.ContainsAny(pat, "*?") || (k.op != "==" && k.op != "!="):
			c.Notes = append(c.Notes, k.unsupported("Checks matches a keyword (pat(*keyword*)) or a JSON value"))
		case c.Attributes["keyword"] != nil:
			c.Notes = append(c.Notes, k.unsupported("one keyword per check"))
		default:
			c.Attributes["keyword"] = pat
			if k.op == "!=" {
				c.Attributes["opposite"] = true
			}
		}
		return
	}
	path, ok := jsonPathOf(k.suffix)
	switch {
	case !ok || k.op != "==" || !isLiteral(k.val):
		c.Notes = append(c.Notes, k.unsupported("Checks compares one JSON value for equality"))
	case c.Attributes["jsonPath"] != nil:
		c.Notes = append(c.Notes, k.unsupported("one JSON value per check"))
	default:
		c.Attributes["jsonPath"], c.Attributes["expected"] = path, k.val
	}
}

func gatusDNS(p *Plan, c Check, e gatusEndpoint, conds []gatusCond, skip func(string, ...any)) {
	qname := strings.TrimSuffix(strings.TrimSpace(e.DNS.QueryName), ".")
	qtype := strings.ToUpper(strings.TrimSpace(e.DNS.QueryType))
	if qtype == "" {
		qtype = "A"
	}
	if !dnsTypes[qtype] {
		skip("DNS query-type %s is not supported (Checks: A, AAAA, CNAME, MX, TXT, NS)", qtype)
		return
	}
	c.Type, c.URL = probe.TypeDNS, "dns://"+qname
	c.Attributes["recordType"] = qtype
	c.Notes = append(c.Notes, fmt.Sprintf("DNS server %q not carried over: Checks asks the system resolver", e.URL))
	for _, k := range conds {
		switch {
		case k.ph == "DNS_RCODE" && k.op == "==" && k.val == "NOERROR":
			// A DNS check is UP only with an answer.
		case k.ph == "BODY" && k.suffix == "" && k.op == "==" && isLiteral(k.val) && c.Attributes["expected"] == nil:
			c.Attributes["expected"] = k.val
		default:
			c.Notes = append(c.Notes, k.unsupported("a DNS check is UP with an answer, optionally one equal to a value"))
		}
	}
	p.Checks = append(p.Checks, c)
}

// dnsTypes are the record types of Checks' DNS checks.
var dnsTypes = map[string]bool{"A": true, "AAAA": true, "CNAME": true, "MX": true, "TXT": true, "NS": true}
