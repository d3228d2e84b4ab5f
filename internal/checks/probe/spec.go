package probe

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits of the request attributes of AVAILABILITY checks: they are
// stored in the check item and sent on every run.
const (
	// MaxHeaders is the number of attributes.headers a check may send.
	MaxHeaders = 20
	// MaxHeaderBytes bounds a header's value.
	MaxHeaderBytes = 1024
	// MaxBodyBytes bounds attributes.body.
	MaxBodyBytes = 16 << 10
	// MaxExpectedBytes bounds attributes.expected and attributes.jsonPath.
	MaxExpectedBytes = 1024
	// MaxResponseMs bounds attributes.maxResponseMs (10 minutes, the
	// longest run timeout).
	MaxResponseMs = 600_000
	// DefaultDaysBeforeExpiry is attributes.daysBeforeExpiry of a TLS
	// check that gives none.
	DefaultDaysBeforeExpiry = 14
	// MaxDaysBeforeExpiry bounds attributes.daysBeforeExpiry.
	MaxDaysBeforeExpiry = 365
)

// methods are the values of attributes.method.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// reservedHeaders are set by the HTTP client from the URL and the body;
// attributes.headers may not name them.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Connection": true,
}

// recordTypes are the values of attributes.recordType of DNS checks.
var recordTypes = map[string]bool{"A": true, "AAAA": true, "CNAME": true, "MX": true, "TXT": true, "NS": true}

// spec is a Spec with its attributes decoded and checked.
type spec struct {
	typ       string
	timeout   time.Duration
	keyword   string
	opposite  bool
	expected  []int // nil: any 2xx
	threshold float64

	// AVAILABILITY's request and response conditions.
	method        string
	header        http.Header
	body          []byte
	maxResponseMs int64    // 0: no limit
	jsonPath      []string // nil: no JSON assertion
	// want is attributes.expected as text (the JSON value at jsonPath,
	// or a DNS answer); hasWant when it was given.
	want    string
	hasWant bool

	// addr is the host:port a TCP or TLS check connects to, host its
	// host; name the DNS check's name.
	addr, host, name string
	days             int    // TLS: daysBeforeExpiry
	recordType       string // DNS
}

// statusExpected reports whether status counts as UP.
func (s spec) statusExpected(status int) bool {
	if s.expected == nil {
		return status >= 200 && status <= 299
	}
	for _, e := range s.expected {
		if e == status {
			return true
		}
	}
	return false
}

// expectedText lists the expected statuses for an error message:
// "200", "200 or 301", "200, 201 or 301".
func (s spec) expectedText() string {
	parts := make([]string, len(s.expected))
	for i, e := range s.expected {
		parts[i] = strconv.Itoa(e)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// parseSpec checks everything about s that needs no network. Errors wrap
// ErrInvalid.
func parseSpec(s Spec) (spec, error) {
	ps := spec{typ: s.Type, timeout: s.Timeout, method: http.MethodGet}
	if !slices.Contains(Types(), s.Type) {
		return ps, fmt.Errorf("%w: unknown check type %q (want one of %s)", ErrInvalid, s.Type, strings.Join(Types(), ", "))
	}
	if s.Timeout < 0 {
		return ps, fmt.Errorf("%w: negative timeout %s", ErrInvalid, s.Timeout)
	}
	if ps.timeout == 0 {
		ps.timeout = DefaultTimeout
	}
	a := s.Attributes
	var err error
	switch s.Type {
	case TypeTCP:
		ps.addr, ps.host, err = tcpTarget(s.URL)
		return ps, err
	case TypeTLS:
		if err := parseTLS(&ps, s.URL, a); err != nil {
			return ps, err
		}
		return ps, nil
	case TypeDNS:
		if err := parseDNS(&ps, s.URL, a); err != nil {
			return ps, err
		}
		return ps, nil
	}
	if err := checkURL(s.URL); err != nil {
		return ps, err
	}
	if s.Type == TypeAvailability {
		if err := parseRequest(&ps, a); err != nil {
			return ps, err
		}
	}
	if v, ok := a["keyword"]; ok && v != nil {
		kw, ok := v.(string)
		if !ok {
			return ps, fmt.Errorf("%w: attributes.keyword must be a string, not %T", ErrInvalid, v)
		}
		if normalize(kw) == "" {
			return ps, fmt.Errorf("%w: attributes.keyword is empty", ErrInvalid)
		}
		ps.keyword = kw
	}
	if v, ok := a["opposite"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return ps, fmt.Errorf("%w: attributes.opposite must be a boolean, not %T", ErrInvalid, v)
		}
		ps.opposite = b
	}
	if v, ok := a["expectedStatus"]; ok && v != nil {
		codes, err := statusCodes(v)
		if err != nil {
			return ps, err
		}
		ps.expected = codes
	}
	if v, ok := a["threshold"]; ok && v != nil {
		t, ok := number(v)
		if !ok || math.IsNaN(t) || math.IsInf(t, 0) {
			return ps, fmt.Errorf("%w: attributes.threshold must be a number, not %T", ErrInvalid, v)
		}
		if t <= 0 {
			return ps, fmt.Errorf("%w: attributes.threshold must be > 0, not %v", ErrInvalid, t)
		}
		ps.threshold = t
	}
	if s.Type == TypeEbay && ps.threshold == 0 {
		return ps, fmt.Errorf("%w: attributes.threshold (a number > 0) is required for %s checks", ErrInvalid, TypeEbay)
	}
	return ps, nil
}

// statusCodes decodes expectedStatus: a number or a non-empty list of
// numbers, each an integer HTTP status 100..599.
func statusCodes(v any) ([]int, error) {
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case []float64:
		for _, f := range t {
			items = append(items, f)
		}
	case []int:
		for _, i := range t {
			items = append(items, i)
		}
	default:
		items = []any{v}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: attributes.expectedStatus is an empty list", ErrInvalid)
	}
	codes := make([]int, 0, len(items))
	for _, it := range items {
		f, ok := number(it)
		if !ok {
			return nil, fmt.Errorf("%w: attributes.expectedStatus must be a number or a list of numbers, found %T", ErrInvalid, it)
		}
		if f != math.Trunc(f) || f < 100 || f > 599 {
			return nil, fmt.Errorf("%w: attributes.expectedStatus %v is not an HTTP status", ErrInvalid, f)
		}
		codes = append(codes, int(f))
	}
	return codes, nil
}

// number converts the numeric types a decoder may produce to float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}
