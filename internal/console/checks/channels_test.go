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
	"sync/atomic"
	"testing"

	"github.com/quarrydb/quarry/internal/checks/alert"
	checksapi "github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// TestChannelsPage: a Checks user adds a channel in the console (the
// API's validation message shown, the secret not echoed back), sees it
// masked, sends a test to a loopback receiver, and deletes it; a POST
// without the CSRF token is refused.
func TestChannelsPage(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	_, token, err := st.CreateUser(ctx, "a@example.com", checksstore.TierFree)
	if err != nil {
		t.Fatal(err)
	}
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
	var hits atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(rc.Close)

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	page := func(u string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post := func(u string, form url.Values) (int, string) {
		t.Helper()
		resp, err := hc.PostForm(srv.URL+u, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	field := func(body, name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s field in %s", name, body)
		}
		return m[1]
	}
	signin := page("/console/signin")
	if code, body := post("/console/signin", url.Values{"nonce": {field(signin, "nonce")}, "realm": {"checks"}, "credential": {token}}); code != 200 {
		t.Fatalf("sign-in = %d %s", code, body)
	}

	form := page("/console/checks/channels?type=telegram")
	if !strings.Contains(form, `name="config.botToken"`) || !strings.Contains(form, `type="password"`) {
		t.Fatalf("telegram form: %s", form)
	}
	csrf := field(form, "csrf")
	code, body := post("/console/checks/channels", url.Values{"csrf": {csrf}, "type": {"telegram"}, "name": {"tg"},
		"config.botToken": {"123456:BADTOKENbadtokenBADTOKEN"}, "config.apiUrl": {"ftp://x.example"}, "config.chatId": {"42"}})
	if code != 400 || !strings.Contains(body, "config.apiUrl: want an http:// or https:// URL") || strings.Contains(body, "BADTOKEN") || !strings.Contains(body, `value="42"`) {
		t.Fatalf("invalid add = %d: %s", code, body)
	}
	code, body = post("/console/checks/channels", url.Values{"csrf": {csrf}, "type": {"slack"}, "name": {"ops"}, "default": {"yes"},
		"config.url": {rc.URL + "/services/T0/B0/SLACKSECRETabcd"}})
	if code != 200 || !strings.Contains(body, "Channel added.") || strings.Contains(body, "SLACKSECRET") || !strings.Contains(body, rc.URL+"/****abcd") || !strings.Contains(body, "default") {
		t.Fatalf("add = %d: %s", code, body)
	}
	chs, err := st.ListChannels(ctx, mustUser(t, st, token))
	if err != nil || len(chs) != 1 {
		t.Fatalf("stored channels %v, %v", chs, err)
	}
	id := chs[0].ID
	code, body = post("/console/checks/channels/"+id+"/test", url.Values{"csrf": {csrf}})
	if code != 200 || !strings.Contains(body, "Test message delivered.") || hits.Load() != 1 || !strings.Contains(body, "delivered") {
		t.Fatalf("test = %d (%d hits): %s", code, hits.Load(), body)
	}
	if code, _ := post("/console/checks/channels/"+id+"/delete", url.Values{"confirm": {"yes"}}); code != http.StatusForbidden {
		t.Fatalf("delete without CSRF = %d", code)
	}
	code, body = post("/console/checks/channels/"+id+"/delete", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if code != 200 || !strings.Contains(body, "Channel deleted.") || !strings.Contains(body, "No channels yet.") {
		t.Fatalf("delete = %d: %s", code, body)
	}
}

func mustUser(t *testing.T, st *checksstore.Store, token string) string {
	t.Helper()
	u, err := st.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
