package alert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

func TestDeliverEmail(t *testing.T) {
	tests := []struct {
		name         string
		rcptReplies  []string
		dataReplies  []string
		maxAttempts  int
		wantAttempts int
		wantMails    int
		wantCode     int // SMTP code of the final error; 0: success
	}{
		{name: "delivered", wantAttempts: 1, wantMails: 1},
		{name: "transient 451 then success", dataReplies: []string{"451 4.3.0 try later", "250 OK"}, wantAttempts: 2, wantMails: 1},
		{name: "transient rcpt 450 then success", rcptReplies: []string{"450 4.2.1 mailbox busy"}, wantAttempts: 2, wantMails: 1},
		{name: "permanent 550 no retry", rcptReplies: []string{"550 5.1.1 no such user"}, wantAttempts: 1, wantCode: 550},
		{name: "permanent 554 after data no retry", dataReplies: []string{"554 5.7.1 rejected"}, wantAttempts: 1, wantCode: 554},
		{
			name:         "transient until MaxAttempts",
			dataReplies:  []string{"451 a", "451 b", "451 c", "451 d"},
			maxAttempts:  3,
			wantAttempts: 3,
			wantCode:     451,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestSMTPServer(t, tt.rcptReplies, tt.dataReplies)
			rec := &recorder{}
			opts := rec.options()
			opts.SMTP = &SMTPConfig{Addr: srv.Addr(), From: "Quarry Checks <alerts@checks.example>"}
			if tt.maxAttempts > 0 {
				opts.MaxAttempts = tt.maxAttempts
			}
			d := New(opts)
			a := testAlert("alert-1")
			err := d.Deliver(context.Background(), a, Target{Email: "Owner <owner@example.org>"})

			var tpErr *textproto.Error
			switch {
			case tt.wantCode == 0 && err != nil:
				t.Fatalf("Deliver = %v, want nil", err)
			case tt.wantCode != 0 && (!errors.As(err, &tpErr) || tpErr.Code != tt.wantCode):
				t.Fatalf("Deliver = %v, want SMTP %d", err, tt.wantCode)
			}
			results := rec.Results()
			if len(results) != 1 || results[0].Channel != ChannelEmail || results[0].Attempts != tt.wantAttempts ||
				(results[0].Err == nil) != (tt.wantCode == 0) {
				t.Fatalf("results = %+v, want one email result after %d attempts", results, tt.wantAttempts)
			}
			if got := len(rec.Sleeps()); got != tt.wantAttempts-1 {
				t.Errorf("slept %d times, want %d", got, tt.wantAttempts-1)
			}
			mails := srv.Mails()
			if len(mails) != tt.wantMails {
				t.Fatalf("server accepted %d mails, want %d", len(mails), tt.wantMails)
			}
			for _, m := range mails {
				checkMail(t, m, a)
			}
		})
	}
}

// checkMail asserts the envelope, headers and body of an alert email.
func checkMail(t *testing.T, m receivedMail, a Alert) {
	t.Helper()
	if m.From != "alerts@checks.example" || len(m.To) != 1 || m.To[0] != "owner@example.org" {
		t.Errorf("envelope from %q to %q", m.From, m.To)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("parse message: %v\n%s", err, m.Data)
	}
	h := msg.Header
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatalf("decode subject: %v", err)
	}
	wantSubject := "[checks] " + a.Event + ": " + a.URL
	if subject != wantSubject {
		t.Errorf("Subject = %q, want %q", subject, wantSubject)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "alerts@checks.example" || from[0].Name != "Quarry Checks" {
		t.Errorf("From = %q (%v)", h.Get("From"), err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "owner@example.org" {
		t.Errorf("To = %q (%v)", h.Get("To"), err)
	}
	if date, err := h.Date(); err != nil || time.Since(date) > time.Minute {
		t.Errorf("Date = %q (%v)", h.Get("Date"), err)
	}
	if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@checks.example>") || !strings.Contains(id, a.ID) {
		t.Errorf("Message-ID = %q", id)
	}
	if ct := h.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if h.Get("X-Checks-Alert-Id") != a.ID {
		t.Errorf("X-Checks-Alert-Id = %q", h.Get("X-Checks-Alert-Id"))
	}
	var body io.Reader = msg.Body
	if strings.EqualFold(h.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	text := string(raw)
	for _, want := range []string{
		a.Message,
		"URL: " + a.URL,
		"Event: down",
		"Previous: up",
		"Check: abcdef",
		"At: 2024-06-29T14:05:00Z",
		"status: DOWN",
		"responseTime: 250",
		"keywordFound: false",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("body lacks %q:\n%s", want, text)
		}
	}
}

func TestBuildMessageNoHeaderInjection(t *testing.T) {
	a := testAlert("id\r\nBcc: victim@example.com")
	a.URL = "https://example.com/\r\nBcc: victim@example.com"
	a.Event = "down\nX-Evil: 1"
	a.Message = "ünïcode message\r\nBcc: x@example.com"
	from := &mail.Address{Name: "Checks", Address: "alerts@checks.example"}
	to := &mail.Address{Address: "owner@example.org"}
	msg, err := mail.ReadMessage(bytes.NewReader(buildMessage(a, from, to, time.Now())))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, k := range []string{"Bcc", "X-Evil"} {
		if v := msg.Header.Get(k); v != "" {
			t.Errorf("injected header %s: %q", k, v)
		}
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || strings.ContainsAny(subject, "\r\n") {
		t.Errorf("Subject = %q (%v)", subject, err)
	}
	raw, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if !strings.HasPrefix(string(raw), "ünïcode message Bcc: x@example.com\r\n") {
		t.Errorf("body = %q", raw)
	}
}

func TestDeliverEmailErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	_ = ln.Close()
	srv := newTestSMTPServer(t, nil, nil)

	tests := []struct {
		name         string
		cfg          *SMTPConfig
		to           string
		wantAttempts int
		wantErr      error
	}{
		{name: "connection refused retried", cfg: &SMTPConfig{Addr: refused, From: "a@b.example"}, to: "o@example.org", wantAttempts: 3},
		{name: "invalid recipient", cfg: &SMTPConfig{Addr: srv.Addr(), From: "a@b.example"}, to: "not an address", wantAttempts: 1, wantErr: ErrInvalidTarget},
		{name: "invalid from", cfg: &SMTPConfig{Addr: srv.Addr(), From: "nope"}, to: "o@example.org", wantAttempts: 1},
		{name: "STARTTLS required but not offered", cfg: &SMTPConfig{Addr: srv.Addr(), From: "a@b.example", StartTLS: true}, to: "o@example.org", wantAttempts: 1},
		{name: "AUTH required but not offered", cfg: &SMTPConfig{Addr: srv.Addr(), From: "a@b.example", Username: "u", Password: "p"}, to: "o@example.org", wantAttempts: 1},
		{name: "email disabled", cfg: nil, to: "o@example.org", wantAttempts: 0, wantErr: ErrEmailDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			opts := rec.options()
			opts.MaxAttempts = 3
			opts.SMTP = tt.cfg
			d := New(opts)
			err := d.Deliver(context.Background(), testAlert("a"), Target{Email: tt.to})
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Deliver = %v, want error %v", err, tt.wantErr)
			}
			results := rec.Results()
			if len(results) != 1 || results[0].Channel != ChannelEmail || results[0].Attempts != tt.wantAttempts || results[0].Err == nil {
				t.Fatalf("results = %+v, want one email failure after %d attempts", results, tt.wantAttempts)
			}
		})
	}
	if n := len(srv.Mails()); n != 0 {
		t.Errorf("server accepted %d mails, want 0", n)
	}
}

func TestDeliverChannelsIndependent(t *testing.T) {
	ws := newWebhookServer(t, "k", webhookStep{status: 400})
	srv := newTestSMTPServer(t, nil, []string{"451 later"})
	rec := &recorder{}
	opts := rec.options()
	opts.SMTP = &SMTPConfig{Addr: srv.Addr(), From: "Quarry Checks <alerts@checks.example>"}
	d := New(opts)
	a := testAlert("both")
	err := d.Deliver(context.Background(), a, Target{WebhookURL: ws.URL, WebhookSecret: "k", Email: "owner@example.org"})

	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != 400 {
		t.Fatalf("Deliver = %v, want the webhook's 400", err)
	}
	var tpErr *textproto.Error
	if errors.As(err, &tpErr) {
		t.Errorf("Deliver = %v, email error leaked although email was delivered", err)
	}
	got := map[string]result{}
	for _, r := range rec.Results() {
		got[r.Channel] = r
	}
	if r := got[ChannelWebhook]; r.Attempts != 1 || r.Err == nil {
		t.Errorf("webhook result = %+v, want failure after 1 attempt", r)
	}
	if r := got[ChannelEmail]; r.Attempts != 2 || r.Err != nil {
		t.Errorf("email result = %+v, want success after 2 attempts", r)
	}
	if len(srv.Mails()) != 1 {
		t.Errorf("mails = %d, want 1", len(srv.Mails()))
	}
}
