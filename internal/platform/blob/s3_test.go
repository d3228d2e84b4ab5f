package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
	"github.com/quarrydb/quarry/internal/testenv"
)

const testBucket = "quarry-test"

// s3Server starts versitygw (a real S3 gateway with a posix backend) on
// loopback with testBucket created.
func s3Server(t *testing.T) *testenv.S3Server {
	t.Helper()
	return testenv.StartS3(t, testBucket)
}

func newTestS3(t *testing.T, srv *testenv.S3Server, bucket, prefix string) *S3 {
	t.Helper()
	s, err := NewS3(context.Background(), S3Options{
		Bucket: bucket, Prefix: prefix, Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true,
		Credentials: srv.Credentials(),
		TempDir:     t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// backends returns every Store implementation, fresh, for the contract
// tests.
func backends(t *testing.T) map[string]Store {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{
		"Dir": d,
		"S3":  newTestS3(t, s3Server(t), testBucket, "sys/"),
	}
}

func mustGet(t *testing.T, s Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return b
}

// onlyReader hides every method of r but Read (so Put cannot seek it).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestStoreContract(t *testing.T) {
	big := make([]byte, 5<<20+123)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		run  func(t *testing.T, s Store)
	}{
		{"round trip", func(t *testing.T, s Store) {
			ctx := context.Background()
			key := ContentKey("images", []byte("cover"), ".jpg")
			if err := s.Put(ctx, key, strings.NewReader("cover")); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, key); string(got) != "cover" {
				t.Fatalf("got %q", got)
			}
		}},
		{"empty object", func(t *testing.T, s Store) {
			if err := s.Put(context.Background(), "a/empty", bytes.NewReader(nil)); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, "a/empty"); len(got) != 0 {
				t.Fatalf("got %q", got)
			}
		}},
		{"overwrite", func(t *testing.T, s Store) {
			ctx := context.Background()
			for _, v := range []string{"first version", "second"} {
				if err := s.Put(ctx, "a/b.txt", strings.NewReader(v)); err != nil {
					t.Fatal(err)
				}
			}
			if got := mustGet(t, s, "a/b.txt"); string(got) != "second" {
				t.Fatalf("got %q", got)
			}
		}},
		{"reader not at its start", func(t *testing.T, s Store) {
			r := strings.NewReader("skip:rest")
			io.CopyN(io.Discard, r, 5)
			if err := s.Put(context.Background(), "partial", r); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, "partial"); string(got) != "rest" {
				t.Fatalf("got %q", got)
			}
		}},
		{"missing is ErrNotFound", func(t *testing.T, s Store) {
			if _, err := s.Get(context.Background(), "no/such/key"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get = %v, want ErrNotFound", err)
			}
		}},
		{"delete", func(t *testing.T, s Store) {
			ctx := context.Background()
			if err := s.Put(ctx, "d/x", strings.NewReader("x")); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "d/x"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "d/x"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after delete: %v", err)
			}
			if err := s.Delete(ctx, "d/x"); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if err := s.Delete(ctx, "never/there"); err != nil {
				t.Fatalf("delete missing: %v", err)
			}
		}},
		{"bad keys", func(t *testing.T, s Store) {
			ctx := context.Background()
			for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", `a\b`, "a/"} {
				if err := s.Put(ctx, bad, strings.NewReader("x")); !errors.Is(err, ErrBadKey) {
					t.Errorf("Put(%q) = %v, want ErrBadKey", bad, err)
				}
				if _, err := s.Get(ctx, bad); !errors.Is(err, ErrBadKey) {
					t.Errorf("Get(%q) = %v, want ErrBadKey", bad, err)
				}
				if err := s.Delete(ctx, bad); !errors.Is(err, ErrBadKey) {
					t.Errorf("Delete(%q) = %v, want ErrBadKey", bad, err)
				}
			}
		}},
		{"large seekable", func(t *testing.T, s Store) {
			if err := s.Put(context.Background(), "big/seek", bytes.NewReader(big)); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, "big/seek"); !bytes.Equal(got, big) {
				t.Fatalf("got %d bytes, want %d equal", len(got), len(big))
			}
		}},
		{"large stream", func(t *testing.T, s Store) {
			// Not seekable and in small reads: S3 spools it first.
			r := onlyReader{iotest.HalfReader(bytes.NewReader(big))}
			if err := s.Put(context.Background(), "big/stream", r); err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, s, "big/stream"); !bytes.Equal(got, big) {
				t.Fatalf("got %d bytes, want %d equal", len(got), len(big))
			}
		}},
		{"failed read stores nothing", func(t *testing.T, s Store) {
			ctx := context.Background()
			if err := s.Put(ctx, "f/x", strings.NewReader("old")); err != nil {
				t.Fatal(err)
			}
			r := io.MultiReader(strings.NewReader("partial "), iotest.ErrReader(errors.New("connection reset")))
			if err := s.Put(ctx, "f/x", r); err == nil {
				t.Fatal("Put of a failing reader succeeded")
			}
			if got := mustGet(t, s, "f/x"); string(got) != "old" {
				t.Fatalf("after a failed Put: %q, want the old object", got)
			}
		}},
		{"context cancelled", func(t *testing.T, s Store) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for name, r := range map[string]io.Reader{
				"seekable": strings.NewReader("data"),
				"stream":   onlyReader{strings.NewReader("data")},
			} {
				if err := s.Put(ctx, "c/"+name, r); err == nil {
					t.Fatalf("Put(%s) with a cancelled context succeeded", name)
				}
				if _, err := s.Get(context.Background(), "c/"+name); !errors.Is(err, ErrNotFound) {
					t.Fatalf("half-written %s object visible: %v", name, err)
				}
			}
			if _, err := s.Get(ctx, "c/seekable"); err == nil {
				t.Fatal("Get with a cancelled context succeeded")
			}
		}},
	}
	for name, s := range backends(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) { c.run(t, s) })
		}
	}
}

func TestS3Prefix(t *testing.T) {
	ctx := context.Background()
	srv := s3Server(t)
	a := newTestS3(t, srv, testBucket, "a/")
	whole := newTestS3(t, srv, testBucket, "")
	if err := a.Put(ctx, "k", strings.NewReader("in a")); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, whole, "a/k"); string(got) != "in a" {
		t.Fatalf("a/k = %q", got)
	}
	if _, err := whole.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("k outside the prefix: %v", err)
	}
	for _, bad := range []string{"/abs/", "../up/", "a//"} {
		if _, err := NewS3(ctx, S3Options{Bucket: testBucket, Prefix: bad, Region: "us-east-1"}); err == nil {
			t.Errorf("NewS3 with prefix %q succeeded", bad)
		}
	}
	if _, err := NewS3(ctx, S3Options{Region: "us-east-1"}); err == nil {
		t.Error("NewS3 without a bucket succeeded")
	}
}

// A missing bucket is a configuration error, not a missing object.
func TestS3MissingBucket(t *testing.T) {
	srv := s3Server(t)
	if err := newTestS3(t, srv, testBucket, "").CheckBucket(context.Background()); err != nil {
		t.Fatalf("CheckBucket: %v", err)
	}
	s := newTestS3(t, srv, "no-such-bucket", "")
	if err := s.CheckBucket(context.Background()); err == nil {
		t.Fatal("CheckBucket of a missing bucket succeeded")
	}
	_, err := s.Get(context.Background(), "k")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Get in a missing bucket = %v, want an error other than ErrNotFound", err)
	}
}

func TestS3UploadURL(t *testing.T) {
	ctx := context.Background()
	s := newTestS3(t, s3Server(t), testBucket, "wc/")
	u, err := s.UploadURL(ctx, "http://ignored.example", "contexts/p1/c1.tar.gz", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	if pu.Host == "ignored.example" || pu.Path != "/"+testBucket+"/wc/contexts/p1/c1.tar.gz" ||
		q.Get("X-Amz-Expires") != "300" || // 15 minutes asked, capped at DefaultMaxUploadTTL
		q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		t.Fatalf("presigned URL %s", u)
	}
	if q.Get("X-Amz-SignedHeaders") != "host" {
		// Any other signed header would have to be sent by the client.
		t.Fatalf("signed headers %q, want host only", q.Get("X-Amz-SignedHeaders"))
	}
	body := []byte("profile archive bytes")
	if code, msg := put(t, u, body); code != http.StatusOK {
		t.Fatalf("PUT to the presigned URL: %d %s", code, msg)
	}
	if got := mustGet(t, s, "contexts/p1/c1.tar.gz"); !bytes.Equal(got, body) {
		t.Fatalf("got %q", got)
	}

	if _, err := s.UploadURL(ctx, "", "../x", time.Minute); !errors.Is(err, ErrBadKey) {
		t.Fatalf("UploadURL of a bad key = %v, want ErrBadKey", err)
	}

}

// put sends body to a presigned URL with no other header and returns the
// response's status and body.
func put(t *testing.T, u string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The S3 server, not quarry, enforces a presigned upload URL's expiry:
// the same URL is accepted while valid and refused once
// X-Amz-Date + X-Amz-Expires has passed, and a refused PUT stores nothing.
func TestS3UploadURLExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestS3(t, s3Server(t), testBucket, "wc/")
	u, err := s.UploadURL(ctx, "", "expiring", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(u)
	if pu.Query().Get("X-Amz-Expires") != "3" {
		t.Fatalf("X-Amz-Expires in %s", u)
	}
	signed, err := time.Parse("20060102T150405Z", pu.Query().Get("X-Amz-Date"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := put(t, u, []byte("in time")); code != http.StatusOK {
		t.Fatalf("PUT before expiry: %d %s", code, body)
	}
	time.Sleep(time.Until(signed.Add(4100 * time.Millisecond))) // past expiry, in whole seconds
	code, body := put(t, u, []byte("late"))
	if code != http.StatusForbidden || !strings.Contains(body, "AccessDenied") {
		t.Fatalf("PUT after expiry: %d %s, want 403 AccessDenied", code, body)
	}
	if got := mustGet(t, s, "expiring"); string(got) != "in time" {
		t.Fatalf("after the refused PUT: %q", got)
	}
}

// A presigned URL altered by its holder is refused by the S3 server: the
// signature covers the key, the expiry and the method.
func TestS3UploadURLTampered(t *testing.T) {
	ctx := context.Background()
	s := newTestS3(t, s3Server(t), testBucket, "wc/")
	u, err := s.UploadURL(ctx, "", "p1/c1/profile.tar.gz", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	alter := func(f func(pu *url.URL, q url.Values)) string {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		q := pu.Query()
		f(pu, q)
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	flip := func(sig string) string {
		b := []byte(sig)
		if b[0] == '0' {
			b[0] = '1'
		} else {
			b[0] = '0'
		}
		return string(b)
	}
	// want is the refusal's status; 0: any 4xx (AWS S3 answers an
	// unknown access key with 403 InvalidAccessKeyId, versitygw with 404).
	cases := []struct {
		name, url string
		want      int
	}{
		{"wrong signature", alter(func(_ *url.URL, q url.Values) { q.Set("X-Amz-Signature", flip(q.Get("X-Amz-Signature"))) }), http.StatusForbidden},
		{"other key", alter(func(pu *url.URL, _ url.Values) { pu.Path = "/" + testBucket + "/wc/p2/c2/profile.tar.gz" }), http.StatusForbidden},
		{"longer expiry", alter(func(_ *url.URL, q url.Values) { q.Set("X-Amz-Expires", "604800") }), http.StatusForbidden},
		{"no signature", alter(func(_ *url.URL, q url.Values) { q.Del("X-Amz-Signature") }), http.StatusBadRequest},
		{"other access key", alter(func(_ *url.URL, q url.Values) {
			cred := q.Get("X-Amz-Credential")
			q.Set("X-Amz-Credential", "AKIAOTHER"+cred[strings.Index(cred, "/"):])
		}), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := put(t, c.url, []byte("forged"))
			if c.want != 0 && code != c.want || code < 400 || code > 499 || !strings.Contains(body, "<Code>") {
				t.Fatalf("PUT: %d %s, want a refusal (%d)", code, body, c.want)
			}
		})
	}
	for _, key := range []string{"p1/c1/profile.tar.gz", "p2/c2/profile.tar.gz"} {
		if _, err := s.Get(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s after refused PUTs: %v, want ErrNotFound", key, err)
		}
	}
	if code, body := put(t, u, []byte("genuine")); code != http.StatusOK {
		t.Fatalf("the untampered URL: %d %s", code, body)
	}
}

func TestSignerUploadURL(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := NewSigner([]byte("secret-secret-secret"), "/blobs/", func() time.Time { return now })
	u, err := s.UploadURL(context.Background(), "http://h:1", "a/b c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.URL("http://h:1", http.MethodPut, "a/b c", time.Minute); u != want {
		t.Fatalf("UploadURL = %s, want %s", u, want)
	}
	if _, err := s.UploadURL(context.Background(), "http://h:1", "/abs", time.Minute); !errors.Is(err, ErrBadKey) {
		t.Fatalf("bad key: %v", err)
	}
}

// TestS3SilentEndpoint points the store at an endpoint that accepts
// connections and never answers (a hung gateway, a blackholing load
// balancer): each call fails after the response-header timeout and the
// bounded attempts, with an error of its own, instead of waiting for the
// caller's context — at start, a node would otherwise never come up.
func TestS3SilentEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	s, err := NewS3(context.Background(), S3Options{
		Bucket: testBucket, Endpoint: "http://" + ln.Addr().String(), Region: "us-east-1", PathStyle: true,
		Credentials:           credentials.NewStaticCredentialsProvider("k", "s", ""),
		ResponseHeaderTimeout: 300 * time.Millisecond, MaxAttempts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The context's deadline is far beyond the bounded attempts: a call
	// that ends by it was not bounded by the client.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, call := range map[string]func() error{
		"CheckBucket": func() error { return s.CheckBucket(ctx) },
		"Get":         func() error { _, err := s.Get(ctx, "a/b"); return err },
		"Put":         func() error { return s.Put(ctx, "a/b", strings.NewReader("x")) },
	} {
		err := call()
		if err == nil {
			t.Errorf("%s against a silent endpoint: no error", name)
			continue
		}
		if ctx.Err() != nil {
			t.Fatalf("%s waited for the caller's deadline: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestS3PlainBodies checks that the S3 client sends through
// awsclient.PlainBodyClient, over its bounded default client or the one
// the caller gives.
func TestS3PlainBodies(t *testing.T) {
	// The SDK refuses a CA bundle with a client other than its own.
	t.Setenv("AWS_CA_BUNDLE", "")
	given := &http.Client{}
	for name, hc := range map[string]aws.HTTPClient{"default": nil, "given": given} {
		s, err := NewS3(context.Background(), S3Options{
			Bucket: testBucket, Endpoint: "http://127.0.0.1:1", Region: "us-east-1", PathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
			HTTPClient:  hc,
		})
		if err != nil {
			t.Fatal(err)
		}
		pc, ok := s.client.Options().HTTPClient.(awsclient.PlainBodyClient)
		if !ok {
			t.Errorf("%s: the client's HTTPClient is %T, want an awsclient.PlainBodyClient", name, s.client.Options().HTTPClient)
			continue
		}
		if hc != nil {
			if pc.Next != hc {
				t.Errorf("%s: beneath PlainBodyClient: %#v, want the given client", name, pc.Next)
			}
			continue
		}
		b, ok := pc.Next.(*awshttp.BuildableClient)
		if !ok {
			t.Errorf("%s: beneath PlainBodyClient: %T, want an *awshttp.BuildableClient", name, pc.Next)
			continue
		}
		if d, h := b.GetDialer().Timeout, b.GetTransport().ResponseHeaderTimeout; d != DefaultS3DialTimeout || h != DefaultS3HeaderTimeout {
			t.Errorf("%s: dial timeout %v, response header timeout %v; want %v, %v", name, d, h, DefaultS3DialTimeout, DefaultS3HeaderTimeout)
		}
	}
}
