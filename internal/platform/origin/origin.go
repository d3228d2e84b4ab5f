// Package origin computes the public origin of a request: the scheme, host
// and optional base path ("https://browsers.example.com") through which the
// outside world reaches quarry, for the URLs quarry hands out (Wallcrawler's
// connectUrl and upload URLs).
//
// A configured public URL wins. Without one, the origin is the request's
// Host with "https" when the connection is TLS, else "http";
// X-Forwarded-Proto and X-Forwarded-Host are believed only when the
// request comes straight from a trusted proxy (its RemoteAddr is in one of
// the trusted CIDRs), never from anyone else.
package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Resolver computes request origins. The zero value and nil use the
// request's Host and TLS only. It is safe for concurrent use.
type Resolver struct {
	public  string
	trusted []netip.Prefix
}

// New returns a Resolver. publicURL, when not empty, is the origin of
// every request (see ParsePublicURL); trusted are the networks of the
// reverse proxies whose X-Forwarded-Proto and X-Forwarded-Host headers are
// believed.
func New(publicURL string, trusted []netip.Prefix) (*Resolver, error) {
	pub, err := ParsePublicURL(publicURL)
	if err != nil {
		return nil, err
	}
	return &Resolver{public: pub, trusted: append([]netip.Prefix(nil), trusted...)}, nil
}

// Parse returns a Resolver from the textual settings: a public URL (see
// ParsePublicURL) and comma-separated trusted proxies (see
// ParseTrustedProxies).
func Parse(publicURL, trustedProxies string) (*Resolver, error) {
	trusted, err := ParseTrustedProxies(trustedProxies)
	if err != nil {
		return nil, err
	}
	return New(publicURL, trusted)
}

// ParsePublicURL checks a public URL and returns it without a trailing
// slash: "" stays "" (none); otherwise it must be an absolute http or https
// URL with a host and no user, query or fragment. It may carry a base path
// ("https://example.com/quarry") when a proxy mounts quarry under one.
func ParsePublicURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Errorf("origin: public URL %q: %w", v, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("origin: public URL %q: want an http:// or https:// URL", v)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("origin: public URL %q: no host", v)
	case u.User != nil:
		return "", fmt.Errorf("origin: public URL %q: must not carry a user", v)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(v, "?#"):
		return "", fmt.Errorf("origin: public URL %q: must not carry a query or fragment", v)
	}
	return strings.TrimSuffix(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// ParseTrustedProxies parses comma-separated CIDRs ("10.0.0.0/8,
// fd00::/8") or single addresses ("127.0.0.1", taken as /32 or /128); ""
// is none.
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.Contains(p, "/") {
			pfx, err := netip.ParsePrefix(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("origin: trusted proxy %q: want a CIDR like 10.0.0.0/8 or an address", p))
				continue
			}
			out = append(out, pfx.Masked())
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("origin: trusted proxy %q: want a CIDR like 10.0.0.0/8 or an address", p))
			continue
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, errors.Join(errs...)
}

// PublicURL returns the configured public URL ("" when none).
func (r *Resolver) PublicURL() string {
	if r == nil {
		return ""
	}
	return r.public
}

// Trusted reports whether remoteAddr ("ip:port", as in
// http.Request.RemoteAddr) is inside a trusted proxy network.
func (r *Resolver) Trusted(remoteAddr string) bool {
	if r == nil || len(r.trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	var a netip.Addr
	if err == nil {
		a = ap.Addr()
	} else if a, err = netip.ParseAddr(remoteAddr); err != nil {
		return false
	}
	return r.TrustedAddr(a)
}

// TrustedAddr reports whether a is inside a trusted proxy network.
func (r *Resolver) TrustedAddr(a netip.Addr) bool {
	if r == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Origin returns the origin req was made through, without a trailing
// slash: the public URL when one is configured; else the scheme (https for
// TLS connections) and req.Host, replaced by the first value of
// X-Forwarded-Proto ("http" or "https") and X-Forwarded-Host (a valid
// host[:port]) only when req.RemoteAddr is a trusted proxy.
func (r *Resolver) Origin(req *http.Request) string {
	if pub := r.PublicURL(); pub != "" {
		return pub
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	host := req.Host
	if r.Trusted(req.RemoteAddr) {
		if p := strings.ToLower(first(req.Header.Get("X-Forwarded-Proto"))); p == "https" || p == "http" {
			scheme = p
		}
		if fh := first(req.Header.Get("X-Forwarded-Host")); validHost(fh) {
			host = fh
		}
	}
	return scheme + "://" + host
}

// first returns the first of comma-separated values (the one the
// outermost proxy set), trimmed.
func first(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.TrimSpace(v)
}

// validHost reports whether h is a plausible host[:port]: letters, digits,
// '.', '-', '_', ':' and the brackets of an IPv6 literal, nothing that
// could add a path, query, user or scheme.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
