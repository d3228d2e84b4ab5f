package origin

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParsePublicURL(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"https://browsers.example.com", "https://browsers.example.com", ""},
		{"https://browsers.example.com/", "https://browsers.example.com", ""},
		{"http://10.0.0.5:8080", "http://10.0.0.5:8080", ""},
		{"https://example.com/quarry/", "https://example.com/quarry", ""},
		{"https://[::1]:8443", "https://[::1]:8443", ""},
		{"browsers.example.com", "", "want an http:// or https:// URL"},
		{"ftp://example.com", "", "want an http:// or https:// URL"},
		{"https://", "", "no host"},
		{"https://:443", "", "no host"},
		{"https://u:p@example.com", "", "must not carry a user"},
		{"https://example.com/?x=1", "", "must not carry a query"},
		{"https://example.com/?", "", "must not carry a query"},
		{"https://example.com/#top", "", "must not carry a query or fragment"},
		{"https://exa mple.com", "", "public URL"},
	} {
		got, err := ParsePublicURL(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePublicURL(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::ffff:127.0.0.1,10.1.2.3/16")
	want := []string{"10.0.0.0/8", "192.168.1.7/32", "fd00::/8", "127.0.0.1/32", "10.1.0.0/16"}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseTrustedProxies = %v, %v", got, err)
	}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, p, want[i])
		}
	}
	if got, err := ParseTrustedProxies(""); err != nil || len(got) != 0 {
		t.Fatalf("empty = %v, %v", got, err)
	}
	_, err = ParseTrustedProxies("10.0.0.0/33,proxy.local")
	if err == nil || !strings.Contains(err.Error(), `"10.0.0.0/33"`) || !strings.Contains(err.Error(), `"proxy.local"`) {
		t.Fatalf("bad entries: %v", err)
	}
}

func TestOrigin(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	behindProxy, err := New("", proxies)
	if err != nil {
		t.Fatal(err)
	}
	public, err := New("https://browsers.example.com/", proxies)
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
	for _, tt := range []struct {
		name   string
		r      *Resolver
		remote string
		tls    bool
		hdr    map[string]string
		want   string
	}{
		{"nil resolver ignores forwarded headers", nil, "10.1.2.3:5000", false, forged, "http://quarry.internal:8080"},
		{"nil resolver, TLS", nil, "10.1.2.3:5000", true, nil, "https://quarry.internal:8080"},
		{"untrusted client forging", behindProxy, "203.0.113.9:5000", false, forged, "http://quarry.internal:8080"},
		{"trusted proxy", behindProxy, "10.1.2.3:5000", false, forged, "https://evil.example"},
		{"trusted IPv6 proxy", behindProxy, "[::1]:5000", false, forged, "https://evil.example"},
		{"trusted proxy, IPv4-mapped", behindProxy, "[::ffff:10.0.0.1]:5000", false, forged, "https://evil.example"},
		{"trusted proxy, first of a list", behindProxy, "10.1.2.3:5000", false,
			map[string]string{"X-Forwarded-Host": "a.example:8443, b.example", "X-Forwarded-Proto": "HTTPS, http"}, "https://a.example:8443"},
		{"trusted proxy, junk host ignored", behindProxy, "10.1.2.3:5000", false,
			map[string]string{"X-Forwarded-Host": "evil.example/path?x", "X-Forwarded-Proto": "gopher"}, "http://quarry.internal:8080"},
		{"trusted proxy, no headers", behindProxy, "10.1.2.3:5000", true, nil, "https://quarry.internal:8080"},
		{"public URL wins over a trusted proxy", public, "10.1.2.3:5000", false, forged, "https://browsers.example.com"},
		{"public URL wins over an untrusted client", public, "203.0.113.9:5000", false, forged, "https://browsers.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "http://quarry.internal:8080/wallcrawler/v1/sessions", nil)
			req.RemoteAddr = tt.remote
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			if got := tt.r.Origin(req); got != tt.want {
				t.Fatalf("Origin = %q, want %q", got, tt.want)
			}
		})
	}
}
