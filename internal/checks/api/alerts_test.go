package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/api"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/scheduler"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
)

// flaky is a loopback target whose health the test flips.
type flaky struct {
	*httptest.Server
	down atomic.Bool
}

func newFlaky(t *testing.T) *flaky {
	t.Helper()
	f := &flaky{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "<html><body>ok</body></html>")
	}))
	t.Cleanup(f.Close)
	return f
}

// hook is a loopback webhook receiver answering status; it passes the
// events it receives on a channel.
type hook struct {
	*httptest.Server
	events chan string
}

func newHook(t *testing.T, status int) *hook {
	t.Helper()
	h := &hook{events: make(chan string, 16)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alert.Alert
		_ = json.NewDecoder(r.Body).Decode(&a)
		h.events <- a.Event
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

// expect waits for event on h.
func (h *hook) expect(t *testing.T, event string) {
	t.Helper()
	select {
	case got := <-h.events:
		if got != event {
			t.Fatalf("webhook %s received %q, want %q", h.URL, got, event)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("webhook %s received no %q alert", h.URL, event)
	}
}

// none checks that h received nothing.
func (h *hook) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-h.events:
		t.Fatalf("webhook %s received %q, want nothing", h.URL, got)
	case <-time.After(200 * time.Millisecond):
	}
}

// alerting is the API with a scheduler that sends alerts through a running
// dispatcher wired as quarry serve wires it (delivery outcomes recorded).
type alerting struct {
	srv     *httptest.Server
	sched   *scheduler.Scheduler
	results chan error // every delivery outcome, after it is recorded
}

func (e *env) alerting(t *testing.T, smtp *alert.SMTPConfig) *alerting {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	prb := probe.New(probe.Options{Fetch: fetch.Options{AllowPrivate: true}})
	t.Cleanup(prb.Close)
	a := &alerting{results: make(chan error, 16)}
	record := scheduler.RecordDeliveries(e.st, logger)
	d := alert.New(alert.Options{SMTP: smtp, MaxAttempts: 1, Logger: logger,
		OnResult: func(al alert.Alert, channel string, attempts int, err error) {
			record(al, channel, attempts, err)
			a.results <- err
		}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	a.sched = scheduler.New(e.st, prb, d, scheduler.Options{Owner: "alerting", RunTimeout: 5 * time.Second, Logger: logger})
	a.srv = httptest.NewServer(api.New(e.st, prb, a.sched, api.Options{EmailEnabled: smtp != nil, Logger: logger}))
	t.Cleanup(a.srv.Close)
	return a
}

// delivered waits for the outcome of one delivery.
func (a *alerting) delivered(t *testing.T) error {
	t.Helper()
	select {
	case err := <-a.results:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no alert delivery finished")
		return nil
	}
}

// TestAlertTargetChangeAppliesAtOnce: alert targets changed with PUT
// /me/alerts are used for the very next alert, even one fired within a
// second of the change (no cache of the old targets).
func TestAlertTargetChangeAppliesAtOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.alerting(t, nil)
	_, token := e.user(t, "a@example.com", store.TierPro)
	target := newFlaky(t)
	old, fresh := newHook(t, http.StatusNoContent), newHook(t, http.StatusNoContent)

	if r := call(t, a.srv.URL, "PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": old.URL}); r.code != 200 {
		t.Fatalf("PUT alerts = %d %s", r.code, r.raw)
	}
	r := call(t, a.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	id := r.obj(t)["id"].(string)
	t0 := time.Now()
	target.down.Store(true)
	if n := a.sched.RunDue(ctx, t0.Add(61*time.Second)); n != 1 {
		t.Fatalf("first run: %d runs", n)
	}
	old.expect(t, "down")
	a.delivered(t)

	if r := call(t, a.srv.URL, "PUT", "/v1/me/alerts", token, map[string]any{"webhookUrl": fresh.URL}); r.code != 200 {
		t.Fatalf("PUT alerts = %d %s", r.code, r.raw)
	}
	target.down.Store(false)
	if r := call(t, a.srv.URL, "POST", "/v1/checks/"+id+"/run", token, nil); r.code != 202 {
		t.Fatalf("run = %d %s", r.code, r.raw)
	}
	// One second after the previous run: well within any cache.
	if n := a.sched.RunDue(ctx, t0.Add(62*time.Second)); n != 1 {
		t.Fatalf("second run: %d runs", n)
	}
	fresh.expect(t, "up")
	old.none(t)
}

// TestAlertTargetsRefusedAndFailuresShown: PUT /me/alerts refuses targets
// that could never be delivered (an email without an SMTP server, a
// webhook the network policy refuses), and delivery failures of accepted
// targets are shown on the user (GET /me) and the check, with their time.
func TestAlertTargetsRefusedAndFailuresShown(t *testing.T) {
	t.Run("refused at PUT", func(t *testing.T) {
		e := newEnv(t)
		noSMTP := e.alerting(t, nil)
		_, token := e.user(t, "a@example.com", store.TierPro)
		for _, tt := range []struct {
			name, base string
			body       map[string]any
			want       int
			mention    string
		}{
			{"email without SMTP", noSMTP.srv.URL, map[string]any{"email": "ops@example.com"}, 400, "--checks-smtp"},
			{"email and webhook without SMTP", noSMTP.srv.URL, map[string]any{"email": "ops@example.com", "webhookUrl": e.site.URL + "/hook"}, 400, "--checks-smtp"},
			{"webhook refused by the network policy", e.strict.URL, map[string]any{"webhookUrl": e.site.URL + "/hook"}, 400, "--allow-networks"},
			{"metadata webhook refused", e.strict.URL, map[string]any{"webhookUrl": "http://169.254.169.254/latest"}, 400, "--allow-networks"},
			{"webhook not http", e.strict.URL, map[string]any{"webhookUrl": "ftp://example.com/hook"}, 400, `webhookUrl "ftp://example.com/hook" cannot receive alerts: want an http:// or https:// URL, not the scheme "ftp"`},
			{"webhook alone without SMTP", noSMTP.srv.URL, map[string]any{"webhookUrl": e.site.URL + "/hook"}, 200, ""},
			{"email with SMTP", e.srv.URL, map[string]any{"email": "ops@example.com"}, 200, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := call(t, tt.base, "PUT", "/v1/me/alerts", token, tt.body)
				if r.code != tt.want {
					t.Fatalf("= %d %s, want %d", r.code, r.raw, tt.want)
				}
				if tt.want != 200 {
					msg := r.errMsg(t)
					if !strings.Contains(msg, tt.mention) {
						t.Fatalf("error %q does not name %s", msg, tt.mention)
					}
					// The reason alone, not the words of the layers it
					// passed through.
					if strings.Contains(msg, "probe:") || strings.Contains(msg, "fetch:") || strings.Contains(msg, "invalid check") {
						t.Fatalf("error %q carries another layer's words", msg)
					}
				}
			})
		}
	})

	// A closed port: the SMTP server is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadSMTP := ln.Addr().String()
	ln.Close()
	for _, tt := range []struct {
		name    string
		smtp    *alert.SMTPConfig
		targets func(t *testing.T, e *env, userID string) map[string]any // PUT body; nil: stored directly
		want    string                                                   // in lastAlertError
	}{
		{"webhook answering 410", nil, func(t *testing.T, e *env, _ string) map[string]any {
			return map[string]any{"webhookUrl": newHook(t, http.StatusGone).URL}
		}, "webhook: permanent failure: webhook responded 410"},
		{"SMTP server down", &alert.SMTPConfig{Addr: deadSMTP, From: "checks@example.com"}, func(*testing.T, *env, string) map[string]any {
			return map[string]any{"email": "ops@example.com"}
		}, "email: "},
		{"email stored before SMTP was removed", nil, func(t *testing.T, e *env, userID string) map[string]any {
			if _, err := e.st.SetAlerts(context.Background(), userID, "", "", "ops@example.com"); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "email: " + alert.ErrEmailDisabled.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			a := e.alerting(t, tt.smtp)
			u, token := e.user(t, "a@example.com", store.TierPro)
			if body := tt.targets(t, e, u.ID); body != nil {
				if r := call(t, a.srv.URL, "PUT", "/v1/me/alerts", token, body); r.code != 200 {
					t.Fatalf("PUT alerts = %d %s", r.code, r.raw)
				}
			}
			target := newFlaky(t)
			target.down.Store(true)
			r := call(t, a.srv.URL, "POST", "/v1/checks", token, map[string]any{"url": target.URL + "/", "checkType": "AVAILABILITY", "delayMs": 60000})
			if r.code != 201 {
				t.Fatalf("create = %d %s", r.code, r.raw)
			}
			path := "/v1/checks/" + r.obj(t)["id"].(string)
			before := time.Now().Add(-time.Second)
			if n := a.sched.RunDue(ctx, time.Now().Add(61*time.Second)); n != 1 {
				t.Fatalf("run: %d runs", n)
			}
			if err := a.delivered(t); err == nil {
				t.Fatal("the alert was delivered; want a failure")
			}
			for _, where := range []string{"/v1/me", path} {
				got := call(t, a.srv.URL, "GET", where, token, nil).obj(t)
				msg, _ := got["lastAlertError"].(string)
				at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got["lastAlertErrorAt"]))
				if !strings.Contains(msg, tt.want) || err != nil || at.Before(before) || at.After(time.Now()) {
					t.Fatalf("GET %s: lastAlertError %q at %v; want %q, now", where, msg, got["lastAlertErrorAt"], tt.want)
				}
			}
		})
	}
}
