package main

import (
	"context"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/platform/awsclient"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// TestStreamsClientExternal checks the DynamoDB Streams client of an
// external store: it sends through awsclient.PlainBodyClient, to the
// store's endpoint, or to AWS's own streams endpoint when the store is
// AWS's DynamoDB.
func TestStreamsClientExternal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for endpoint, want := range map[string]string{
		"http://127.0.0.1:1":                       "http://127.0.0.1:1",
		"https://dynamodb.eu-west-1.amazonaws.com": "",
	} {
		c, err := streamsClient(ctx, &config.Config{DynamoDBEndpoint: endpoint, Region: "eu-west-1"}, nil)
		if err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		o := c.Options()
		if _, ok := o.HTTPClient.(awsclient.PlainBodyClient); !ok {
			t.Errorf("%s: the client's HTTPClient is %T, want an awsclient.PlainBodyClient", endpoint, o.HTTPClient)
		}
		if got := o.BaseEndpoint; (got == nil) != (want == "") || (got != nil && *got != want) {
			t.Errorf("%s: BaseEndpoint %v, want %q", endpoint, got, want)
		}
	}
}
