package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	testKeyID  = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testRegion = "us-east-1"
	testURL    = "https://dynamodb.us-east-1.amazonaws.com/"
	testBody   = `{"TableName":"Music","Key":{"Artist":{"S":"No One You Know"}}}`
)

// signedAt is the signing time of most cases; the verifier's clock is set
// relative to it.
var signedAt = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

var testCreds = map[string]string{testKeyID: testSecret, "AKIDOTHER": "other-secret"}

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newRequest builds a DynamoDB GetItem request as a server would see it.
func newRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, testURL, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	r.Header.Set("Accept-Encoding", "identity")
	return r
}

// sdkSign signs r with aws-sdk-go-v2's signer.
func sdkSign(t testing.TB, r *http.Request, body []byte, keyID, secret, service, region string, at time.Time) {
	t.Helper()
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hashHex(body), service, region, at); err != nil {
		t.Fatalf("SignHTTP: %v", err)
	}
}

// wantErr checks that err is nil (typ == "") or an *Error of that type and,
// when msg != "", that message.
func wantErr(t *testing.T, err error, typ, msg string) {
	t.Helper()
	if typ == "" {
		if err != nil {
			t.Fatalf("Verify = %v, want nil", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify = %v (%T), want *Error %s", err, err, typ)
	}
	if e.Type != typ {
		t.Errorf("Type = %q, want %q (message %q)", e.Type, typ, e.Message)
	}
	if msg != "" && e.Message != msg {
		t.Errorf("Message =\n\t%q\nwant\n\t%q", e.Message, msg)
	}
}

func setAuth(r *http.Request, f func(string) string) {
	r.Header.Set("Authorization", f(r.Header.Get("Authorization")))
}

func TestVerifyHeaderSigned(t *testing.T) {
	type tc struct {
		name string
		// sign signs the request; nil signs with the test key at signedAt.
		sign func(t *testing.T, r *http.Request, body []byte)
		// before runs before signing, after between signing and Verify.
		before, after func(r *http.Request)
		body          string // body sent to Verify; testBody when empty
		clock         time.Time
		opts          []Option
		typ, msg      string
	}
	signWith := func(keyID, secret, service, region string, at time.Time) func(*testing.T, *http.Request, []byte) {
		return func(t *testing.T, r *http.Request, body []byte) {
			sdkSign(t, r, body, keyID, secret, service, region, at)
		}
	}
	cases := []tc{
		{name: "valid"},
		{name: "valid other key", sign: signWith("AKIDOTHER", "other-secret", "dynamodb", testRegion, signedAt)},
		{name: "any region by default", sign: signWith(testKeyID, testSecret, "dynamodb", "eu-west-1", signedAt)},
		{name: "clock 14 min ahead", clock: signedAt.Add(14 * time.Minute)},
		{name: "clock 14 min behind", clock: signedAt.Add(-14 * time.Minute)},
		{
			name:  "unsigned header changes ignored",
			after: func(r *http.Request) { r.Header.Set("User-Agent", "changed"); r.Header.Set("X-Unsigned", "added") },
		},
		{
			name:   "signed header value whitespace is canonicalized",
			before: func(r *http.Request) { r.Header.Set("X-Custom", "  a   b  c ") },
			after:  func(r *http.Request) { r.Header.Set("X-Custom", "a b c") },
		},
		{
			name:   "multi-valued signed header",
			before: func(r *http.Request) { r.Header.Add("X-Multi", "one"); r.Header.Add("X-Multi", " two ") },
		},
		{
			name:   "x-amz-content-sha256 matching the body",
			before: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", hashHex([]byte(testBody))) },
		},
		{
			name: "tampered body", body: `{"TableName":"Other","Key":{"Artist":{"S":"No One You Know"}}}`,
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name:   "tampered body with x-amz-content-sha256",
			before: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", hashHex([]byte(testBody))) },
			body:   `{}`, typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name:   "unsigned payload refused",
			before: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD") },
			typ:    TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name:  "tampered signed header",
			after: func(r *http.Request) { r.Header.Set("X-Amz-Target", "DynamoDB_20120810.DeleteItem") },
			typ:   TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name:  "tampered host",
			after: func(r *http.Request) { r.Host = "dynamodb.us-west-2.amazonaws.com" },
			typ:   TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name:  "tampered method",
			after: func(r *http.Request) { r.Method = http.MethodPut },
			typ:   TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "tampered signature",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string {
					i := strings.Index(a, "Signature=") + len("Signature=")
					c := byte('0')
					if a[i] == '0' {
						c = '1'
					}
					return a[:i] + string(c) + a[i+1:]
				})
			},
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "wrong secret", sign: signWith(testKeyID, "not-the-secret", "dynamodb", testRegion, signedAt),
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "unknown access key", sign: signWith("AKIDUNKNOWN", testSecret, "dynamodb", testRegion, signedAt),
			typ: TypeUnrecognizedClient, msg: "The security token included in the request is invalid.",
		},
		{
			name: "expired", clock: signedAt.Add(30 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature expired: 20240101T000000Z is now earlier than 20240101T001500Z (20240101T003000Z - 15 min.)",
		},
		{
			name: "not yet current", clock: signedAt.Add(-30 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature not yet current: 20240101T000000Z is still later than 20231231T234500Z (20231231T233000Z + 15 min.)",
		},
		{
			name: "expired with max skew 5 min", clock: signedAt.Add(10 * time.Minute),
			opts: []Option{WithMaxSkew(5 * time.Minute)}, typ: TypeInvalidSignature,
			msg: "Signature expired: 20240101T000000Z is now earlier than 20240101T000500Z (20240101T001000Z - 5 min.)",
		},
		{
			name:  "no authorization",
			after: func(r *http.Request) { r.Header.Del("Authorization") },
			typ:   TypeMissingAuthenticationToken, msg: "Request is missing Authentication Token",
		},
		{
			name:  "non-AWS4 authorization",
			after: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") },
			typ:   TypeMissingAuthenticationToken, msg: "Request is missing Authentication Token",
		},
		{
			name:  "authorization AWS4",
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS4") },
			typ:   TypeMissingAuthenticationToken, msg: "Request is missing Authentication Token",
		},
		{
			name:  "authorization AWS4-",
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS4-"); r.Header.Del("X-Amz-Date") },
			typ:   TypeIncompleteSignature,
			msg: "Authorization header requires 'Credential' parameter. " +
				"Authorization header requires 'Signature' parameter. " +
				"Authorization header requires 'SignedHeaders' parameter. " +
				"Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. " +
				"Authorization=AWS4-",
		},
		{
			name:  "space separated pairs, no SignedHeaders",
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS4- Signature=b Credential=a") },
			typ:   TypeIncompleteSignature,
			msg:   "Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4- Signature=b Credential=a",
		},
		{
			name:  "comma separated pairs, no SignedHeaders",
			after: func(r *http.Request) { r.Header.Set("Authorization", "AWS4- Signature=b,Credential=a") },
			typ:   TypeIncompleteSignature,
			msg:   "Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4- Signature=b,Credential=a",
		},
		{
			name: "no Signature",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return a[:strings.Index(a, ", Signature=")] })
			},
			typ: TypeIncompleteSignature,
			msg: "Authorization header requires 'Signature' parameter. Authorization=AWS4-HMAC-SHA256 " +
				"Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request, " +
				"SignedHeaders=accept-encoding;content-length;content-type;host;x-amz-date;x-amz-target",
		},
		{
			name: "missing equal sign",
			after: func(r *http.Request) {
				r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Signature=b,    Credential,    SignedHeaders")
			},
			typ: TypeIncompleteSignature,
			msg: "'Credential' not a valid key=value pair (missing equal-sign) in Authorization header: " +
				"'AWS4-HMAC-SHA256 Signature=b,    Credential,    SignedHeaders'.",
		},
		{
			name: "space inside credential",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return strings.Replace(a, testKeyID+"/", testKeyID+" /", 1) })
			},
			typ: TypeIncompleteSignature,
		},
		{
			name:  "missing X-Amz-Date",
			after: func(r *http.Request) { r.Header.Del("X-Amz-Date") },
			typ:   TypeIncompleteSignature,
		},
		{
			name:  "malformed X-Amz-Date",
			after: func(r *http.Request) { r.Header.Set("X-Amz-Date", "201") },
			typ:   TypeIncompleteSignature,
			msg:   "Date must be in ISO-8601 'basic format'. Got '201'. See http://en.wikipedia.org/wiki/ISO_8601",
		},
		{
			name: "expired Date header",
			after: func(r *http.Request) {
				r.Header.Del("X-Amz-Date")
				r.Header.Set("Date", "Sun, 31 Dec 2023 23:00:00 GMT")
			},
			typ: TypeInvalidSignature,
			msg: "Signature expired: 20231231T230000Z is now earlier than 20231231T234500Z (20240101T000000Z - 15 min.)",
		},
		{
			name: "host not signed",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return strings.Replace(a, ";host;", ";", 1) })
			},
			typ: TypeInvalidSignature, msg: "'Host' must be a 'SignedHeader' in the AWS Authorization.",
		},
		{
			name: "unsupported algorithm",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return strings.Replace(a, "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA512", 1) })
			},
			typ: TypeIncompleteSignature, msg: "Unsupported AWS 'algorithm': 'AWS4-HMAC-SHA512' (only AWS4-HMAC-SHA256 for now). ",
		},
		{
			name: "credential with four parts",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return strings.Replace(a, "/aws4_request", "", 1) })
			},
			typ: TypeIncompleteSignature,
			msg: "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, " +
				"got 'AKIDEXAMPLE/20240101/us-east-1/dynamodb'",
		},
		{
			name: "wrong service", sign: signWith(testKeyID, testSecret, "s3", testRegion, signedAt),
			typ: TypeInvalidSignature, msg: "Credential should be scoped to correct service: 'dynamodb'. ",
		},
		{
			name: "custom service", sign: signWith(testKeyID, testSecret, "streams.dynamodb", testRegion, signedAt),
			opts: []Option{WithService("streams.dynamodb")},
		},
		{
			name: "wrong region", opts: []Option{WithRegion("us-west-2")},
			typ: TypeInvalidSignature, msg: "Credential should be scoped to a valid region, not 'us-east-1'. ",
		},
		{
			name: "scope date mismatch",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string { return strings.Replace(a, "/20240101/", "/20240102/", 1) })
			},
			typ: TypeInvalidSignature,
			msg: "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: " +
				"'20240102' != '20240101', from '20240101T000000Z'.",
		},
		{
			name: "several scope errors",
			after: func(r *http.Request) {
				setAuth(r, func(a string) string {
					return strings.Replace(a, "/20240101/us-east-1/dynamodb/aws4_request", "/b/c/d/e", 1)
				})
			},
			opts: []Option{WithRegion(testRegion)},
			typ:  TypeInvalidSignature,
			msg: "Credential should be scoped to a valid region, not 'c'. " +
				"Credential should be scoped to correct service: 'dynamodb'. " +
				"Credential should be scoped with a valid terminator: 'aws4_request', not 'e'. " +
				"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: " +
				"'b' != '20240101', from '20240101T000000Z'.",
		},
		{
			name:  "signed header missing from request",
			after: func(r *http.Request) { r.Header.Del("X-Amz-Target") },
			typ:   TypeIncompleteSignature,
			msg:   "'x-amz-target' is named as a SignedHeader, but it does not exist in the HTTP request.",
		},
		{
			name:  "both Authorization and X-Amz-Algorithm",
			after: func(r *http.Request) { r.URL.RawQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256" },
			typ:   TypeInvalidSignature,
			msg:   "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRequest(testBody)
			if c.before != nil {
				c.before(r)
			}
			sign := c.sign
			if sign == nil {
				sign = signWith(testKeyID, testSecret, "dynamodb", testRegion, signedAt)
			}
			sign(t, r, []byte(testBody))
			if c.after != nil {
				c.after(r)
			}
			body := testBody
			if c.body != "" {
				body = c.body
			}
			clock := c.clock
			if clock.IsZero() {
				clock = signedAt
			}
			v := New(testCreds, append([]Option{WithClock(func() time.Time { return clock })}, c.opts...)...)
			wantErr(t, v.Verify(r, []byte(body)), c.typ, c.msg)
		})
	}
}

// presign returns a presigned request, as the server receives it, for a
// request to target with the given X-Amz-Expires (none when 0).
func presign(t *testing.T, method, target, body string, expires int, at time.Time) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	if expires > 0 {
		q := r.URL.Query()
		q.Set("X-Amz-Expires", strconv.Itoa(expires))
		r.URL.RawQuery = q.Encode()
	}
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	signedURL, headers, err := v4.NewSigner().PresignHTTP(context.Background(), creds, r,
		hashHex([]byte(body)), "dynamodb", testRegion, at)
	if err != nil {
		t.Fatalf("PresignHTTP: %v", err)
	}
	u, err := url.Parse(signedURL)
	if err != nil {
		t.Fatal(err)
	}
	out := httptest.NewRequest(method, u.RequestURI(), strings.NewReader(body))
	out.Host = u.Host
	for k, vs := range headers {
		if strings.EqualFold(k, "Host") {
			continue
		}
		for _, v := range vs {
			out.Header.Add(k, v)
		}
	}
	return out
}

func TestVerifyPresigned(t *testing.T) {
	const target = "https://dynamodb.us-east-1.amazonaws.com/?Action=ListTables&z=a%20b&k=a%2Fb&k=a-b"
	cases := []struct {
		name     string
		expires  int
		body     string
		clock    time.Time
		mutate   func(r *http.Request)
		typ, msg string
	}{
		{name: "valid", expires: 300, clock: signedAt.Add(time.Minute)},
		{name: "valid at expiry", expires: 300, clock: signedAt.Add(5 * time.Minute)},
		{name: "valid beyond max skew within expiry", expires: 3600, clock: signedAt.Add(50 * time.Minute)},
		{name: "no expires, within skew", clock: signedAt.Add(10 * time.Minute)},
		{
			name: "expired", expires: 300, clock: signedAt.Add(6 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature expired: 20240101T000000Z is now earlier than 20240101T000100Z (20240101T000600Z - 5 min.)",
		},
		{
			name: "expired, seconds", expires: 90, clock: signedAt.Add(2 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature expired: 20240101T000000Z is now earlier than 20240101T000030Z (20240101T000200Z - 90 sec.)",
		},
		{
			name: "no expires, beyond skew", clock: signedAt.Add(16 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature expired: 20240101T000000Z is now earlier than 20240101T000100Z (20240101T001600Z - 15 min.)",
		},
		{
			name: "not yet current", expires: 300, clock: signedAt.Add(-20 * time.Minute), typ: TypeInvalidSignature,
			msg: "Signature not yet current: 20240101T000000Z is still later than 20231231T235500Z (20231231T234000Z + 15 min.)",
		},
		{
			name: "tampered query", expires: 300, clock: signedAt,
			mutate: func(r *http.Request) {
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "Action=ListTables", "Action=DeleteTable", 1)
			},
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "tampered expiry", expires: 300, clock: signedAt,
			mutate: func(r *http.Request) {
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "X-Amz-Expires=300", "X-Amz-Expires=3000", 1)
			},
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "tampered body", expires: 300, clock: signedAt, body: `{"Limit":1}`,
			typ: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
		{
			name: "non-numeric expires", expires: 300, clock: signedAt,
			mutate: func(r *http.Request) {
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "X-Amz-Expires=300", "X-Amz-Expires=soon", 1)
			},
			typ: TypeIncompleteSignature, msg: "X-Amz-Expires should be a number",
		},
		{
			name: "expires over a week", expires: 604801, clock: signedAt,
			typ: TypeIncompleteSignature, msg: "X-Amz-Expires must be less than a week (in seconds) that is 604800",
		},
		{
			name: "missing signed headers", expires: 300, clock: signedAt,
			mutate: func(r *http.Request) {
				q := r.URL.Query()
				q.Del("X-Amz-SignedHeaders")
				r.URL.RawQuery = q.Encode()
			},
			typ: TypeIncompleteSignature,
			msg: "AWS query-string parameters must include 'X-Amz-SignedHeaders'. Re-examine the query-string parameters.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := presign(t, http.MethodPost, target, `{}`, c.expires, signedAt)
			if !strings.Contains(r.URL.RawQuery, "X-Amz-Signature=") {
				t.Fatalf("not presigned: %s", r.URL)
			}
			if c.mutate != nil {
				c.mutate(r)
			}
			body := `{}`
			if c.body != "" {
				body = c.body
			}
			clock := c.clock
			v := New(testCreds, WithClock(func() time.Time { return clock }))
			wantErr(t, v.Verify(r, []byte(body)), c.typ, c.msg)
		})
	}
}

func TestVerifyQueryWithoutSignature(t *testing.T) {
	v := New(testCreds, WithClock(func() time.Time { return signedAt }))
	cases := []struct{ query, typ, msg string }{
		{"", TypeMissingAuthenticationToken, msgMissingToken},
		{"X-Amz-Algorith", TypeMissingAuthenticationToken, msgMissingToken},
		{"X-Amz-Credential=a&X-Amz-Signature=b&X-Amz-SignedHeaders=c&X-Amz-Date=d", TypeMissingAuthenticationToken, msgMissingToken},
		{"X-Amz-Algorithm", TypeIncompleteSignature, "AWS query-string parameters must include 'X-Amz-Algorithm'. " +
			"AWS query-string parameters must include 'X-Amz-Credential'. " +
			"AWS query-string parameters must include 'X-Amz-Signature'. " +
			"AWS query-string parameters must include 'X-Amz-SignedHeaders'. " +
			"AWS query-string parameters must include 'X-Amz-Date'. " +
			"Re-examine the query-string parameters."},
		{"X-Amz-Algorithm=a&X-Amz-Credential=b&X-Amz-Signature=c&X-Amz-Date=d", TypeIncompleteSignature,
			"AWS query-string parameters must include 'X-Amz-SignedHeaders'. Re-examine the query-string parameters."},
		{"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20240101%2Fus-east-1%2Fdynamodb%2Faws4_request" +
			"&X-Amz-Signature=00&X-Amz-SignedHeaders=host&X-Amz-Date=20240101T000000Z", TypeInvalidSignature, msgSignatureMismatch},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/?"+c.query, nil)
			wantErr(t, v.Verify(r, nil), c.typ, c.msg)
		})
	}
	wantErr(t, v.Verify(nil, nil), TypeMissingAuthenticationToken, msgMissingToken)
}

// TestVerifyOverTheWire sends requests signed by the SDK signer through a real
// HTTP round trip, so that paths and queries are checked as a server sees them.
func TestVerifyOverTheWire(t *testing.T) {
	v := New(testCreds)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		if _, err := body.ReadFrom(r.Body); err != nil {
			t.Error(err)
		}
		if err := v.Verify(r, body.Bytes()); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	targets := []string{
		"/",
		"",
		"/tables/Music",
		"/a%20b/c d",
		"/a%2Fb/c",
		"/%E2%82%AC/%e2%82%ac",
		"/a!b$c&d'e(f)g*h+i,j;k=l:m@n",
		"/~user/._-",
		"/double//slash/",
		"/?a=1&b=2",
		"/?b=2&a=1&a=0",
		"/?x=a%20b&y=a+b&z=%2B",
		"/?k=a%2Fb&k=a-b",
		"/?empty=&flag&=v",
		"/?q=%C3%A9t%C3%A9&Q=%7E",
		"/?X-Amz-Target=ignored",
	}
	for _, target := range targets {
		for _, body := range []string{"", testBody} {
			t.Run(target+"/"+strconv.Itoa(len(body)), func(t *testing.T) {
				req, err := http.NewRequest(http.MethodPost, srv.URL+target, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-amz-json-1.0")
				req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
				req.Header.Set("X-Spaces", "  lots   of    spaces ")
				sdkSign(t, req, []byte(body), testKeyID, testSecret, "dynamodb", testRegion, time.Now())
				// The signer rewrote the query in canonical order; send it
				// reordered and with spaces as '+', as other clients may.
				req.URL.RawQuery = reorderQuery(req.URL.RawQuery)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				msg := new(bytes.Buffer)
				_, _ = msg.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, msg)
				}
			})
		}
	}
}

// reorderQuery reverses the order of a query's pairs and writes "%20" as "+".
func reorderQuery(q string) string {
	parts := strings.Split(q, "&")
	slices.Reverse(parts)
	return strings.ReplaceAll(strings.Join(parts, "&"), "%20", "+")
}

func TestErrorInterface(t *testing.T) {
	var err error = &Error{Type: TypeUnrecognizedClient, Message: msgUnrecognized}
	if got, want := err.Error(), "UnrecognizedClientException: The security token included in the request is invalid."; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// A nil result must be an untyped nil, not a nil *Error in an interface.
	r := newRequest(testBody)
	sdkSign(t, r, []byte(testBody), testKeyID, testSecret, "dynamodb", testRegion, signedAt)
	if err := New(testCreds, WithClock(func() time.Time { return signedAt })).Verify(r, []byte(testBody)); err != nil {
		t.Fatalf("Verify = %#v", err)
	}
}
