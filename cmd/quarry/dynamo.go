package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go"
	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/sigv4"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// dynamoClient returns the DynamoDB client the systems use: an external
// endpoint when --dynamodb-endpoint is set, else the embedded store
// (in-process, no socket). store is the embedded store when quarry opened
// it (nil otherwise); the caller MUST call closeFn.
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
	if errors.Is(err, ddb.ErrLocked) && allowRunning && c.DDBListen != "off" {
		// A running `quarry serve` owns the data directory: talk to its
		// DynamoDB endpoint instead.
		client, err := localDynamo(ctx, "http://"+c.DDBListen, c)
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

// localDynamo is a client of a running quarry's store endpoint. It signs
// with the key adminKey names, or not at all when none is named (an
// endpoint started without --credentials accepts unsigned requests); no
// AWS credential chain is consulted and no built-in key is used. A first
// request checks the endpoint answers, so that an endpoint demanding a
// signature the command cannot make is reported at once, with the flags
// that fix it.
func localDynamo(ctx context.Context, endpoint string, c *config.Config) (*dynamodb.Client, error) {
	id, secret, err := adminKey(c)
	if err != nil {
		return nil, err
	}
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if id != "" {
		creds = credentials.NewStaticCredentialsProvider(id, secret, "")
	}
	client := dynamodb.New(dynamodb.Options{
		Region:       c.Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  creds,
	})
	if _, err := client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			switch ae.ErrorCode() {
			case "MissingAuthenticationTokenException":
				return nil, fmt.Errorf("the running server's DynamoDB endpoint %s requires signed requests: name a key with --ddb-access-key-id and --ddb-secret-access-key (QUARRY_DDB_ACCESS_KEY_ID, QUARRY_DDB_SECRET_ACCESS_KEY), or give the server's --credentials file: %w", endpoint, err)
			case "UnrecognizedClientException", "InvalidSignatureException":
				return nil, fmt.Errorf("the running server's DynamoDB endpoint %s refused the signing key %q: %w", endpoint, id, err)
			}
		}
		return nil, fmt.Errorf("the running server's DynamoDB endpoint %s: %w", endpoint, err)
	}
	return client, nil
}

// adminKey returns the key the administration commands sign with:
// --ddb-access-key-id with --ddb-secret-access-key, or with its secret from
// the --credentials file, or the file's only key; "" when none is named.
func adminKey(c *config.Config) (id, secret string, err error) {
	if c.DDBAccessKeyID != "" && c.DDBSecretAccessKey != "" {
		return c.DDBAccessKeyID, c.DDBSecretAccessKey, nil
	}
	if c.Credentials == "" {
		return "", "", nil
	}
	keys, err := sigv4.LoadCredentials(c.Credentials)
	if err != nil {
		return "", "", err
	}
	if c.DDBAccessKeyID != "" {
		secret, ok := keys[c.DDBAccessKeyID]
		if !ok {
			return "", "", fmt.Errorf("access key id %q (--ddb-access-key-id) is not in the credentials file %s", c.DDBAccessKeyID, c.Credentials)
		}
		return c.DDBAccessKeyID, secret, nil
	}
	if len(keys) != 1 {
		return "", "", fmt.Errorf("the credentials file %s holds %d keys: name the one to sign with by --ddb-access-key-id", c.Credentials, len(keys))
	}
	for id, secret := range keys {
		return id, secret, nil
	}
	return "", "", nil
}

// awsConfig loads the AWS environment's configuration for region; without
// credentials it signs anonymously (local endpoints accept any).
func awsConfig(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	return cfg, nil
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
