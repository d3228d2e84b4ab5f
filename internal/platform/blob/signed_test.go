package blob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type signedEnv struct {
	srv    *httptest.Server
	signer *Signer
	store  *Dir
	clock  *clock
}

func newSignedEnv(t *testing.T, maxBytes int64) *signedEnv {
	t.Helper()
	store, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := NewSigner([]byte("secret"), "/blobs/", c.now)
	mux := http.NewServeMux()
	mux.Handle("/blobs/", s.Handler(store, maxBytes))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &signedEnv{srv: srv, signer: s, store: store, clock: c}
}

// do sends method to rawURL with body and returns the status and the
// decoded JSON body.
func (e *signedEnv) do(t *testing.T, method, rawURL, body string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("%s %s: content type %q", method, rawURL, ct)
	}
	var out map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	return resp.StatusCode, out
}

func (e *signedEnv) content(t *testing.T, key string) (string, bool) {
	t.Helper()
	rc, err := e.store.Get(context.Background(), key)
	if errors.Is(err, ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestSignedRoundTrip(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t, 1<<20)
	for _, key := range []string{"proj_1/ctx_2/profile.tar.gz", "dir with space/ü+?#.bin"} {
		u := e.signer.URL(e.srv.URL, "PUT", key, 15*time.Minute)
		if !strings.HasPrefix(u, e.srv.URL+"/blobs/") {
			t.Fatalf("URL %q", u)
		}
		status, body := e.do(t, "PUT", u, "payload of "+key)
		if status != http.StatusOK || body["key"] != key {
			t.Fatalf("PUT %q: %d %v", key, status, body)
		}
		if got, ok := e.content(t, key); !ok || got != "payload of "+key {
			t.Fatalf("stored %q, %v", got, ok)
		}
	}
}

func TestSignedRejects(t *testing.T) {
	t.Parallel()
	const key = "p/c/profile.tar.gz"
	tests := []struct {
		name   string
		method string
		url    func(e *signedEnv) string
		body   string
		status int
		msg    string // substring of the error
	}{
		{
			name: "tampered key", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string {
				return strings.Replace(e.signer.URL(e.srv.URL, "PUT", key, time.Minute), "/p/c/", "/p/d/", 1)
			},
		},
		{
			name: "signed for another method", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string { return e.signer.URL(e.srv.URL, "POST", key, time.Minute) },
		},
		{
			name: "tampered expiry", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string {
				u, _ := url.Parse(e.signer.URL(e.srv.URL, "PUT", key, time.Minute))
				q := u.Query()
				exp, _ := strconv.ParseInt(q.Get("expires"), 10, 64)
				q.Set("expires", strconv.FormatInt(exp+3600, 10))
				u.RawQuery = q.Encode()
				return u.String()
			},
		},
		{
			name: "tampered signature", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string {
				u := e.signer.URL(e.srv.URL, "PUT", key, time.Minute)
				if strings.HasSuffix(u, "0") {
					return u[:len(u)-1] + "1"
				}
				return u[:len(u)-1] + "0"
			},
		},
		{
			name: "no signature", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string { return e.srv.URL + "/blobs/" + key },
		},
		{
			name: "other signer", method: "PUT", status: 403, msg: "signature",
			url: func(e *signedEnv) string {
				return NewSigner([]byte("other"), "/blobs/", e.clock.now).URL(e.srv.URL, "PUT", key, time.Minute)
			},
		},
		{
			name: "expired", method: "PUT", status: 403, msg: "expired",
			url: func(e *signedEnv) string {
				u := e.signer.URL(e.srv.URL, "PUT", key, time.Minute)
				e.clock.add(time.Minute)
				return u
			},
		},
		{
			name: "too large", method: "PUT", status: 413, body: strings.Repeat("x", 101), msg: "larger",
			url: func(e *signedEnv) string { return e.signer.URL(e.srv.URL, "PUT", key, time.Minute) },
		},
		{
			name: "wrong method", method: "GET", status: 405, msg: "PUT",
			url: func(e *signedEnv) string { return e.signer.URL(e.srv.URL, "GET", key, time.Minute) },
		},
		{
			name: "wrong method POST", method: "POST", status: 405, msg: "PUT",
			url: func(e *signedEnv) string { return e.signer.URL(e.srv.URL, "POST", key, time.Minute) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newSignedEnv(t, 100)
			body := tt.body
			if body == "" {
				body = "data"
			}
			status, out := e.do(t, tt.method, tt.url(e), body)
			if status != tt.status || !strings.Contains(out["error"], tt.msg) {
				t.Fatalf("status %d %v, want %d with %q", status, out, tt.status, tt.msg)
			}
			if _, ok := e.content(t, key); ok {
				t.Fatal("object stored")
			}
		})
	}
}

// chunkedReader hides its length so that the request is sent chunked and
// the handler cannot refuse it by Content-Length alone.
type chunkedReader struct{ r io.Reader }

func (c chunkedReader) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestSignedTooLargeStreamed(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t, 100)
	const key = "a/b"
	// An earlier object stays intact when a too-large replacement is refused.
	if status, _ := e.do(t, "PUT", e.signer.URL(e.srv.URL, "PUT", key, time.Minute), "old"); status != 200 {
		t.Fatalf("status %d", status)
	}
	for _, size := range []int{101, 1 << 20} {
		req, err := http.NewRequest("PUT", e.signer.URL(e.srv.URL, "PUT", key, time.Minute), chunkedReader{strings.NewReader(strings.Repeat("y", size))})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("size %d: status %d", size, resp.StatusCode)
		}
		if got, _ := e.content(t, key); got != "old" {
			t.Fatalf("size %d: object is %q", size, got)
		}
	}
	// Exactly maxBytes is accepted.
	if status, _ := e.do(t, "PUT", e.signer.URL(e.srv.URL, "PUT", key, time.Minute), strings.Repeat("z", 100)); status != 200 {
		t.Fatalf("status %d", status)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	s := NewSigner([]byte("k"), "blobs", c.now)
	u, err := url.Parse(s.URL("http://h", "PUT", "x/y", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/blobs/x/y" || u.Query().Get("expires") != "1700000060" {
		t.Fatalf("URL %s", u)
	}
	tests := []struct {
		name   string
		method string
		key    string
		query  url.Values
		after  time.Duration
		want   error
	}{
		{"valid", "PUT", "x/y", u.Query(), 0, nil},
		{"just before expiry", "PUT", "x/y", u.Query(), 59 * time.Second, nil},
		{"at expiry", "PUT", "x/y", u.Query(), time.Minute, ErrExpired},
		{"key", "PUT", "x/z", u.Query(), 0, ErrBadSignature},
		{"method", "GET", "x/y", u.Query(), 0, ErrBadSignature},
		{"empty", "PUT", "x/y", url.Values{}, 0, ErrBadSignature},
		{"not hex", "PUT", "x/y", url.Values{"expires": {"1700000060"}, "signature": {"zz"}}, 0, ErrBadSignature},
	}
	for _, tt := range tests {
		cc := &clock{t: c.t.Add(tt.after)}
		v := NewSigner([]byte("k"), "/blobs/", cc.now)
		if err := v.Verify(tt.method, tt.key, tt.query); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// owners is an Allow hook over a set of live keys; gone(key) deletes one.
type owners struct {
	mu   sync.Mutex
	live map[string]bool
	err  error // answered for every key when set
}

func (o *owners) allow(_ context.Context, key string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if !o.live[key] {
		return fmt.Errorf("owner of %s: %w", key, ErrNotFound)
	}
	return nil
}

func (o *owners) gone(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.live, key)
}

// Allow voids the URL of a key whose owner is gone, before the body is read
// and after the object is stored (then deleting it again).
func TestSignedAllow(t *testing.T) {
	t.Parallel()
	store, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner([]byte("secret"), "/blobs/", nil)
	o := &owners{live: map[string]bool{"p/live": true, "p/racing": true, "p/gone": true}}
	o.gone("p/gone")
	// racing's owner goes while its body streams in: the store sees the
	// body end only after the owner is gone.
	racingStore := storeFunc{Store: store, put: func(ctx context.Context, key string, r io.Reader) error {
		err := store.Put(ctx, key, r)
		if key == "p/racing" {
			o.gone(key)
		}
		return err
	}}
	srv := httptest.NewServer(s.HandlerWith(racingStore, HandlerOptions{MaxBytes: 1 << 20, Allow: o.allow}))
	t.Cleanup(srv.Close)
	e := &signedEnv{srv: srv, signer: s, store: store}
	for _, tt := range []struct {
		key    string
		status int
		stored bool
	}{
		{"p/live", http.StatusOK, true},
		{"p/gone", http.StatusNotFound, false},
		{"p/racing", http.StatusNotFound, false},
	} {
		t.Run(tt.key, func(t *testing.T) {
			status, body := e.do(t, "PUT", s.URL(srv.URL, "PUT", tt.key, time.Minute), "bytes")
			if status != tt.status {
				t.Fatalf("PUT: %d %v, want %d", status, body, tt.status)
			}
			if status == http.StatusNotFound && !strings.Contains(body["error"], "no longer exists") {
				t.Fatalf("error body %v", body)
			}
			if _, ok := e.content(t, tt.key); ok != tt.stored {
				t.Fatalf("stored %v, want %v", ok, tt.stored)
			}
		})
	}
	// A failing lookup is a server error, and nothing is stored.
	o.mu.Lock()
	o.err = errors.New("table unavailable")
	o.mu.Unlock()
	status, body := e.do(t, "PUT", s.URL(srv.URL, "PUT", "p/other", time.Minute), "bytes")
	if status != http.StatusInternalServerError || body["error"] == "" {
		t.Fatalf("PUT with a failing Allow: %d %v", status, body)
	}
	if _, ok := e.content(t, "p/other"); ok {
		t.Fatal("stored despite the failing Allow")
	}
}

// storeFunc is a Store whose Put is put.
type storeFunc struct {
	Store
	put func(ctx context.Context, key string, r io.Reader) error
}

func (s storeFunc) Put(ctx context.Context, key string, r io.Reader) error { return s.put(ctx, key, r) }
