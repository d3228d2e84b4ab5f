// Package ddbtable creates the DynamoDB tables a system's document defines,
// when missing, through the DynamoDB API: keys, indexes, stream, TTL and
// point-in-time recovery. It is idempotent and safe when several processes
// start at once, and works on the embedded store and on AWS alike.
package ddbtable

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// Spec is one table: its CreateTable input (including any stream), the TTL
// attribute ("" for none) and whether point-in-time recovery is enabled.
type Spec struct {
	Def          *dynamodb.CreateTableInput
	TTLAttribute string
	PITR         bool
}

// Ensure creates each missing table and enables its stream, TTL and PITR
// when they are off. A table that exists with another stream view type or
// TTL attribute is an error.
func Ensure(ctx context.Context, client *dynamodb.Client, specs ...Spec) error {
	for _, s := range specs {
		name := aws.ToString(s.Def.TableName)
		if err := ensureTable(ctx, client, s.Def); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		if s.TTLAttribute != "" {
			if err := ensureTTL(ctx, client, name, s.TTLAttribute); err != nil {
				return fmt.Errorf("table %s: TTL: %w", name, err)
			}
		}
		if s.PITR {
			// A recommendation, not a requirement: an engine without
			// point-in-time recovery (ScyllaDB Alternator) is let be; the
			// caller reports it (see IsUnsupported).
			if err := ensurePITR(ctx, client, name); err != nil && !IsUnsupported(err) {
				return fmt.Errorf("table %s: point-in-time recovery: %w", name, err)
			}
		}
	}
	return nil
}

func ensureTable(ctx context.Context, client *dynamodb.Client, def *dynamodb.CreateTableInput) error {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		_, err = client.CreateTable(ctx, def)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create: %w", err)
		}
		desc, err := waitActive(ctx, client, def.TableName)
		if err != nil {
			return err
		}
		return ensureStream(ctx, client, def, desc)
	case err != nil:
		return fmt.Errorf("describe: %w", err)
	}
	desc := out.Table
	if desc.TableStatus != types.TableStatusActive {
		if desc, err = waitActive(ctx, client, def.TableName); err != nil {
			return err
		}
	}
	return ensureStream(ctx, client, def, desc)
}

// ensureStream enables the documented stream on an existing table that
// lacks it.
func ensureStream(ctx context.Context, client *dynamodb.Client, def *dynamodb.CreateTableInput, desc *types.TableDescription) error {
	if def.StreamSpecification == nil {
		return nil
	}
	if s := desc.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
		if s.StreamViewType != def.StreamSpecification.StreamViewType {
			return fmt.Errorf("stream view type is %s, want %s", s.StreamViewType, def.StreamSpecification.StreamViewType)
		}
		return nil
	}
	if _, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:           def.TableName,
		StreamSpecification: def.StreamSpecification,
	}); err != nil {
		return fmt.Errorf("enable stream: %w", err)
	}
	_, err := waitActive(ctx, client, def.TableName)
	return err
}

// waitActive polls DescribeTable until the table is ACTIVE (the embedded
// store creates tables ACTIVE at once; AWS takes seconds).
func waitActive(ctx context.Context, client *dynamodb.Client, name *string) (*types.TableDescription, error) {
	poll := backoff.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}.Start()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: name})
		if err != nil {
			return nil, fmt.Errorf("describe: %w", err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return out.Table, nil
		}
		if err := poll.Wait(ctx); err != nil {
			return nil, err
		}
	}
}

// ttlEnabled reports whether TTL is enabled (or being enabled) on the
// documented attribute, and fails when it is enabled on another one.
func ttlEnabled(ctx context.Context, client *dynamodb.Client, name, attr string) (bool, error) {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return false, fmt.Errorf("describe: %w", err)
	}
	if d := out.TimeToLiveDescription; d != nil {
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if aws.ToString(d.AttributeName) != attr {
				return false, fmt.Errorf("TTL attribute is %q, want %q", aws.ToString(d.AttributeName), attr)
			}
			return true, nil
		}
	}
	return false, nil
}

func ensureTTL(ctx context.Context, client *dynamodb.Client, name, attr string) error {
	ok, err := ttlEnabled(ctx, client, name, attr)
	if err != nil || ok {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		// A concurrent EnsureTables may have enabled it in the meantime.
		if ok, derr := ttlEnabled(ctx, client, name, attr); derr == nil && ok {
			return nil
		}
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

func ensurePITR(ctx context.Context, client *dynamodb.Client, name string) error {
	out, err := client.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if d := out.ContinuousBackupsDescription; d != nil && d.PointInTimeRecoveryDescription != nil &&
		d.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus == types.PointInTimeRecoveryStatusEnabled {
		return nil
	}
	_, err = client.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{
		TableName: aws.String(name),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

// IsUnsupported reports whether err is an endpoint's refusal of an
// operation it does not implement: UnknownOperationException (ScyllaDB
// Alternator answers "Unsupported operation X"), or a ValidationException
// or UnsupportedOperationException saying the operation is not supported.
func IsUnsupported(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "UnknownOperationException", "UnsupportedOperationException":
		return true
	case "ValidationException":
		msg := strings.ToLower(api.ErrorMessage())
		return strings.Contains(msg, "not supported") || strings.Contains(msg, "unsupported")
	}
	return false
}
