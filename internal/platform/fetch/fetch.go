// Package fetch is quarry's HTTP fetcher, shared by the DataShelf crawler
// and the Checks monitors. It is secure by default: only http and https,
// and no connection to loopback, private, link-local (cloud metadata),
// CGNAT, multicast or unspecified addresses, checked on the resolved
// address at connect time (so DNS rebinding cannot bypass it) and again on
// every redirect hop. It is polite: per-host concurrency and delay,
// Retry-After on 429/503, optional robots.txt with Crawl-delay. And it is
// bounded: body size, connect and per-request timeouts, redirects.
package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrBlocked: the target resolves to an address the fetcher refuses
	// (see Options.AllowPrivate).
	ErrBlocked = errors.New("fetch: address blocked")
	// ErrDisallowedByRobots: the host's robots.txt disallows the URL.
	ErrDisallowedByRobots = errors.New("fetch: disallowed by robots.txt")
	// ErrTooManyRedirects: more than Options.MaxRedirects redirects.
	ErrTooManyRedirects = errors.New("fetch: too many redirects")
	// ErrNotHTTP: the URL's scheme is neither http nor https.
	ErrNotHTTP = errors.New("fetch: not an http or https URL")
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultUserAgent          = "quarry/dev"
	DefaultMaxBodyBytes       = 10 << 20
	DefaultTimeout            = 30 * time.Second
	DefaultConnectTimeout     = 10 * time.Second
	DefaultMaxRedirects       = 5
	DefaultPerHostConcurrency = 2
	DefaultMaxRetryAfter      = 5 * time.Minute
	DefaultMaxRetries         = 2
)

// Options configures a Fetcher. The zero value of every field means its
// default; New does not modify the caller's copy.
type Options struct {
	// UserAgent is sent on every request; its product token (the part
	// before "/") selects the robots.txt group. Default "quarry/dev".
	UserAgent string
	// Policy decides which addresses the fetcher may connect to; quarry
	// serve passes its one policy (--allow-networks) to every fetcher.
	// Nil: a policy built from AllowPrivate and AllowPrefixes.
	Policy *Policy
	// AllowPrivate allows every address, including loopback, private,
	// link-local and metadata addresses, when Policy is nil. Tests set it;
	// production must not.
	AllowPrivate bool
	// AllowPrefixes allows these ranges even when AllowPrivate is false
	// and Policy is nil (for example an internal service a monitor must
	// reach).
	AllowPrefixes []netip.Prefix
	// MaxBodyBytes caps the body read; a longer body is cut and
	// Response.Truncated set. Default 10 MiB.
	MaxBodyBytes int64
	// Timeout bounds one HTTP exchange (connect, headers, body) of one hop;
	// politeness waits are not included (bound those with the ctx).
	// Default 30 s.
	Timeout time.Duration
	// ConnectTimeout bounds the TCP connect and the TLS handshake.
	// Default 10 s.
	ConnectTimeout time.Duration
	// MaxRedirects is the number of redirects followed; each hop is
	// re-checked. Default 5; negative follows none (the 3xx is returned).
	MaxRedirects int
	// PerHostConcurrency is the number of requests in flight to one
	// host (scheme://host:port). Default 2.
	PerHostConcurrency int
	// PerHostDelay is the minimum gap between the starts of two requests to
	// one host. A robots.txt Crawl-delay raises it. Default 0.
	PerHostDelay time.Duration
	// ObeyRobots fetches /robots.txt per host (cached 24 h), applies the
	// group of our user-agent token (longest match, Allow wins ties) and
	// its Crawl-delay. A 4xx robots.txt allows all; 5xx or 429 disallows
	// the host for 10 minutes; a host whose robots.txt cannot be reached
	// gets the network error (nothing cached).
	ObeyRobots bool
	// MaxRetries is how many times a 429 or 503 with a Retry-After of at
	// most MaxRetryAfter is retried. Default 2; negative disables retries.
	MaxRetries int
	// MaxRetryAfter bounds the Retry-After the fetcher waits for; a
	// longer one is not retried (the response is returned and the host is
	// paused for MaxRetryAfter). Default 5 min.
	MaxRetryAfter time.Duration

	// Resolver resolves host names; default net.DefaultResolver.
	Resolver Resolver
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx is done; default a timer. Every politeness
	// wait (delay, Crawl-delay, Retry-After) goes through it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// withDefaults returns o with defaults filled in.
func (o Options) withDefaults() Options {
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.PerHostConcurrency <= 0 {
		o.PerHostConcurrency = DefaultPerHostConcurrency
	}
	if o.PerHostDelay < 0 {
		o.PerHostDelay = 0
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = DefaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Policy == nil {
		if o.AllowPrivate {
			o.Policy = AllowAllPolicy()
		} else {
			o.Policy = NewPolicy(o.AllowPrefixes, nil)
		}
	}
	return o
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Response is a fetched page.
type Response struct {
	// URL is the final URL, after redirects.
	URL string
	// Status is the HTTP status code of the final response.
	Status int
	// Header is the final response's header.
	Header http.Header
	// Body holds at most Options.MaxBodyBytes bytes of the body.
	Body []byte
	// Truncated is set when the body was longer than MaxBodyBytes.
	Truncated bool
	// Duration is the time spent in HTTP exchanges (all hops and retries),
	// excluding politeness waits.
	Duration time.Duration
}

// Doer fetches a URL. Crawlers depend on it rather than on *Fetcher so that
// pages can also be rendered through a browser.
type Doer interface {
	Get(ctx context.Context, rawURL string) (*Response, error)
}

var _ Doer = (*Fetcher)(nil)

// Fetcher is an SSRF-safe, polite HTTP client. It is safe for concurrent
// use; create one per configuration and share it.
type Fetcher struct {
	o      Options
	token  string // robots.txt user-agent token, lower case
	dialer *Dialer
	client *http.Client

	mu     sync.Mutex
	gates  map[string]*gate
	robots map[string]*robotsEntry
}

// New returns a Fetcher for o (zero fields take their defaults).
func New(o Options) *Fetcher {
	f := &Fetcher{
		o:      o.withDefaults(),
		gates:  map[string]*gate{},
		robots: map[string]*robotsEntry{},
	}
	f.token = strings.ToLower(agentToken(f.o.UserAgent))
	f.dialer = &Dialer{Policy: f.o.Policy, Resolver: f.o.Resolver, Timeout: f.o.ConnectTimeout}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would connect for us, unchecked
		DialContext:           f.dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   f.o.ConnectTimeout,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   f.o.PerHostConcurrency,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	f.client = &http.Client{
		Transport: tr,
		// Redirects are followed by Get, hop by hop, so that each hop
		// goes through the checks, robots.txt and the host's gate.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f
}

// Client returns an http.Client that connects only where the fetcher may
// (the same address checks at connect time), follows no redirects (a 3xx
// is returned) and bounds each exchange by Options.Timeout: for requests
// other than GET to user-supplied URLs, such as webhooks.
func (f *Fetcher) Client() *http.Client {
	return &http.Client{Transport: f.client.Transport, CheckRedirect: f.client.CheckRedirect, Timeout: f.o.Timeout}
}

// Dialer returns the dialer the fetcher connects through: its Policy,
// Resolver and ConnectTimeout. Other protocols (a TCP or TLS probe) dial
// through it to get the same address checks.
func (f *Fetcher) Dialer() *Dialer { return f.dialer }

// Close releases idle connections.
func (f *Fetcher) Close() { f.client.CloseIdleConnections() }

// Get fetches rawURL, following redirects. A non-2xx status is not an
// error: the Response reports it. Errors wrap ErrNotHTTP, ErrBlocked,
// ErrDisallowedByRobots, ErrTooManyRedirects, the ctx's error or
// context.DeadlineExceeded (Options.Timeout), or a network error.
func (f *Fetcher) Get(ctx context.Context, rawURL string) (*Response, error) {
	return f.Do(ctx, Request{URL: rawURL})
}

// Request is what Do sends: Get is Do of a Request with only URL.
type Request struct {
	// Method is the HTTP method; "" is GET.
	Method string
	// URL is the absolute http or https URL.
	URL string
	// Header is added to the fetcher's own headers (a User-Agent or
	// Accept given here replaces the fetcher's). It is sent to URL's
	// host (host:port) only: a redirect to another host drops it, as it
	// may carry credentials.
	Header http.Header
	// Body is sent with the request (and again on a 307 or 308 redirect).
	Body []byte
}

// Do fetches r as Get does, with r's method, headers and body. A 301, 302
// or 303 redirect continues with a GET without body (a HEAD stays a
// HEAD), as browsers do; a 307 or 308 repeats the method and body.
func (f *Fetcher) Do(ctx context.Context, r Request) (*Response, error) {
	rawURL := r.URL
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	origin := u.Host
	var spent time.Duration
	redirects, retries := 0, 0
	for {
		if err := f.checkURL(u); err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
		}
		if f.o.ObeyRobots {
			rules, err := f.robotsFor(ctx, u)
			if err != nil {
				return nil, err
			}
			if !rules.allowed(u) {
				return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), ErrDisallowedByRobots)
			}
		}
		hr := r
		if u.Host != origin {
			hr.Header = nil
		}
		resp, err := f.hop(ctx, u, hr, f.o.MaxBodyBytes)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
		}
		spent += resp.Duration
		resp.Duration = spent
		if isRedirect(resp.Status) && resp.Header.Get("Location") != "" && f.o.MaxRedirects > 0 {
			if redirects >= f.o.MaxRedirects {
				return nil, fmt.Errorf("fetch %s: %w (%d)", rawURL, ErrTooManyRedirects, f.o.MaxRedirects)
			}
			next, err := redirectTarget(u, resp)
			if err != nil {
				return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
			}
			if resp.Status != http.StatusTemporaryRedirect && resp.Status != http.StatusPermanentRedirect &&
				r.Method != http.MethodHead {
				r.Method, r.Body = http.MethodGet, nil
			}
			redirects++
			u = next
			continue
		}
		if resp.Status == http.StatusTooManyRequests || resp.Status == http.StatusServiceUnavailable {
			if d, ok := retryAfter(resp.Header, f.o.Now()); ok && d <= f.o.MaxRetryAfter && retries < f.o.MaxRetries {
				retries++ // the host's gate already holds the wait
				continue
			}
		}
		return resp, nil
	}
}

// hop sends r's method, headers and body to u through u's host gate,
// reading at most limit bytes of the body. A 429/503 Retry-After pauses
// the gate for every request to the host.
func (f *Fetcher) hop(ctx context.Context, u *url.URL, r Request, limit int64) (*Response, error) {
	g := f.gateFor(u)
	if err := g.acquire(ctx); err != nil {
		return nil, err
	}
	defer g.release()

	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	var reqBody io.Reader
	if r.Body != nil {
		reqBody = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), reqBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", f.o.UserAgent)
	req.Header.Set("Accept", "*/*")
	for k, vs := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	start := time.Now()
	hr, err := f.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer hr.Body.Close()
	if isRedirect(hr.StatusCode) {
		limit = min(limit, 64<<10) // a redirect's body is never used
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, limit+1))
	if err != nil {
		return nil, unwrapURLError(err)
	}
	resp := &Response{
		URL:      u.String(),
		Status:   hr.StatusCode,
		Header:   hr.Header,
		Body:     body,
		Duration: time.Since(start),
	}
	if int64(len(body)) > limit {
		resp.Body, resp.Truncated = body[:limit], true
	}
	if resp.Status == http.StatusTooManyRequests || resp.Status == http.StatusServiceUnavailable {
		if d, ok := retryAfter(hr.Header, f.o.Now()); ok {
			g.pause(f.o.Now().Add(min(d, f.o.MaxRetryAfter)))
		}
	}
	return resp, nil
}

// unwrapURLError drops *url.Error's "Get "url":" prefix; callers add the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redirectTarget resolves the Location of resp against u.
func redirectTarget(u *url.URL, resp *Response) (*url.URL, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, errNoLocation
	}
	next, err := u.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("fetch: bad redirect Location %q: %w", loc, err)
	}
	next.Fragment, next.RawFragment = "", ""
	return next, nil
}

// retryAfter parses a Retry-After header: delta-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
