package alert

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// smtpTimeout bounds one SMTP attempt (dial through QUIT).
const smtpTimeout = 30 * time.Second

// sendEmail makes one email attempt. SMTP 5xx replies and configuration
// problems are permanent; network errors and 4xx replies are transient.
func (d *Dispatcher) sendEmail(ctx context.Context, a Alert, to string) error {
	cfg := d.opts.SMTP
	rcpt, err := mail.ParseAddress(to)
	if err != nil {
		return permanent(fmt.Errorf("%w: email %q: %w", ErrInvalidTarget, to, err))
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return permanent(fmt.Errorf("smtp from %q: %w", cfg.From, err))
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return permanent(fmt.Errorf("smtp addr %q: %w", cfg.Addr, err))
	}
	msg := buildMessage(a, from, rcpt, time.Now())

	ctx, cancel := context.WithTimeout(ctx, smtpTimeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("smtp dial: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Unblock any pending read/write when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	c, err := smtp.NewClient(conn, host)
	if err != nil {
		_ = conn.Close()
		return classifySMTP("greeting", err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return classifySMTP("hello", err)
	}
	if cfg.StartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return permanent(fmt.Errorf("smtp: server %s does not offer STARTTLS", cfg.Addr))
		}
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return classifySMTP("starttls", err)
		}
	}
	if cfg.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return permanent(fmt.Errorf("smtp: server %s does not offer AUTH", cfg.Addr))
		}
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, host)); err != nil {
			var tpErr *textproto.Error
			if !errors.As(err, &tpErr) {
				// Client-side refusal, e.g. unencrypted connection.
				return permanent(fmt.Errorf("smtp auth: %w", err))
			}
			return classifySMTP("auth", err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return classifySMTP("mail from", err)
	}
	if err := c.Rcpt(rcpt.Address); err != nil {
		return classifySMTP("rcpt to", err)
	}
	w, err := c.Data()
	if err != nil {
		return classifySMTP("data", err)
	}
	if _, err := w.Write(msg); err != nil {
		return classifySMTP("data write", err)
	}
	if err := w.Close(); err != nil {
		return classifySMTP("data end", err)
	}
	// The message is accepted; a failing QUIT must not cause a resend.
	_ = c.Quit()
	return nil
}

// classifySMTP marks permanent SMTP replies (5xx) as non-retryable.
func classifySMTP(stage string, err error) error {
	err = fmt.Errorf("smtp %s: %w", stage, err)
	var tpErr *textproto.Error
	if errors.As(err, &tpErr) && tpErr.Code >= 500 {
		return permanent(err)
	}
	return err
}

// buildMessage renders the RFC 5322 message for a.
func buildMessage(a Alert, from, to *mail.Address, now time.Time) []byte {
	var b bytes.Buffer
	header := func(k, v string) {
		b.WriteString(k + ": " + v + "\r\n")
	}
	subject := fmt.Sprintf("[checks] %s: %s", oneLine(a.Event), oneLine(a.URL))
	header("From", from.String())
	header("To", to.String())
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", messageID(a.ID, from.Address))
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header(HeaderAlertID, mime.QEncoding.Encode("utf-8", oneLine(a.ID)))
	b.WriteString("\r\n")

	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(emailBody(a)))
	_ = qp.Close()
	return b.Bytes()
}

// emailBody is the plain-text body: the message followed by the alert's fields
// and its result.
func emailBody(a Alert) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, oneLine(v))
		}
	}
	b.WriteString(oneLine(a.Message) + "\r\n\r\n")
	line("URL", a.URL)
	line("Event", a.Event)
	line("Previous", a.Previous)
	line("Check", a.CheckID)
	line("Check type", a.CheckType)
	if !a.At.IsZero() {
		line("At", a.At.UTC().Format(time.RFC3339))
	}
	line("Alert ID", a.ID)
	if len(a.Result) > 0 {
		b.WriteString("\r\nResult:\r\n")
		keys := make([]string, 0, len(a.Result))
		for k := range a.Result {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\r\n", oneLine(k), oneLine(formatValue(a.Result[k])))
		}
	}
	return b.String()
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if j, err := json.Marshal(v); err == nil {
		return string(j)
	}
	return fmt.Sprint(v)
}

// oneLine removes line breaks (header and body-line injection).
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
}

// messageID returns a Message-ID stable per alert, so retries of the same
// alert carry the same ID.
func messageID(alertID, fromAddr string) string {
	domain := "quarry.invalid"
	if i := strings.LastIndexByte(fromAddr, '@'); i >= 0 && i < len(fromAddr)-1 {
		domain = fromAddr[i+1:]
	}
	local := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(".-_", r):
			return r
		}
		return '-'
	}, alertID)
	if local == "" {
		local = "alert"
	}
	return "<checks-alert." + local + "@" + domain + ">"
}
