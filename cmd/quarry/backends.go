package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/health"
)

// startBackendHealth probes, in the background, the backends this node
// depends on: the DynamoDB endpoint (or the embedded store, which answers
// until it is closed), PostgreSQL when --datashelf-db is set, and the S3
// bucket when --blob-s3-bucket is set. While one fails the node keeps
// serving what does not need it and /healthz answers 503 naming it; it
// recovers by itself when the backend answers again. The caller Stops the
// checker before closing the stores.
//
// The DynamoDB probe is skipped while the systems' own calls through
// client succeed (answers, nil: never skipped): each node would otherwise
// add a ListTables every probe interval to the store's load, which grows
// with the nodes and not with the work. pgPing and s3Ping probe
// PostgreSQL and the bucket (used only when --datashelf-db and
// --blob-s3-bucket are set).
func startBackendHealth(ctx context.Context, c *config.Config, client *dynamodb.Client, answers *health.Answers, pgPing, s3Ping health.Probe, log *slog.Logger) *health.Checker {
	hc := health.New(health.Options{Logger: log})
	var ddbProbe health.Probe = func(ctx context.Context) error {
		// One attempt: the prober has its own backoff.
		_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		if err != nil {
			return fmt.Errorf("ListTables: %w", err)
		}
		return nil
	}
	if answers != nil {
		ddbProbe = answers.Within(ddbProbe, health.DefaultInterval, time.Now)
	}
	hc.Add("dynamodb", ddbProbe)
	if c.DataShelf.DB != "" && pgPing != nil {
		hc.Add("postgres", pgPing)
	}
	if c.BlobS3Bucket != "" && s3Ping != nil {
		hc.Add("s3", s3Ping)
	}
	hc.Start(ctx)
	return hc
}
