package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// captureDoer sends requests through next and keeps the body of each, as
// net/http's transport received it.
type captureDoer struct {
	next   httpDoer
	mu     sync.Mutex
	bodies []io.ReadCloser
}

func (c *captureDoer) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.bodies = append(c.bodies, req.Body)
	c.mu.Unlock()
	return c.next.Do(req)
}

// TestSDKRequestBodyDrainsAfterClose checks what sdkHTTPClient is for:
// once the SDK has closed a request body (it does as soon as Do returns),
// the copy to io.Discard that net/http's transport makes after sending the
// Content-Length bytes ends without an error. An error there makes the
// transport close the connection under the response being read.
func TestSDKRequestBodyDrainsAfterClose(t *testing.T) {
	_, url := startNull(t)
	capture := &captureDoer{next: http.DefaultClient}
	c := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("ddbbench", "ddbbench", ""),
		HTTPClient:   sdkHTTPClient{next: capture},
		Retryer:      aws.NopRetryer{},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ddbbench"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "a"}, "sk": nAV(1)}}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	if len(capture.bodies) != 1 || capture.bodies[0] == nil {
		t.Fatalf("captured %d request bodies, want 1", len(capture.bodies))
	}
	body := capture.bodies[0]
	// The transport's own copy: io.CopyBuffer into io.Discard.
	if n, err := io.CopyBuffer(io.Discard, body, make([]byte, 512)); n != 0 || err != nil {
		t.Errorf("copy of the closed request body: %d bytes, %v; want 0 bytes, no error", n, err)
	}
	if raw, ok := body.(readCloserOnly); ok {
		_, err := io.Copy(io.Discard, raw.ReadCloser)
		t.Logf("the SDK's own closed request body (%T) copies with error %v", raw.ReadCloser, err)
	}
}

// TestTruncatedResponseCounted checks that sdkHTTPClient does not hide a
// server's fault: a Query response cut off after its header (the
// connection closed halfway through the body) still fails the operation,
// and so counts as an error of the measurement.
func TestTruncatedResponseCounted(t *testing.T) {
	cfg, err := parseFlags([]string{"-targets", "x=http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := newNullHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full := h.byOp["Query"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		writeTruncated(bw, full.body, full.crc[0])
		bw.Flush()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = makeOp(cfg, "Query")(ctx, newClient(srv.URL), rand.New(rand.NewPCG(1, 2)))
	if err == nil {
		t.Fatal("Query of a truncated response succeeded")
	}
	if !strings.Contains(err.Error(), "EOF") {
		t.Errorf("Query of a truncated response: %v, want an unexpected EOF", err)
	}
}

// writeTruncated writes a 200 answer announcing all of body but carrying
// only its first half.
func writeTruncated(w io.Writer, body []byte, crc string) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\nX-Amz-Crc32: %s\r\nX-Amzn-Requestid: cut\r\n\r\n", len(body), crc)
	w.Write(body[:len(body)/2])
}
