package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// dynamoClient returns the DynamoDB client the systems use: an external
// endpoint when --dynamodb-endpoint is set, else the embedded store
// (in-process, no socket). With allowRunning (administration commands), a
// data directory held by a running quarry is reached through its admin
// channel. store is the embedded store when quarry opened it (nil
// otherwise); the caller MUST call closeFn.
func dynamoClient(ctx context.Context, c *config.Config, log *slog.Logger, allowRunning bool) (client *dynamodb.Client, store *ddb.Store, closeFn func(), err error) {
	if c.DynamoDBEndpoint != "" {
		client, err := remoteDynamo(ctx, c.DynamoDBEndpoint, c.Region)
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
		client, err := adminClient(ctx, c.DataDir, c.Region)
		if err != nil {
			return nil, nil, nil, err
		}
		return client, nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return ddb.NewClient(s), s, func() { s.Close() }, nil
}

// awsConfig loads the AWS environment's configuration for region; without
// credentials it signs anonymously (local endpoints accept any).
func awsConfig(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region),
		awsconfig.WithRetryer(boundedRetryer), awsconfig.WithHTTPClient(boundedHTTPClient()))
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	return cfg, nil
}

// Bounds of the SDK clients of an external endpoint: an unreachable or
// silent endpoint costs a caller at most sdkAttempts attempts, each of at
// most sdkDialTimeout to connect and sdkHeaderTimeout to answer, with
// backoffs of at most sdkMaxBackoff between them; and every call made at
// shutdown carries a deadline of its own besides.
const (
	sdkAttempts      = 3
	sdkMaxBackoff    = 2 * time.Second
	sdkDialTimeout   = 5 * time.Second
	sdkHeaderTimeout = 30 * time.Second
)

// boundedRetryer is the SDK's standard retryer (throttling and transient
// errors, net.ErrClosed included) with sdkAttempts and sdkMaxBackoff.
func boundedRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = sdkAttempts
		o.MaxBackoff = sdkMaxBackoff
	})
}

// boundedHTTPClient is the SDK's HTTP client with connect and
// response-header timeouts: a blackholed endpoint fails a call instead of
// holding it for the operating system's TCP timeouts.
func boundedHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = sdkDialTimeout }).
		WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = sdkHeaderTimeout })
}

func remoteDynamo(ctx context.Context, endpoint, region string) (*dynamodb.Client, error) {
	cfg, err := awsConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}

// streamsClient returns a DynamoDB Streams client for the same store as
// dynamoClient: in-process for the embedded store, else the endpoint's.
func streamsClient(ctx context.Context, c *config.Config, store *ddb.Store) (*dynamodbstreams.Client, error) {
	if store != nil {
		return ddb.NewStreamsClient(store), nil
	}
	cfg, err := awsConfig(ctx, c.Region)
	if err != nil {
		return nil, err
	}
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		// AWS's streams endpoint differs from DynamoDB's; other stores
		// (quarry, Alternator) serve both on one endpoint.
		if c.DynamoDBEndpoint != "" && !strings.Contains(c.DynamoDBEndpoint, "amazonaws.com") {
			o.BaseEndpoint = aws.String(c.DynamoDBEndpoint)
		}
	}), nil
}
