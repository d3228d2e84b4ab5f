package fetch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Robots policy constants (RFC 9309 and Google's documented behaviour).
const (
	// robotsMaxBytes is the part of a robots.txt that is parsed (Google: 500 KiB).
	robotsMaxBytes = 500 << 10
	// robotsTTL is how long a fetched robots.txt (or a 4xx) is trusted.
	robotsTTL = 24 * time.Hour
	// robotsErrorTTL is how long a 5xx, 429 or network failure disallows
	// the whole host before robots.txt is fetched again.
	robotsErrorTTL = 10 * time.Minute
	// maxCrawlDelay bounds a site's Crawl-delay so that a hostile value
	// cannot stall a worker indefinitely.
	maxCrawlDelay = time.Minute
)

// robotsRule is one Allow or Disallow line.
type robotsRule struct {
	allow   bool
	pattern string
}

// robotsGroup is one group of a robots.txt: its user agents and rules.
type robotsGroup struct {
	agents     []string
	rules      []robotsRule
	crawlDelay time.Duration
}

// robotsRules is the policy that applies to one user-agent token on one host.
type robotsRules struct {
	disallowAll bool
	rules       []robotsRule
	crawlDelay  time.Duration
}

var allowAll = &robotsRules{}

// parseRobots parses a robots.txt body and returns the rules for token
// (lower case): the groups naming the token exactly, merged, or failing
// that the "*" groups, merged (RFC 9309 §2.2.1).
func parseRobots(body []byte, token string) *robotsRules {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	var groups []*robotsGroup
	var cur *robotsGroup
	lastWasAgent := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), robotsMaxBytes+1)
	sc.Split(scanLines)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "user-agent", "useragent", "user agent":
			if !lastWasAgent || cur == nil {
				cur = &robotsGroup{}
				groups = append(groups, cur)
			}
			cur.agents = append(cur.agents, strings.ToLower(agentToken(val)))
			lastWasAgent = true
			continue
		case "allow", "disallow":
			if cur != nil && val != "" {
				cur.rules = append(cur.rules, robotsRule{allow: key == "allow", pattern: val})
			}
		case "crawl-delay", "crawldelay":
			if cur != nil {
				if s, err := strconv.ParseFloat(val, 64); err == nil && s >= 0 {
					d := maxCrawlDelay
					if s < maxCrawlDelay.Seconds() {
						d = time.Duration(s * float64(time.Second))
					}
					cur.crawlDelay = max(cur.crawlDelay, d)
				}
			}
		}
		lastWasAgent = false
	}
	pick := func(want string) *robotsRules {
		var r *robotsRules
		for _, g := range groups {
			for _, a := range g.agents {
				if a == want {
					if r == nil {
						r = &robotsRules{}
					}
					r.rules = append(r.rules, g.rules...)
					r.crawlDelay = max(r.crawlDelay, g.crawlDelay)
					break
				}
			}
		}
		return r
	}
	if r := pick(token); r != nil {
		return r
	}
	if r := pick("*"); r != nil {
		return r
	}
	return allowAll
}

// scanLines splits on \n, \r\n or a lone \r.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil // need more data to see whether \n follows
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// agentToken returns the product token of a User-Agent value:
// "quarry-datashelf/1.2 (+https://…)" → "quarry-datashelf".
func agentToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ \t("); i >= 0 {
		ua = ua[:i]
	}
	return ua
}

// allowed reports whether the URL path (with its query) may be fetched:
// the longest matching pattern wins, Allow wins a tie, no match allows.
func (r *robotsRules) allowed(u *url.URL) bool {
	if r.disallowAll {
		return false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if p == "/robots.txt" {
		return true
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if !robotsMatch(rule.pattern, p) {
			continue
		}
		n := len(rule.pattern)
		if n > best || (n == best && rule.allow) {
			best, allow = n, rule.allow
		}
	}
	return allow
}

// robotsMatch matches a robots.txt path pattern ("*" any sequence, a
// trailing "$" anchors the end; otherwise a prefix match) against path.
func robotsMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	pos := len(parts[0])
	if len(parts) == 1 {
		return !anchored || pos == len(path)
	}
	// Leftmost matching of the middle parts is optimal for "*"-only globs.
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(path[pos:], part)
		if i < 0 {
			return false
		}
		pos += i + len(part)
	}
	last := parts[len(parts)-1]
	if anchored {
		return len(path)-pos >= len(last) && strings.HasSuffix(path, last)
	}
	return strings.Contains(path[pos:], last)
}

// robotsEntry caches the rules of one origin. lock (a one-slot channel, so
// that waiting for it respects the ctx) serialises fetches: concurrent
// requests to a new host fetch robots.txt once. Fields after lock are
// guarded by it.
type robotsEntry struct {
	lock    chan struct{}
	rules   *robotsRules
	expires time.Time
}

// robotsFor returns the cached or freshly fetched rules of u's origin.
func (f *Fetcher) robotsFor(ctx context.Context, u *url.URL) (*robotsRules, error) {
	origin := u.Scheme + "://" + strings.ToLower(u.Host)
	f.mu.Lock()
	e := f.robots[origin]
	if e == nil {
		e = &robotsEntry{lock: make(chan struct{}, 1)}
		f.robots[origin] = e
	}
	f.mu.Unlock()

	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.lock }()
	if e.rules != nil && f.o.Now().Before(e.expires) {
		return e.rules, nil
	}
	rules, ttl, err := f.fetchRobots(ctx, &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"})
	if err != nil {
		return nil, err
	}
	e.rules, e.expires = rules, f.o.Now().Add(ttl)
	f.gateFor(u).setCrawlDelay(rules.crawlDelay)
	return rules, nil
}

// fetchRobots fetches robots.txt through the same SSRF-safe client and host
// gates as any page. When robots.txt cannot be fetched from the host at
// all (blocked address, DNS, connect or timeout errors, ctx done) it
// returns the error and nothing is cached. Every other outcome is a policy:
// 4xx → allow all; 5xx, 429, or a failed redirect hop → disallow all,
// re-fetched after robotsErrorTTL; more than 5 redirects → allow all.
func (f *Fetcher) fetchRobots(ctx context.Context, u *url.URL) (*robotsRules, time.Duration, error) {
	disallow := &robotsRules{disallowAll: true}
	for hop := 0; ; hop++ {
		if hop > 5 {
			return allowAll, robotsTTL, nil // RFC 9309: unreachable after 5 redirects → unavailable
		}
		if err := f.checkURL(u); err != nil {
			return disallow, robotsErrorTTL, nil
		}
		resp, err := f.hop(ctx, u, Request{Method: "GET"}, robotsMaxBytes)
		if err != nil {
			if hop == 0 || ctx.Err() != nil {
				// The host itself is blocked or unreachable: report that,
				// cache nothing (the page fetch would fail the same way).
				return nil, 0, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
			}
			return disallow, robotsErrorTTL, nil
		}
		switch {
		case isRedirect(resp.Status):
			next, err := redirectTarget(u, resp)
			if err != nil {
				return allowAll, robotsTTL, nil
			}
			u = next
			continue
		case resp.Status >= 200 && resp.Status < 300:
			return parseRobots(resp.Body, f.token), robotsTTL, nil
		case resp.Status == 429 || resp.Status >= 500:
			return disallow, robotsErrorTTL, nil
		default: // 4xx other than 429: no robots.txt, everything allowed
			return allowAll, robotsTTL, nil
		}
	}
}

var errNoLocation = errors.New("fetch: redirect without Location")
