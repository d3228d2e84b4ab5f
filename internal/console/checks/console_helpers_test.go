package checks

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/checks/alert"
	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// testConsole is the console's Checks area over Checks' store and API
// (loopback allowed, one delivery attempt), served on loopback, and an
// HTTP client signed in as a Checks user.
type testConsole struct {
	t      *testing.T
	st     *checksstore.Store
	url    string
	token  string // the signed-in user's API token
	userID string
	hc     *http.Client
}

// newTestConsole starts the console with a user a@example.com signed in.
func newTestConsole(t *testing.T) *testConsole {
	t.Helper()
	st := testStore(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	prb := probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(prb.Close)
	d := alert.New(alert.Options{MaxAttempts: 1, HTTPClient: fetch.New(fetch.Options{AllowPrivate: true}).Client()})
	h := checksapi.New(st, prb, nil, checksapi.Options{Channels: d, Logger: logger})
	c, err := console.New(console.Options{Key: []byte(strings.Repeat("k", 32)), Realms: []console.Realm{Realm(st)}, Areas: []console.Area{New(Adapt(st, h))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return (&testConsole{t: t, st: st, url: srv.URL}).as("a@example.com")
}

// as is the console signed in as a new Checks user with this email.
func (tc *testConsole) as(email string) *testConsole {
	t := tc.t
	t.Helper()
	u, token, err := tc.st.CreateUser(context.Background(), email, checksstore.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	out := &testConsole{t: t, st: tc.st, url: tc.url, token: token, userID: u.ID, hc: &http.Client{Jar: jar}}
	signin := out.page("/console/signin")
	if code, body := out.post("/console/signin", url.Values{"nonce": {out.field(signin, "nonce")}, "realm": {"checks"}, "credential": {token}}); code != 200 {
		t.Fatalf("sign-in = %d %s", code, body)
	}
	return out
}

// get GETs a console path and returns its status and body.
func (tc *testConsole) get(path string) (int, string) {
	tc.t.Helper()
	resp, err := tc.hc.Get(tc.url + path)
	if err != nil {
		tc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// page is get's body.
func (tc *testConsole) page(path string) string {
	tc.t.Helper()
	_, b := tc.get(path)
	return b
}

// post sends a form (following the redirect) and returns the status and
// body.
func (tc *testConsole) post(path string, form url.Values) (int, string) {
	tc.t.Helper()
	resp, err := tc.hc.PostForm(tc.url+path, form)
	if err != nil {
		tc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// field is the value of the input named name in body.
func (tc *testConsole) field(body, name string) string {
	tc.t.Helper()
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		tc.t.Fatalf("no %s field in %s", name, body)
	}
	return m[1]
}

// csrf is the CSRF token of the signed-in session (read off a page).
func (tc *testConsole) csrf() string {
	tc.t.Helper()
	return tc.field(tc.page("/console/checks/"), "csrf")
}
