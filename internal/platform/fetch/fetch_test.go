package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a map; unknown names fail. No DNS traffic.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (fake)", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// fakeClock's Sleep records the wait and advances the clock instantly.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// server starts an httptest server on loopback and counts requests per path.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

func ok(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }

func TestIsPublic(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", false}, {"127.255.0.9", false}, {"::1", false},
		{"10.0.0.1", false}, {"172.16.5.4", false}, {"172.31.255.255", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"fd00:ec2::254", false},
		{"0.0.0.0", false}, {"::", false}, {"0.1.2.3", false}, {"224.0.0.1", false}, {"ff02::1", false},
		{"100.64.0.1", false}, {"100.127.255.255", false}, {"255.255.255.255", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:169.254.169.254", false}, {"::ffff:10.0.0.1", false},
		{"::127.0.0.1", false}, {"64:ff9b::a9fe:a9fe", false}, {"2002:7f00:1::", false},
		{"8.8.8.8", true}, {"93.184.216.34", true}, {"172.32.0.1", true}, {"100.128.0.1", true},
		{"2606:4700::1111", true}, {"::ffff:8.8.8.8", true}, {"64:ff9b::808:808", true},
		// The IANA special-purpose ranges that are not the internet.
		{"192.0.2.10", false}, {"198.51.100.7", false}, {"203.0.113.9", false}, {"198.18.0.1", false},
		{"192.0.0.8", false}, {"240.0.0.1", false}, {"2001:db8::1", false},
		{"::ffff:203.0.113.9", false}, {"64:ff9b::c000:20a", false}, {"2002:c633:6407::", false},
		// Teredo: the client's IPv4 address is stored inverted.
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false}, // client 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true},  // client 8.8.8.8
		{"192.0.1.255", true}, {"198.51.101.1", true}, {"203.0.114.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := isPublic(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Fatalf("isPublic(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

// refusingDial fails the test if any connection is attempted.
func TestSSRFRefusals(t *testing.T) {
	srv := newServer(t, ok)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := fakeResolver{
		"evil.test":    {"127.0.0.1"},
		"rebind.test":  {"93.184.216.34", "127.0.0.1"}, // one public, one loopback
		"meta.test":    {"169.254.169.254"},
		"mapped.test":  {"::ffff:127.0.0.1"},
		"private.test": {"10.0.0.1"},
	}
	tests := []struct {
		name string
		url  string
		want error
	}{
		{"loopback v4", fmt.Sprintf("http://127.0.0.1:%d/", port), ErrBlocked},
		{"loopback v6", fmt.Sprintf("http://[::1]:%d/", port), ErrBlocked},
		{"private", "http://10.0.0.1/", ErrBlocked},
		{"metadata", "http://169.254.169.254/latest/meta-data/", ErrBlocked},
		{"metadata mapped v6", "http://[::ffff:a9fe:a9fe]/", ErrBlocked},
		{"cgnat", "http://100.64.0.1/", ErrBlocked},
		{"unspecified", fmt.Sprintf("http://0.0.0.0:%d/", port), ErrBlocked},
		{"name resolving to loopback", fmt.Sprintf("http://evil.test:%d/", port), ErrBlocked},
		{"name resolving to public and loopback", fmt.Sprintf("http://rebind.test:%d/", port), ErrBlocked},
		{"name resolving to metadata", "http://meta.test/", ErrBlocked},
		{"name resolving to mapped loopback", fmt.Sprintf("http://mapped.test:%d/", port), ErrBlocked},
		{"name resolving to private", "https://private.test/", ErrBlocked},
		{"file scheme", "file:///etc/passwd", ErrNotHTTP},
		{"gopher scheme", "gopher://127.0.0.1/", ErrNotHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, robots := range []bool{false, true} {
				f := New(Options{Resolver: resolver, ObeyRobots: robots, ConnectTimeout: time.Second, Timeout: 2 * time.Second})
				_, err := f.Get(context.Background(), tt.url)
				if !errors.Is(err, tt.want) {
					t.Fatalf("robots=%v: err = %v, want %v", robots, err, tt.want)
				}
				if err := f.Validate(context.Background(), tt.url); !errors.Is(err, tt.want) {
					t.Fatalf("Validate: err = %v, want %v", err, tt.want)
				}
			}
		})
	}
	if n := srv.Total(); n != 0 {
		t.Fatalf("server received %d requests; refusals must happen before connecting", n)
	}
}

// TestControlHook checks the last line of defence on its own: even a
// dial that bypassed resolve would be refused on the socket's address.
func TestControlHook(t *testing.T) {
	f := New(Options{})
	for _, addr := range []string{"127.0.0.1:80", "[::1]:80", "169.254.169.254:80", "[::ffff:10.0.0.1]:443"} {
		if err := f.dialer.control("tcp4", addr, nil); !errors.Is(err, ErrBlocked) {
			t.Errorf("control(%s) = %v, want ErrBlocked", addr, err)
		}
	}
	if err := f.dialer.control("tcp4", "93.184.216.34:80", nil); err != nil {
		t.Errorf("control(public) = %v", err)
	}
}

func TestAllowedByPolicy(t *testing.T) {
	srv := newServer(t, ok)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := fakeResolver{"site.test": {"127.0.0.1"}}
	tests := []struct {
		name string
		o    Options
		url  string
	}{
		{"AllowPrivate literal", Options{AllowPrivate: true}, srv.URL},
		{"AllowPrivate name", Options{AllowPrivate: true, Resolver: resolver}, fmt.Sprintf("http://site.test:%d/", port)},
		{"AllowPrefixes", Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Resolver: resolver},
			fmt.Sprintf("http://site.test:%d/", port)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := New(tt.o).Get(context.Background(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 200 || string(resp.Body) != "ok" {
				t.Fatalf("got %d %q", resp.Status, resp.Body)
			}
		})
	}
}

func TestUserAgent(t *testing.T) {
	var got atomic.Value
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { got.Store(r.UserAgent()) })
	for _, tt := range []struct{ ua, want string }{{"", "quarry/dev"}, {"quarry-datashelf/1.0", "quarry-datashelf/1.0"}} {
		if _, err := New(Options{AllowPrefixes: loopbackOnly, UserAgent: tt.ua}).Get(context.Background(), srv.URL); err != nil {
			t.Fatal(err)
		}
		if g := got.Load(); g != tt.want {
			t.Errorf("User-Agent = %v, want %s", g, tt.want)
		}
	}
}

func TestRedirects(t *testing.T) {
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/chain":
			n := len(r.URL.Query().Get("n"))
			if n < 5 {
				http.Redirect(w, r, "/chain?n="+strings.Repeat("x", n+1), http.StatusMovedPermanently)
				return
			}
			fmt.Fprint(w, "end")
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "http://10.0.0.1/admin", http.StatusTemporaryRedirect)
		case "/to-evil":
			http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "evil.test", 1)+"/final", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "final")
		default:
			http.NotFound(w, r)
		}
	})
	// 127.0.0.1 is allowed explicitly so that the first hop connects while
	// every other private address stays refused.
	allowOne := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	resolver := fakeResolver{"evil.test": {"127.0.0.2"}}
	tests := []struct {
		name      string
		path      string
		want      error
		wantBody  string
		wantHits  string
		wantCount int
	}{
		{name: "loop exceeds 5", path: "/loop", want: ErrTooManyRedirects, wantHits: "/loop", wantCount: 6},
		{name: "5 redirects followed", path: "/chain", wantBody: "end", wantHits: "/chain", wantCount: 6},
		{name: "to metadata", path: "/to-metadata", want: ErrBlocked},
		{name: "to private", path: "/to-private", want: ErrBlocked},
		{name: "to name resolving to loopback", path: "/to-evil", want: ErrBlocked, wantHits: "/final", wantCount: 0},
		{name: "to file", path: "/to-file", want: ErrNotHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Hits(tt.wantHits)
			f := New(Options{AllowPrefixes: allowOne, Resolver: resolver})
			resp, err := f.Get(context.Background(), srv.URL+tt.path)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if string(resp.Body) != tt.wantBody || !strings.HasSuffix(resp.URL, "/chain?n=xxxxx") {
					t.Fatalf("got %q from %s", resp.Body, resp.URL)
				}
			}
			if tt.wantHits != "" {
				if got := srv.Hits(tt.wantHits) - before; got != tt.wantCount {
					t.Fatalf("%s hit %d times, want %d", tt.wantHits, got, tt.wantCount)
				}
			}
		})
	}
	// MaxRedirects < 0: the 3xx itself is returned.
	resp, err := New(Options{AllowPrefixes: loopbackOnly, MaxRedirects: -1}).Get(context.Background(), srv.URL+"/loop")
	if err != nil || resp.Status != http.StatusFound || resp.Header.Get("Location") != "/loop" {
		t.Fatalf("MaxRedirects -1: resp %+v err %v", resp, err)
	}
}

func TestRetryAfter(t *testing.T) {
	clock := newFakeClock()
	var calls atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Path {
		case "/seconds":
			if n <= 2 {
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
		case "/date":
			if n <= 1 {
				w.Header().Set("Retry-After", clock.Now().Add(10*time.Second).Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		case "/forever":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case "/too-long":
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case "/no-header":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	})
	tests := []struct {
		path       string
		wantStatus int
		wantCalls  int32
		wantSleeps []time.Duration
	}{
		{"/seconds", 200, 3, []time.Duration{3 * time.Second, 3 * time.Second}},
		{"/date", 200, 2, []time.Duration{10 * time.Second}},
		{"/forever", 429, 3, []time.Duration{time.Second, time.Second}}, // MaxRetries 2
		{"/too-long", 429, 1, nil},
		{"/no-header", 503, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			calls.Store(0)
			clock.mu.Lock()
			clock.sleeps = nil
			clock.mu.Unlock()
			f := New(Options{AllowPrefixes: loopbackOnly, Now: clock.Now, Sleep: clock.Sleep})
			resp, err := f.Get(context.Background(), srv.URL+tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.wantStatus || calls.Load() != tt.wantCalls {
				t.Fatalf("status %d after %d calls, want %d after %d", resp.Status, calls.Load(), tt.wantStatus, tt.wantCalls)
			}
			if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tt.wantSleeps) {
				t.Fatalf("sleeps %v, want %v", got, tt.wantSleeps)
			}
		})
	}

	// The pause applies to other requests to the same host, bounded by
	// MaxRetryAfter.
	clock.sleeps = nil
	f := New(Options{AllowPrefixes: loopbackOnly, Now: clock.Now, Sleep: clock.Sleep})
	if _, err := f.Get(context.Background(), srv.URL+"/too-long"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(context.Background(), srv.URL+"/other"); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint([]time.Duration{DefaultMaxRetryAfter}) {
		t.Fatalf("sleeps %v, want [%v]", got, DefaultMaxRetryAfter)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {"0", 0, true}, {"120", 2 * time.Minute, true}, {"-1", 0, false}, {"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"99999999999", 24 * time.Hour, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.v != "" {
			h.Set("Retry-After", tt.v)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPerHostConcurrency(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			var cur, peak atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				n := cur.Add(1)
				defer cur.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
				fmt.Fprint(w, "ok")
			})
			f := New(Options{AllowPrefixes: loopbackOnly, PerHostConcurrency: limit})
			var wg sync.WaitGroup
			errs := make(chan error, 12)
			for i := 0; i < 12; i++ {
				wg.Go(func() {
					_, err := f.Get(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i))
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if p := peak.Load(); p > int32(limit) {
				t.Fatalf("peak concurrency %d > limit %d", p, limit)
			}
			if p := peak.Load(); p < int32(limit) {
				t.Logf("peak concurrency %d (limit %d not reached; scheduling)", p, limit)
			}
		})
	}
}

func TestPerHostDelay(t *testing.T) {
	srv := newServer(t, ok)
	clock := newFakeClock()
	f := New(Options{AllowPrefixes: loopbackOnly, PerHostDelay: time.Second, Now: clock.Now, Sleep: clock.Sleep})
	for i := 0; i < 3; i++ {
		if _, err := f.Get(context.Background(), srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	// Three starts at t0, t0+1s, t0+2s: two waits of 1 s.
	if got := clock.Sleeps(); fmt.Sprint(got) != "[1s 1s]" {
		t.Fatalf("sleeps %v, want [1s 1s]", got)
	}
}

func TestBodyLimit(t *testing.T) {
	const mib = 1 << 20
	var written atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		size := map[string]int{"/huge": 64 * mib, "/exact": mib, "/small": 10}[r.URL.Path]
		chunk := []byte(strings.Repeat("x", 32<<10))
		for n := 0; n < size; n += len(chunk) {
			c := chunk[:min(len(chunk), size-n)]
			if _, err := w.Write(c); err != nil {
				return // client stopped reading
			}
			written.Add(int64(len(c)))
		}
	})
	tests := []struct {
		path      string
		wantLen   int
		truncated bool
	}{
		{"/huge", mib, true},
		{"/exact", mib, false},
		{"/small", 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := New(Options{AllowPrefixes: loopbackOnly, MaxBodyBytes: mib})
			resp, err := f.Get(context.Background(), srv.URL+tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Body) != tt.wantLen || resp.Truncated != tt.truncated {
				t.Fatalf("len %d truncated %v, want %d %v", len(resp.Body), resp.Truncated, tt.wantLen, tt.truncated)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		o    Options
		want error
	}{
		{"slow headers, Timeout", background, Options{AllowPrefixes: loopbackOnly, Timeout: 100 * time.Millisecond}, context.DeadlineExceeded},
		{"slow body, Timeout", background, Options{AllowPrefixes: loopbackOnly, Timeout: 100 * time.Millisecond}, context.DeadlineExceeded},
		{"caller ctx", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, Options{AllowPrefixes: loopbackOnly}, context.DeadlineExceeded},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/slow"
			if i == 1 {
				path = "/slow-body"
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := New(tt.o).Get(ctx, srv.URL+path)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func background() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func TestBadURL(t *testing.T) {
	f := New(Options{AllowPrefixes: loopbackOnly})
	for _, raw := range []string{"http://", "::nonsense", "http:///path"} {
		if _, err := f.Get(context.Background(), raw); err == nil {
			t.Errorf("Get(%q) succeeded", raw)
		}
	}
}

func TestClientRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	_, err := New(Options{}).Client().Post(srv.URL, "application/json", strings.NewReader("{}"))
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("POST to loopback: %v, want ErrBlocked", err)
	}
	resp, err := New(Options{AllowPrivate: true}).Client().Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect followed: %d", resp.StatusCode)
	}
}

// TestDoMethodHeadersBody: Do sends the method, headers and body; a 303
// continues with a body-less GET, a 307 repeats the method and body, and
// a redirect to another host drops the request's headers.
func TestDoMethodHeadersBody(t *testing.T) {
	type seen struct{ method, token, body string }
	var mu sync.Mutex
	var got []seen
	record := func(r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		mu.Lock()
		got = append(got, seen{r.Method, r.Header.Get("X-Token"), string(b[:n])})
		mu.Unlock()
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(r) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/see-other":
			http.Redirect(w, r, "/done", http.StatusSeeOther)
		case "/temporary":
			http.Redirect(w, r, "/done", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/there", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	f := New(Options{AllowPrivate: true})
	defer f.Close()
	for _, tc := range []struct {
		path string
		want []seen
	}{
		{"/done", []seen{{"POST", "t1", "hello"}}},
		{"/see-other", []seen{{"POST", "t1", "hello"}, {"GET", "t1", ""}}},
		{"/temporary", []seen{{"POST", "t1", "hello"}, {"POST", "t1", "hello"}}},
		{"/away", []seen{{"POST", "t1", "hello"}, {"POST", "", "hello"}}},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		resp, err := f.Do(context.Background(), Request{Method: "POST", URL: srv.URL + tc.path,
			Header: http.Header{"X-Token": {"t1"}}, Body: []byte("hello")})
		if err != nil || resp.Status != 200 {
			t.Fatalf("%s: %v %+v", tc.path, err, resp)
		}
		mu.Lock()
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: requests %v, want %v", tc.path, got, tc.want)
		}
		mu.Unlock()
	}
}
