package sigv4

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
)

// newAuthServer is a stand-in for quarry's server: it answers 200 {} to a
// request whose signature verifies and a DynamoDB error otherwise.
func newAuthServer(t *testing.T, v *Verifier) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if err := v.Verify(r, body); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("Verify returned %T, want *Error", err)
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{
				"__type":  "com.amazon.coral.service#" + e.Type,
				"message": e.Message,
			})
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDynamoDBClient(t *testing.T) {
	srv := newAuthServer(t, New(testCreds))
	cases := []struct {
		name, keyID, secret, code, msg string
	}{
		{name: "right secret", keyID: testKeyID, secret: testSecret},
		{name: "other key", keyID: "AKIDOTHER", secret: "other-secret"},
		{
			name: "unknown key", keyID: "AKIDUNKNOWN", secret: testSecret,
			code: TypeUnrecognizedClient, msg: "The security token included in the request is invalid.",
		},
		{
			name: "wrong secret", keyID: testKeyID, secret: "wrong",
			code: TypeInvalidSignature, msg: msgSignatureMismatch,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := dynamodb.New(dynamodb.Options{
				Region:           testRegion,
				BaseEndpoint:     aws.String(srv.URL),
				Credentials:      credentials.NewStaticCredentialsProvider(c.keyID, c.secret, ""),
				HTTPClient:       srv.Client(),
				RetryMaxAttempts: 1,
			})
			out, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(10)})
			if c.code == "" {
				if err != nil {
					t.Fatalf("ListTables: %v", err)
				}
				if len(out.TableNames) != 0 {
					t.Fatalf("TableNames = %v", out.TableNames)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("ListTables error = %v, want a smithy.APIError", err)
			}
			if apiErr.ErrorCode() != c.code {
				t.Errorf("ErrorCode() = %q, want %q", apiErr.ErrorCode(), c.code)
			}
			if apiErr.ErrorMessage() != c.msg {
				t.Errorf("ErrorMessage() = %q, want %q", apiErr.ErrorMessage(), c.msg)
			}
		})
	}
}

// TestDynamoDBClientSessionToken checks that a client with a session token
// (which then signs X-Amz-Security-Token) is accepted on its access key.
func TestDynamoDBClientSessionToken(t *testing.T) {
	srv := newAuthServer(t, New(testCreds))
	client := dynamodb.New(dynamodb.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider(testKeyID, testSecret, "session-token"),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
	})
	if _, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
}
