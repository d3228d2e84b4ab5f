// Package probe executes one run of a Checks monitor: it fetches the
// check's URL through quarry's SSRF-safe fetcher, evaluates the check type
// (AVAILABILITY, EBAY, TCP, TLS or DNS) and its attributes, and returns a Result that the
// scheduler stores as the check's lastResult.
//
// A Prober is safe for concurrent use; create one and share it across all
// runs. Run never panics and always returns a Result: network failures,
// refused addresses and unparseable pages are reported in the Result, not as
// Go errors.
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// Check types.
const (
	// TypeAvailability checks that a URL answers with an expected status,
	// optionally containing (or not containing) a keyword.
	TypeAvailability = "AVAILABILITY"
	// TypeEbay reads the price (plus shipping) of an eBay listing or the
	// lowest total of an eBay search results page and compares it with a
	// threshold.
	TypeEbay = "EBAY"
	// TypeTCP checks that a TCP connection to tcp://host:port opens.
	TypeTCP = "TCP"
	// TypeTLS checks that an https URL's host completes a TLS handshake
	// with a certificate that verifies and does not expire soon.
	TypeTLS = "TLS"
	// TypeDNS checks that dns://name resolves (to an expected answer).
	TypeDNS = "DNS"
)

// Types returns every check type, in the order the docs list them.
func Types() []string {
	return []string{TypeAvailability, TypeEbay, TypeTCP, TypeTLS, TypeDNS}
}

// Result statuses.
const (
	// StatusUp: the target answered as expected (EBAY: fetched and parsed).
	StatusUp = "UP"
	// StatusDown: the target did not answer as expected.
	StatusDown = "DOWN"
)

// Result conditions: the machine-readable reason of Result.Alerting.
const (
	// ConditionOK: nothing to alert about.
	ConditionOK = "ok"
	// ConditionDown: the target is down (AVAILABILITY alerts on it).
	ConditionDown = "down"
	// ConditionKeywordMissing: the keyword was not found (opposite=false).
	ConditionKeywordMissing = "keyword-missing"
	// ConditionKeywordPresent: the keyword was found (opposite=true).
	ConditionKeywordPresent = "keyword-present"
	// ConditionPriceBelowThreshold: EBAY price + shipping < threshold.
	ConditionPriceBelowThreshold = "price-below-threshold"
	// ConditionUnparseable: EBAY page fetched but no price found.
	ConditionUnparseable = "unparseable"
	// ConditionInvalid: the check cannot be run (bad spec, refused
	// address); Result.Permanent is set.
	ConditionInvalid = "invalid"
	// ConditionCanceled: the caller's context was done before the run
	// finished (for example at shutdown). Not an observation of the target:
	// the scheduler should discard such a result rather than store it.
	ConditionCanceled = "canceled"
	// ConditionInternal: the probe itself failed (a recovered panic); not
	// an observation of the target either.
	ConditionInternal = "internal-error"
)

// Defaults.
const (
	// DefaultTimeout is the total timeout of a run when Spec.Timeout is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBodyBytes caps the body read of a run.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxRedirects is the number of redirects a run follows.
	DefaultMaxRedirects = 5
	// DefaultConnectTimeout bounds TCP connect and TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultPerHostConcurrency is high: many checks may target one host.
	DefaultPerHostConcurrency = 256
	// DefaultUserAgent is sent when Options.Fetch.UserAgent is empty.
	DefaultUserAgent = "Mozilla/5.0 (compatible; quarry-checks/1.0)"
	// hopCeiling is the fetcher's own per-hop timeout; the run's deadline
	// (Spec.Timeout) is enforced through the context and is normally
	// much shorter.
	hopCeiling = 10 * time.Minute
)

// ErrInvalid is wrapped by the errors of Validate for a check that can
// never run: a malformed spec or a refused address.
var ErrInvalid = errors.New("probe: invalid check")

// ErrUnresolved is wrapped (instead of ErrInvalid) by Validate's error
// when the spec is valid but its URL's host does not resolve now: a check
// may be created on it (the name may resolve later; each run resolves it
// again and applies the network policy at connect time), while a target
// that must work at once, such as a webhook, may be refused.
var ErrUnresolved = errors.New("probe: host does not resolve")

// Spec is what a run needs from a check item.
type Spec struct {
	// Type is one of Types().
	Type string
	// URL is the target: an absolute http or https URL (AVAILABILITY,
	// EBAY; https for TLS), tcp://host:port (TCP) or dns://name (DNS).
	URL string
	// Attributes is the check's attributes map, as decoded from DynamoDB
	// (strings, float64, bool, []any, map[string]any). Recognised keys:
	// keyword (string), opposite (bool), expectedStatus (number or list of
	// numbers), threshold (number > 0; required for EBAY); for
	// AVAILABILITY method, headers (object of strings), body (string),
	// maxResponseMs, jsonPath and expected; daysBeforeExpiry (TLS);
	// recordType and expected (DNS). Keys of other types are ignored.
	Attributes map[string]any
	// Timeout is the total timeout of the run; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Result is one run's outcome; it becomes the check's lastResult.
type Result struct {
	// Status is StatusUp or StatusDown. For AVAILABILITY, UP when the
	// status is expected and the keyword condition (if any) holds, DOWN
	// otherwise; for EBAY, UP when the page was fetched (2xx) and a price
	// parsed, DOWN otherwise.
	Status string
	// ResponseTime is the time in milliseconds until the body was read
	// (until the failure when there is no response).
	ResponseTime int64
	// HTTPStatus is the final HTTP status code; 0 when no response.
	HTTPStatus int
	// KeywordFound is set when attributes.keyword is set and a body was
	// received.
	KeywordFound *bool
	// Price is the EBAY item price (the one with the lowest price +
	// shipping on a search page).
	Price *float64
	// Shipping is the EBAY shipping cost when shown (0 for free shipping).
	Shipping *float64
	// Currency is the EBAY price's ISO code, e.g. "USD", "GBP", "EUR";
	// "" when it cannot be told.
	Currency string
	// Availability is the EBAY offer's schema.org availability without
	// its prefix ("InStock", "OutOfStock", "LimitedAvailability", …) when
	// the page's structured data gives it; "" otherwise.
	Availability string
	// PriceSource says where the EBAY price was read: "json-ld" or
	// "microdata" (schema.org structured data), "listing" (the visible
	// price of an item page) or "search" (the result cards of a search
	// page).
	PriceSource string
	// Alerting reports whether the check's alert condition holds now.
	Alerting bool
	// Condition is the machine-readable reason of Alerting, one of the
	// Condition* constants.
	Condition string
	// Error is a human-readable error, "" when fine.
	Error string
	// Permanent is set when the target cannot be checked at all (refused
	// address, bad URL, unsupported scheme, malformed attributes); the
	// scheduler marks the check FAILED.
	Permanent bool
	// Unparseable is set (EBAY) when the page was fetched but no price
	// could be parsed.
	Unparseable bool
	// CertExpiresAt is when the TLS check's certificate expires (UTC);
	// zero when no certificate was received.
	CertExpiresAt time.Time
}

// Options configures a Prober.
type Options struct {
	// Fetch configures the fetcher. Zero fields get the probe's defaults:
	// MaxBodyBytes 1 MiB, MaxRedirects 5, ConnectTimeout 10 s,
	// PerHostConcurrency 256, MaxRetries -1 (one attempt), UserAgent
	// DefaultUserAgent. ObeyRobots is used as given (normally false).
	// AllowPrivate and AllowPrefixes are for tests and internal targets.
	// Fetch.Timeout is only a ceiling per hop; the run's timeout is
	// Spec.Timeout.
	Fetch fetch.Options
	// Now is the clock used to measure ResponseTime and to verify TLS
	// certificates; default time.Now.
	Now func() time.Time
	// RootCAs verifies TLS checks' certificates; nil: the system's roots.
	RootCAs *x509.CertPool
}

// Prober runs checks. It is safe for concurrent use.
type Prober struct {
	f            *fetch.Fetcher
	now          func() time.Time
	maxRedirects int
	roots        *x509.CertPool
}

// New returns a Prober for opts.
func New(opts Options) *Prober {
	fo := opts.Fetch
	if fo.MaxBodyBytes <= 0 {
		fo.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if fo.MaxRedirects == 0 {
		fo.MaxRedirects = DefaultMaxRedirects
	}
	if fo.ConnectTimeout <= 0 {
		fo.ConnectTimeout = DefaultConnectTimeout
	}
	if fo.PerHostConcurrency <= 0 {
		fo.PerHostConcurrency = DefaultPerHostConcurrency
	}
	if fo.MaxRetries == 0 {
		fo.MaxRetries = -1
	}
	if fo.Timeout <= 0 {
		fo.Timeout = hopCeiling
	}
	if fo.UserAgent == "" {
		fo.UserAgent = DefaultUserAgent
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Prober{f: fetch.New(fo), now: now, maxRedirects: fo.MaxRedirects, roots: opts.RootCAs}
}

// Close releases idle connections.
func (p *Prober) Close() { p.f.Close() }

// Validate checks s when a check is created: a known type, a URL of the
// type's form whose host's addresses the network policy lets the probe
// connect to (this resolves the host name; a DNS check's name connects
// nowhere and is not resolved), well-typed attributes, and a positive
// threshold for EBAY. Errors wrap ErrInvalid (and fetch.ErrBlocked or
// fetch.ErrNotHTTP where they apply), or ErrUnresolved alone when
// everything is valid but the host name does not resolve now.
func (p *Prober) Validate(ctx context.Context, s Spec) error {
	ps, err := parseSpec(s)
	if err != nil {
		return err
	}
	switch ps.typ {
	case TypeDNS:
		return nil
	case TypeTCP:
		_, port, _ := net.SplitHostPort(ps.addr)
		n, _ := strconv.ParseUint(port, 10, 16)
		_, err = p.f.Dialer().Resolve(ctx, "tcp", ps.host, uint16(n))
	default:
		err = p.f.Validate(ctx, s.URL)
	}
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && !errors.Is(err, fetch.ErrBlocked) {
			return fmt.Errorf("%w: url: %w", ErrUnresolved, err)
		}
		return fmt.Errorf("%w: url: %w", ErrInvalid, err)
	}
	return nil
}

// Run executes one run of s within s.Timeout and returns its result. It
// never panics and always returns a Result.
func (p *Prober) Run(ctx context.Context, s Spec) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Result{Status: StatusDown, Condition: ConditionInternal, Error: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	ps, err := parseSpec(s)
	if err != nil {
		return Result{Status: StatusDown, Condition: ConditionInvalid, Error: err.Error(), Permanent: true}
	}
	rctx, cancel := context.WithTimeout(ctx, ps.timeout)
	defer cancel()
	// A failed handshake is a TLS error whatever crypto/tls returned:
	// some of its errors (the peer's alert, such as a protocol version
	// neither side accepts, or a malformed message) have no exported type.
	var handshakeFailed atomic.Bool
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				handshakeFailed.Store(true)
			}
		},
	})

	switch ps.typ {
	case TypeTCP:
		return p.runTCP(ctx, rctx, ps)
	case TypeTLS:
		return p.runTLS(ctx, rctx, ps)
	case TypeDNS:
		return p.runDNS(ctx, rctx, ps)
	}

	start := p.now()
	resp, err := p.f.Do(rctx, fetch.Request{Method: ps.method, URL: s.URL, Header: ps.header, Body: ps.body})
	elapsed := p.now().Sub(start)
	if err != nil {
		return p.failure(ctx, ps, err, handshakeFailed.Load(), elapsed)
	}
	res = Result{ResponseTime: elapsed.Milliseconds(), HTTPStatus: resp.Status}

	var doc *goquery.Document
	// Only a keyword or an eBay price reads the document: a plain status
	// check does not parse the page.
	if isHTML(resp) && (ps.keyword != "" || ps.typ == TypeEbay) {
		// A parse error is impossible for an in-memory reader in
		// practice; treat the body as plain text if it happens.
		doc, _ = goquery.NewDocumentFromReader(bytes.NewReader(resp.Body))
	}
	// The price is read before bodyText strips scripts from doc.
	var q quote
	parsed := false
	if ps.typ == TypeEbay && doc != nil {
		q, parsed = parseEbay(doc)
	}
	if ps.keyword != "" {
		found := containsFold(bodyText(doc, resp.Body), ps.keyword)
		res.KeywordFound = &found
	}

	switch ps.typ {
	case TypeEbay:
		evalEbay(&res, ps, resp, doc != nil, q, parsed)
	default:
		evalAvailability(&res, ps, resp)
	}
	return res
}

// evalAvailability fills the status and alert fields of an AVAILABILITY
// run. Every failed condition (an unexpected status, a response slower
// than maxResponseMs, a JSON value that is missing or not the expected
// one, a keyword missing or, with opposite, present) makes the run DOWN with its reason in Error, so
// that the run counts as down wherever UP/DOWN is read (lastResult, the
// history, the daily uptimes); Condition tells the failures apart.
func evalAvailability(res *Result, ps spec, resp *fetch.Response) {
	if !ps.statusExpected(resp.Status) {
		res.Status, res.Alerting, res.Condition = StatusDown, true, ConditionDown
		res.Error = fmt.Sprintf("status %d", resp.Status)
		if ps.expected != nil {
			res.Error += ", expected " + ps.expectedText()
		}
		return
	}
	if ps.maxResponseMs > 0 && res.ResponseTime > ps.maxResponseMs {
		res.Status, res.Alerting, res.Condition = StatusDown, true, ConditionDown
		res.Error = fmt.Sprintf("response took %d ms, limit %d ms", res.ResponseTime, ps.maxResponseMs)
		return
	}
	if ps.jsonPath != nil {
		if msg := evalJSON(ps, resp.Body, resp.Truncated); msg != "" {
			res.Status, res.Alerting, res.Condition = StatusDown, true, ConditionDown
			res.Error = msg
			return
		}
	}
	res.Status, res.Condition = StatusUp, ConditionOK
	if res.KeywordFound == nil {
		return
	}
	switch found := *res.KeywordFound; {
	case !ps.opposite && !found:
		res.Status, res.Alerting, res.Condition = StatusDown, true, ConditionKeywordMissing
		res.Error = fmt.Sprintf("keyword %q not found", ps.keyword)
		if resp.Truncated {
			res.Error += fmt.Sprintf(" in the first %d bytes", len(resp.Body))
		}
	case ps.opposite && found:
		res.Status, res.Alerting, res.Condition = StatusDown, true, ConditionKeywordPresent
		res.Error = fmt.Sprintf("keyword %q found, expected absent", ps.keyword)
	}
}

// evalEbay fills the price and alert fields of an EBAY run from the quote
// parsed from the page (parsed false: none found; isHTML false: the body
// was not HTML).
func evalEbay(res *Result, ps spec, resp *fetch.Response, isHTML bool, q quote, parsed bool) {
	if resp.Status < 200 || resp.Status > 299 {
		res.Status, res.Condition = StatusDown, ConditionDown
		res.Error = fmt.Sprintf("status %d", resp.Status)
		return
	}
	if !parsed {
		res.Status, res.Condition, res.Unparseable = StatusDown, ConditionUnparseable, true
		res.Error = "no price found on the page"
		if !isHTML {
			res.Error = "no price found: the response is not HTML"
		}
		if resp.Truncated {
			res.Error += fmt.Sprintf(" (body cut at %d bytes)", len(resp.Body))
		}
		return
	}
	price := q.price
	res.Price, res.Currency, res.Availability, res.PriceSource = &price, q.currency, q.availability, q.source
	total := price
	if q.hasShipping {
		ship := q.shipping
		res.Shipping = &ship
		total += ship
	}
	res.Status, res.Condition = StatusUp, ConditionOK
	if total < ps.threshold {
		res.Alerting, res.Condition = true, ConditionPriceBelowThreshold
	}
}

// failure turns a fetch error into a Result; handshakeFailed: a TLS
// handshake of the fetch failed.
func (p *Prober) failure(parent context.Context, ps spec, err error, handshakeFailed bool, elapsed time.Duration) Result {
	res := Result{Status: StatusDown, ResponseTime: elapsed.Milliseconds(), Condition: ConditionDown,
		Alerting: ps.typ != TypeEbay}
	switch {
	case errors.Is(err, fetch.ErrBlocked):
		res.Error = "address not allowed: " + err.Error()
		res.Permanent, res.Alerting, res.Condition = true, false, ConditionInvalid
	case errors.Is(err, fetch.ErrNotHTTP):
		res.Error = "unsupported URL: " + err.Error()
		res.Permanent, res.Alerting, res.Condition = true, false, ConditionInvalid
	case parent.Err() != nil:
		res.Error = "canceled: " + parent.Err().Error()
		res.Alerting, res.Condition = false, ConditionCanceled
	case errors.Is(err, fetch.ErrTooManyRedirects):
		res.Error = fmt.Sprintf("redirect loop or too many redirects (more than %d)", p.maxRedirects)
	case isTimeout(err):
		res.Error = fmt.Sprintf("timeout after %s", ps.timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		res.Error = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		res.Error = "connection reset"
	case handshakeFailed || isTLSError(err):
		res.Error = "TLS error: " + err.Error()
	case isDNSError(err):
		res.Error = "host not found: " + err.Error()
	default:
		res.Error = err.Error()
	}
	return res
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTLSError reports whether err is one of crypto/tls's or crypto/x509's
// typed errors: a certificate that does not verify (unknown authority,
// wrong host name, expired or otherwise invalid, a violated constraint,
// an insecure algorithm, an unhandled critical extension, no system
// roots), a record that is not TLS, a rejected ECH, an alert of a QUIC
// connection. Matched by type, never by message; the errors of no
// exported type are recognised by the failed handshake (see Run).
func isTLSError(err error) bool {
	var (
		rec        tls.RecordHeaderError
		cve        *tls.CertificateVerificationError
		alert      tls.AlertError
		ech        *tls.ECHRejectionError
		ua         x509.UnknownAuthorityError
		hn         x509.HostnameError
		ci         x509.CertificateInvalidError
		constraint x509.ConstraintViolationError
		insecure   x509.InsecureAlgorithmError
		critical   x509.UnhandledCriticalExtension
		roots      x509.SystemRootsError
	)
	return errors.As(err, &rec) || errors.As(err, &cve) || errors.As(err, &alert) || errors.As(err, &ech) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &constraint) ||
		errors.As(err, &insecure) || errors.As(err, &critical) || errors.As(err, &roots)
}

// isDNSError reports whether err is a failed name lookup (not found, or
// no answer from the resolver).
func isDNSError(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

// isHTML reports whether resp's body is HTML, by Content-Type or, when
// absent, by sniffing.
func isHTML(resp *fetch.Response) bool {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(resp.Body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.Contains(strings.ToLower(ct), "html")
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// bodyText is the text the keyword is searched in: the document's text
// without scripts and styles for HTML (they are removed from doc), else the
// raw body.
func bodyText(doc *goquery.Document, body []byte) string {
	if doc == nil {
		return string(body)
	}
	doc.Find("script, style, template, noscript").Remove()
	return doc.Text()
}

// containsFold reports whether needle occurs in haystack, ignoring case and
// treating every run of white space as one space.
func containsFold(haystack, needle string) bool {
	return strings.Contains(normalize(haystack), normalize(needle))
}

func normalize(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// checkURL validates the URL syntax: absolute, http or https, with a host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalid, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: url: %w: scheme %q", ErrInvalid, fetch.ErrNotHTTP, u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: url %q has no host", ErrInvalid, u.Redacted())
	}
	return nil
}
