package alert

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// received is one request a receiver got.
type received struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// json decodes the body as a JSON object.
func (r received) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// receiver is a loopback fixture of a provider's endpoint: it records
// every request and answers status (200 when 0).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []received
	status []int
}

func newReceiver(t *testing.T, status ...int) *receiver {
	t.Helper()
	rc := &receiver{status: status}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.reqs)
		rc.reqs = append(rc.reqs, received{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		code := 200
		if len(rc.status) > 0 {
			code = rc.status[min(n, len(rc.status)-1)]
		}
		rc.mu.Unlock()
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

// only returns the one request received.
func (rc *receiver) only(t *testing.T) received {
	t.Helper()
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// dig follows a path of keys and indexes into decoded JSON.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func deliverTo(t *testing.T, d *Dispatcher, a Alert, ch Channel) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Deliver(ctx, a, Target{Channels: []Channel{ch}})
}

const testRoutingKey = "R0123456789abcdef0123456789ABCDE"

// TestChannelPayloads sends a DOWN alert to each provider type and checks
// the request its documented API expects: method, path, headers, body.
func TestChannelPayloads(t *testing.T) {
	a := testAlert("alert-1")
	for _, tt := range []struct {
		typ   string
		cfg   func(base string) map[string]string
		check func(t *testing.T, r received)
	}{
		{TypeSlack, func(b string) map[string]string {
			return map[string]string{"url": b + "/services/T0/B0/XXXXXXXXXXXXXXXX"}
		}, func(t *testing.T, r received) {
			if r.Path != "/services/T0/B0/XXXXXXXXXXXXXXXX" || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("path %s, content-type %s", r.Path, r.Header.Get("Content-Type"))
			}
			m := r.json(t)
			text, _ := m["text"].(string)
			if !strings.Contains(text, "DOWN: https://example.com/shop?item=1") || !strings.Contains(text, "HTTP 503") {
				t.Fatalf("text %q", text)
			}
			if dig(m, "blocks", 0, "type") != "header" || dig(m, "blocks", 1, "text", "type") != "mrkdwn" || dig(m, "blocks", 2, "type") != "context" {
				t.Fatalf("blocks %v", m["blocks"])
			}
		}},
		{TypeDiscord, func(b string) map[string]string {
			return map[string]string{"url": b + "/api/webhooks/1/tok", "username": "Checks"}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if r.Path != "/api/webhooks/1/tok" || m["username"] != "Checks" || !strings.HasPrefix(m["content"].(string), "DOWN: ") {
				t.Fatalf("path %s body %s", r.Path, r.Body)
			}
			if dig(m, "embeds", 0, "title") != "DOWN: https://example.com/shop?item=1" || dig(m, "embeds", 0, "color") != float64(colorProblem) ||
				dig(m, "embeds", 0, "url") != a.URL || dig(m, "embeds", 0, "timestamp") != "2024-06-29T14:05:00Z" ||
				dig(m, "embeds", 0, "fields", 0, "name") != "Event" {
				t.Fatalf("embed %v", m["embeds"])
			}
			if l, ok := dig(m, "allowed_mentions", "parse").([]any); !ok || len(l) != 0 {
				t.Fatalf("allowed_mentions %v: mentions must be off", m["allowed_mentions"])
			}
		}},
		{TypeTeams, func(b string) map[string]string { return map[string]string{"url": b + "/workflows/x"} }, func(t *testing.T, r received) {
			m := r.json(t)
			if m["type"] != "message" || dig(m, "attachments", 0, "contentType") != "application/vnd.microsoft.card.adaptive" ||
				dig(m, "attachments", 0, "content", "type") != "AdaptiveCard" ||
				dig(m, "attachments", 0, "content", "body", 0, "text") != "DOWN: https://example.com/shop?item=1" ||
				dig(m, "attachments", 0, "content", "body", 2, "type") != "FactSet" {
				t.Fatalf("body %s", r.Body)
			}
		}},
		{TypeTeams + "/messagecard", func(b string) map[string]string {
			return map[string]string{"url": b + "/webhookb2/x", "format": "messagecard"}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if m["@type"] != "MessageCard" || m["@context"] != "https://schema.org/extensions" || m["themeColor"] != "E01E5A" ||
				m["title"] != "DOWN: https://example.com/shop?item=1" || dig(m, "sections", 0, "facts", 0, "name") != "Event" {
				t.Fatalf("body %s", r.Body)
			}
		}},
		{TypeTelegram, func(b string) map[string]string {
			return map[string]string{"botToken": "123456:ABCdefGHIjklMNOpqrSTUvwx", "chatId": "-100123", "apiUrl": b}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if r.Path != "/bot123456:ABCdefGHIjklMNOpqrSTUvwx/sendMessage" || m["chat_id"] != "-100123" || m["parse_mode"] != "HTML" {
				t.Fatalf("path %s body %s", r.Path, r.Body)
			}
			if text := m["text"].(string); !strings.HasPrefix(text, "<b>DOWN: https://example.com/shop?item=1</b>\n") {
				t.Fatalf("text %q", text)
			}
		}},
		{TypeNtfy, func(b string) map[string]string {
			return map[string]string{"server": b, "topic": "ops_alerts", "token": "tk_secret_token_1234"}
		}, func(t *testing.T, r received) {
			h := r.Header
			if r.Path != "/ops_alerts" || h.Get("Title") != "DOWN: https://example.com/shop?item=1" || h.Get("Priority") != "5" ||
				h.Get("Tags") != "rotating_light,quarry-checks" || h.Get("Click") != a.URL || h.Get("Authorization") != "Bearer tk_secret_token_1234" {
				t.Fatalf("path %s headers %v", r.Path, h)
			}
			if string(r.Body) != a.Message {
				t.Fatalf("body %q", r.Body)
			}
		}},
		{TypeGotify, func(b string) map[string]string {
			return map[string]string{"server": b + "/gotify/", "token": "AbCdEf.123", "priority": "9"}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if r.Path != "/gotify/message" || r.Query != "token=AbCdEf.123" || m["title"] != "DOWN: https://example.com/shop?item=1" ||
				m["message"] != a.Message || m["priority"] != float64(9) {
				t.Fatalf("path %s?%s body %s", r.Path, r.Query, r.Body)
			}
		}},
		{TypePagerDuty, func(b string) map[string]string {
			return map[string]string{"routingKey": testRoutingKey, "apiUrl": b, "severity": "error"}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if r.Path != "/v2/enqueue" || m["routing_key"] != testRoutingKey || m["event_action"] != "trigger" || m["dedup_key"] != "quarry-checks-abcdef" ||
				dig(m, "payload", "summary") != a.Message || dig(m, "payload", "source") != a.URL || dig(m, "payload", "severity") != "error" ||
				dig(m, "payload", "timestamp") != "2024-06-29T14:05:00Z" {
				t.Fatalf("path %s body %s", r.Path, r.Body)
			}
		}},
		{TypeOpsgenie, func(b string) map[string]string {
			return map[string]string{"apiKey": "0b1c2d3e-genie", "apiUrl": b}
		}, func(t *testing.T, r received) {
			m := r.json(t)
			if r.Path != "/v2/alerts" || r.Header.Get("Authorization") != "GenieKey 0b1c2d3e-genie" || m["alias"] != "quarry-checks-abcdef" ||
				m["message"] != "DOWN: https://example.com/shop?item=1" || m["priority"] != "P3" || m["description"] != a.Message ||
				dig(m, "details", "checkId") != "abcdef" {
				t.Fatalf("path %s headers %v body %s", r.Path, r.Header, r.Body)
			}
		}},
		{TypeWebhook, func(b string) map[string]string { return map[string]string{"url": b + "/hook", "secret": "whsec"} }, func(t *testing.T, r received) {
			if err := VerifyWebhook([]byte("whsec"), r.Header.Get(HeaderSignature), r.Body, time.Now(), time.Minute); err != nil {
				t.Fatalf("signature: %v", err)
			}
			if m := r.json(t); m["event"] != "down" || r.Header.Get(HeaderAlertID) != "alert-1" {
				t.Fatalf("body %s", r.Body)
			}
		}},
	} {
		t.Run(tt.typ, func(t *testing.T) {
			rc := newReceiver(t)
			typ, _, _ := strings.Cut(tt.typ, "/")
			ch := Channel{ID: "chn_1", Type: typ, Name: "ops", Config: tt.cfg(rc.URL)}
			if err := ValidateConfig(typ, ch.Config); err != nil {
				t.Fatalf("config of the test is invalid: %v", err)
			}
			rec := &recorder{}
			if err := deliverTo(t, New(rec.options()), a, ch); err != nil {
				t.Fatalf("Deliver = %v", err)
			}
			r := rc.only(t)
			if r.Method != http.MethodPost || r.Header.Get("User-Agent") != UserAgent {
				t.Fatalf("method %s user-agent %q", r.Method, r.Header.Get("User-Agent"))
			}
			tt.check(t, r)
			if res := rec.Results(); len(res) != 1 || res[0].Channel != "chn_1" && res[0].Channel != typ+" chn_1" || res[0].Err != nil {
				t.Fatalf("OnResult calls %+v", res)
			}
		})
	}
}

// TestIncidentsResolveWithTheSameKey: PagerDuty gets a trigger on DOWN and
// a resolve on UP with the same dedup_key; Opsgenie an alert then a close
// by that alias.
func TestIncidentsResolveWithTheSameKey(t *testing.T) {
	down := testAlert("alert-down")
	up := testAlert("alert-up")
	up.Event, up.Previous, up.Message = "up", "down", "https://example.com/shop?item=1 is UP again"

	t.Run("pagerduty", func(t *testing.T) {
		rc := newReceiver(t, http.StatusAccepted)
		ch := Channel{ID: "chn_pd", Type: TypePagerDuty, Config: map[string]string{"routingKey": testRoutingKey, "apiUrl": rc.URL}}
		d := New((&recorder{}).options())
		for _, a := range []Alert{down, up} {
			if err := deliverTo(t, d, a, ch); err != nil {
				t.Fatal(err)
			}
		}
		reqs := rc.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		trig, res := reqs[0].json(t), reqs[1].json(t)
		if trig["event_action"] != "trigger" || res["event_action"] != "resolve" || trig["dedup_key"] != res["dedup_key"] || res["dedup_key"] == "" ||
			res["routing_key"] != testRoutingKey || dig(trig, "payload", "severity") != "critical" {
			t.Fatalf("trigger %s\nresolve %s", reqs[0].Body, reqs[1].Body)
		}
		if reqs[1].Path != "/v2/enqueue" || res["payload"] != nil {
			t.Fatalf("resolve %s %s", reqs[1].Path, reqs[1].Body)
		}
	})
	t.Run("opsgenie", func(t *testing.T) {
		rc := newReceiver(t, http.StatusAccepted)
		ch := Channel{ID: "chn_og", Type: TypeOpsgenie, Config: map[string]string{"apiKey": "genie-key", "apiUrl": rc.URL + "/"}}
		d := New((&recorder{}).options())
		for _, a := range []Alert{down, up} {
			if err := deliverTo(t, d, a, ch); err != nil {
				t.Fatal(err)
			}
		}
		reqs := rc.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		alias := reqs[0].json(t)["alias"].(string)
		if reqs[0].Path != "/v2/alerts" || reqs[1].Path != "/v2/alerts/quarry-checks-abcdef/close" || reqs[1].Query != "identifierType=alias" ||
			alias != "quarry-checks-abcdef" || reqs[1].Header.Get("Authorization") != "GenieKey genie-key" || reqs[1].json(t)["source"] == nil {
			t.Fatalf("create %s %s\nclose %s?%s %s", reqs[0].Path, reqs[0].Body, reqs[1].Path, reqs[1].Query, reqs[1].Body)
		}
	})
}

// TestTestChannel: the test message is sent once, at once, and its
// outcome returned; PagerDuty's test incident is resolved right away.
func TestTestChannel(t *testing.T) {
	rc := newReceiver(t)
	d := New((&recorder{}).options())
	err := d.TestChannel(context.Background(), Channel{ID: "chn_s", Type: TypeSlack, Name: "ops room", Config: map[string]string{"url": rc.URL + "/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := rc.only(t).json(t)["text"].(string); !strings.Contains(text, `the slack channel "ops room" works`) {
		t.Fatalf("text %q", text)
	}

	pd := newReceiver(t, http.StatusAccepted)
	if err := d.TestChannel(context.Background(), Channel{ID: "chn_p", Type: TypePagerDuty, Config: map[string]string{"routingKey": testRoutingKey, "apiUrl": pd.URL}}); err != nil {
		t.Fatal(err)
	}
	reqs := pd.requests()
	if len(reqs) != 2 || reqs[0].json(t)["event_action"] != "trigger" || reqs[1].json(t)["event_action"] != "resolve" ||
		dig(reqs[0].json(t), "payload", "severity") != "info" || reqs[0].json(t)["dedup_key"] != reqs[1].json(t)["dedup_key"] {
		t.Fatalf("%d requests: %+v", len(reqs), reqs)
	}

	// A failure is returned at once, not retried.
	bad := newReceiver(t, http.StatusServiceUnavailable)
	err = d.TestChannel(context.Background(), Channel{ID: "chn_b", Type: TypeDiscord, Config: map[string]string{"url": bad.URL + "/x"}})
	if err == nil || !strings.Contains(err.Error(), "discord chn_b: discord responded 503") || len(bad.requests()) != 1 {
		t.Fatalf("TestChannel = %v after %d requests", err, len(bad.requests()))
	}
}

// TestChannelRetries: a channel is retried like the webhook (5xx with
// Retry-After) and not after a permanent 4xx.
func TestChannelRetries(t *testing.T) {
	rc := newReceiver(t, http.StatusServiceUnavailable, http.StatusOK)
	rec := &recorder{}
	d := New(rec.options())
	if err := deliverTo(t, d, testAlert("a"), Channel{ID: "chn_1", Type: TypeSlack, Config: map[string]string{"url": rc.URL}}); err != nil {
		t.Fatal(err)
	}
	if n := len(rc.requests()); n != 2 || len(rec.Sleeps()) != 1 {
		t.Fatalf("%d requests, sleeps %v", n, rec.Sleeps())
	}
	gone := newReceiver(t, http.StatusNotFound)
	err := deliverTo(t, d, testAlert("b"), Channel{ID: "chn_2", Type: TypeSlack, Config: map[string]string{"url": gone.URL}})
	if err == nil || !strings.Contains(err.Error(), "slack chn_2: permanent failure: slack responded 404") || len(gone.requests()) != 1 {
		t.Fatalf("Deliver = %v after %d requests", err, len(gone.requests()))
	}
}

// TestChannelRefusedByPolicy: deliveries go through the network policy's
// client; a loopback receiver is refused under the default policy, and
// the error names neither the token in the URL.
func TestChannelRefusedByPolicy(t *testing.T) {
	rc := newReceiver(t)
	opts := (&recorder{}).options()
	opts.MaxAttempts = 1
	opts.HTTPClient = fetch.New(fetch.Options{}).Client()
	d := New(opts)
	err := d.TestChannel(context.Background(), Channel{ID: "chn_t", Type: TypeTelegram, Config: map[string]string{
		"botToken": "123456:SECRETsecretSECRETsecret", "chatId": "1", "apiUrl": rc.URL}})
	if err == nil || !errors.Is(err, fetch.ErrBlocked) {
		t.Fatalf("TestChannel = %v, want the policy's refusal", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error %q quotes the bot token", err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

// TestChannelNetworkErrorHidesToken: a network error's text keeps the
// scheme and host of the URL only (Gotify's token is in its query).
func TestChannelNetworkErrorHidesToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	opts := (&recorder{}).options()
	opts.MaxAttempts = 1
	err = New(opts).TestChannel(context.Background(), Channel{ID: "chn_g", Type: TypeGotify, Config: map[string]string{"server": "http://" + addr, "token": "TOPSECRET"}})
	if err == nil || strings.Contains(err.Error(), "TOPSECRET") || !strings.Contains(err.Error(), "http://"+addr) {
		t.Fatalf("TestChannel = %v", err)
	}
}

// TestChannelRemovedStopsRetries: a retry re-reads the target; a channel
// deleted meanwhile is not retried.
func TestChannelRemovedStopsRetries(t *testing.T) {
	rc := newReceiver(t, http.StatusServiceUnavailable)
	rec := &recorder{}
	opts := rec.options()
	opts.CurrentTarget = func(context.Context, Alert) (Target, error) { return Target{}, nil }
	var got []error
	opts.OnChannelResult = func(_ Alert, ch Channel, _ int, err error) { got = append(got, err) }
	err := deliverTo(t, New(opts), testAlert("a"), Channel{ID: "chn_1", Type: TypeSlack, Config: map[string]string{"url": rc.URL}})
	if !errors.Is(err, ErrTargetRemoved) || len(rc.requests()) != 1 || len(got) != 1 || !errors.Is(got[0], ErrTargetRemoved) {
		t.Fatalf("Deliver = %v after %d requests; OnChannelResult %v", err, len(rc.requests()), got)
	}
}

func TestValidateConfig(t *testing.T) {
	for _, tt := range []struct {
		typ   string
		cfg   map[string]string
		field string // "" valid
		msg   string
	}{
		{"sms", nil, "type", `unknown channel type "sms"`},
		{TypeSlack, map[string]string{}, "config.url", "required for a slack channel"},
		{TypeSlack, map[string]string{"url": "ftp://hooks.slack.com/x"}, "config.url", `not the scheme "ftp"`},
		{TypeSlack, map[string]string{"url": "https://"}, "config.url", "no host"},
		{TypeSlack, map[string]string{"url": "https://u:p@hooks.slack.com/x"}, "config.url", "user:password"},
		{TypeSlack, map[string]string{"url": "https://hooks.slack.com/x", "channel": "#ops"}, "config.channel", "unknown field for a slack channel (it takes url)"},
		{TypeSlack, map[string]string{"url": "https://hooks.slack.com/x"}, "", ""},
		{TypeWebhook, map[string]string{"url": "https://example.com/h", "secret": "has space"}, "config.secret", "printable"},
		{TypeEmail, map[string]string{"to": ""}, "config.to", "required"},
		{TypeTelegram, map[string]string{"botToken": "nope", "chatId": "1"}, "config.botToken", "BotFather"},
		{TypeTelegram, map[string]string{"botToken": "123:ABCdefGHIjklMNOpqrSTUvwx"}, "config.chatId", "required"},
		{TypeTelegram, map[string]string{"botToken": "123:ABCdefGHIjklMNOpqrSTUvwx", "chatId": "@ops"}, "", ""},
		{TypeNtfy, map[string]string{"topic": "a/b"}, "config.topic", "letters"},
		{TypeNtfy, map[string]string{"topic": "ops", "priority": "6"}, "config.priority", `"6" is not one of 1, 2, 3, 4, 5`},
		{TypeNtfy, map[string]string{"topic": "ops"}, "", ""},
		{TypeGotify, map[string]string{"token": "x"}, "config.server", "required"},
		{TypeGotify, map[string]string{"server": "https://g.example", "token": "x", "priority": "11"}, "config.priority", "not one of"},
		{TypePagerDuty, map[string]string{"routingKey": "short"}, "config.routingKey", "32-character"},
		{TypePagerDuty, map[string]string{"routingKey": testRoutingKey, "severity": "fatal"}, "config.severity", "not one of critical"},
		{TypePagerDuty, map[string]string{"routingKey": testRoutingKey}, "", ""},
		{TypeOpsgenie, map[string]string{"apiKey": "k", "priority": "P0"}, "config.priority", "P1"},
		{TypeOpsgenie, map[string]string{"apiKey": "k\nX-Evil: 1"}, "config.apiKey", "one line"},
		{TypeTeams, map[string]string{"url": "https://x.example/w", "format": "html"}, "config.format", "adaptive, messagecard"},
		{TypeDiscord, map[string]string{"url": "https://discord.com/api/webhooks/1/x" + strings.Repeat("x", 3000)}, "config.url", "at most"},
	} {
		err := ValidateConfig(tt.typ, tt.cfg)
		var ce *ConfigError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s %v: %v, want valid", tt.typ, tt.cfg, err)
		case tt.field != "" && (!errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msg)):
			t.Errorf("%s %v: %v, want %s: …%s…", tt.typ, tt.cfg, err, tt.field, tt.msg)
		}
	}
}

func TestMaskConfig(t *testing.T) {
	got := MaskConfig(TypeTelegram, map[string]string{"botToken": "123456:ABCdefGHIjklMNOpqrSTUvwx", "chatId": "-100123"})
	if got["botToken"] != "****Uvwx" || got["chatId"] != "-100123" {
		t.Fatalf("telegram %v", got)
	}
	got = MaskConfig(TypeSlack, map[string]string{"url": "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXabcd"})
	if got["url"] != "https://hooks.slack.com/****abcd" {
		t.Fatalf("slack %v", got)
	}
	got = MaskConfig(TypeGotify, map[string]string{"server": "https://g.example", "token": "short"})
	if got["token"] != "****" || got["server"] != "https://g.example" {
		t.Fatalf("gotify %v", got)
	}
	got = MaskConfig(TypeWebhook, map[string]string{"url": "https://example.com/hook", "secret": "whsec_0123456789abcdef"})
	if got["secret"] != "****cdef" || got["url"] != "https://example.com/hook" {
		t.Fatalf("webhook %v", got)
	}
}
