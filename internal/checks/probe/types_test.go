package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// check asserts a result's status, condition and that its error contains
// errHas ("" : no error).
func check(t *testing.T, name string, res Result, status, condition, errHas string) {
	t.Helper()
	if res.Status != status || res.Condition != condition {
		t.Errorf("%s: status %s condition %s (error %q), want %s %s", name, res.Status, res.Condition, res.Error, status, condition)
	}
	if errHas == "" && res.Error != "" {
		t.Errorf("%s: error %q, want none", name, res.Error)
	}
	if errHas != "" && !strings.Contains(res.Error, errHas) {
		t.Errorf("%s: error %q, want it to contain %q", name, res.Error, errHas)
	}
	if res.Status == StatusDown && res.Condition == ConditionDown && !res.Alerting {
		t.Errorf("%s: DOWN but not alerting", name)
	}
}

func TestRunTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	p := testProber(t)
	strict := New(Options{}) // the default policy: loopback refused
	t.Cleanup(strict.Close)
	for _, tc := range []struct {
		name, url         string
		p                 *Prober
		status, condition string
		errHas            string
		permanent         bool
	}{
		{name: "listening", url: "tcp://" + ln.Addr().String(), p: p, status: StatusUp, condition: ConditionOK},
		{name: "closed port", url: "tcp://" + closedAddr, p: p, status: StatusDown, condition: ConditionDown, errHas: "connection refused"},
		{name: "refused by the policy", url: "tcp://" + ln.Addr().String(), p: strict, status: StatusDown,
			condition: ConditionInvalid, errHas: "address not allowed", permanent: true},
		{name: "unresolved", url: "tcp://nowhere.invalid:80", p: New(Options{Fetch: fetch.Options{Resolver: fakeResolver{}}}),
			status: StatusDown, condition: ConditionDown, errHas: "host not found"},
	} {
		res := tc.p.Run(context.Background(), Spec{Type: TypeTCP, URL: tc.url})
		check(t, tc.name, res, tc.status, tc.condition, tc.errHas)
		if res.Permanent != tc.permanent {
			t.Errorf("%s: permanent %v, want %v", tc.name, res.Permanent, tc.permanent)
		}
	}
}

func TestRunTLSCheck(t *testing.T) {
	now := time.Now()
	loop := []net.IP{net.IPv4(127, 0, 0, 1)}
	mk := func(days int, ips []net.IP, names []string) tls.Certificate {
		return selfSigned(t, names, ips, now.Add(-48*time.Hour), now.Add(time.Duration(days)*24*time.Hour))
	}
	valid := mk(90, loop, nil)
	soon := mk(5, loop, nil)
	expired := mk(-1, loop, nil)
	otherHost := mk(90, nil, []string{"other.example"})
	untrusted := mk(90, loop, nil)
	roots := x509.NewCertPool()
	for _, c := range []tls.Certificate{valid, soon, expired, otherHost} {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots.AddCert(leaf)
	}
	p := New(Options{Fetch: fetch.Options{AllowPrivate: true}, RootCAs: roots})
	t.Cleanup(p.Close)
	serve := func(c tls.Certificate) string {
		return "https://" + tlsServer(t, &tls.Config{Certificates: []tls.Certificate{c}}) + "/"
	}
	for _, tc := range []struct {
		name      string
		cert      tls.Certificate
		attrs     map[string]any
		status    string
		errHas    string
		expiresIn int // days, -99: not checked
	}{
		{name: "valid for 90 days", cert: valid, status: StatusUp, expiresIn: 90},
		{name: "expires in 5 days, default 14", cert: soon, status: StatusDown,
			errHas: "certificate expires in 4 days", expiresIn: 5},
		{name: "expires in 5 days, daysBeforeExpiry 3", cert: soon, attrs: map[string]any{"daysBeforeExpiry": float64(3)},
			status: StatusUp, expiresIn: 5},
		{name: "expired", cert: expired, status: StatusDown, errHas: "TLS error: x509: certificate has expired", expiresIn: -1},
		{name: "another host's certificate", cert: otherHost, status: StatusDown, errHas: "TLS error: x509: cannot validate certificate for 127.0.0.1"},
		{name: "unknown authority", cert: untrusted, status: StatusDown, errHas: "TLS error: x509: certificate signed by unknown authority"},
	} {
		res := p.Run(context.Background(), Spec{Type: TypeTLS, URL: serve(tc.cert), Attributes: tc.attrs})
		cond := ConditionOK
		if tc.status == StatusDown {
			cond = ConditionDown
		}
		check(t, tc.name, res, tc.status, cond, tc.errHas)
		leaf, _ := x509.ParseCertificate(tc.cert.Certificate[0])
		if !res.CertExpiresAt.Equal(leaf.NotAfter) {
			t.Errorf("%s: certExpiresAt %v, want %v", tc.name, res.CertExpiresAt, leaf.NotAfter)
		}
	}

	// A server that is not there is DOWN with the connection's reason.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	res := p.Run(context.Background(), Spec{Type: TypeTLS, URL: "https://" + addr + "/"})
	check(t, "closed port", res, StatusDown, ConditionDown, "connection refused")
}

func TestRunDNS(t *testing.T) {
	p := testProber(t)
	for _, tc := range []struct {
		name   string
		url    string
		attrs  map[string]any
		status string
		errHas string
	}{
		{name: "localhost resolves", url: "dns://localhost", status: StatusUp},
		{name: "expected answer", url: "dns://localhost", attrs: map[string]any{"recordType": "A", "expected": "127.0.0.1"}, status: StatusUp},
		{name: "unexpected answer", url: "dns://localhost", attrs: map[string]any{"expected": "10.9.9.9"},
			status: StatusDown, errHas: `"10.9.9.9" is not among the`},
		{name: "does not resolve", url: "dns://quarry-check.invalid", status: StatusDown, errHas: "DNS lookup failed: lookup quarry-check.invalid"},
	} {
		res := p.Run(context.Background(), Spec{Type: TypeDNS, URL: tc.url, Attributes: tc.attrs, Timeout: 20 * time.Second})
		cond := ConditionOK
		if tc.status == StatusDown {
			cond = ConditionDown
		}
		check(t, tc.name, res, tc.status, cond, tc.errHas)
		if strings.Contains(res.Error, "127.0.0.1") {
			t.Errorf("%s: the error shows an answer: %q", tc.name, res.Error)
		}
	}
}

// requestSite serves a JSON document, an endpoint that answers 200 only
// to the request it expects, and a slow page.
func requestSite(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":{"items":[{"status":"ok","count":1.0,"live":true,"tags":["a"]}]}}`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "not json") })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut || r.Header.Get("X-Api-Key") != "k1" || string(b) != `{"q":1}` {
			http.Error(w, fmt.Sprintf("got %s %q %q", r.Method, r.Header.Get("X-Api-Key"), b), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	mux.HandleFunc("/pause", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprint(w, "late")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRunAvailabilityRequestAndAssertions(t *testing.T) {
	base := requestSite(t)
	p := testProber(t)
	put := map[string]any{"method": "put", "headers": map[string]any{"x-api-key": "k1"}, "body": `{"q":1}`}
	for _, tc := range []struct {
		name   string
		path   string
		attrs  map[string]any
		status string
		errHas string
	}{
		{name: "method, headers and body", path: "/echo", attrs: put, status: StatusUp},
		{name: "without them", path: "/echo", status: StatusDown, errHas: "status 400"},
		{name: "HEAD", path: "/head", attrs: map[string]any{"method": "HEAD"}, status: StatusUp},
		{name: "json string", path: "/json", attrs: map[string]any{"jsonPath": "data.items.0.status", "expected": "ok"}, status: StatusUp},
		{name: "json number", path: "/json", attrs: map[string]any{"jsonPath": "data.items.0.count", "expected": float64(1)}, status: StatusUp},
		{name: "json boolean", path: "/json", attrs: map[string]any{"jsonPath": "data.items.0.live", "expected": true}, status: StatusUp},
		{name: "json path exists", path: "/json", attrs: map[string]any{"jsonPath": "data.items.0.tags"}, status: StatusUp},
		{name: "json mismatch", path: "/json", attrs: map[string]any{"jsonPath": "data.items.0.status", "expected": "down"},
			status: StatusDown, errHas: `jsonPath "data.items.0.status" is "ok", expected "down"`},
		{name: "json missing key", path: "/json", attrs: map[string]any{"jsonPath": "data.nope"},
			status: StatusDown, errHas: `jsonPath "data.nope": no key "nope" in data`},
		{name: "json index out of range", path: "/json", attrs: map[string]any{"jsonPath": "data.items.3"},
			status: StatusDown, errHas: "no index 3 in data.items (a list of 1)"},
		{name: "not json", path: "/text", attrs: map[string]any{"jsonPath": "a"}, status: StatusDown, errHas: "the response is not JSON"},
		{name: "slow", path: "/pause", attrs: map[string]any{"maxResponseMs": float64(100)}, status: StatusDown, errHas: "limit 100 ms"},
		{name: "slow within a generous limit", path: "/pause", attrs: map[string]any{"maxResponseMs": float64(600000)}, status: StatusUp},
	} {
		res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: base + tc.path, Attributes: tc.attrs})
		cond := ConditionOK
		if tc.status == StatusDown {
			cond = ConditionDown
		}
		check(t, tc.name, res, tc.status, cond, tc.errHas)
		if tc.name == "slow" && !strings.HasPrefix(res.Error, fmt.Sprintf("response took %d ms", res.ResponseTime)) {
			t.Errorf("slow: error %q does not give the response time %d ms", res.Error, res.ResponseTime)
		}
	}
}

func TestParseSpecNewAttributes(t *testing.T) {
	many := map[string]any{}
	for i := range MaxHeaders + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		typ    string
		url    string
		attrs  map[string]any
		errHas string // "": valid
	}{
		{"tcp", TypeTCP, "tcp://example.com:5432", nil, ""},
		{"tcp needs tcp://", TypeTCP, "https://example.com/", nil, "want a tcp://host:port URL for TCP checks"},
		{"tcp needs a port", TypeTCP, "tcp://example.com", nil, "with a port from 1 to 65535"},
		{"tcp path", TypeTCP, "tcp://example.com:22/x", nil, "nothing after the port"},
		{"tls", TypeTLS, "https://example.com/", map[string]any{"daysBeforeExpiry": float64(30)}, ""},
		{"tls needs https", TypeTLS, "http://example.com/", nil, "want an https:// URL for TLS checks"},
		{"tls days", TypeTLS, "https://example.com/", map[string]any{"daysBeforeExpiry": float64(1.5)}, "daysBeforeExpiry must be a whole number from 0 to 365"},
		{"tls days too many", TypeTLS, "https://example.com/", map[string]any{"daysBeforeExpiry": float64(400)}, "from 0 to 365, not 400"},
		{"dns", TypeDNS, "dns://example.com", map[string]any{"recordType": "mx", "expected": "mx.example.com"}, ""},
		{"dns needs dns://", TypeDNS, "https://example.com", nil, "want a dns://name URL"},
		{"dns no server", TypeDNS, "dns://10.0.0.53:53", nil, "a name only"},
		{"dns no address", TypeDNS, "dns://10.0.0.53", nil, "is an address, not a name"},
		{"dns record type", TypeDNS, "dns://example.com", map[string]any{"recordType": "SRV"}, "recordType must be one of A, AAAA, CNAME, MX, TXT, NS"},
		{"dns A expects an address", TypeDNS, "dns://example.com", map[string]any{"expected": "x"}, `"x" is not an address`},
		{"method", TypeAvailability, "https://example.com/", map[string]any{"method": "post", "body": "{}"}, ""},
		{"bad method", TypeAvailability, "https://example.com/", map[string]any{"method": "TRACE"}, `method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, not "TRACE"`},
		{"body with GET", TypeAvailability, "https://example.com/", map[string]any{"body": "x"}, "body needs attributes.method"},
		{"body too long", TypeAvailability, "https://example.com/", map[string]any{"method": "POST", "body": strings.Repeat("x", MaxBodyBytes+1)}, "body must be at most 16384 bytes"},
		{"too many headers", TypeAvailability, "https://example.com/", map[string]any{"headers": many}, "at most 20 headers (got 21)"},
		{"header not a string", TypeAvailability, "https://example.com/", map[string]any{"headers": map[string]any{"X-A": 1.0}}, `headers["X-A"] must be a string`},
		{"header name", TypeAvailability, "https://example.com/", map[string]any{"headers": map[string]any{"Bad Name": "v"}}, "is not a header name"},
		{"header Host", TypeAvailability, "https://example.com/", map[string]any{"headers": map[string]any{"host": "v"}}, "Host is set from the URL"},
		{"header CRLF", TypeAvailability, "https://example.com/", map[string]any{"headers": map[string]any{"X-A": "a\r\nB: c"}}, "control character"},
		{"header value too long", TypeAvailability, "https://example.com/", map[string]any{"headers": map[string]any{"X-A": strings.Repeat("v", MaxHeaderBytes+1)}}, "at most 1024 bytes"},
		{"maxResponseMs", TypeAvailability, "https://example.com/", map[string]any{"maxResponseMs": float64(0)}, "maxResponseMs must be a whole number from 1 to 600000"},
		{"jsonPath empty segment", TypeAvailability, "https://example.com/", map[string]any{"jsonPath": "a..b"}, "empty segment"},
		{"expected without jsonPath", TypeAvailability, "https://example.com/", map[string]any{"expected": "x"}, "expected needs attributes.jsonPath"},
		{"unknown type", "PING", "https://example.com/", nil, "unknown check type \"PING\" (want one of AVAILABILITY, EBAY, TCP, TLS, DNS)"},
	} {
		_, err := parseSpec(Spec{Type: tc.typ, URL: tc.url, Attributes: tc.attrs})
		switch {
		case tc.errHas == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: error %v, want ErrInvalid containing %q", tc.name, err, tc.errHas)
		}
	}
}

// TestValidateNewTypes: TCP and TLS targets go through the network
// policy when a check is created; a DNS check's name is not resolved.
func TestValidateNewTypes(t *testing.T) {
	p := New(Options{Fetch: fetch.Options{Resolver: fakeResolver{"db.example": {"10.0.0.5"}, "pub.example": {"93.184.216.34"}}}})
	t.Cleanup(p.Close)
	ctx := context.Background()
	for _, tc := range []struct {
		s       Spec
		blocked bool
	}{
		{Spec{Type: TypeTCP, URL: "tcp://db.example:5432"}, true},
		{Spec{Type: TypeTCP, URL: "tcp://127.0.0.1:22"}, true},
		{Spec{Type: TypeTCP, URL: "tcp://pub.example:22"}, false},
		{Spec{Type: TypeTLS, URL: "https://db.example/"}, true},
		{Spec{Type: TypeTLS, URL: "https://pub.example/"}, false},
		{Spec{Type: TypeDNS, URL: "dns://db.example"}, false},
		{Spec{Type: TypeDNS, URL: "dns://unknown.example"}, false},
	} {
		err := p.Validate(ctx, tc.s)
		if tc.blocked != (err != nil) || (err != nil && !errors.Is(err, fetch.ErrBlocked)) {
			t.Errorf("%s %s: %v, want blocked %v", tc.s.Type, tc.s.URL, err, tc.blocked)
		}
	}
}
