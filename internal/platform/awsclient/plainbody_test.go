package awsclient

import (
	"bytes"
	"context"
	"encoding/pem"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// isolateAWSEnv makes loadConfig read static credentials and no shared file,
// instance metadata or CA bundle of the machine running the test.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	missing := filepath.Join(t.TempDir(), "missing")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "AKIDQUARRYTEST",
		"AWS_SECRET_ACCESS_KEY":       "quarry-test-secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             missing,
		"AWS_SHARED_CREDENTIALS_FILE": missing,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CA_BUNDLE":               "",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_DYNAMODB":   "",
	} {
		t.Setenv(k, v)
	}
}

// startDynamoDB serves a DynamoDB endpoint answering every call with an
// empty JSON object, which every operation's output accepts.
func startDynamoDB(t *testing.T, tlsServer bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte("{}"))), 10))
		_, _ = io.WriteString(w, "{}")
	})
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// captureDoer sends requests through next and keeps the body of each, as
// next (and so net/http's transport) received it.
type captureDoer struct {
	next   aws.HTTPClient
	mu     sync.Mutex
	bodies []io.ReadCloser
}

func (c *captureDoer) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.bodies = append(c.bodies, req.Body)
	c.mu.Unlock()
	return c.next.Do(req)
}

// captureBelow returns an operation option that checks the client sends
// through PlainBodyClient and records, in capture, the request bodies the
// client beneath it receives.
func captureBelow(t *testing.T, capture *captureDoer) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		pc, ok := o.HTTPClient.(PlainBodyClient)
		if !ok {
			t.Errorf("the client's HTTPClient is %T, want a PlainBodyClient", o.HTTPClient)
			capture.next = o.HTTPClient
			o.HTTPClient = capture
			return
		}
		capture.next = pc.Next
		o.HTTPClient = PlainBodyClient{Next: capture}
	}
}

func putItem(ctx context.Context, c *dynamodb.Client, optFns ...func(*dynamodb.Options)) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "a"}}}, optFns...)
	return err
}

// TestSDKRequestBodyDrainsAfterClose checks the invariant of
// PlainBodyClient on the client DynamoDB builds: once the SDK has closed
// a request body (it does as soon as Do returns), the copy to io.Discard
// that net/http's transport makes after sending the Content-Length bytes
// ends without an error. An error there makes the transport close the
// connection under the response being read.
func TestSDKRequestBodyDrainsAfterClose(t *testing.T) {
	isolateAWSEnv(t)
	srv := startDynamoDB(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DynamoDB(ctx, srv.URL, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	checkBounded(t, c.Options().HTTPClient)
	capture := &captureDoer{}
	if err := putItem(ctx, c, captureBelow(t, capture)); err != nil {
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

// TestCustomCABundle checks that the client DynamoDB builds still
// honours AWS_CA_BUNDLE, which the SDK applies only to the
// *awshttp.BuildableClient given to the loader, and sends through
// PlainBodyClient.
func TestCustomCABundle(t *testing.T) {
	isolateAWSEnv(t)
	srv := startDynamoDB(t, true)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	var pemCert bytes.Buffer
	if err := pem.Encode(&pemCert, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundle, pemCert.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DynamoDB(ctx, srv.URL, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Options().HTTPClient.(PlainBodyClient); !ok {
		t.Errorf("the client's HTTPClient is %T, want a PlainBodyClient", c.Options().HTTPClient)
	}
	if err := putItem(ctx, c); err != nil {
		t.Fatalf("PutItem over TLS with the CA bundle: %v", err)
	}
}

// TestPlainBodiesPassesOtherBodies checks that only bodies offering
// WriteTo are wrapped, that http.NoBody keeps its identity, and that
// PlainBodies does not wrap twice.
func TestPlainBodiesPassesOtherBodies(t *testing.T) {
	var got []io.ReadCloser
	next := doerFunc(func(req *http.Request) (*http.Response, error) {
		got = append(got, req.Body)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	c := PlainBodies(next)
	if again, ok := PlainBodies(c).(PlainBodyClient); !ok {
		t.Errorf("PlainBodies returned a %T, want a PlainBodyClient", again)
	} else if _, twice := again.Next.(PlainBodyClient); twice {
		t.Error("PlainBodies of a PlainBodyClient wrapped it again")
	}
	readOnly := io.NopCloser(struct{ io.Reader }{strings.NewReader("x")})
	writerTo := io.NopCloser(strings.NewReader("x"))
	for _, body := range []io.ReadCloser{nil, http.NoBody, readOnly, writerTo} {
		req, err := http.NewRequest(http.MethodPost, "http://example.invalid/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Body = body
		if _, err := c.Do(req); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != nil || got[1] != http.NoBody || got[2] != readOnly {
		t.Errorf("bodies without WriteTo changed: %#v", got[:3])
	}
	if _, ok := got[3].(io.WriterTo); ok {
		t.Errorf("a body with WriteTo reached the client beneath as %T, which offers WriteTo", got[3])
	}
}

// checkBounded checks that hc is a PlainBodyClient over the bounded
// client of this package (a service client's own copy of it).
func checkBounded(t *testing.T, hc aws.HTTPClient) {
	t.Helper()
	pc, ok := hc.(PlainBodyClient)
	if !ok {
		t.Errorf("the client's HTTPClient is %T, want a PlainBodyClient", hc)
		return
	}
	b, ok := pc.Next.(*awshttp.BuildableClient)
	if !ok {
		t.Errorf("beneath PlainBodyClient: %T, want an *awshttp.BuildableClient", pc.Next)
		return
	}
	if d, h := b.GetDialer().Timeout, b.GetTransport().ResponseHeaderTimeout; d != sdkDialTimeout || h != sdkHeaderTimeout {
		t.Errorf("beneath PlainBodyClient: dial timeout %v, response header timeout %v; want %v, %v", d, h, sdkDialTimeout, sdkHeaderTimeout)
	}
}

// TestDynamoDBStreamsPlainBodies checks that the streams client sends
// through PlainBodyClient over the bounded client, to the endpoint given
// or, without one, to the SDK's.
func TestDynamoDBStreamsPlainBodies(t *testing.T) {
	isolateAWSEnv(t)
	srv := startDynamoDB(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DynamoDBStreams(ctx, srv.URL, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	checkBounded(t, c.Options().HTTPClient)
	if _, err := c.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{}); err != nil {
		t.Errorf("ListStreams: %v", err)
	}
	def, err := DynamoDBStreams(ctx, "", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	checkBounded(t, def.Options().HTTPClient)
	if e := def.Options().BaseEndpoint; e != nil {
		t.Errorf("without an endpoint the client's BaseEndpoint is %q, want none", *e)
	}
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }
