package sigv4

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// FuzzParseAuthorization feeds arbitrary Authorization headers to the parser
// and to Verify: neither may panic, and every failure must be an *Error of a
// DynamoDB exception type.
func FuzzParseAuthorization(f *testing.F) {
	valid := newRequest(testBody)
	sdkSign(f, valid, []byte(testBody), testKeyID, testSecret, "dynamodb", testRegion, signedAt)
	for _, seed := range []string{
		valid.Header.Get("Authorization"),
		"",
		"AWS4",
		"AWS4-",
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA256 ",
		"AWS4-HMAC-SHA256,Credential=a,SignedHeaders=host,Signature=b",
		"AWS4- Signature=b Credential=a",
		"AWS4-HMAC-SHA256 Signature=b,    Credential,    SignedHeaders",
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE /20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00",
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request/, SignedHeaders=HOST;;X-AMZ-DATE, Signature=00",
		"AWS4-HMAC-SHA256 Credential=//////, SignedHeaders=;, Signature==",
		"AWS4-HMAC-SHA256 Credential==, SignedHeaders==, Signature==",
		"  AWS4-X\tCredential=a\t,\t,SignedHeaders=host,Signature=\xff\xfe",
		"Bearer token",
		"AWS AKIDEXAMPLE:c2lnbmF0dXJl",
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	v := New(testCreds, WithClock(func() time.Time { return signedAt }), WithRegion(testRegion))
	f.Fuzz(func(t *testing.T, header string, hasDate bool) {
		checkAuthorizationHeader(t, v, header, hasDate)
	})
}

// checkAuthorizationHeader is the body of FuzzParseAuthorization.
func checkAuthorizationHeader(t *testing.T, v *Verifier, header string, hasDate bool) {
	t.Helper()
	a, err := parseAuthorization(header, hasDate)
	if err != nil {
		if err.Type != TypeMissingAuthenticationToken && err.Type != TypeIncompleteSignature {
			t.Fatalf("parseAuthorization(%q) error type %q", header, err.Type)
		}
	} else {
		if !hasDate || a.credential == "" || a.signature == "" || a.signedHeaders == "" ||
			!strings.HasPrefix(a.algorithm, "AWS4-") {
			t.Fatalf("parseAuthorization(%q, %v) = %+v without error", header, hasDate, a)
		}
	}
	_, _ = parseCredential(a.credential)
	_ = splitSignedHeaders(a.signedHeaders)

	r := newRequest(testBody)
	r.Header["Authorization"] = []string{header}
	if hasDate {
		r.Header.Set("X-Amz-Date", signedAt.Format(amzTimeFormat))
	}
	if verr := v.Verify(r, []byte(testBody)); verr != nil {
		var e *Error
		if !errors.As(verr, &e) {
			t.Fatalf("Verify error %T %v", verr, verr)
		}
		switch e.Type {
		case TypeMissingAuthenticationToken, TypeIncompleteSignature, TypeInvalidSignature, TypeUnrecognizedClient:
		default:
			t.Fatalf("Verify error type %q", e.Type)
		}
	}
}

// TestRandomAuthorizationHeaders runs the fuzz checks on headers assembled
// at random from the pieces of a valid one, so that plain `go test` explores
// beyond the seeds.
func TestRandomAuthorizationHeaders(t *testing.T) {
	valid := newRequest(testBody)
	sdkSign(t, valid, []byte(testBody), testKeyID, testSecret, "dynamodb", testRegion, signedAt)
	pieces := strings.FieldsFunc(valid.Header.Get("Authorization"), func(r rune) bool { return r == ' ' })
	pieces = append(pieces, "AWS4-", "=", ",", " ", "\t", "/", ";", "Credential=", "Signature=",
		"SignedHeaders=", "host", "aws4_request", "\xff", "", valid.Header.Get("Authorization"))
	v := New(testCreds, WithClock(func() time.Time { return signedAt }))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.IntN(8); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkAuthorizationHeader(t, v, b.String(), rng.IntN(2) == 0)
	}
}
