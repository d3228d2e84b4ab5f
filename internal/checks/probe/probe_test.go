package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// fakeResolver answers from a map; unknown names are not found. No DNS
// traffic leaves the test.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// testProber allows loopback: the test servers live there.
func testProber(t *testing.T) *Prober {
	t.Helper()
	p := New(Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(p.Close)
	return p
}

func ptr[T any](v T) *T { return &v }

// site serves the handlers the tests need.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Status</title><script>var hidden = "Scripted Needle";</script>
<style>.x{content:"styled needle"}</style></head>
<body><h1>Example   Domain</h1><p>All systems <b>operational</b>.</p></body></html>`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain <b>BOLD</b> text")
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil {
			http.Error(w, "bad code", http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d", code)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	// /hops/N redirects N times before answering 200.
	mux.HandleFunc("/hops/", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hops/"))
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, "arrived")
	})
	for _, name := range []string{"ebay_listing.html", "ebay_search.html"} {
		page, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page)
		})
	}
	mux.HandleFunc("/noprice.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><h1>This listing was ended by the seller</h1><div class="x-price-primary"><span class="ux-textspans">--</span></div></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestRunAvailability(t *testing.T) {
	srv := site(t)
	p := testProber(t)
	tests := []struct {
		name      string
		path      string
		attrs     map[string]any
		status    string
		http      int
		keyword   *bool
		alerting  bool
		condition string
		errHas    string
	}{
		{name: "up", path: "/ok", status: StatusUp, http: 200, condition: ConditionOK},
		{name: "204 is 2xx", path: "/status/204", status: StatusUp, http: 204, condition: ConditionOK},
		{name: "down 500", path: "/status/500", status: StatusDown, http: 500, alerting: true, condition: ConditionDown, errHas: "status 500"},
		{name: "down 404", path: "/status/404", status: StatusDown, http: 404, alerting: true, condition: ConditionDown, errHas: "status 404"},
		{name: "expected list has 404", path: "/status/404", attrs: map[string]any{"expectedStatus": []any{float64(200), float64(404)}},
			status: StatusUp, http: 404, condition: ConditionOK},
		{name: "expected number", path: "/status/418", attrs: map[string]any{"expectedStatus": float64(418)},
			status: StatusUp, http: 418, condition: ConditionOK},
		{name: "expected excludes 200", path: "/ok", attrs: map[string]any{"expectedStatus": []any{float64(201)}},
			status: StatusDown, http: 200, alerting: true, condition: ConditionDown, errHas: "status 200, expected 201"},
		{name: "expected list names every code", path: "/status/500", attrs: map[string]any{"expectedStatus": []any{float64(200), float64(301)}},
			status: StatusDown, http: 500, alerting: true, condition: ConditionDown, errHas: "status 500, expected 200 or 301"},
		{name: "keyword present", path: "/ok", attrs: map[string]any{"keyword": "operational"},
			status: StatusUp, http: 200, keyword: ptr(true), condition: ConditionOK},
		{name: "keyword case-insensitive across tags and spaces", path: "/ok", attrs: map[string]any{"keyword": "EXAMPLE domain"},
			status: StatusUp, http: 200, keyword: ptr(true), condition: ConditionOK},
		{name: "keyword absent is down", path: "/ok", attrs: map[string]any{"keyword": "maintenance"},
			status: StatusDown, http: 200, keyword: ptr(false), alerting: true, condition: ConditionKeywordMissing,
			errHas: `keyword "maintenance" not found`},
		{name: "keyword only in script is not text", path: "/ok", attrs: map[string]any{"keyword": "needle"},
			status: StatusDown, http: 200, keyword: ptr(false), alerting: true, condition: ConditionKeywordMissing,
			errHas: `keyword "needle" not found`},
		{name: "opposite and present is down", path: "/ok", attrs: map[string]any{"keyword": "Operational", "opposite": true},
			status: StatusDown, http: 200, keyword: ptr(true), alerting: true, condition: ConditionKeywordPresent,
			errHas: `keyword "Operational" found, expected absent`},
		{name: "opposite and absent", path: "/ok", attrs: map[string]any{"keyword": "error", "opposite": true},
			status: StatusUp, http: 200, keyword: ptr(false), condition: ConditionOK},
		{name: "plain text searched raw", path: "/text", attrs: map[string]any{"keyword": "<b>bold</b>"},
			status: StatusUp, http: 200, keyword: ptr(true), condition: ConditionOK},
		{name: "keyword on a down page", path: "/status/503", attrs: map[string]any{"keyword": "status"},
			status: StatusDown, http: 503, keyword: ptr(true), alerting: true, condition: ConditionDown, errHas: "status 503"},
		{name: "redirects followed", path: "/hops/5", status: StatusUp, http: 200, condition: ConditionOK},
		{name: "redirect loop", path: "/loop", status: StatusDown, alerting: true, condition: ConditionDown, errHas: "redirect"},
		{name: "six redirects", path: "/hops/6", status: StatusDown, alerting: true, condition: ConditionDown, errHas: "too many redirects"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: srv.URL + tc.path, Attributes: tc.attrs, Timeout: 5 * time.Second})
			if res.Status != tc.status || res.HTTPStatus != tc.http || res.Alerting != tc.alerting || res.Condition != tc.condition {
				t.Fatalf("got status=%s http=%d alerting=%v condition=%s err=%q; want %s %d %v %s",
					res.Status, res.HTTPStatus, res.Alerting, res.Condition, res.Error, tc.status, tc.http, tc.alerting, tc.condition)
			}
			if (res.KeywordFound == nil) != (tc.keyword == nil) || (tc.keyword != nil && *res.KeywordFound != *tc.keyword) {
				t.Fatalf("KeywordFound = %v, want %v", deref(res.KeywordFound), deref(tc.keyword))
			}
			if tc.errHas == "" && res.Error != "" || !strings.Contains(res.Error, tc.errHas) {
				t.Fatalf("Error = %q, want it to contain %q", res.Error, tc.errHas)
			}
			if res.Permanent || res.Unparseable || res.Price != nil {
				t.Fatalf("unexpected fields: %+v", res)
			}
			if res.ResponseTime < 0 {
				t.Fatalf("ResponseTime = %d", res.ResponseTime)
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRunTimeout(t *testing.T) {
	srv := site(t)
	p := testProber(t)
	start := time.Now()
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: srv.URL + "/slow", Timeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	if res.Status != StatusDown || !res.Alerting || !strings.Contains(res.Error, "timeout") || res.HTTPStatus != 0 {
		t.Fatalf("got %+v, want DOWN with a timeout error", res)
	}
	if elapsed > 3*time.Second {
		t.Fatalf("Run took %s with a 300ms timeout", elapsed)
	}
	if res.ResponseTime < 250 {
		t.Fatalf("ResponseTime = %dms, want about the timeout", res.ResponseTime)
	}
}

func TestRunCanceled(t *testing.T) {
	srv := site(t)
	p := testProber(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res := p.Run(ctx, Spec{Type: TypeAvailability, URL: srv.URL + "/slow", Timeout: 5 * time.Second})
	if res.Condition != ConditionCanceled || res.Alerting || res.Permanent {
		t.Fatalf("got %+v, want a canceled, non-alerting result", res)
	}
}

func TestRunConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := testProber(t)
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: "http://" + addr + "/", Timeout: 5 * time.Second})
	if res.Status != StatusDown || !res.Alerting || res.Condition != ConditionDown || res.Permanent ||
		!strings.Contains(res.Error, "connection refused") {
		t.Fatalf("got %+v, want DOWN connection refused", res)
	}
}

func TestRunTLSError(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	p := testProber(t)
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: srv.URL, Timeout: 5 * time.Second})
	if res.Status != StatusDown || !strings.Contains(res.Error, "TLS") || res.Permanent {
		t.Fatalf("got %+v, want DOWN with a TLS error (self-signed certificate)", res)
	}
}

func TestRunHugeBody(t *testing.T) {
	const total = 20 << 20
	written := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := []byte(strings.Repeat("<p>filler text filler text</p>\n", 1024))
		sent := 0
		defer func() { written <- sent }()
		for sent < total {
			n, err := w.Write(chunk)
			sent += n
			if err != nil {
				return // the client hung up after its cap: expected
			}
		}
		n, _ := fmt.Fprint(w, "<p>FARNEEDLE</p>")
		sent += n
	}))
	t.Cleanup(srv.Close)
	p := testProber(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: srv.URL,
		Attributes: map[string]any{"keyword": "FARNEEDLE"}, Timeout: 10 * time.Second})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	// The cut body is searched, not refused: the keyword beyond the cap is
	// missing, and the reason says how much was read.
	if res.Status != StatusDown || res.HTTPStatus != 200 || !strings.Contains(res.Error, `not found in the first 1048576 bytes`) {
		t.Fatalf("got %+v, want DOWN, keyword not found in the first 1 MiB", res)
	}
	if res.KeywordFound == nil || *res.KeywordFound || res.Condition != ConditionKeywordMissing {
		t.Fatalf("keyword beyond the 1 MiB cap found: %+v", res)
	}
	// Allocations (cumulative, not peak) are dominated by the HTML parse
	// of the 1 MiB that was kept (about 33,000 elements): about 21 MiB.
	// Reading and parsing the whole 20 MiB would allocate hundreds.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB", float64(alloc)/(1<<20))
	if alloc > 64<<20 {
		t.Fatalf("allocated %d MiB for a 1 MiB cap", alloc>>20)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("took %s", elapsed)
	}
	// The prober hung up: the server could not send everything (socket
	// buffers absorb a few MiB at most).
	select {
	case n := <-written:
		t.Logf("server wrote %.1f MiB before the hang-up", float64(n)/(1<<20))
		if n >= total {
			t.Fatalf("server wrote the whole %d bytes", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server handler still writing 5s after Run returned")
	}
}

func TestRunEbay(t *testing.T) {
	srv := site(t)
	p := testProber(t)
	tests := []struct {
		name      string
		path      string
		threshold float64
		price     float64
		shipping  *float64
		currency  string
		alerting  bool
	}{
		{"listing above threshold", "/ebay_listing.html", 1000, 1234.56, ptr(24.95), "USD", false},
		{"listing below threshold", "/ebay_listing.html", 1300, 1234.56, ptr(24.95), "USD", true},
		{"listing threshold equals total", "/ebay_listing.html", 1259.51, 1234.56, ptr(24.95), "USD", false},
		{"search lowest total", "/ebay_search.html", 30, 25, ptr(12.0), "USD", false},
		{"search below threshold", "/ebay_search.html", 37.5, 25, ptr(12.0), "USD", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := p.Run(context.Background(), Spec{Type: TypeEbay, URL: srv.URL + tc.path,
				Attributes: map[string]any{"threshold": tc.threshold}, Timeout: 5 * time.Second})
			if res.Status != StatusUp || res.Error != "" || res.Unparseable || res.HTTPStatus != 200 {
				t.Fatalf("got %+v, want UP", res)
			}
			if res.Price == nil || *res.Price != tc.price || res.Currency != tc.currency {
				t.Fatalf("price = %v %s, want %v %s", deref(res.Price), res.Currency, tc.price, tc.currency)
			}
			if (res.Shipping == nil) != (tc.shipping == nil) || (tc.shipping != nil && *res.Shipping != *tc.shipping) {
				t.Fatalf("shipping = %v, want %v", deref(res.Shipping), deref(tc.shipping))
			}
			wantCond := ConditionOK
			if tc.alerting {
				wantCond = ConditionPriceBelowThreshold
			}
			if res.Alerting != tc.alerting || res.Condition != wantCond {
				t.Fatalf("alerting=%v condition=%s, want %v %s", res.Alerting, res.Condition, tc.alerting, wantCond)
			}
		})
	}
}

func TestRunEbayFailures(t *testing.T) {
	srv := site(t)
	p := testProber(t)
	tests := []struct {
		name        string
		path        string
		condition   string
		unparseable bool
		errHas      string
	}{
		{"no price", "/noprice.html", ConditionUnparseable, true, "no price"},
		{"not html", "/text", ConditionUnparseable, true, "not HTML"},
		{"gone", "/status/404", ConditionDown, false, "status 404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := p.Run(context.Background(), Spec{Type: TypeEbay, URL: srv.URL + tc.path,
				Attributes: map[string]any{"threshold": float64(100)}, Timeout: 5 * time.Second})
			if res.Status != StatusDown || res.Alerting || res.Condition != tc.condition ||
				res.Unparseable != tc.unparseable || res.Permanent || res.Price != nil || !strings.Contains(res.Error, tc.errHas) {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

// TestSSRF runs with the production policy: no private addresses.
func TestSSRF(t *testing.T) {
	srv := site(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	stub := New(Options{Fetch: fetch.Options{Resolver: fakeResolver{"evil.test": {"127.0.0.1"}, "mixed.test": {"93.184.215.14", "10.1.2.3"}}}})
	t.Cleanup(stub.Close)
	real := New(Options{}) // default resolver: "localhost" comes from /etc/hosts
	t.Cleanup(real.Close)
	tests := []struct {
		name string
		p    *Prober
		url  string
	}{
		{"metadata", stub, "http://169.254.169.254/latest/meta-data/"},
		{"loopback v4", stub, fmt.Sprintf("http://127.0.0.1:%d/ok", port)},
		{"private", stub, "http://10.0.0.1/"},
		{"loopback v6", stub, fmt.Sprintf("http://[::1]:%d/ok", port)},
		{"v4-mapped loopback", stub, fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/ok", port)},
		{"name resolving to loopback", stub, fmt.Sprintf("http://evil.test:%d/ok", port)},
		{"name resolving to public and private", stub, "http://mixed.test/"},
		{"localhost", real, fmt.Sprintf("http://localhost:%d/ok", port)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, typ := range []string{TypeAvailability, TypeEbay} {
				s := Spec{Type: typ, URL: tc.url, Attributes: map[string]any{"threshold": float64(10)}, Timeout: 5 * time.Second}
				err := tc.p.Validate(context.Background(), s)
				if !errors.Is(err, ErrInvalid) || !errors.Is(err, fetch.ErrBlocked) {
					t.Fatalf("Validate(%s) = %v, want ErrInvalid and fetch.ErrBlocked", tc.url, err)
				}
				res := tc.p.Run(context.Background(), s)
				if !res.Permanent || res.Status != StatusDown || res.Alerting || res.Condition != ConditionInvalid || res.HTTPStatus != 0 {
					t.Fatalf("Run(%s) = %+v, want a permanent refusal", tc.url, res)
				}
			}
		})
	}
	// The same server is reachable when allowed explicitly.
	allowed := New(Options{Fetch: fetch.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolver: fakeResolver{"evil.test": {"127.0.0.1"}}}})
	t.Cleanup(allowed.Close)
	s := Spec{Type: TypeAvailability, URL: fmt.Sprintf("http://evil.test:%d/ok", port)}
	if err := allowed.Validate(context.Background(), s); err != nil {
		t.Fatalf("Validate with AllowPrefixes: %v", err)
	}
	if res := allowed.Run(context.Background(), s); res.Status != StatusUp {
		t.Fatalf("Run with AllowPrefixes: %+v", res)
	}
}

// TestRedirectToBlocked: a public-looking first hop that redirects to the
// metadata address is refused at the redirect.
func TestRedirectToBlocked(t *testing.T) {
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	t.Cleanup(redir.Close)
	port := redir.Listener.Addr().(*net.TCPAddr).Port
	p := New(Options{Fetch: fetch.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	t.Cleanup(p.Close)
	res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: fmt.Sprintf("http://127.0.0.1:%d/", port), Timeout: 5 * time.Second})
	if !res.Permanent || res.Condition != ConditionInvalid {
		t.Fatalf("got %+v, want a permanent refusal", res)
	}
}

func TestValidate(t *testing.T) {
	p := New(Options{Fetch: fetch.Options{Resolver: fakeResolver{"example.com": {"93.184.215.14"}}}})
	t.Cleanup(p.Close)
	const good = "https://example.com/page"
	tests := []struct {
		name  string
		spec  Spec
		valid bool
	}{
		{"availability", Spec{Type: TypeAvailability, URL: good}, true},
		{"all attributes", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{
			"keyword": "Example", "opposite": true, "expectedStatus": []any{float64(200), float64(301)}, "other": "ignored"}}, true},
		{"expectedStatus number", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": float64(204)}}, true},
		{"ebay", Spec{Type: TypeEbay, URL: "https://example.com/itm/123", Attributes: map[string]any{"threshold": 49.99}}, true},
		{"ebay int threshold", Spec{Type: TypeEbay, URL: good, Attributes: map[string]any{"threshold": 50}}, true},
		{"unknown type", Spec{Type: "PAGE_DIFF", URL: good}, false},
		{"empty type", Spec{URL: good}, false},
		{"ftp", Spec{Type: TypeAvailability, URL: "ftp://example.com/file"}, false},
		{"file", Spec{Type: TypeAvailability, URL: "file:///etc/passwd"}, false},
		{"javascript", Spec{Type: TypeAvailability, URL: "javascript:alert(1)"}, false},
		{"relative", Spec{Type: TypeAvailability, URL: "/just/a/path"}, false},
		{"no host", Spec{Type: TypeAvailability, URL: "http:///path"}, false},
		{"empty url", Spec{Type: TypeAvailability, URL: ""}, false},
		{"unparsable url", Spec{Type: TypeAvailability, URL: "http://exa mple.com/%zz"}, false},
		{"negative timeout", Spec{Type: TypeAvailability, URL: good, Timeout: -time.Second}, false},
		{"keyword not string", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"keyword": float64(3)}}, false},
		{"keyword blank", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"keyword": "  "}}, false},
		{"opposite not bool", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"opposite": "true"}}, false},
		{"expectedStatus string", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": "200"}}, false},
		{"expectedStatus list with string", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": []any{float64(200), "404"}}}, false},
		{"expectedStatus out of range", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": float64(99)}}, false},
		{"expectedStatus fraction", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": 200.5}}, false},
		{"expectedStatus empty list", Spec{Type: TypeAvailability, URL: good, Attributes: map[string]any{"expectedStatus": []any{}}}, false},
		{"ebay without threshold", Spec{Type: TypeEbay, URL: good}, false},
		{"ebay zero threshold", Spec{Type: TypeEbay, URL: good, Attributes: map[string]any{"threshold": float64(0)}}, false},
		{"ebay negative threshold", Spec{Type: TypeEbay, URL: good, Attributes: map[string]any{"threshold": float64(-5)}}, false},
		{"ebay string threshold", Spec{Type: TypeEbay, URL: good, Attributes: map[string]any{"threshold": "50"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.spec)
			if tc.valid != (err == nil) {
				t.Fatalf("Validate = %v, want valid=%v", err, tc.valid)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, does not wrap ErrInvalid", err)
			}
		})
	}
}

// TestRunPermanent: specs Validate would refuse are permanent failures at
// run time too, without touching the network.
func TestRunPermanent(t *testing.T) {
	p := testProber(t) // even with AllowPrivate
	tests := []Spec{
		{Type: TypeAvailability, URL: "ftp://example.com/file"},
		{Type: TypeAvailability, URL: "file:///etc/passwd"},
		{Type: TypeAvailability, URL: "not a url"},
		{Type: TypeAvailability, URL: "http:///nohost"},
		{Type: "NOPE", URL: "https://example.com/"},
		{Type: TypeEbay, URL: "https://example.com/"},
		{Type: TypeAvailability, URL: "https://example.com/", Attributes: map[string]any{"keyword": true}},
	}
	for _, s := range tests {
		t.Run(s.Type+" "+s.URL, func(t *testing.T) {
			res := p.Run(context.Background(), s)
			if !res.Permanent || res.Status != StatusDown || res.Alerting || res.Error == "" || res.Condition != ConditionInvalid {
				t.Fatalf("got %+v, want a permanent failure", res)
			}
		})
	}
}

func TestResponseTimeUsesClock(t *testing.T) {
	srv := site(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	calls := 0
	clock := func() time.Time { // first call: start; later calls: 1234 ms on
		calls++
		if calls == 1 {
			return t0
		}
		return t0.Add(1234 * time.Millisecond)
	}
	p := New(Options{Fetch: fetch.Options{AllowPrivate: true}, Now: clock})
	t.Cleanup(p.Close)
	for _, path := range []string{"/ok", "/status/500"} {
		calls = 0
		res := p.Run(context.Background(), Spec{Type: TypeAvailability, URL: srv.URL + path})
		if res.ResponseTime != 1234 {
			t.Fatalf("%s: ResponseTime = %d, want 1234", path, res.ResponseTime)
		}
	}
}

// TestUnresolvedHostIsAcceptedAndRunsDown: a well-formed URL whose host
// does not resolve now is not invalid (Validate answers ErrUnresolved, not
// ErrInvalid: it may resolve later); its runs are DOWN with the DNS
// reason, not permanent failures. Refused literal addresses and names
// resolving to refused addresses stay invalid.
func TestUnresolvedHostIsAcceptedAndRunsDown(t *testing.T) {
	p := New(Options{Fetch: fetch.Options{Resolver: fakeResolver{"inside.test": {"10.1.2.3"}}}})
	t.Cleanup(p.Close)
	ctx := context.Background()
	for _, typ := range []string{TypeAvailability, TypeEbay} {
		s := Spec{Type: typ, URL: "https://nowhere.test/itm/1", Attributes: map[string]any{"threshold": float64(10)}, Timeout: 5 * time.Second}
		err := p.Validate(ctx, s)
		if !errors.Is(err, ErrUnresolved) || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "nowhere.test") {
			t.Errorf("%s: Validate = %v, want ErrUnresolved naming the host", typ, err)
		}
		res := p.Run(ctx, s)
		if res.Status != StatusDown || res.Permanent || res.Condition != ConditionDown || !strings.HasPrefix(res.Error, "host not found: ") {
			t.Errorf("%s: run %+v, want DOWN, host not found, not permanent", typ, res)
		}
	}
	for _, u := range []string{"http://10.0.0.1/", "http://inside.test/", "http://169.254.169.254/"} {
		if err := p.Validate(ctx, Spec{Type: TypeAvailability, URL: u}); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnresolved) {
			t.Errorf("Validate(%s) = %v, want ErrInvalid", u, err)
		}
	}
}
