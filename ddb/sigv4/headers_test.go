package sigv4

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestVerifyHeaders checks what the headers alone decide: with the payload
// hash signed (X-Amz-Content-Sha256) the whole signature, else everything
// up to it, and that the body check completes both.
func TestVerifyHeaders(t *testing.T) {
	id, secret := testKeyID, testSecret
	v := New(testCreds)
	hash := func(b string) string { s := sha256.Sum256([]byte(b)); return hex.EncodeToString(s[:]) }
	req := func(signID, signSecret, over string, sendHash bool) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://localhost:8000/", nil)
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		if sendHash {
			r.Header.Set("X-Amz-Content-Sha256", hash(over))
		}
		if signSecret != "" {
			if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: signID, SecretAccessKey: signSecret}, r, hash(over), "dynamodb", "us-east-1", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		r          *http.Request
		body       string
		headersErr string // the error type from the headers alone
		bodyErr    string // the error type once the body is checked
	}{
		{name: "unsigned", r: req("", "", "{}", false), headersErr: "MissingAuthenticationTokenException"},
		{name: "unknown key", r: req("AKIDNOBODY", "x", "{}", true), headersErr: "UnrecognizedClientException"},
		{name: "wrong secret, hash signed", r: req(id, "wrong", "{}", true), headersErr: "InvalidSignatureException"},
		{name: "wrong secret, no hash: found with the body", r: req(id, "wrong", "{}", false), body: "{}", bodyErr: "InvalidSignatureException"},
		{name: "hash signed, other body", r: req(id, secret, "{}", true), body: "{ }", bodyErr: "InvalidSignatureException"},
		{name: "hash signed, body matches", r: req(id, secret, "{}", true), body: "{}"},
		{name: "no hash, body matches", r: req(id, secret, "{}", false), body: "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typeOf := func(err error) string {
				var e *Error
				if errors.As(err, &e) {
					return e.Type
				}
				if err != nil {
					return "not an *Error: " + err.Error()
				}
				return ""
			}
			check, err := v.VerifyHeaders(tc.r)
			if got := typeOf(err); got != tc.headersErr {
				t.Fatalf("headers: %q, want %q", got, tc.headersErr)
			}
			if err != nil {
				return
			}
			if got := typeOf(check.Verify([]byte(tc.body))); got != tc.bodyErr {
				t.Errorf("body: %q, want %q", got, tc.bodyErr)
			}
			if got := typeOf(v.Verify(tc.r, []byte(tc.body))); got != tc.bodyErr {
				t.Errorf("Verify: %q, want %q", got, tc.bodyErr)
			}
		})
	}
}
