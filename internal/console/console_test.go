package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeAuth accepts one credential.
type fakeAuth struct{ revoked bool }

func (f *fakeAuth) Authenticate(_ context.Context, cred string) (Principal, error) {
	if cred != "good" {
		return Principal{}, errors.New("bad")
	}
	return Principal{ID: "u1", Name: "Ursula"}, nil
}

func (f *fakeAuth) Valid(context.Context, string) error {
	if f.revoked {
		return errors.New("revoked")
	}
	return nil
}

func newTestConsole(t *testing.T, now *time.Time, auth *fakeAuth) (*httptest.Server, *http.Client) {
	t.Helper()
	return newTestConsoleOpts(t, Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return *now },
		Realms: []Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: auth}}})
}

func newTestConsoleOpts(t *testing.T, opts Options) (*httptest.Server, *http.Client) {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return srv, &http.Client{Jar: jar}
}

// reader reads answers, failing its test on errors.
type reader struct{ t *testing.T }

func (r reader) body(resp *http.Response, err error) string {
	t := r.t
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func signIn(t *testing.T, srv *httptest.Server, hc *http.Client, cred string) string {
	t.Helper()
	rd := reader{t}
	page := rd.body(hc.Get(srv.URL + "/console/signin"))
	nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
	return rd.body(hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {"operator"}, "credential": {cred}}))
}

func TestSessions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	auth := &fakeAuth{}
	srv, hc := newTestConsole(t, &now, auth)
	rd := reader{t}

	if got := signIn(t, srv, hc, "wrong"); !strings.Contains(got, "is not valid") {
		t.Fatalf("wrong credential: %s", got)
	}
	if got := signIn(t, srv, hc, "good"); !strings.Contains(got, "Welcome, Ursula") {
		t.Fatalf("good credential: %s", got)
	}
	// The sign-in form without its nonce cookie is refused.
	other := &http.Client{}
	resp, err := other.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {"x"}, "realm": {"operator"}, "credential": {"good"}})
	if b := rd.body(resp, err); resp.StatusCode != http.StatusForbidden || strings.Contains(b, "Welcome") {
		t.Errorf("sign-in without the nonce cookie = %d", resp.StatusCode)
	}

	u, _ := url.Parse(srv.URL)
	var cookie *http.Cookie
	for _, c := range hc.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	// A tampered cookie is no session.
	payload, sig, _ := strings.Cut(cookie.Value, ".")
	tampered := &http.Client{}
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: payload[:len(payload)-2] + "AA." + sig})
	if b := rd.body(tampered.Do(req)); strings.Contains(b, "Welcome") {
		t.Error("a tampered cookie was accepted")
	}
	// Revalidation ends a revoked principal's session.
	auth.revoked = true
	if b := rd.body(hc.Get(srv.URL + "/")); strings.Contains(b, "Welcome") {
		t.Error("a revoked principal's session still works")
	}
	auth.revoked = false
	signIn(t, srv, hc, "good")
	// Expiry.
	now = now.Add(9 * time.Hour)
	if b := rd.body(hc.Get(srv.URL + "/")); strings.Contains(b, "Welcome") {
		t.Error("an expired session still works")
	}
	// Paths outside the console keep the JSON 404.
	resp, err = hc.Get(srv.URL + "/nope")
	if b := rd.body(resp, err); resp.StatusCode != 404 || !strings.Contains(b, `"not found: /nope"`) {
		t.Errorf("GET /nope = %d %s", resp.StatusCode, b)
	}
	// Headers.
	resp, err = hc.Get(srv.URL + "/")
	rd.body(resp, err)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/console/explorer/": "/console/explorer/", "/console/checks/?q=a%09b": "/console/checks/?q=a%09b",
		"//evil.example/": "", "https://evil.example/": "", "/\\evil": "", "": "", "console/": "",
		"/\t/evil.example/": "", "/\n/evil.example/": "", "/\r/evil.example/": "", "/\x00/evil": "", "/\x7f/evil": ""} {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSignInRedirectStaysHome plays the phisher's link: a sign-in whose
// next= would leave the origin once a browser drops a TAB or reads a
// backslash as a slash is sent home instead.
func TestSignInRedirectStaysHome(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	srv, hc := newTestConsole(t, &now, &fakeAuth{})
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	rd := reader{t}
	for _, next := range []string{"/\t/evil.example/", "/\\evil.example/", "//evil.example/", "/\n/evil.example/", "https://evil.example/"} {
		page := rd.body(hc.Get(srv.URL + "/console/signin?next=" + url.QueryEscape(next)))
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
		resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {"operator"}, "credential": {"good"}, "next": {next}})
		rd.body(resp, err)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/" {
			t.Errorf("sign-in with next=%q: %d to %q, want 303 to /", next, resp.StatusCode, loc)
		}
	}
}

// TestSignInThrottled plays the guesser: past 10 failed sign-ins a minute
// from one address with one kind of credential, the next answer is 429
// with Retry-After, a right credential included, until the window moves
// on; another address is not affected.
func TestSignInThrottled(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	srv, hc := newTestConsole(t, &now, &fakeAuth{})
	rd := reader{t}
	try := func(cred string) (*http.Response, string) {
		t.Helper()
		page := rd.body(hc.Get(srv.URL + "/console/signin"))
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
		resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {"operator"}, "credential": {cred}})
		return resp, rd.body(resp, err)
	}
	for i := range 10 {
		if resp, _ := try(fmt.Sprintf("guess-%d", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	for _, cred := range []string{"guess-10", "good"} {
		resp, body := try(cred)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" || !strings.Contains(body, "Too many failed sign-ins") {
			t.Errorf("sign-in with %q after 10 failures: %d Retry-After %q, want 429 with Retry-After 60", cred, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	now = now.Add(61 * time.Second)
	if resp, body := try("good"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Welcome") {
		t.Errorf("sign-in a minute later: %d, want it to pass", resp.StatusCode)
	}
}

// TestForwardedHeadersOnlyFromTrustedProxies: a client that says
// X-Forwarded-Proto https is believed (Secure cookies) only when it is a
// trusted proxy, and X-Forwarded-For names the throttled address only
// then, so a guesser cannot spread its failures over made-up addresses.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		now := time.Unix(1_700_000_000, 0)
		srv, hc := newTestConsoleOpts(t, Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
			Realms:       []Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: &fakeAuth{}}},
			TrustedProxy: func(string) bool { return trusted }})
		rd := reader{t}
		get := func(xff string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/signin", nil)
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-For", xff)
			resp, err := hc.Do(req)
			rd.body(resp, err)
			return resp
		}
		resp := get("192.0.2.1")
		secure := false
		for _, c := range resp.Cookies() {
			secure = secure || c.Secure
		}
		if secure != trusted {
			t.Errorf("trusted proxy %v: Secure cookie %v", trusted, secure)
		}
		// Eleven failures, each from another forwarded address.
		var last int
		for i := range 11 {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/signin", nil)
			page := rd.body(hc.Do(req))
			nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
			form := url.Values{"nonce": {nonce}, "realm": {"operator"}, "credential": {"wrong"}}
			post, _ := http.NewRequest(http.MethodPost, srv.URL+"/console/signin", strings.NewReader(form.Encode()))
			post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			post.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i))
			resp, err := hc.Do(post)
			rd.body(resp, err)
			last = resp.StatusCode
		}
		want := http.StatusTooManyRequests // one address: the connection's
		if trusted {
			want = http.StatusUnauthorized // eleven addresses the proxy saw
		}
		if last != want {
			t.Errorf("trusted proxy %v: the 11th failure from spread X-Forwarded-For = %d, want %d", trusted, last, want)
		}
	}
}

// TestSignInInfersRealm: a credential whose prefix is a realm's signs in
// to that realm whatever the selector says, and lands on the realm's
// main page (also where / sends it); one without a known prefix goes to
// the realm selected.
func TestSignInInfersRealm(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	named := func(prefix, id string) AuthFunc {
		return func(_ context.Context, cred string) (Principal, error) {
			if cred != prefix+"good" {
				return Principal{}, errors.New("bad")
			}
			return Principal{ID: id, Name: id}, nil
		}
	}
	srv, hc := newTestConsoleOpts(t, Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
		Realms: []Realm{
			{Kind: "operator", Label: "Operator token", Operator: true, Auth: named("qop_", "op"), Prefix: "qop_", Home: "/console/explorer/"},
			{Kind: "checks", Label: "Checks API token", Auth: named("chk_", "user"), Prefix: "chk_", Home: "/console/checks/"},
			{Kind: "legacy", Label: "Legacy key", Auth: named("", "old")},
		}})
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	rd := reader{t}
	signin := func(realm, cred string) *http.Response {
		t.Helper()
		page := rd.body(hc.Get(srv.URL + "/console/signin"))
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
		resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {realm}, "credential": {cred}})
		rd.body(resp, err)
		return resp
	}
	// A Checks token pasted under the Operator realm.
	if resp := signin("operator", "chk_good"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/checks/" {
		t.Fatalf("chk_ token under operator: %d to %q, want 303 to /console/checks/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err := hc.Get(srv.URL + "/")
	rd.body(resp, err)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/checks/" {
		t.Errorf("/ for a Checks session: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// An operator token under Checks.
	if resp := signin("checks", "qop_good"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/explorer/" {
		t.Errorf("qop_ token under checks: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// No known prefix: the selector decides, and a realm without a main
	// page lands on the home page.
	if resp := signin("legacy", "good"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("a credential without a prefix: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := signin("operator", "good"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a credential without a prefix under the wrong realm: %d, want 401", resp.StatusCode)
	}
}
