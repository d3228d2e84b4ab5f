package alert

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Webhook request headers.
const (
	// HeaderAlertID carries Alert.ID, the receiver's idempotency key.
	HeaderAlertID = "X-Checks-Alert-Id"
	// HeaderSignature carries the SignWebhook value when a secret is set.
	HeaderSignature = "X-Checks-Signature"
	// UserAgent is sent with every webhook request.
	UserAgent = "quarry-checks/1"
	// DefaultSignatureTolerance is used by VerifyWebhook when tolerance <= 0.
	DefaultSignatureTolerance = 5 * time.Minute
)

// Signature verification errors returned by VerifyWebhook.
var (
	// ErrSignatureFormat means the header is malformed.
	ErrSignatureFormat = errors.New("alert: malformed webhook signature header")
	// ErrSignatureExpired means the signed timestamp is outside the tolerance.
	ErrSignatureExpired = errors.New("alert: webhook signature timestamp outside tolerance")
	// ErrSignatureMismatch means no v1 signature matches the body.
	ErrSignatureMismatch = errors.New("alert: webhook signature mismatch")
)

// HTTPStatusError is a webhook's or provider's response with a non-2xx
// status.
type HTTPStatusError struct {
	// Service names who responded: "" for the alert webhook, else the
	// channel type ("slack", "pagerduty", …).
	Service string
	// StatusCode is the response status.
	StatusCode int
	// Body is the start of the response body.
	Body string
}

// Error implements error.
func (e *HTTPStatusError) Error() string {
	who := e.Service
	if who == "" {
		who = "webhook"
	}
	if e.Body == "" {
		return fmt.Sprintf("%s responded %d %s", who, e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("%s responded %d %s: %q", who, e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// SignWebhook returns the X-Checks-Signature value for body sent at ts:
// "t=<unix>,v1=<hex HMAC-SHA256 of "<unix>.<body>">".
func SignWebhook(secret []byte, ts time.Time, body []byte) string {
	unix := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + unix + ",v1=" + hex.EncodeToString(webhookMAC(secret, unix, body))
}

func webhookMAC(secret []byte, unix string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(unix))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyWebhook checks a X-Checks-Signature header against body. The signed
// timestamp must be within tolerance of now (in either direction; tolerance
// <= 0 means DefaultSignatureTolerance), which makes replays of old requests
// fail. Any of several v1 entries may match (for secret rotation).
func VerifyWebhook(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultSignatureTolerance
	}
	var (
		unix string
		sigs [][]byte
	)
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: element %q", ErrSignatureFormat, part)
		}
		switch k {
		case "t":
			if unix != "" {
				return fmt.Errorf("%w: duplicate timestamp", ErrSignatureFormat)
			}
			unix = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return fmt.Errorf("%w: v1: %w", ErrSignatureFormat, err)
			}
			sigs = append(sigs, sig)
		}
	}
	if unix == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: need t and v1", ErrSignatureFormat)
	}
	sec, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: t: %w", ErrSignatureFormat, err)
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: signed %s ago", ErrSignatureExpired, age.Round(time.Second))
	}
	want := webhookMAC(secret, unix, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// maxErrorBody bounds the response body quoted in HTTPStatusError.
const maxErrorBody = 512

// postWebhook makes one webhook attempt.
func (d *Dispatcher) postWebhook(ctx context.Context, a Alert, t Target) error {
	u, err := url.Parse(t.WebhookURL)
	if err != nil {
		return permanent(fmt.Errorf("%w: webhook URL: %w", ErrInvalidTarget, err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return permanent(fmt.Errorf("%w: webhook URL %q: need http(s) scheme and host", ErrInvalidTarget, t.WebhookURL))
	}
	if !validHeaderValue(a.ID) {
		return permanent(fmt.Errorf("alert ID %q is not a valid header value", a.ID))
	}
	body, err := json.Marshal(a)
	if err != nil {
		return permanent(fmt.Errorf("encode alert: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderAlertID, a.ID)
	if t.WebhookSecret != "" {
		req.Header.Set(HeaderSignature, SignWebhook([]byte(t.WebhookSecret), time.Now(), body))
	}
	resp, err := d.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err) // network errors are transient
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // allow connection reuse

	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	serr := &HTTPStatusError{StatusCode: code, Body: strings.TrimSpace(string(snippet))}
	if code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests {
		return &attemptError{err: serr, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	// Other 4xx, and 1xx/3xx (redirects are not followed), are permanent.
	return permanent(serr)
}

// parseRetryAfter returns the delay requested by a Retry-After header value
// (delta seconds or HTTP date), or 0 when absent or invalid.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Clamp absurd values before multiplying to avoid overflow; callers
		// cap at MaxBackoff anyway.
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// validHeaderValue reports whether v can be sent as an HTTP header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
