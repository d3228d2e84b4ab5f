package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies
// it; tests pass a map-backed fake so that no DNS traffic leaves the process.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blockedPrefixes are refused in addition to what netip.Addr's predicates
// (loopback, private, link-local, multicast, unspecified) already catch.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.0.0.0 reaches localhost on Linux
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, includes broadcast
	netip.MustParsePrefix("::/96"),          // IPv4-compatible IPv6 (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("169.254.0.0/16"), // link-local incl. cloud metadata (also IsLinkLocalUnicast)
	netip.MustParsePrefix("fd00:ec2::/32"),  // AWS IPv6 metadata (inside fc00::/7 too)
	netip.MustParsePrefix("255.255.255.255/32"),
}

// nat64 and sixToFour embed an IPv4 address; that address is checked too.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// isPublic reports whether a is a globally routable unicast address that a
// fetcher may connect to without AllowPrivate.
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
		}
	}
	return true
}

// addrAllowed applies the fetcher's policy to one address.
func (f *Fetcher) addrAllowed(a netip.Addr) bool {
	if f.o.AllowPrivate {
		return true
	}
	a = a.Unmap()
	for _, p := range f.o.AllowPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return isPublic(a)
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
	if a, err := netip.ParseAddr(host); err == nil && !f.addrAllowed(a) {
		return fmt.Errorf("%w: %s", ErrBlocked, a)
	}
	return nil
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
	_, err = f.resolve(ctx, "tcp", u.Hostname())
	return err
}

// resolve returns the addresses of host, refusing the whole set when any
// address is not allowed (a name that resolves to a public and a private
// address is treated as hostile).
func (f *Fetcher) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ipnet := "ip"
		switch network {
		case "tcp4":
			ipnet = "ip4"
		case "tcp6":
			ipnet = "ip6"
		}
		addrs, err = f.o.Resolver.LookupNetIP(ctx, ipnet, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	for _, a := range addrs {
		if !f.addrAllowed(a) {
			return nil, fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, a)
		}
	}
	return addrs, nil
}

// dialContext resolves addr itself, checks every address, then dials the
// checked IP literally, so the address that was checked is the address that
// is connected to (no second lookup for a rebinding DNS server to answer).
// The dialer's Control hook checks the socket's address once more.
func (f *Fetcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("fetch: bad port %q", portStr)
	}
	addrs, err := f.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := f.dialer.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control is the net.Dialer Control hook: the last line of defence, run on
// the exact address the socket is about to connect to.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrBlocked, address)
	}
	if !f.addrAllowed(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr())
	}
	if !strings.HasPrefix(network, "tcp") {
		return fmt.Errorf("%w: network %q", ErrBlocked, network)
	}
	return nil
}
