package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// inbox is a loopback receiver standing in for a provider: it keeps the
// JSON bodies (and paths) it receives and passes each on a channel.
type inbox struct {
	*httptest.Server
	status int
	got    chan map[string]any
	mu     sync.Mutex
	paths  []string
}

func newInbox(t *testing.T, status int) *inbox {
	t.Helper()
	ib := &inbox{status: status, got: make(chan map[string]any, 16)}
	ib.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		ib.mu.Lock()
		ib.paths = append(ib.paths, r.URL.Path)
		ib.mu.Unlock()
		ib.got <- m
		w.WriteHeader(ib.status)
	}))
	t.Cleanup(ib.Close)
	return ib
}

// next waits for the next body.
func (ib *inbox) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-ib.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s received nothing", ib.URL)
		return nil
	}
}

// none checks that ib received nothing more.
func (ib *inbox) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-ib.got:
		t.Fatalf("%s received %v, want nothing", ib.URL, m)
	case <-time.After(200 * time.Millisecond):
	}
}

// notifying is the API with a running dispatcher that sends test messages
// and alerts to channels as quarry serve wires it (outcomes recorded).
type notifying struct {
	srv   *httptest.Server
	sched *scheduler.Scheduler
	done  chan string // the label of every finished delivery, after it is recorded
}

func (e *env) notifying(t *testing.T) *notifying {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	prb := probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(prb.Close)
	n := &notifying{done: make(chan string, 32)}
	record, recordCh := scheduler.RecordDeliveries(e.st, logger), scheduler.RecordChannelDeliveries(e.st, logger)
	d := alert.New(alert.Options{
		MaxAttempts: 1, Logger: logger, HTTPClient: fetch.New(fetch.Options{AllowPrivate: true}).Client(),
		CurrentTarget: scheduler.CurrentTarget(e.st),
		OnResult: func(a alert.Alert, channel string, attempts int, err error) {
			record(a, channel, attempts, err)
			if channel == alert.ChannelWebhook || channel == alert.ChannelEmail {
				n.done <- channel
			}
		},
		OnChannelResult: func(a alert.Alert, ch alert.Channel, attempts int, err error) {
			recordCh(a, ch, attempts, err)
			n.done <- ch.ID
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	n.sched = scheduler.New(e.st, prb, d, scheduler.Options{Owner: "notifying", RunTimeout: 5 * time.Second, Logger: logger})
	n.srv = httptest.NewServer(api.New(e.st, prb, n.sched, api.Options{Channels: d, Logger: logger}))
	t.Cleanup(n.srv.Close)
	return n
}

// finished waits for n deliveries to be recorded.
func (n *notifying) finished(t *testing.T, count int) {
	t.Helper()
	for range count {
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a delivery did not finish")
		}
	}
}

const slackToken = "T0000/B0000/XXXXXXXXsecretXXXX"

// TestChannelsCRUD: create, read (secrets masked), list, PATCH (a masked
// secret sent back keeps its value), delete; another user sees none.
func TestChannelsCRUD(t *testing.T) {
	e := newEnv(t)
	n := e.notifying(t)
	_, token := e.user(t, "a@example.com", store.TierFree)
	_, otherToken := e.user(t, "b@example.com", store.TierFree)
	ib := newInbox(t, 200)

	r := call(t, n.srv.URL, "POST", "/v1/me/channels", token, map[string]any{
		"type": "slack", "name": "ops room", "config": map[string]any{"url": ib.URL + "/services/" + slackToken}, "default": true})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	c := r.obj(t)
	id, _ := c["id"].(string)
	if !strings.HasPrefix(id, "chn_") || c["type"] != "slack" || c["name"] != "ops room" || c["default"] != true {
		t.Fatalf("created %s", r.raw)
	}
	for _, resp := range []reply{r, call(t, n.srv.URL, "GET", "/v1/me/channels/"+id, token, nil), call(t, n.srv.URL, "GET", "/v1/me/channels", token, nil)} {
		if resp.code != 200 && resp.code != 201 || strings.Contains(string(resp.raw), "secret") || !strings.Contains(string(resp.raw), ib.URL+"/****XXXX") {
			t.Fatalf("%d %s: want the URL masked", resp.code, resp.raw)
		}
	}
	if l := call(t, n.srv.URL, "GET", "/v1/me/channels", token, nil).list(t); len(l) != 1 || l[0]["id"] != id {
		t.Fatalf("list %v", l)
	}

	// PATCH with the config as GET shows it: the secret URL is kept.
	shown := call(t, n.srv.URL, "GET", "/v1/me/channels/"+id, token, nil).obj(t)["config"]
	r = call(t, n.srv.URL, "PATCH", "/v1/me/channels/"+id, token, map[string]any{"name": "ops", "default": false, "config": shown})
	if r.code != 200 || r.obj(t)["name"] != "ops" || r.obj(t)["default"] != false {
		t.Fatalf("PATCH = %d %s", r.code, r.raw)
	}
	if r := call(t, n.srv.URL, "POST", "/v1/me/channels/"+id+"/test", token, nil); r.code != 200 || r.obj(t)["ok"] != true {
		t.Fatalf("test = %d %s", r.code, r.raw)
	}
	ib.next(t)
	ib.mu.Lock()
	path := ib.paths[len(ib.paths)-1]
	ib.mu.Unlock()
	if path != "/services/"+slackToken {
		t.Fatalf("after the PATCH the test went to %s: the secret URL changed", path)
	}
	for _, tt := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"type": "discord"}, "type cannot be changed"},
		{map[string]any{"config": map[string]any{"url": ""}}, "config.url: required"},
		{map[string]any{"config": map[string]any{"url": true}}, "config.url: want a string"},
		{map[string]any{"name": strings.Repeat("n", 101)}, "name: one line"},
	} {
		if r := call(t, n.srv.URL, "PATCH", "/v1/me/channels/"+id, token, tt.body); r.code != 400 || !strings.Contains(r.errMsg(t), tt.want) {
			t.Fatalf("PATCH %v = %d %s, want 400 %q", tt.body, r.code, r.raw, tt.want)
		}
	}

	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		if r := call(t, n.srv.URL, m, "/v1/me/channels/"+id, otherToken, map[string]any{}); r.code != 404 || r.errMsg(t) != "channel not found" {
			t.Fatalf("another user's %s = %d %s", m, r.code, r.raw)
		}
	}
	if r := call(t, n.srv.URL, "POST", "/v1/me/channels/"+id+"/test", otherToken, nil); r.code != 404 {
		t.Fatalf("another user's test = %d %s", r.code, r.raw)
	}
	if r := call(t, n.srv.URL, "DELETE", "/v1/me/channels/"+id, token, nil); r.code != 204 {
		t.Fatalf("DELETE = %d %s", r.code, r.raw)
	}
	if r := call(t, n.srv.URL, "GET", "/v1/me/channels/"+id, token, nil); r.code != 404 {
		t.Fatalf("GET after DELETE = %d %s", r.code, r.raw)
	}
}

// TestChannelValidation: invalid channels are refused with a 400 that
// names the field, and never quotes a secret.
func TestChannelValidation(t *testing.T) {
	e := newEnv(t)
	n := e.notifying(t)
	_, token := e.user(t, "a@example.com", store.TierFree)
	for _, tt := range []struct {
		name, base string
		body       map[string]any
		want       string
	}{
		{"no type", n.srv.URL, map[string]any{"config": map[string]any{}}, "type: required (one of discord, email, gotify, ntfy, opsgenie, pagerduty, slack, teams, telegram, webhook)"},
		{"unknown type", n.srv.URL, map[string]any{"type": "sms"}, `type: unknown channel type "sms"`},
		{"missing url", n.srv.URL, map[string]any{"type": "slack"}, "config.url: required for a slack channel"},
		{"unknown field", n.srv.URL, map[string]any{"type": "slack", "config": map[string]any{"url": e.site.URL, "icon": "x"}}, "config.icon: unknown field for a slack channel"},
		{"not a string", n.srv.URL, map[string]any{"type": "slack", "config": map[string]any{"url": []any{}}}, "config.url: want a string"},
		{"not http", n.srv.URL, map[string]any{"type": "discord", "config": map[string]any{"url": "ftp://x.example/"}}, `config.url: want an http:// or https:// URL, not the scheme "ftp"`},
		{"routing key", n.srv.URL, map[string]any{"type": "pagerduty", "config": map[string]any{"routingKey": "abc"}}, "config.routingKey: want the 32-character integration key"},
		{"telegram token", n.srv.URL, map[string]any{"type": "telegram", "config": map[string]any{"botToken": "abc", "chatId": 1}}, "config.botToken: want a bot token"},
		{"ntfy priority", n.srv.URL, map[string]any{"type": "ntfy", "config": map[string]any{"topic": "t", "priority": 9}}, `config.priority: "9" is not one of 1, 2, 3, 4, 5`},
		{"gotify server", n.srv.URL, map[string]any{"type": "gotify", "config": map[string]any{"token": "t"}}, "config.server: required"},
		{"opsgenie key", n.srv.URL, map[string]any{"type": "opsgenie", "config": map[string]any{"apiKey": "a b"}}, "config.apiKey: want 1 to 256 printable"},
		{"email address", n.srv.URL, map[string]any{"type": "email", "config": map[string]any{"to": "nobody"}}, `config.to: "nobody" is not a valid address`},
		{"email without SMTP", n.srv.URL, map[string]any{"type": "email", "config": map[string]any{"to": "ops@example.com"}}, "config.to: email alerts cannot be delivered"},
		{"name", n.srv.URL, map[string]any{"type": "ntfy", "name": "a\nb", "config": map[string]any{"topic": "t"}}, "name: one line"},
		{"unknown body field", n.srv.URL, map[string]any{"type": "ntfy", "extra": "x"}, `unknown field "extra"`},
		{"refused by the network policy", e.strict.URL, map[string]any{"type": "slack", "config": map[string]any{"url": e.site.URL + "/services/" + slackToken}}, "config.url cannot receive alerts: "},
		{"metadata address", e.strict.URL, map[string]any{"type": "gotify", "config": map[string]any{"server": "http://169.254.169.254/", "token": "t"}}, "config.server cannot receive alerts: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.base, "POST", "/v1/me/channels", token, tt.body)
			if r.code != 400 {
				t.Fatalf("= %d %s, want 400", r.code, r.raw)
			}
			msg := r.errMsg(t)
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "secret") {
				t.Fatalf("error %q, want %q and no secret", msg, tt.want)
			}
			if strings.Contains(tt.want, "cannot receive alerts") && !strings.Contains(msg, "--allow-networks") {
				t.Fatalf("error %q does not name --allow-networks", msg)
			}
		})
	}
	if l := call(t, n.srv.URL, "GET", "/v1/me/channels", token, nil).list(t); len(l) != 0 {
		t.Fatalf("refused channels were stored: %v", l)
	}
}

// TestChannelTestButton: POST …/test sends at once and answers the
// outcome, shown afterwards as the channel's lastDelivery.
func TestChannelTestButton(t *testing.T) {
	e := newEnv(t)
	n := e.notifying(t)
	_, token := e.user(t, "a@example.com", store.TierFree)
	good, bad := newInbox(t, 204), newInbox(t, 404)
	mk := func(url string) string {
		r := call(t, n.srv.URL, "POST", "/v1/me/channels", token, map[string]any{"type": "discord", "config": map[string]any{"url": url}})
		if r.code != 201 {
			t.Fatalf("create = %d %s", r.code, r.raw)
		}
		return r.obj(t)["id"].(string)
	}
	okID, badID := mk(good.URL+"/api/webhooks/1/x"), mk(bad.URL+"/api/webhooks/2/y")

	r := call(t, n.srv.URL, "POST", "/v1/me/channels/"+okID+"/test", token, nil)
	res := r.obj(t)
	if r.code != 200 || res["ok"] != true || res["error"] != nil {
		t.Fatalf("test = %d %s", r.code, r.raw)
	}
	if m := good.next(t); !strings.Contains(m["content"].(string), "Test") {
		t.Fatalf("test message %v", m)
	}
	if d, _ := res["channel"].(map[string]any)["lastDelivery"].(map[string]any); d["ok"] != true || d["at"] == "" {
		t.Fatalf("lastDelivery %v", d)
	}

	r = call(t, n.srv.URL, "POST", "/v1/me/channels/"+badID+"/test", token, nil)
	res = r.obj(t)
	if r.code != 200 || res["ok"] != false || !strings.Contains(res["error"].(string), "discord responded 404") {
		t.Fatalf("test = %d %s", r.code, r.raw)
	}
	bad.next(t)
	got := call(t, n.srv.URL, "GET", "/v1/me/channels/"+badID, token, nil).obj(t)
	d, _ := got["lastDelivery"].(map[string]any)
	if d["ok"] != false || !strings.Contains(d["error"].(string), "discord responded 404") || strings.Contains(d["error"].(string), "\n") {
		t.Fatalf("lastDelivery %v", d)
	}
	if r := call(t, e.srv.URL, "POST", "/v1/me/channels/"+okID+"/test", token, nil); r.code != 503 {
		t.Fatalf("test without a dispatcher = %d %s", r.code, r.raw)
	}
}

// TestCheckAlertsItsChannels: a check created with channels alerts those
// (PagerDuty: trigger on DOWN, resolve on UP with the same dedup key);
// a check without alerts the user's default channels and the webhook of
// PUT /v1/me/alerts. Outcomes show on the channels.
func TestCheckAlertsItsChannels(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n := e.notifying(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	pd, slack, legacy := newInbox(t, 202), newInbox(t, 200), newHook(t, 204)

	create := func(body map[string]any) string {
		r := call(t, n.srv.URL, "POST", "/v1/me/channels", token, body)
		if r.code != 201 {
			t.Fatalf("create channel = %d %s", r.code, r.raw)
		}
		return r.obj(t)["id"].(string)
	}
	pdID := create(map[string]any{"type": "pagerduty", "config": map[string]any{"routingKey": "R0123456789abcdef0123456789ABCDE", "apiUrl": pd.URL}})
	_ = create(map[string]any{"type": "slack", "default": true, "config": map[string]any{"url": slack.URL + "/services/x"}})
	if r := call(t, n.srv.URL, "PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": legacy.URL}); r.code != 200 {
		t.Fatalf("PUT alerts = %d %s", r.code, r.raw)
	}

	target := newFlaky(t)
	if r := call(t, n.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000, "channels": []string{"chn_nope"}}); r.code != 400 || !strings.Contains(r.errMsg(t), `channels: "chn_nope" is not one of your notification channels`) {
		t.Fatalf("create with an unknown channel = %d %s", r.code, r.raw)
	}
	r := call(t, n.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000, "channels": []string{pdID}})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	if chs, _ := r.obj(t)["channels"].([]any); len(chs) != 1 || chs[0] != pdID {
		t.Fatalf("created check's channels %v", r.obj(t)["channels"])
	}
	own := r.obj(t)["id"].(string)
	if r := call(t, n.srv.URL, "PATCH", "/v1/checks/"+own, token, map[string]any{"channels": []string{"chn_nope"}}); r.code != 400 || !strings.Contains(r.errMsg(t), "chn_nope") {
		t.Fatalf("PATCH to an unknown channel = %d %s", r.code, r.raw)
	}
	if r := call(t, n.srv.URL, "PATCH", "/v1/checks/"+own, token, map[string]any{"channels": []string{}}); r.code != 200 || r.obj(t)["channels"] != nil {
		t.Fatalf("PATCH to no channels = %d %s: want them removed", r.code, r.raw)
	}
	r = call(t, n.srv.URL, "PATCH", "/v1/checks/"+own, token, map[string]any{"channels": []string{pdID}})
	if chs, _ := r.obj(t)["channels"].([]any); r.code != 200 || len(chs) != 1 || chs[0] != pdID {
		t.Fatalf("PATCH of channels = %d %s", r.code, r.raw)
	}

	// Down: the check with channels pages PagerDuty only.
	t0 := time.Now()
	target.down.Store(true)
	if k := n.sched.RunDue(ctx, t0.Add(61*time.Second)); k != 1 {
		t.Fatalf("%d runs", k)
	}
	trig := pd.next(t)
	n.finished(t, 1)
	slack.none(t)
	legacy.none(t)
	if trig["event_action"] != "trigger" || trig["dedup_key"] != "quarry-checks-"+own {
		t.Fatalf("trigger %v", trig)
	}

	// Up: resolved with the same key.
	target.down.Store(false)
	if r := call(t, n.srv.URL, "POST", "/v1/checks/"+own+"/run", token, nil); r.code != 202 {
		t.Fatalf("run = %d %s", r.code, r.raw)
	}
	if k := n.sched.RunDue(ctx, t0.Add(62*time.Second)); k != 1 {
		t.Fatalf("%d runs", k)
	}
	res := pd.next(t)
	n.finished(t, 1)
	if res["event_action"] != "resolve" || res["dedup_key"] != trig["dedup_key"] {
		t.Fatalf("resolve %v after trigger %v", res, trig)
	}
	d, _ := call(t, n.srv.URL, "GET", "/v1/me/channels/"+pdID, token, nil).obj(t)["lastDelivery"].(map[string]any)
	if d["ok"] != true {
		t.Fatalf("PagerDuty channel's lastDelivery %v", d)
	}

	// A check without channels: the default channel and the webhook.
	if r := call(t, n.srv.URL, "DELETE", "/v1/checks/"+own, token, nil); r.code != 204 {
		t.Fatalf("delete = %d", r.code)
	}
	r = call(t, n.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	target.down.Store(true)
	if k := n.sched.RunDue(ctx, t0.Add(200*time.Second)); k != 1 {
		t.Fatalf("%d runs", k)
	}
	if m := slack.next(t); !strings.Contains(m["text"].(string), "DOWN: "+target.URL) {
		t.Fatalf("slack %v", m)
	}
	legacy.expect(t, "down")
	n.finished(t, 2)
	pd.none(t)
}
