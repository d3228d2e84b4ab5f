package ddb

import "net/http"

// DescribeEndpoints, and the host a request was sent to.

// DescribeEndpointsInput is the (empty) request of DescribeEndpoints.
type DescribeEndpointsInput struct{}

// Endpoint is one entry of DescribeEndpoints' answer.
type Endpoint struct {
	Address              string `json:"Address"`
	CachePeriodInMinutes int64  `json:"CachePeriodInMinutes"`
}

// DescribeEndpointsOutput is the response of DescribeEndpoints.
type DescribeEndpointsOutput struct {
	Endpoints []Endpoint `json:"Endpoints"`
}

// defaultEndpoint is the address DescribeEndpoints reports when the
// request's host is unknown.
const defaultEndpoint = "localhost:8000"

// DescribeEndpoints returns the one endpoint of the store, cacheable for a
// day. Called in-process it answers localhost:8000; over HTTP the address
// is the Host the request was sent to.
func (s *Store) DescribeEndpoints(*DescribeEndpointsInput) (*DescribeEndpointsOutput, error) {
	return describeEndpoints(""), nil
}

func describeEndpoints(host string) *DescribeEndpointsOutput {
	if host == "" {
		host = defaultEndpoint
	}
	return &DescribeEndpointsOutput{Endpoints: []Endpoint{{Address: host, CachePeriodInMinutes: 1440}}}
}

// describeEndpointsAt is the DescribeEndpoints operation of a request sent
// to host; the server dispatches to it with the request's Host.
func describeEndpointsAt(host string) opFunc {
	return func(s *Store, body []byte) (any, error) {
		if err := decodeRequest(body, &DescribeEndpointsInput{}); err != nil {
			return nil, err
		}
		return describeEndpoints(host), nil
	}
}

// requestHost is the host a request was sent to.
func requestHost(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	return r.URL.Host
}
