package probe

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// parseRequest decodes AVAILABILITY's method, headers, body,
// maxResponseMs, jsonPath and expected into ps.
func parseRequest(ps *spec, a map[string]any) error {
	if v, ok := a["method"]; ok && v != nil {
		m, ok := v.(string)
		if !ok || !methods[strings.ToUpper(m)] {
			return fmt.Errorf("%w: attributes.method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, not %s", ErrInvalid, quoted(v))
		}
		ps.method = strings.ToUpper(m)
	}
	if v, ok := a["headers"]; ok && v != nil {
		h, err := parseHeaders(v)
		if err != nil {
			return err
		}
		ps.header = h
	}
	if v, ok := a["body"]; ok && v != nil {
		b, ok := v.(string)
		if !ok {
			return fmt.Errorf("%w: attributes.body must be a string, not %T", ErrInvalid, v)
		}
		if len(b) > MaxBodyBytes {
			return fmt.Errorf("%w: attributes.body must be at most %d bytes (it has %d)", ErrInvalid, MaxBodyBytes, len(b))
		}
		if b != "" && (ps.method == http.MethodGet || ps.method == http.MethodHead) {
			return fmt.Errorf("%w: attributes.body needs attributes.method POST, PUT, PATCH, DELETE or OPTIONS (the method is %s)", ErrInvalid, ps.method)
		}
		if b != "" {
			ps.body = []byte(b)
		}
	}
	if v, ok := a["maxResponseMs"]; ok && v != nil {
		n, err := integer("maxResponseMs", v, 1, MaxResponseMs)
		if err != nil {
			return err
		}
		ps.maxResponseMs = int64(n)
	}
	if v, ok := a["jsonPath"]; ok && v != nil {
		p, ok := v.(string)
		if !ok {
			return fmt.Errorf("%w: attributes.jsonPath must be a string, not %T", ErrInvalid, v)
		}
		if len(p) > MaxExpectedBytes {
			return fmt.Errorf("%w: attributes.jsonPath must be at most %d bytes (it has %d)", ErrInvalid, MaxExpectedBytes, len(p))
		}
		if p == "" {
			return fmt.Errorf("%w: attributes.jsonPath is empty", ErrInvalid)
		}
		segs := strings.Split(p, ".")
		for _, s := range segs {
			if s == "" {
				return fmt.Errorf("%w: attributes.jsonPath %q has an empty segment (want a dotted path such as data.items.0.status)", ErrInvalid, p)
			}
		}
		ps.jsonPath = segs
	}
	if err := parseExpected(ps, a); err != nil {
		return err
	}
	if ps.hasWant && ps.jsonPath == nil {
		return fmt.Errorf("%w: attributes.expected needs attributes.jsonPath on %s checks", ErrInvalid, TypeAvailability)
	}
	return nil
}

// parseHeaders decodes attributes.headers: an object of at most
// MaxHeaders string values, each a valid header of at most
// MaxHeaderBytes that the client does not set itself.
func parseHeaders(v any) (http.Header, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: attributes.headers must be an object of strings, not %T", ErrInvalid, v)
	}
	if len(m) > MaxHeaders {
		return nil, fmt.Errorf("%w: attributes.headers: at most %d headers (got %d)", ErrInvalid, MaxHeaders, len(m))
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names) // the first error is the same on every call
	h := make(http.Header, len(m))
	for _, k := range names {
		val, ok := m[k].(string)
		if !ok {
			return nil, fmt.Errorf("%w: attributes.headers[%q] must be a string, not %T", ErrInvalid, k, m[k])
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("%w: attributes.headers: %q is not a header name", ErrInvalid, k)
		}
		if reservedHeaders[http.CanonicalHeaderKey(k)] {
			return nil, fmt.Errorf("%w: attributes.headers: %s is set from the URL and the body, not by a check", ErrInvalid, http.CanonicalHeaderKey(k))
		}
		if len(val) > MaxHeaderBytes {
			return nil, fmt.Errorf("%w: attributes.headers[%q] must be at most %d bytes (it has %d)", ErrInvalid, k, MaxHeaderBytes, len(val))
		}
		if !httpguts.ValidHeaderFieldValue(val) {
			return nil, fmt.Errorf("%w: attributes.headers[%q] has a control character", ErrInvalid, k)
		}
		h.Set(k, val)
	}
	return h, nil
}

// parseExpected decodes attributes.expected (a string, number or
// boolean) into ps.want as text.
func parseExpected(ps *spec, a map[string]any) error {
	v, ok := a["expected"]
	if !ok || v == nil {
		return nil
	}
	switch t := v.(type) {
	case string:
		ps.want = t
	case bool:
		ps.want = strconv.FormatBool(t)
	default:
		f, ok := number(v)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: attributes.expected must be a string, number or boolean, not %T", ErrInvalid, v)
		}
		ps.want = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if len(ps.want) > MaxExpectedBytes {
		return fmt.Errorf("%w: attributes.expected must be at most %d bytes (it has %d)", ErrInvalid, MaxExpectedBytes, len(ps.want))
	}
	ps.hasWant = true
	return nil
}

// tcpTarget checks a TCP check's URL, tcp://host:port, and returns its
// host:port and host.
func tcpTarget(raw string) (addr, host string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("%w: url: %w", ErrInvalid, err)
	}
	if u.Scheme != "tcp" {
		return "", "", fmt.Errorf("%w: url: want a tcp://host:port URL for %s checks, not %q", ErrInvalid, TypeTCP, u.Redacted())
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", fmt.Errorf("%w: url: want tcp://host:port with nothing after the port, not %q", ErrInvalid, u.Redacted())
	}
	host = u.Hostname()
	if host == "" {
		return "", "", fmt.Errorf("%w: url %q has no host", ErrInvalid, u.Redacted())
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || port == 0 {
		return "", "", fmt.Errorf("%w: url: want tcp://host:port with a port from 1 to 65535, not %q", ErrInvalid, u.Redacted())
	}
	return net.JoinHostPort(host, u.Port()), host, nil
}

// parseTLS checks a TLS check's https URL and daysBeforeExpiry.
func parseTLS(ps *spec, raw string, a map[string]any) error {
	if err := checkURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw) // parsed by checkURL
	if u.Scheme != "https" {
		return fmt.Errorf("%w: url: want an https:// URL for %s checks, not %q", ErrInvalid, TypeTLS, u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	ps.host, ps.addr = u.Hostname(), net.JoinHostPort(u.Hostname(), port)
	ps.days = DefaultDaysBeforeExpiry
	if v, ok := a["daysBeforeExpiry"]; ok && v != nil {
		n, err := integer("daysBeforeExpiry", v, 0, MaxDaysBeforeExpiry)
		if err != nil {
			return err
		}
		ps.days = n
	}
	return nil
}

// parseDNS checks a DNS check's URL, dns://name, its recordType (default
// A) and expected answer.
func parseDNS(ps *spec, raw string, a map[string]any) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalid, err)
	}
	if u.Scheme != "dns" {
		return fmt.Errorf("%w: url: want a dns://name URL for %s checks, not %q", ErrInvalid, TypeDNS, u.Redacted())
	}
	// Only a name: a resolver address or port would let a check send
	// queries where the network policy never looked.
	if u.User != nil || u.Port() != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return fmt.Errorf("%w: url: want dns://name with a name only (no port, path or query; the server's resolver answers), not %q", ErrInvalid, u.Redacted())
	}
	name := strings.TrimSuffix(u.Hostname(), ".")
	if name == "" {
		return fmt.Errorf("%w: url %q has no name", ErrInvalid, u.Redacted())
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return fmt.Errorf("%w: url: %s is an address, not a name to resolve", ErrInvalid, name)
	}
	if len(name) > 253 {
		return fmt.Errorf("%w: url: the name has %d characters, more than DNS allows (253)", ErrInvalid, len(name))
	}
	ps.name, ps.recordType = name, "A"
	if v, ok := a["recordType"]; ok && v != nil {
		t, ok := v.(string)
		if !ok || !recordTypes[strings.ToUpper(t)] {
			return fmt.Errorf("%w: attributes.recordType must be one of A, AAAA, CNAME, MX, TXT, NS, not %s", ErrInvalid, quoted(v))
		}
		ps.recordType = strings.ToUpper(t)
	}
	if err := parseExpected(ps, a); err != nil {
		return err
	}
	if ps.hasWant && (ps.recordType == "A" || ps.recordType == "AAAA") {
		if _, err := netip.ParseAddr(ps.want); err != nil {
			return fmt.Errorf("%w: attributes.expected %q is not an address (recordType %s)", ErrInvalid, ps.want, ps.recordType)
		}
	}
	return nil
}

// integer decodes attributes.<key>, a whole number in [lo, hi].
func integer(key string, v any, lo, hi int) (int, error) {
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, fmt.Errorf("%w: attributes.%s must be a whole number from %d to %d, not %s", ErrInvalid, key, lo, hi, quoted(v))
	}
	return int(f), nil
}

// quoted renders a decoded attribute value for an error message.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprintf("a %T", v)
}
