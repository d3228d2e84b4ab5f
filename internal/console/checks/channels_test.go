package checks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestChannelsPage: a Checks user adds a channel in the console (the
// API's validation message shown, the secret not echoed back), sees it
// masked, sends a test to a loopback receiver, and deletes it; a POST
// without the CSRF token is refused.
func TestChannelsPage(t *testing.T) {
	ctx := context.Background()
	tc := newTestConsole(t)
	st, page, post, field := tc.st, tc.page, tc.post, tc.field
	var hits atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(rc.Close)

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
	chs, err := st.ListChannels(ctx, tc.userID)
	if err != nil || len(chs) != 1 {
		t.Fatalf("stored channels %v, %v", chs, err)
	}
	id := chs[0].ID
	code, body = post("/console/checks/channels/"+id+"/test", url.Values{"csrf": {csrf}})
	if code != 200 || !strings.Contains(body, "Test message delivered.") || hits.Load() != 1 || !strings.Contains(body, "delivered") ||
		!regexp.MustCompile(`<td class="delivery"><span class="status up">delivered</span><br><small><time datetime="[^"]+" title="[^"]+ UTC">just now</time>`).MatchString(body) {
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
