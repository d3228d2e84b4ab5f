package awsclient

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// PlainBodyClient is an aws.HTTPClient that sends the SDK's requests
// through Next with each request body reduced to Read and Close. Every
// aws-sdk-go-v2 client quarry sends over a network connection goes
// through it.
//
// The invariant it keeps: the body net/http's transport holds never
// offers WriteTo, so the transport's last copy of a request body ends
// without an error even after the SDK has closed the body. That copy
// matters because of an interplay of the SDK and net/http (aws-sdk-go-v2
// issues #1825 and #2737):
//
//   - smithy-go closes the request body as soon as Do returns, that is
//     once the response header has arrived, and its closed body answers
//     WriteTo with io.EOF (and Read with io.EOF, as a reader at its end);
//   - the transport, after writing the Content-Length bytes, copies the
//     body once more to io.Discard to check nothing is left, and the
//     server may answer in between; that copy prefers WriteTo, takes its
//     io.EOF for a failed write and closes the connection while the SDK
//     is still reading the response body.
//
// A response larger than the transport's 4 KiB read buffer then fails with
// "use of closed network connection", and the SDK's retryer retries the
// call: a second request for a read, but for a write whose response is
// large (UpdateItem returning ALL_NEW of a big item, TransactWriteItems)
// a second application of a write that already succeeded, an ADD counted
// twice or a false ConditionalCheckFailedException. Through Read the copy
// ends at io.EOF normally. A response a server does cut short still fails.
//
// Bodies without WriteTo (and http.NoBody, which net/http recognises by
// identity) pass unchanged.
type PlainBodyClient struct {
	Next aws.HTTPClient
}

// PlainBodies returns an aws.HTTPClient that sends through next with
// request bodies reduced as PlainBodyClient says: next itself when it is
// a PlainBodyClient, the SDK's default client when nil.
//
// It belongs in a service client's option function, o.HTTPClient =
// PlainBodies(o.HTTPClient): the option functions run once the client has
// resolved its HTTP client, which for an *awshttp.BuildableClient means
// its own copy (its own connections) with the timeouts of the client's
// defaults mode. Wrapping aws.Config.HTTPClient instead would skip that
// resolution and share one transport between clients, and handing
// awsconfig.LoadDefaultConfig a wrapped client makes it fail with a
// custom CA bundle (AWS_CA_BUNDLE), which it applies only to the
// *awshttp.BuildableClient it was given.
func PlainBodies(next aws.HTTPClient) aws.HTTPClient {
	switch next.(type) {
	case PlainBodyClient:
		return next
	case nil:
		next = awshttp.NewBuildableClient()
	}
	return PlainBodyClient{Next: next}
}

// Do implements aws.HTTPClient. It replaces req.Body, which the SDK
// builds afresh for each attempt.
func (c PlainBodyClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		if _, ok := req.Body.(io.WriterTo); ok {
			req.Body = readCloserOnly{req.Body}
		}
	}
	return c.Next.Do(req)
}

// readCloserOnly hides every method of its io.ReadCloser but Read and
// Close (WriteTo in particular).
type readCloserOnly struct {
	io.ReadCloser
}
