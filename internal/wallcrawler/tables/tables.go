// Package tables creates and names Wallcrawler's four DynamoDB tables
// (wallcrawler-sessions, wallcrawler-projects, wallcrawler-api-keys and
// wallcrawler-contexts) exactly as the Wallcrawler DynamoDB schema documents
// them: on-demand billing, point-in-time recovery, the sessions table's TTL on
// expiresAt and its NEW_AND_OLD_IMAGES stream, and the documented GSIs.
//
// The package talks DynamoDB only through aws-sdk-go-v2, so the same code
// runs against quarry's embedded store, AWS DynamoDB or any compatible
// endpoint.
package tables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Base table names, before the configurable prefix is applied.
const (
	SessionsBase = "wallcrawler-sessions"
	ProjectsBase = "wallcrawler-projects"
	APIKeysBase  = "wallcrawler-api-keys"
	ContextsBase = "wallcrawler-contexts"
)

// Index names, as documented.
const (
	// SessionsByProjectIndex is the sessions GSI keyed by projectId and
	// createdAt (ISO8601 string), projecting all attributes.
	SessionsByProjectIndex = "projectId-createdAt-index"
	// SessionsByStatusIndex is the sessions GSI keyed by status and
	// expiresAt (epoch seconds), projecting keys only.
	SessionsByStatusIndex = "status-expiresAt-index"
	// APIKeysByProjectIndex is the API-keys GSI keyed by projectId.
	APIKeysByProjectIndex = "projectId-index"
)

// TTLAttribute is the sessions table's TTL attribute (epoch seconds).
const TTLAttribute = "expiresAt"

// Names holds the full (prefixed) names of the four tables.
type Names struct {
	Sessions string
	Projects string
	APIKeys  string
	Contexts string
}

// NewNames returns the table names with prefix prepended to each documented
// name; an empty prefix gives the documented names unchanged.
func NewNames(prefix string) Names {
	return Names{
		Sessions: prefix + SessionsBase,
		Projects: prefix + ProjectsBase,
		APIKeys:  prefix + APIKeysBase,
		Contexts: prefix + ContextsBase,
	}
}

// All returns the four names in a fixed order: sessions, projects, API keys,
// contexts.
func (n Names) All() []string {
	return []string{n.Sessions, n.Projects, n.APIKeys, n.Contexts}
}

// Definitions returns the CreateTable inputs of the four tables named by n.
func Definitions(n Names) []*dynamodb.CreateTableInput {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	num := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeN}
	}
	hash := func(name string) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}
	}
	rng := func(name string) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeRange}
	}
	return []*dynamodb.CreateTableInput{
		{
			TableName:            aws.String(n.Sessions),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("sessionId"), str("projectId"), str("createdAt"), str("status"), num("expiresAt")},
			KeySchema:            []types.KeySchemaElement{hash("sessionId")},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{
					IndexName:  aws.String(SessionsByProjectIndex),
					KeySchema:  []types.KeySchemaElement{hash("projectId"), rng("createdAt")},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
				},
				{
					IndexName:  aws.String(SessionsByStatusIndex),
					KeySchema:  []types.KeySchemaElement{hash("status"), rng("expiresAt")},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
				},
			},
			StreamSpecification: &types.StreamSpecification{
				StreamEnabled:  aws.Bool(true),
				StreamViewType: types.StreamViewTypeNewAndOldImages,
			},
		},
		{
			TableName:            aws.String(n.Projects),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("projectId")},
			KeySchema:            []types.KeySchemaElement{hash("projectId")},
		},
		{
			TableName:            aws.String(n.APIKeys),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("apiKeyHash"), str("projectId")},
			KeySchema:            []types.KeySchemaElement{hash("apiKeyHash")},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{
					IndexName:  aws.String(APIKeysByProjectIndex),
					KeySchema:  []types.KeySchemaElement{hash("projectId")},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
				},
			},
		},
		{
			TableName:            aws.String(n.Contexts),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("contextId")},
			KeySchema:            []types.KeySchemaElement{hash("contextId")},
		},
	}
}

// EnsureTables creates any of the four tables (named with prefix) that is
// missing, waits for each to become ACTIVE, and makes sure the sessions
// table's TTL on expiresAt, its stream and point-in-time recovery on every
// table are enabled. It is idempotent and safe to call from several
// processes at once. It returns the table names.
func EnsureTables(ctx context.Context, client *dynamodb.Client, prefix string) (Names, error) {
	names := NewNames(prefix)
	for _, def := range Definitions(names) {
		if err := ensureTable(ctx, client, def); err != nil {
			return names, fmt.Errorf("wallcrawler: table %s: %w", aws.ToString(def.TableName), err)
		}
	}
	if err := ensureTTL(ctx, client, names.Sessions); err != nil {
		return names, fmt.Errorf("wallcrawler: table %s: TTL: %w", names.Sessions, err)
	}
	for _, name := range names.All() {
		if err := ensurePITR(ctx, client, name); err != nil {
			return names, fmt.Errorf("wallcrawler: table %s: point-in-time recovery: %w", name, err)
		}
	}
	return names, nil
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
	delay := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: name})
		if err != nil {
			return nil, fmt.Errorf("describe: %w", err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return out.Table, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if delay < 2*time.Second {
			delay *= 2
		}
	}
}

// ttlEnabled reports whether TTL is enabled (or being enabled) on the
// documented attribute, and fails when it is enabled on another one.
func ttlEnabled(ctx context.Context, client *dynamodb.Client, name string) (bool, error) {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return false, fmt.Errorf("describe: %w", err)
	}
	if d := out.TimeToLiveDescription; d != nil {
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if aws.ToString(d.AttributeName) != TTLAttribute {
				return false, fmt.Errorf("TTL attribute is %q, want %q", aws.ToString(d.AttributeName), TTLAttribute)
			}
			return true, nil
		}
	}
	return false, nil
}

func ensureTTL(ctx context.Context, client *dynamodb.Client, name string) error {
	ok, err := ttlEnabled(ctx, client, name)
	if err != nil || ok {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		// A concurrent EnsureTables may have enabled it in the meantime.
		if ok, derr := ttlEnabled(ctx, client, name); derr == nil && ok {
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
