package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const sampleRobots = "\xef\xbb\xbf# quarry test robots\r\n" + `
User-agent: *
Disallow: /private
Allow: /private/open
Crawl-delay: 9

User-agent: Quarry-DataShelf
User-agent: otherbot
Disallow: /shop
Allow: /shop/books
Disallow: /*.pdf$
Disallow: /search?*sort=
Allow: /p
Disallow: /p/
Crawl-delay: 2.5
Sitemap: https://example.test/sitemap.xml

User-agent: quarry-datashelf
Disallow: /cart # merged with the group above
`

var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

func TestRobotsRules(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		token string
		path  string
		want  bool
	}{
		{"our group: plain disallow", sampleRobots, "quarry-datashelf", "/shop/toys", false},
		{"our group: longer allow wins", sampleRobots, "quarry-datashelf", "/shop/books/1", true},
		{"our group: longer disallow wins", sampleRobots, "quarry-datashelf", "/p/123", false},
		{"our group: shorter allow", sampleRobots, "quarry-datashelf", "/page", true},
		{"our group: $ anchor", sampleRobots, "quarry-datashelf", "/files/a.pdf", false},
		{"our group: $ anchor not at end", sampleRobots, "quarry-datashelf", "/files/a.pdf.html", true},
		{"our group: wildcard in query", sampleRobots, "quarry-datashelf", "/search?q=x&sort=price", false},
		{"our group: wildcard no match", sampleRobots, "quarry-datashelf", "/search?q=x", true},
		{"our group: merged group", sampleRobots, "quarry-datashelf", "/cart", false},
		{"our group ignores *", sampleRobots, "quarry-datashelf", "/private", true},
		{"robots.txt always allowed", "User-agent: *\nDisallow: /", "quarry", "/robots.txt", true},
		{"other agent uses *", sampleRobots, "quarry", "/private/x", false},
		{"* longer allow", sampleRobots, "quarry", "/private/open/1", true},
		{"* no match allows", sampleRobots, "quarry", "/shop", true},
		{"empty disallow allows", "User-agent: *\nDisallow:\n", "quarry", "/x", true},
		{"disallow all", "User-agent: *\nDisallow: /\n", "quarry", "/x", false},
		{"tie: allow wins", "User-agent: *\nDisallow: /a\nAllow: /a\n", "quarry", "/a", true},
		{"no groups", "Sitemap: /s.xml\n", "quarry", "/x", true},
		{"rules before any user-agent ignored", "Disallow: /\nUser-agent: x\nDisallow: /y", "quarry", "/", true},
		{"CR line endings", "User-agent: *\rDisallow: /x\r", "quarry", "/x", false},
		{"prefix of token is not a match", "User-agent: quarry\nDisallow: /\nUser-agent: *\nAllow: /", "quarry-datashelf", "/x", true},
		{"query path", "User-agent: *\nDisallow: /*?\n", "quarry", "/list?page=2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse("http://example.test" + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := parseRobots([]byte(tt.body), tt.token).allowed(u); got != tt.want {
				t.Fatalf("allowed(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestRobotsCrawlDelayParse(t *testing.T) {
	tests := []struct {
		body, token string
		want        time.Duration
	}{
		{sampleRobots, "quarry-datashelf", 2500 * time.Millisecond},
		{sampleRobots, "quarry", 9 * time.Second},
		{"User-agent: *\nCrawl-delay: 1e9\n", "quarry", maxCrawlDelay},
		{"User-agent: *\nCrawl-delay: soon\n", "quarry", 0},
	}
	for _, tt := range tests {
		if got := parseRobots([]byte(tt.body), tt.token).crawlDelay; got != tt.want {
			t.Errorf("crawl delay for %s = %v, want %v", tt.token, got, tt.want)
		}
	}
}

func TestRobotsMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/anything", true}, {"/a", "/b", false}, {"/fish", "/fish.html", true},
		{"/fish$", "/fish", true}, {"/fish$", "/fishy", false}, {"/*.php", "/x/y.php?z", true},
		{"/*.php$", "/x.php?z", false}, {"/a*b*c", "/a--b--c", true}, {"/a*b*c", "/a--c--b", false},
		{"*", "/", true}, {"/a*c$", "/abcbc", true}, {"/$", "/", true}, {"/$", "/a", false},
	}
	for _, tt := range tests {
		if got := robotsMatch(tt.pattern, tt.path); got != tt.want {
			t.Errorf("robotsMatch(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestRobotsFetching(t *testing.T) {
	tests := []struct {
		name       string
		robots     func(w http.ResponseWriter, r *http.Request)
		path       string
		wantErr    error
		wantSleeps string // politeness waits, fake clock
	}{
		{name: "allowed, crawl-delay applied", path: "/shop/books/1", wantSleeps: "[2.5s 2.5s]",
			robots: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, sampleRobots) }},
		{name: "disallowed", path: "/shop/toys", wantErr: ErrDisallowedByRobots, wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, sampleRobots) }},
		{name: "404 allows all", path: "/shop/toys", wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }},
		{name: "403 allows all", path: "/x", wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }},
		{name: "500 disallows all", path: "/x", wantErr: ErrDisallowedByRobots, wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }},
		{name: "429 disallows all", path: "/x", wantErr: ErrDisallowedByRobots, wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) }},
		{name: "redirect followed", path: "/shop/toys", wantErr: ErrDisallowedByRobots, wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
			}},
		{name: "redirect to metadata disallows", path: "/x", wantErr: ErrDisallowedByRobots, wantSleeps: "[]",
			robots: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://169.254.169.254/robots.txt", http.StatusFound)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var uaSeen atomic.Value
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/robots.txt":
					uaSeen.Store(r.UserAgent())
					tt.robots(w, r)
				case "/real-robots.txt":
					fmt.Fprint(w, sampleRobots)
				default:
					fmt.Fprint(w, "page")
				}
			})
			clock := newFakeClock()
			// Only 127.0.0.1 is allowed: a redirect elsewhere must be refused.
			f := New(Options{AllowPrefixes: loopbackOnly, ObeyRobots: true, UserAgent: "quarry-datashelf/1.0",
				Now: clock.Now, Sleep: clock.Sleep})
			for i := 0; i < 3; i++ { // robots.txt is fetched once, then cached
				resp, err := f.Get(context.Background(), srv.URL+tt.path)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err = %v, want %v", err, tt.wantErr)
					}
				} else if err != nil || string(resp.Body) != "page" {
					t.Fatalf("resp %v, err %v", resp, err)
				}
			}
			if n := srv.Hits("/robots.txt"); n != 1 {
				t.Fatalf("robots.txt fetched %d times, want 1", n)
			}
			if ua := uaSeen.Load(); ua != "quarry-datashelf/1.0" {
				t.Fatalf("robots.txt fetched with UA %v", ua)
			}
			if tt.wantErr != nil && srv.Hits(tt.path) != 0 {
				t.Fatalf("disallowed page was fetched")
			}
			if got := fmt.Sprint(clock.Sleeps()); got != tt.wantSleeps {
				t.Fatalf("sleeps %s, want %s", got, tt.wantSleeps)
			}
		})
	}
}

func TestRobotsTTL(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(int(status.Load()))
			return
		}
		fmt.Fprint(w, "page")
	})
	clock := newFakeClock()
	f := New(Options{AllowPrefixes: loopbackOnly, ObeyRobots: true, Now: clock.Now, Sleep: clock.Sleep})
	get := func() error { _, err := f.Get(context.Background(), srv.URL+"/x"); return err }
	if err := get(); !errors.Is(err, ErrDisallowedByRobots) {
		t.Fatalf("5xx: err = %v", err)
	}
	status.Store(http.StatusNotFound)
	if err := get(); !errors.Is(err, ErrDisallowedByRobots) {
		t.Fatalf("5xx still cached: err = %v", err)
	}
	clock.Sleep(context.Background(), robotsErrorTTL)
	if err := get(); err != nil {
		t.Fatalf("after error TTL: %v", err)
	}
	if n := srv.Hits("/robots.txt"); n != 2 {
		t.Fatalf("robots.txt fetched %d times, want 2", n)
	}
	clock.Sleep(context.Background(), robotsTTL)
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if n := srv.Hits("/robots.txt"); n != 3 {
		t.Fatalf("robots.txt fetched %d times, want 3", n)
	}
}

// TestRobotsConcurrentFirstFetch: many requests to a new host fetch
// robots.txt once.
func TestRobotsConcurrentFirstFetch(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			time.Sleep(20 * time.Millisecond)
			fmt.Fprint(w, "User-agent: *\nDisallow: /no\n")
			return
		}
		fmt.Fprint(w, "page")
	})
	f := New(Options{AllowPrefixes: loopbackOnly, ObeyRobots: true, PerHostConcurrency: 4})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			if _, err := f.Get(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := srv.Hits("/robots.txt"); n != 1 {
		t.Fatalf("robots.txt fetched %d times", n)
	}
}

func FuzzParseRobots(f *testing.F) {
	f.Add([]byte(sampleRobots), "/shop/books")
	f.Add([]byte("User-agent: *\nDisallow: /*a*$\n"), "/aaa")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		r := parseRobots(body, "quarry-datashelf")
		u := &url.URL{Path: path}
		r.allowed(u)
	})
}
