package ddb

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient returns an aws-sdk-go-v2 DynamoDB client wired to s in-process:
// requests go through the same wire protocol as over the network, but
// through an http.RoundTripper that calls the store's handler directly, with
// no socket. optFns may adjust the client's options.
func NewClient(s *Store, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := dynamodb.Options{
		Region:       s.opts.Region,
		BaseEndpoint: aws.String("http://ddb.in-process"),
		// The in-process handler trusts its caller: signing would be work
		// for nothing (about a tenth of a call).
		Credentials: aws.AnonymousCredentials{},
		HTTPClient:  &http.Client{Transport: HandlerTransport{Handler: s.trustedHandler()}},
	}
	return dynamodb.New(opts, optFns...)
}

// HandlerTransport is an http.RoundTripper that serves every request with
// Handler in the calling goroutine.
type HandlerTransport struct {
	Handler http.Handler
}

// RoundTrip implements http.RoundTripper.
func (t HandlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.Context().Err() != nil {
		return nil, r.Context().Err()
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.Handler.ServeHTTP(rec, r)
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       r,
	}, nil
}

type recorder struct {
	header      http.Header
	body        bytes.Buffer
	status      int
	wroteHeader bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.body.Write(b)
}
