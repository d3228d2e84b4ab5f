package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestDispatcherRunEndToEnd(t *testing.T) {
	const n = 5
	ws := newWebhookServer(t, "whsec", webhookStep{status: 503, retryAfter: "1"}, webhookStep{status: 200})
	srv := newTestSMTPServer(t, nil, []string{"451 greylisted"})
	rec := &recorder{notify: make(chan result, 2*n+1)}
	opts := rec.options()
	opts.SMTP = &SMTPConfig{Addr: srv.Addr(), From: "Quarry Checks <alerts@checks.example>"}
	opts.Workers = 3
	d := New(opts)

	// Sends before Run are queued.
	target := Target{WebhookURL: ws.URL + "/hook", WebhookSecret: "whsec", Email: "Owner <owner@example.org>"}
	for i := range n {
		if err := d.Send(testAlert(fmt.Sprintf("alert-%d", i)), target); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	got := map[string]result{}
	timeout := time.After(10 * time.Second)
	for len(got) < 2*n {
		select {
		case r := <-rec.notify:
			got[r.AlertID+"/"+r.Channel] = r
		case <-timeout:
			t.Fatalf("timed out; results so far: %+v", got)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	for i := range n {
		for _, ch := range []string{ChannelWebhook, ChannelEmail} {
			r, ok := got[fmt.Sprintf("alert-%d/%s", i, ch)]
			if !ok || r.Err != nil || r.Attempts < 1 {
				t.Errorf("alert-%d %s: %+v (present %v)", i, ch, r, ok)
			}
		}
	}
	requests, _, problems := ws.snapshot()
	for _, p := range problems {
		t.Errorf("webhook server: %s", p)
	}
	if requests != n+1 { // one 503 then all succeed
		t.Errorf("webhook requests = %d, want %d", requests, n+1)
	}
	mails := srv.Mails()
	if len(mails) != n {
		t.Fatalf("mails = %d, want %d", len(mails), n)
	}
	for _, m := range mails {
		if m.To[0] != "owner@example.org" {
			t.Errorf("mail to %v", m.To)
		}
	}
	if err := d.Send(testAlert("late"), target); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Run = %v, want ErrClosed", err)
	}
	if err := d.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
	}
}

func TestDispatcherSend(t *testing.T) {
	webhook := Target{WebhookURL: "http://127.0.0.1:1/hook"}
	tests := []struct {
		name        string
		smtp        *SMTPConfig
		queueSize   int
		targets     []Target
		wantErrs    []error
		wantResults int // OnResult calls made synchronously by Send
	}{
		{
			name: "queue full", queueSize: 2,
			targets:  []Target{webhook, webhook, webhook, webhook},
			wantErrs: []error{nil, nil, ErrQueueFull, ErrQueueFull},
		},
		{
			name: "no target", queueSize: 2,
			targets:  []Target{{}, {WebhookSecret: "x"}},
			wantErrs: []error{ErrNoTarget, ErrNoTarget},
		},
		{
			name: "email only without SMTP is dropped", queueSize: 1,
			targets:     []Target{{Email: "o@example.org"}, webhook, {Email: "o@example.org"}},
			wantErrs:    []error{nil, nil, nil},
			wantResults: 2,
		},
		{
			name: "email only with SMTP is queued", queueSize: 1, smtp: &SMTPConfig{Addr: "127.0.0.1:25", From: "a@b.example"},
			targets:  []Target{{Email: "o@example.org"}, {Email: "o@example.org"}},
			wantErrs: []error{nil, ErrQueueFull},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			opts := rec.options()
			opts.QueueSize = tt.queueSize
			opts.SMTP = tt.smtp
			d := New(opts)
			for i, target := range tt.targets {
				err := d.Send(testAlert(fmt.Sprint(i)), target)
				if !errors.Is(err, tt.wantErrs[i]) || (tt.wantErrs[i] == nil && err != nil) {
					t.Errorf("Send %d = %v, want %v", i, err, tt.wantErrs[i])
				}
			}
			results := rec.Results()
			if len(results) != tt.wantResults {
				t.Fatalf("results = %+v, want %d", results, tt.wantResults)
			}
			for _, r := range results {
				if r.Channel != ChannelEmail || !errors.Is(r.Err, ErrEmailDisabled) || r.Attempts != 0 {
					t.Errorf("result = %+v, want email disabled", r)
				}
			}
		})
	}
}

func TestDispatcherRunAbandonsPending(t *testing.T) {
	var logs syncBuffer
	rec := &recorder{}
	opts := rec.options()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	opts.QueueSize = 10
	d := New(opts)
	for i := range 4 {
		if err := d.Send(testAlert(fmt.Sprint(i)), Target{WebhookURL: "http://127.0.0.1:1/"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // ended before Run: nothing is delivered
	if err := d.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "abandoned=4") {
		t.Errorf("log lacks abandoned=4:\n%s", out)
	}
	if r := rec.Results(); len(r) != 0 {
		t.Errorf("results = %+v, want none", r)
	}
}
