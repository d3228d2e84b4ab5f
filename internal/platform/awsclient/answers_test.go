package awsclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// TestNoteAnswers checks that NoteAnswers counts the calls the endpoint
// answered without an error, and only those: a refused condition, a
// server error after the retries and an unreachable endpoint are not an
// answer that can stand in for a health probe.
func TestNoteAnswers(t *testing.T) {
	isolateAWSEnv(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`)
	}))
	t.Cleanup(refusing.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	cases := []struct {
		name     string
		endpoint string
		want     int64
	}{
		{"answered", startDynamoDB(t, false).URL, 1},
		{"condition refused", refusing.URL, 0},
		{"server error", failing.URL, 0},
		{"unreachable", gone.URL, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var n atomic.Int64
			c, err := DynamoDB(ctx, tc.endpoint, "us-east-1", NoteAnswers(func() { n.Add(1) }))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			if got := n.Load(); got != tc.want {
				t.Errorf("noted %d answers, want %d", got, tc.want)
			}
		})
	}
}
