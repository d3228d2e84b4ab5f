package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		spec, want, err string
	}{
		{spec: "", want: ""},
		{spec: "all", want: "all"},
		{spec: " 10.0.0.0/8 , 127.0.0.1:3000", want: "10.0.0.0/8,127.0.0.1:3000"},
		{spec: "192.168.1.10", want: "192.168.1.10/32"},
		{spec: "10.1.2.3/8", want: "10.0.0.0/8"},
		{spec: "[::1]:3000", want: "[::1]:3000"},
		{spec: "localhost:3000", want: "127.0.0.1:3000,[::1]:3000"},
		{spec: "example.com:80", err: "must be an IP address or localhost"},
		{spec: "127.0.0.1:0", err: "want a CIDR"},
		{spec: "127.0.0.1:x", err: "want a CIDR"},
		{spec: "10.0.0.0/33", err: "want a CIDR"},
		{spec: "all,10.0.0.0/8", err: "cannot be combined"},
	} {
		p, err := ParsePolicy(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), PolicyFlag) {
				t.Errorf("ParsePolicy(%q) = %v, want an error naming %s and containing %q", tc.spec, err, PolicyFlag, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePolicy(%q): %v", tc.spec, err)
			continue
		}
		if got := p.String(); got != tc.want {
			t.Errorf("ParsePolicy(%q).String() = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	ctx := context.Background()
	p, err := ParsePolicy("127.0.0.1:3000,10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for what, addr := range map[string]string{"quarry's API": "127.0.0.1:8080", "quarry's DynamoDB endpoint": "[::1]:8000", "PostgreSQL": "10.1.1.1:5432", "the egress proxy": ":9999"} {
		if err := p.Reserve(ctx, what, addr); err != nil {
			t.Fatal(err)
		}
	}
	all := AllowAllPolicy()
	if err := all.Reserve(ctx, "quarry's API", "0.0.0.0:8080"); err != nil {
		t.Fatal(err)
	}
	var someLocal netip.Addr
	for _, a := range interfaceAddrs() {
		if !a.IsLoopback() {
			someLocal = a
		}
	}
	for _, tc := range []struct {
		p      *Policy
		addr   string
		allow  bool
		reason string // substring of the refusal
	}{
		{p, "93.184.216.34:443", true, ""},
		{p, "[2606:2800:220:1:248:1893:25c8:1946]:443", true, ""},
		{p, "127.0.0.1:3000", true, ""},
		{p, "[::ffff:127.0.0.1]:3000", true, ""},
		{p, "127.0.0.1:3001", false, "loopback address (allow it with --allow-networks=127.0.0.1:3001)"},
		{p, "[::1]:3000", false, "loopback"},
		{p, "10.9.9.9:22", true, ""},
		{p, "192.168.0.1:80", false, "private address (allow it with --allow-networks="},
		{p, "169.254.169.254:80", false, "link-local address (not allowed by --allow-networks)"},
		{p, "0.0.0.0:3000", false, "not allowed"},
		{p, "10.1.1.1:5432", false, "PostgreSQL, which tenants may never reach"},
		{p, "10.1.1.1:5433", true, ""},
		// A listener on 127.0.0.1 or ::1 is refused under every loopback spelling.
		{p, "[::1]:8080", false, "quarry's API"},
		{p, "127.0.0.1:8000", false, "quarry's DynamoDB endpoint"},
		{p, "127.0.0.1:9999", false, "the egress proxy"},
		{all, "127.0.0.1:8081", true, ""},
		{all, "10.0.0.1:8080", true, ""},
		{all, "127.0.0.1:8080", false, "quarry's API"},
		{all, "127.0.0.2:8080", false, "quarry's API"},
	} {
		err := tc.p.Check(netip.MustParseAddrPort(tc.addr))
		if tc.allow {
			if err != nil {
				t.Errorf("Check(%s) under %q: %v, want allowed", tc.addr, tc.p, err)
			}
			continue
		}
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Check(%s) under %q = %v, want ErrBlocked saying %q", tc.addr, tc.p, err, tc.reason)
		}
	}
	if someLocal.IsValid() {
		if err := all.Check(netip.AddrPortFrom(someLocal, 8080)); !errors.Is(err, ErrBlocked) {
			t.Errorf("Check(%s:8080) with a wildcard listener on 8080 = %v, want ErrBlocked", someLocal, err)
		}
	}
}

func TestDialerRefusesRebinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p, err := ParsePolicy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	res := fakeResolver{
		"allowed.test": {"127.0.0.1"},
		"mixed.test":   {"93.184.216.34", "10.0.0.1"},
	}
	d := &Dialer{Policy: p, Resolver: res}
	ctx := context.Background()
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("allowed.test", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("dial of an allowed host:port: %v", err)
	}
	c.Close()
	if _, err := d.DialContext(ctx, "tcp", net.JoinHostPort("allowed.test", strconv.Itoa(port+1))); !errors.Is(err, ErrBlocked) {
		t.Errorf("dial of another port of the allowed address = %v, want ErrBlocked", err)
	}
	if _, err := d.DialContext(ctx, "tcp", "mixed.test:80"); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "mixed.test resolves to it") {
		t.Errorf("dial of a name with one private address = %v, want ErrBlocked naming the host", err)
	}
	if err := p.Reserve(ctx, "quarry's API", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DialContext(ctx, "tcp", net.JoinHostPort("allowed.test", strconv.Itoa(port))); !errors.Is(err, ErrBlocked) {
		t.Errorf("dial of a reserved address = %v, want ErrBlocked", err)
	}
}

// TestPolicyRefusesHostAddresses: the host's own interface addresses are
// refused like loopback, even when public, unless an allow entry names
// them; an address the host gains later is refused within
// hostAddrsMaxAge.
func TestPolicyRefusesHostAddresses(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("8.8.4.4"), netip.MustParseAddr("2606:4700::6810:84e5")}
	policy := func(spec string) *Policy {
		p, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		p.host.read = func() []netip.Addr { return own }
		return p
	}
	p := policy("")
	for _, addr := range []string{"8.8.4.4:80", "8.8.4.4:22", "[2606:4700::6810:84e5]:443", "[::ffff:8.8.4.4]:80"} {
		err := p.Check(netip.MustParseAddrPort(addr))
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "address of this host") || !strings.Contains(err.Error(), PolicyFlag) {
			t.Errorf("Check(%s), an address of the host = %v, want ErrBlocked saying so and naming %s", addr, err, PolicyFlag)
		}
	}
	if err := p.Check(netip.MustParseAddrPort("8.8.8.8:80")); err != nil {
		t.Errorf("Check(8.8.8.8:80), public and not the host's = %v", err)
	}
	if err := policy("8.8.4.4:80").Check(netip.MustParseAddrPort("8.8.4.4:80")); err != nil {
		t.Errorf("Check(8.8.4.4:80) allowed by name = %v", err)
	}
	if err := policy("8.8.4.4:80").Check(netip.MustParseAddrPort("8.8.4.4:81")); !errors.Is(err, ErrBlocked) {
		t.Errorf("Check(8.8.4.4:81), another port of the host = %v, want ErrBlocked", err)
	}
	// The host gains an address: it is the host's once read again.
	own = append(own, netip.MustParseAddr("1.1.1.1"))
	p.host.mu.Lock()
	p.host.readAt = p.host.readAt.Add(-2 * hostAddrsMaxAge)
	p.host.mu.Unlock()
	if err := p.Check(netip.MustParseAddrPort("1.1.1.1:80")); !errors.Is(err, ErrBlocked) {
		t.Errorf("Check(1.1.1.1:80) after the host gained it = %v, want ErrBlocked", err)
	}
}

// TestPolicyHostAddressesOfThisMachine reads this machine's interfaces: each
// of its addresses is refused by the default policy.
func TestPolicyHostAddressesOfThisMachine(t *testing.T) {
	p, err := ParsePolicy("")
	if err != nil {
		t.Fatal(err)
	}
	addrs := interfaceAddrs()
	if len(addrs) == 0 {
		t.Skip("no interface addresses readable here")
	}
	for _, a := range addrs {
		if err := p.Check(netip.AddrPortFrom(a, 80)); !errors.Is(err, ErrBlocked) {
			t.Errorf("Check(%s:80), an address of this machine = %v, want ErrBlocked", a, err)
		}
	}
}
