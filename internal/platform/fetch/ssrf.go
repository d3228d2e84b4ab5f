package fetch

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; tests pass a map-backed fake so that no DNS traffic leaves the process.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blockedPrefixes are refused in addition to what netip.Addr's predicates
// (loopback, private, link-local, multicast, unspecified) already catch.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; 0.0.0.0 reaches localhost on Linux
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, includes broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible IPv6 (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local incl. cloud metadata (also IsLinkLocalUnicast)
	netip.MustParsePrefix("fd00:ec2::/32"),   // AWS IPv6 metadata (inside fc00::/7 too)
	netip.MustParsePrefix("255.255.255.255/32"),
}

// nat64, sixToFour and teredo embed an IPv4 address; that address is
// checked too (Teredo's client address is stored inverted, RFC 4380).
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// isPublic reports whether a is a globally routable unicast address, which
// every Policy allows.
func isPublic(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if a.Zone() != "" {
		return false // scoped addresses are local by definition
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return isPublic(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(a):
			return isPublic(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case teredo.Contains(a):
			return isPublic(netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
		}
	}
	return true
}

// checkURL validates what can be checked without the network: the scheme,
// a host, and the address when the host is an IP literal.
func (f *Fetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q", ErrNotHTTP, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("fetch: %q has no host", u.Redacted())
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return f.o.Policy.Check(netip.AddrPortFrom(a, urlPort(u)))
	}
	return nil
}

// urlPort returns u's port, or the default port of its scheme.
func urlPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// Validate checks that rawURL is an http(s) URL whose host resolves only to
// addresses the fetcher may connect to. Checks calls it when a monitor is
// created; Get re-checks at connect time regardless (DNS may change).
func (f *Fetcher) Validate(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if err := f.checkURL(u); err != nil {
		return err
	}
	_, err = f.dialer.Resolve(ctx, "tcp", u.Hostname(), urlPort(u))
	return err
}
