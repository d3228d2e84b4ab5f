// Package awsclient builds the AWS SDK clients of quarry's external
// backends with bounds on every call: an unreachable or silent endpoint
// fails a call within a known time instead of holding it.
package awsclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
)

// loadConfig loads the AWS environment's configuration for region;
// without credentials it signs anonymously (local endpoints accept any).
// Every client made from it wraps its HTTP client with PlainBodies in its
// option function; it stays unexported so that no client of this
// configuration is made elsewhere without.
func loadConfig(ctx context.Context, region string) (aws.Config, error) {
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

// DynamoDB returns a client of the DynamoDB endpoint at endpoint, its
// requests sent through PlainBodyClient, with optFns applied after.
func DynamoDB(ctx context.Context, endpoint, region string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := loadConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.HTTPClient = PlainBodies(o.HTTPClient)
	}}, optFns...)...), nil
}

// DynamoDBStreams returns a client of the DynamoDB Streams endpoint at
// endpoint (empty: the SDK's endpoint of AWS for region), its requests
// sent through PlainBodyClient.
func DynamoDBStreams(ctx context.Context, endpoint, region string) (*dynamodbstreams.Client, error) {
	cfg, err := loadConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.HTTPClient = PlainBodies(o.HTTPClient)
	}), nil
}

// NoteAnswers is a DynamoDB client option that calls note after each call
// the endpoint answered without an error (after the SDK's retries): the
// process's own traffic, which health.Answers turns into a skipped probe.
func NoteAnswers(note func()) func(*dynamodb.Options) {
	mw := middleware.InitializeMiddlewareFunc("quarry.NoteAnswers", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleInitialize(ctx, in)
		if err == nil {
			note()
		}
		return out, md, err
	})
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(mw, middleware.Before)
		})
	}
}
