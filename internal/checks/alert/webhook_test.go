package alert

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestSignVerifyWebhook(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"id":"a1"}`)
	now := time.Unix(1_700_000_000, 0)
	valid := SignWebhook(secret, now, body)

	tests := []struct {
		name    string
		secret  []byte
		header  string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{name: "valid", secret: secret, header: valid, body: body, now: now},
		{name: "valid within tolerance", secret: secret, header: valid, body: body, now: now.Add(4 * time.Minute)},
		{name: "tampered body", secret: secret, header: valid, body: []byte(`{"id":"a2"}`), now: now, wantErr: ErrSignatureMismatch},
		{name: "wrong secret", secret: []byte("other"), header: valid, body: body, now: now, wantErr: ErrSignatureMismatch},
		{name: "timestamp too old", secret: secret, header: valid, body: body, now: now.Add(6 * time.Minute), wantErr: ErrSignatureExpired},
		{name: "timestamp in future", secret: secret, header: valid, body: body, now: now.Add(-6 * time.Minute), wantErr: ErrSignatureExpired},
		{name: "tampered timestamp", secret: secret, header: "t=1700000001," + valid[len("t=1700000000,"):], body: body, now: now, wantErr: ErrSignatureMismatch},
		{name: "rotated secrets", secret: secret, header: valid + ",v1=" + "00ff", body: body, now: now},
		{name: "rotated secrets other order", secret: secret, header: "t=1700000000,v1=00ff," + valid[len("t=1700000000,"):], body: body, now: now},
		{name: "missing v1", secret: secret, header: "t=1700000000", body: body, now: now, wantErr: ErrSignatureFormat},
		{name: "missing t", secret: secret, header: valid[len("t=1700000000,"):], body: body, now: now, wantErr: ErrSignatureFormat},
		{name: "bad hex", secret: secret, header: "t=1700000000,v1=zz", body: body, now: now, wantErr: ErrSignatureFormat},
		{name: "garbage", secret: secret, header: "nonsense", body: body, now: now, wantErr: ErrSignatureFormat},
		{name: "empty", secret: secret, header: "", body: body, now: now, wantErr: ErrSignatureFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyWebhook(tt.secret, tt.header, tt.body, tt.now, 5*time.Minute)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("VerifyWebhook = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// webhookStep is one scripted webhook response.
type webhookStep struct {
	status     int
	retryAfter string
}

// webhookServer answers with steps in order, repeating the last one.
type webhookServer struct {
	*httptest.Server
	secret []byte

	mu       sync.Mutex
	steps    []webhookStep
	requests int
	bodies   [][]byte
	problems []string
}

func newWebhookServer(t *testing.T, secret string, steps ...webhookStep) *webhookServer {
	t.Helper()
	ws := &webhookServer{secret: []byte(secret), steps: steps}
	ws.Server = httptest.NewServer(http.HandlerFunc(ws.handle))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *webhookServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	check := func(ok bool, problem string) {
		if !ok {
			ws.problems = append(ws.problems, problem)
		}
	}
	check(r.Method == http.MethodPost, "method "+r.Method)
	check(r.Header.Get("Content-Type") == "application/json", "content-type "+r.Header.Get("Content-Type"))
	check(r.Header.Get("User-Agent") == "quarry-checks/1", "user-agent "+r.Header.Get("User-Agent"))
	var a Alert
	check(json.Unmarshal(body, &a) == nil, "body not JSON: "+string(body))
	check(a.ID != "" && r.Header.Get("X-Checks-Alert-Id") == a.ID, "alert id header "+r.Header.Get("X-Checks-Alert-Id"))
	if len(ws.secret) > 0 {
		err := VerifyWebhook(ws.secret, r.Header.Get("X-Checks-Signature"), body, time.Now(), time.Minute)
		check(err == nil, "signature: "+errString(err))
	} else {
		check(r.Header.Get("X-Checks-Signature") == "", "unexpected signature")
	}
	ws.bodies = append(ws.bodies, body)

	step := ws.steps[min(ws.requests, len(ws.steps)-1)]
	ws.requests++
	if step.retryAfter != "" {
		w.Header().Set("Retry-After", step.retryAfter)
	}
	if step.status >= 300 && step.status < 400 {
		w.Header().Set("Location", "/elsewhere")
	}
	w.WriteHeader(step.status)
	_, _ = io.WriteString(w, "status "+strconv.Itoa(step.status))
}

func (ws *webhookServer) snapshot() (requests int, bodies [][]byte, problems []string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.requests, ws.bodies, ws.problems
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestDeliverWebhook(t *testing.T) {
	// backoff window for attempt n with Backoff 1s: [0.8, 1.2] * 2^(n-1) s.
	jittered := func(base time.Duration) [2]time.Duration {
		return [2]time.Duration{base * 8 / 10, base * 12 / 10}
	}
	exactly := func(d time.Duration) [2]time.Duration { return [2]time.Duration{d, d} }

	tests := []struct {
		name         string
		secret       string
		maxAttempts  int
		steps        []webhookStep
		wantAttempts int
		wantSleeps   [][2]time.Duration // inclusive ranges
		wantStatus   int                // HTTPStatusError status expected in err; 0: success
	}{
		{name: "success", secret: "k", steps: []webhookStep{{status: 200}}, wantAttempts: 1},
		{name: "unsigned success", steps: []webhookStep{{status: 204}}, wantAttempts: 1},
		{
			name: "retries on 500 then success", secret: "k",
			steps:        []webhookStep{{status: 500}, {status: 502}, {status: 200}},
			wantAttempts: 3,
			wantSleeps:   [][2]time.Duration{jittered(time.Second), jittered(2 * time.Second)},
		},
		{name: "no retry on 400", secret: "k", steps: []webhookStep{{status: 400}}, wantAttempts: 1, wantStatus: 400},
		{name: "no retry on 410", steps: []webhookStep{{status: 410}}, wantAttempts: 1, wantStatus: 410},
		{name: "redirect not followed", steps: []webhookStep{{status: 302}}, wantAttempts: 1, wantStatus: 302},
		{
			name:         "408 retried",
			steps:        []webhookStep{{status: 408}, {status: 200}},
			wantAttempts: 2,
			wantSleeps:   [][2]time.Duration{jittered(time.Second)},
		},
		{
			name:         "429 Retry-After honoured",
			steps:        []webhookStep{{status: 429, retryAfter: "7"}, {status: 503, retryAfter: "3"}, {status: 200}},
			wantAttempts: 3,
			wantSleeps:   [][2]time.Duration{exactly(7 * time.Second), exactly(3 * time.Second)},
		},
		{
			name:         "Retry-After capped at MaxBackoff",
			steps:        []webhookStep{{status: 503, retryAfter: "3600"}, {status: 200}},
			wantAttempts: 2,
			wantSleeps:   [][2]time.Duration{exactly(time.Minute)},
		},
		{
			name:         "invalid Retry-After falls back to backoff",
			steps:        []webhookStep{{status: 503, retryAfter: "soon"}, {status: 200}},
			wantAttempts: 2,
			wantSleeps:   [][2]time.Duration{jittered(time.Second)},
		},
		{
			name: "gives up after MaxAttempts", secret: "k", maxAttempts: 4,
			steps:        []webhookStep{{status: 500}},
			wantAttempts: 4,
			wantSleeps: [][2]time.Duration{
				jittered(time.Second), jittered(2 * time.Second), jittered(4 * time.Second),
			},
			wantStatus: 500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWebhookServer(t, tt.secret, tt.steps...)
			rec := &recorder{}
			opts := rec.options()
			if tt.maxAttempts > 0 {
				opts.MaxAttempts = tt.maxAttempts
			}
			d := New(opts)
			a := testAlert("alert-" + tt.name)
			err := d.Deliver(context.Background(), a, Target{WebhookURL: ws.URL + "/hook", WebhookSecret: tt.secret})

			requests, bodies, problems := ws.snapshot()
			for _, p := range problems {
				t.Errorf("server: %s", p)
			}
			if requests != tt.wantAttempts {
				t.Errorf("server saw %d requests, want %d", requests, tt.wantAttempts)
			}
			for i, b := range bodies {
				var got Alert
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatalf("body %d: %v", i, err)
				}
				if !reflect.DeepEqual(got, a) {
					t.Errorf("body %d = %+v, want %+v", i, got, a)
				}
			}

			var se *HTTPStatusError
			switch {
			case tt.wantStatus == 0 && err != nil:
				t.Fatalf("Deliver = %v, want nil", err)
			case tt.wantStatus != 0 && (!errors.As(err, &se) || se.StatusCode != tt.wantStatus):
				t.Fatalf("Deliver = %v, want HTTPStatusError %d", err, tt.wantStatus)
			}

			results := rec.Results()
			if len(results) != 1 {
				t.Fatalf("OnResult called %d times, want 1: %+v", len(results), results)
			}
			r := results[0]
			if r.Channel != ChannelWebhook || r.AlertID != a.ID || r.Attempts != tt.wantAttempts || (r.Err == nil) != (tt.wantStatus == 0) {
				t.Errorf("OnResult = %+v, want webhook, %d attempts, failed=%v", r, tt.wantAttempts, tt.wantStatus != 0)
			}

			sleeps := rec.Sleeps()
			if len(sleeps) != len(tt.wantSleeps) {
				t.Fatalf("sleeps = %v, want %d within %v", sleeps, len(tt.wantSleeps), tt.wantSleeps)
			}
			for i, s := range sleeps {
				if s < tt.wantSleeps[i][0] || s > tt.wantSleeps[i][1] {
					t.Errorf("sleep %d = %v, want within %v", i, s, tt.wantSleeps[i])
				}
			}
		})
	}
}

func TestDeliverWebhookErrors(t *testing.T) {
	// A listener that is closed at once gives a refused connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/hook"
	_ = ln.Close()

	tests := []struct {
		name         string
		url          string
		wantAttempts int
		wantErr      error
	}{
		{name: "network error retried", url: refused, wantAttempts: 3},
		{name: "bad scheme", url: "ftp://example.com/x", wantAttempts: 1, wantErr: ErrInvalidTarget},
		{name: "no host", url: "http:///x", wantAttempts: 1, wantErr: ErrInvalidTarget},
		{name: "unparsable", url: "http://[::1", wantAttempts: 1, wantErr: ErrInvalidTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			opts := rec.options()
			opts.MaxAttempts = 3
			d := New(opts)
			err := d.Deliver(context.Background(), testAlert("a"), Target{WebhookURL: tt.url})
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Deliver = %v, want error %v", err, tt.wantErr)
			}
			results := rec.Results()
			if len(results) != 1 || results[0].Attempts != tt.wantAttempts || results[0].Err == nil {
				t.Fatalf("results = %+v, want one failure after %d attempts", results, tt.wantAttempts)
			}
			if got := len(rec.Sleeps()); got != tt.wantAttempts-1 {
				t.Errorf("slept %d times, want %d", got, tt.wantAttempts-1)
			}
		})
	}
}

func TestDeliverContextCanceledStopsRetrying(t *testing.T) {
	ws := newWebhookServer(t, "", webhookStep{status: 500})
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	opts := rec.options()
	opts.Sleep = func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}
	d := New(opts)
	err := d.Deliver(ctx, testAlert("a"), Target{WebhookURL: ws.URL})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver = %v, want context.Canceled", err)
	}
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != 500 {
		t.Errorf("Deliver = %v, want last error HTTP 500 wrapped too", err)
	}
	if r := rec.Results(); len(r) != 1 || r[0].Attempts != 1 {
		t.Errorf("results = %+v, want one after 1 attempt", r)
	}
}

func TestBackoff(t *testing.T) {
	d := New(Options{Backoff: 2 * time.Second, MaxBackoff: 5 * time.Minute})
	tests := []struct {
		attempt int
		base    time.Duration
	}{
		{1, 2 * time.Second},
		{2, 4 * time.Second},
		{3, 8 * time.Second},
		{5, 32 * time.Second},
		{7, 128 * time.Second},
		{8, 5 * time.Minute}, // 256s * 1.2 may exceed the cap; result is capped
		{40, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.attempt), func(t *testing.T) {
			for range 50 {
				got := d.backoff(tt.attempt)
				lo, hi := tt.base*8/10, min(tt.base*12/10, 5*time.Minute)
				if tt.attempt == 8 {
					lo = 256 * time.Second * 8 / 10
				}
				if got < lo || got > hi {
					t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tt.attempt, got, lo, hi)
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2024, 6, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"120", 2 * time.Minute},
		{" 3 ", 3 * time.Second},
		{"99999999999999", 24 * time.Hour},
		{"Sat, 29 Jun 2024 12:00:30 GMT", 30 * time.Second},
		{"Sat, 29 Jun 2024 11:00:00 GMT", 0},
		{"later", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
