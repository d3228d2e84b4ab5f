// Package tables defines the Checks tables of the original design: USER
// (PK = user id, SK "USER", GSI email-index) and CHECK (PK = check id, SK
// "CHECK", GSIs userid-index and checkType-status-index projecting PK,
// userid and createdAt), and creates them when missing.
package tables

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbtable"
)

// Base table names (the document's) and the default prefix.
const (
	UsersBase     = "USER"
	ChecksBase    = "CHECK"
	DefaultPrefix = "checks-"
)

// Index names.
const (
	EmailIndex      = "email-index"
	UserChecksIndex = "userid-index"
	TypeStatusIndex = "checkType-status-index"
)

// TTLAttribute expires the CHECK table's run-history items (an extension).
const TTLAttribute = "expiresAt"

// Names are the actual table names.
type Names struct {
	Users  string
	Checks string
}

// NewNames applies a prefix to the base names.
func NewNames(prefix string) Names {
	return Names{Users: prefix + UsersBase, Checks: prefix + ChecksBase}
}

// Definitions returns the CreateTable inputs of both tables.
func Definitions(n Names) []*dynamodb.CreateTableInput {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	return []*dynamodb.CreateTableInput{
		{
			TableName:            aws.String(n.Users),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("email")},
			KeySchema:            key("PK", "SK"),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{IndexName: aws.String(EmailIndex), KeySchema: key("email", "PK"), Projection: all},
			},
		},
		{
			TableName:            aws.String(n.Checks),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("userid"), str("checkType"), str("status")},
			KeySchema:            key("PK", "SK"),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{IndexName: aws.String(UserChecksIndex), KeySchema: key("userid", "PK"), Projection: all},
				{
					IndexName: aws.String(TypeStatusIndex), KeySchema: key("checkType", "status"),
					Projection: &types.Projection{
						ProjectionType:   types.ProjectionTypeInclude,
						NonKeyAttributes: []string{"userid", "createdAt"},
					},
				},
			},
		},
	}
}

// EnsureTables creates the tables when missing (with TTL on the CHECK
// table's history items) and returns their names.
func EnsureTables(ctx context.Context, client *dynamodb.Client, prefix string) (Names, error) {
	n := NewNames(prefix)
	defs := Definitions(n)
	err := ddbtable.Ensure(ctx, client,
		ddbtable.Spec{Def: defs[0]},
		ddbtable.Spec{Def: defs[1], TTLAttribute: TTLAttribute},
	)
	if err != nil {
		return n, fmt.Errorf("checks: %w", err)
	}
	return n, nil
}
