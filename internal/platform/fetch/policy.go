package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PolicyFlag is the command-line flag that sets the network policy; refusal
// messages name it so that an operator knows what to change.
const PolicyFlag = "--allow-networks"

// Policy is quarry's one network policy: it decides which addresses an
// outbound connection made on behalf of a tenant may reach — Checks
// targets, webhooks, the DataShelf crawler, and every connection of a
// Wallcrawler browser (through the egress proxy).
//
// Public unicast addresses are allowed, except the host's own: every
// address of its network interfaces counts as loopback does, since a
// service listening on all interfaces answers there. Loopback, private,
// link-local (cloud metadata), CGNAT, multicast, unspecified, the IANA
// special-purpose ranges that are not the internet (documentation,
// benchmarking, reserved) and the host's own addresses are refused unless
// an allow entry covers them: a CIDR (every port) or an address and port. Reserved addresses — quarry's own listeners and the
// backends it is configured with — are refused even when an allow entry
// covers them, because a tenant reaching them could read or change other
// tenants' data.
//
// The zero value is not usable; build one with ParsePolicy or NewPolicy. A
// Policy is safe for concurrent use; Reserve may be called while it is in
// use.
type Policy struct {
	all       bool
	prefixes  []netip.Prefix
	hostPorts []netip.AddrPort

	mu            sync.RWMutex
	reserved      map[netip.AddrPort]string // exact address → what listens there
	reservedPorts map[uint16]string         // wildcard listeners: this port on every local address

	// host holds the host's interface addresses, read again when older
	// than hostAddrsMaxAge, so that an address added later (DHCP, a new
	// interface) is the host's within that time.
	host hostAddrs
}

// hostAddrsMaxAge bounds how long a read of the host's interface
// addresses is used before it is read again.
const hostAddrsMaxAge = time.Second

// hostAddrs caches the host's interface addresses.
type hostAddrs struct {
	read func() []netip.Addr // interfaceAddrs; tests substitute it

	mu     sync.Mutex
	addrs  []netip.Addr
	readAt time.Time
}

// contains reports whether a is one of the host's interface addresses.
func (h *hostAddrs) contains(a netip.Addr) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); h.readAt.IsZero() || now.Sub(h.readAt) > hostAddrsMaxAge {
		read := h.read
		if read == nil {
			read = interfaceAddrs
		}
		h.addrs, h.readAt = read(), now
	}
	return slices.Contains(h.addrs, a)
}

// NewPolicy returns a policy that allows public addresses and, beyond them,
// the given prefixes and address:port pairs.
func NewPolicy(prefixes []netip.Prefix, hostPorts []netip.AddrPort) *Policy {
	p := &Policy{reserved: map[netip.AddrPort]string{}, reservedPorts: map[uint16]string{}}
	for _, pf := range prefixes {
		p.prefixes = append(p.prefixes, pf.Masked())
	}
	for _, hp := range hostPorts {
		p.hostPorts = append(p.hostPorts, netip.AddrPortFrom(hp.Addr().Unmap(), hp.Port()))
	}
	return p
}

// AllowAllPolicy returns a policy that allows every address except the
// reserved ones. Tests and trusted single-user setups use it ("all").
func AllowAllPolicy() *Policy {
	p := NewPolicy(nil, nil)
	p.all = true
	return p
}

// ParsePolicy parses the value of --allow-networks: empty (public addresses
// only), "all", or a comma-separated list of CIDRs ("10.0.0.0/8"), single
// addresses ("192.168.1.10", every port) and address:port pairs
// ("127.0.0.1:3000", "[::1]:3000", "localhost:3000"; localhost means
// 127.0.0.1 and ::1).
func ParsePolicy(spec string) (*Policy, error) {
	spec = strings.TrimSpace(spec)
	if spec == "all" {
		return AllowAllPolicy(), nil
	}
	var prefixes []netip.Prefix
	var hostPorts []netip.AddrPort
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if e == "all" {
			return nil, fmt.Errorf("fetch: %s: \"all\" cannot be combined with other entries", PolicyFlag)
		}
		if pf, err := netip.ParsePrefix(e); err == nil {
			prefixes = append(prefixes, pf)
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			prefixes = append(prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		host, port, err := net.SplitHostPort(e)
		n, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil || n == 0 {
			return nil, fmt.Errorf("fetch: %s entry %q: want a CIDR (10.0.0.0/8), an address, or host:port (127.0.0.1:3000)", PolicyFlag, e)
		}
		switch a, err := netip.ParseAddr(host); {
		case err == nil:
			hostPorts = append(hostPorts, netip.AddrPortFrom(a, uint16(n)))
		case strings.EqualFold(host, "localhost"):
			hostPorts = append(hostPorts, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(n)), netip.AddrPortFrom(netip.IPv6Loopback(), uint16(n)))
		default:
			return nil, fmt.Errorf("fetch: %s entry %q: the host must be an IP address or localhost (names can change what they point to)", PolicyFlag, e)
		}
	}
	return NewPolicy(prefixes, hostPorts), nil
}

// String renders the policy in the syntax ParsePolicy reads (without the
// reservations).
func (p *Policy) String() string {
	if p.all {
		return "all"
	}
	var parts []string
	for _, pf := range p.prefixes {
		parts = append(parts, pf.String())
	}
	for _, hp := range p.hostPorts {
		parts = append(parts, hp.String())
	}
	return strings.Join(parts, ",")
}

// Reserve refuses addr to every connection checked by p, even when an
// allow entry covers it; what names it in refusal messages ("quarry's
// DynamoDB endpoint"). addr is host:port; a host that is empty or an
// unspecified address (":8000", "0.0.0.0:8000", "[::]:8000") reserves the
// port on loopback and on every address of the host's interfaces; a host
// name is resolved now. "off" and "" are ignored.
func (p *Policy) Reserve(ctx context.Context, what, addr string) error {
	if addr == "" || addr == "off" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fetch: reserve %s %q: %w", what, addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		pn, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", port)
		if lerr != nil {
			return fmt.Errorf("fetch: reserve %s %q: bad port", what, addr)
		}
		n = uint64(pn)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if host != "" {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("fetch: reserve %s %q: %w", what, addr, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if host == "" || (len(addrs) == 1 && addrs[0].IsUnspecified()) {
		p.reservedPorts[uint16(n)] = what
		return nil
	}
	for _, a := range addrs {
		a = a.Unmap()
		p.reserved[netip.AddrPortFrom(a, uint16(n))] = what
		if a.IsLoopback() {
			// A listener on one loopback address is a listener of this
			// host: refuse the port on the other loopback spellings too.
			p.reserved[netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(n))] = what
			p.reserved[netip.AddrPortFrom(netip.IPv6Loopback(), uint16(n))] = what
		}
	}
	return nil
}

// Unreserve undoes Reserve of addr (host:port with an IP address host, as
// given to Reserve); wildcard and unknown addresses are ignored.
func (p *Policy) Unreserve(addr string) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return
	}
	a := ap.Addr().Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.reserved, netip.AddrPortFrom(a, ap.Port()))
	if a.IsLoopback() {
		delete(p.reserved, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()))
		delete(p.reserved, netip.AddrPortFrom(netip.IPv6Loopback(), ap.Port()))
	}
}

// interfaceAddrs returns the addresses of the host's network interfaces.
func interfaceAddrs() []netip.Addr {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if pf, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pf.Addr().Unmap())
		}
	}
	return out
}

// Check returns nil when a connection to ap is allowed, or an error
// wrapping ErrBlocked that says why and names the flag that would allow it.
func (p *Policy) Check(ap netip.AddrPort) error {
	a := ap.Addr().Unmap()
	ap = netip.AddrPortFrom(a, ap.Port())
	if what := p.reservation(ap); what != "" {
		return fmt.Errorf("%w: %s is %s, which tenants may never reach", ErrBlocked, ap, what)
	}
	if p.allowed(ap) {
		return nil
	}
	if a.IsLoopback() || a.IsPrivate() {
		return fmt.Errorf("%w: %s is a %s address (allow it with %s=%s)", ErrBlocked, ap, addrKind(a), PolicyFlag, ap)
	}
	if p.host.contains(a) {
		return fmt.Errorf("%w: %s is an address of this host (allow it with %s=%s)", ErrBlocked, ap, PolicyFlag, ap)
	}
	return fmt.Errorf("%w: %s is a %s address (not allowed by %s)", ErrBlocked, ap, addrKind(a), PolicyFlag)
}

// allowed applies the allow entries to ap, ignoring reservations.
func (p *Policy) allowed(ap netip.AddrPort) bool {
	if p.all || (isPublic(ap.Addr()) && !p.host.contains(ap.Addr())) {
		return true
	}
	for _, pf := range p.prefixes {
		if pf.Contains(ap.Addr()) {
			return true
		}
	}
	return slices.Contains(p.hostPorts, ap)
}

// reservation returns what is reserved at ap, or "".
func (p *Policy) reservation(ap netip.AddrPort) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if what := p.reserved[ap]; what != "" {
		return what
	}
	what := p.reservedPorts[ap.Port()]
	if what == "" {
		return ""
	}
	a := ap.Addr()
	if a.IsLoopback() || a.IsUnspecified() || p.host.contains(a) {
		return what
	}
	return ""
}

// addrKind names the class of a refused address for messages.
func addrKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case a.IsUnspecified():
		return "unspecified"
	}
	return "non-public"
}

// Dialer opens TCP connections only where its Policy allows: it resolves
// the host itself, checks every address (a name that resolves to any
// refused address is refused as a whole, so a rebinding DNS server gains
// nothing), connects to the checked address literally, and checks the
// socket's address once more just before connecting.
type Dialer struct {
	// Policy decides; required.
	Policy *Policy
	// Resolver looks up host names; default net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds a connect; default DefaultConnectTimeout.
	Timeout time.Duration
}

// DialContext connects to addr (host:port) over network ("tcp", "tcp4",
// "tcp6"); errors wrap ErrBlocked when the policy refuses.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("fetch: bad port %q", portStr)
	}
	addrs, err := d.Resolve(ctx, network, host, uint16(port))
	if err != nil {
		return nil, err
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	nd := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: d.control}
	var errs []error
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
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

// Resolve returns the addresses of host, refusing the whole set when the
// policy refuses any of them for port.
func (d *Dialer) Resolve(ctx context.Context, network, host string, port uint16) ([]netip.Addr, error) {
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
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err = r.LookupNetIP(ctx, ipnet, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	for _, a := range addrs {
		if err := d.Policy.Check(netip.AddrPortFrom(a, port)); err != nil {
			if a.String() != host {
				return nil, fmt.Errorf("%w (%s resolves to it)", err, host)
			}
			return nil, err
		}
	}
	return addrs, nil
}

// control is the net.Dialer Control hook: the last line of defence, run on
// the exact address the socket is about to connect to.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrBlocked, address)
	}
	if !strings.HasPrefix(network, "tcp") {
		return fmt.Errorf("%w: network %q", ErrBlocked, network)
	}
	return d.Policy.Check(ap)
}
