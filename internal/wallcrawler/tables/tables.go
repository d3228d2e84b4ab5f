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
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbtable"
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
	var specs []ddbtable.Spec
	for _, def := range Definitions(names) {
		s := ddbtable.Spec{Def: def, PITR: true}
		if aws.ToString(def.TableName) == names.Sessions {
			s.TTLAttribute = TTLAttribute
		}
		specs = append(specs, s)
	}
	if err := ddbtable.Ensure(ctx, client, specs...); err != nil {
		return names, fmt.Errorf("wallcrawler: %w", err)
	}
	return names, nil
}
