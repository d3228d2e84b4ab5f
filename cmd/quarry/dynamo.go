package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/adminsock"
	"github.com/quarrydb/quarry/internal/platform/awsclient"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// dynamoClient returns the DynamoDB client the systems use: an external
// endpoint when --dynamodb-endpoint is set, else the embedded store
// (in-process, no socket). With allowRunning (administration commands), a
// data directory held by a running quarry is reached through its admin
// channel. store is the embedded store when quarry opened it (nil
// otherwise); optFns apply to the client of an endpoint or of the
// embedded store. The caller MUST call closeFn.
func dynamoClient(ctx context.Context, c *config.Config, log *slog.Logger, allowRunning bool, optFns ...func(*dynamodb.Options)) (client *dynamodb.Client, store *ddb.Store, closeFn func(), err error) {
	if c.DynamoDBEndpoint != "" {
		client, err := awsclient.DynamoDB(ctx, c.DynamoDBEndpoint, c.Region, optFns...)
		return client, nil, func() {}, err
	}
	dir := filepath.Join(c.DataDir, "ddb")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	s, err := openStore(dir, c, log)
	if errors.Is(err, ddb.ErrLocked) && allowRunning {
		// A running `quarry serve` owns the data directory: talk to it
		// through the admin channel inside that directory.
		client, err := adminsock.Client(ctx, c.DataDir, c.Region)
		if err != nil {
			return nil, nil, nil, err
		}
		return client, nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return ddb.NewClient(s, optFns...), s, func() { s.Close() }, nil
}

// streamsClient returns a DynamoDB Streams client for the same store as
// dynamoClient: in-process for the embedded store, else the endpoint's.
func streamsClient(ctx context.Context, c *config.Config, store *ddb.Store) (*dynamodbstreams.Client, error) {
	if store != nil {
		return ddb.NewStreamsClient(store), nil
	}
	// AWS's streams endpoint differs from DynamoDB's; other stores
	// (quarry, Alternator) serve both on one endpoint.
	endpoint := c.DynamoDBEndpoint
	if strings.Contains(endpoint, "amazonaws.com") {
		endpoint = ""
	}
	return awsclient.DynamoDBStreams(ctx, endpoint, c.Region)
}
