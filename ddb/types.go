package ddb

import (
	"encoding/json"
	"fmt"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// The wire shapes of the DynamoDB API (JSON 1.0). Field names are the API's.

// KeySchemaElement is one element of a key schema.
type KeySchemaElement struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"`
}

// AttributeDefinition declares the type of a key attribute.
type AttributeDefinition struct {
	AttributeName string `json:"AttributeName"`
	AttributeType string `json:"AttributeType"`

	// nameNull and typeNull record a member missing from the request
	// (UnmarshalJSON), which DynamoDB reports as null.
	nameNull, typeNull bool
}

// UnmarshalJSON decodes an AttributeDefinition, noting missing members.
func (d *AttributeDefinition) UnmarshalJSON(b []byte) error {
	var raw struct {
		AttributeName *string `json:"AttributeName"`
		AttributeType *string `json:"AttributeType"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode attribute definition: %w", err)
	}
	*d = AttributeDefinition{nameNull: raw.AttributeName == nil, typeNull: raw.AttributeType == nil}
	if raw.AttributeName != nil {
		d.AttributeName = *raw.AttributeName
	}
	if raw.AttributeType != nil {
		d.AttributeType = *raw.AttributeType
	}
	return nil
}

// Projection says which attributes an index holds.
type Projection struct {
	ProjectionType   string   `json:"ProjectionType,omitempty"`
	NonKeyAttributes []string `json:"NonKeyAttributes,omitempty"`
}

// ProvisionedThroughput is the capacity of a provisioned table or index.
type ProvisionedThroughput struct {
	ReadCapacityUnits  *int64 `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits *int64 `json:"WriteCapacityUnits,omitempty"`
}

// StreamSpecification enables a table's stream.
type StreamSpecification struct {
	StreamEnabled  *bool  `json:"StreamEnabled,omitempty"`
	StreamViewType string `json:"StreamViewType,omitempty"`
}

// IndexSpec is a secondary index in CreateTable / UpdateTable.
type IndexSpec struct {
	IndexName             string                 `json:"IndexName"`
	KeySchema             []KeySchemaElement     `json:"KeySchema"`
	Projection            *Projection            `json:"Projection"`
	ProvisionedThroughput *ProvisionedThroughput `json:"ProvisionedThroughput,omitempty"`
}

// CreateTableInput is the request of CreateTable.
type CreateTableInput struct {
	TableName                 *string                `json:"TableName"`
	AttributeDefinitions      []AttributeDefinition  `json:"AttributeDefinitions"`
	KeySchema                 []KeySchemaElement     `json:"KeySchema"`
	LocalSecondaryIndexes     []IndexSpec            `json:"LocalSecondaryIndexes"`
	GlobalSecondaryIndexes    []IndexSpec            `json:"GlobalSecondaryIndexes"`
	BillingMode               string                 `json:"BillingMode"`
	ProvisionedThroughput     *ProvisionedThroughput `json:"ProvisionedThroughput"`
	StreamSpecification       *StreamSpecification   `json:"StreamSpecification"`
	TableClass                string                 `json:"TableClass"`
	DeletionProtectionEnabled *bool                  `json:"DeletionProtectionEnabled"`
	Tags                      []Tag                  `json:"Tags"`
}

// Tag is a resource tag.
type Tag struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`

	// keyNull and valueNull record a Key or Value missing from the
	// request (UnmarshalJSON), which DynamoDB reports as null.
	keyNull, valueNull bool
}

// UnmarshalJSON decodes a Tag, noting a missing Key or Value.
func (t *Tag) UnmarshalJSON(b []byte) error {
	var raw struct {
		Key   *string `json:"Key"`
		Value *string `json:"Value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode tag: %w", err)
	}
	*t = Tag{keyNull: raw.Key == nil, valueNull: raw.Value == nil}
	if raw.Key != nil {
		t.Key = *raw.Key
	}
	if raw.Value != nil {
		t.Value = *raw.Value
	}
	return nil
}

// GSIUpdate is one entry of UpdateTable's GlobalSecondaryIndexUpdates.
type GSIUpdate struct {
	Create *IndexSpec `json:"Create"`
	Delete *struct {
		IndexName string `json:"IndexName"`
	} `json:"Delete"`
	Update *struct {
		IndexName             string                 `json:"IndexName"`
		ProvisionedThroughput *ProvisionedThroughput `json:"ProvisionedThroughput"`
	} `json:"Update"`
}

// UpdateTableInput is the request of UpdateTable.
type UpdateTableInput struct {
	TableName                   *string                `json:"TableName"`
	AttributeDefinitions        []AttributeDefinition  `json:"AttributeDefinitions"`
	BillingMode                 string                 `json:"BillingMode"`
	ProvisionedThroughput       *ProvisionedThroughput `json:"ProvisionedThroughput"`
	GlobalSecondaryIndexUpdates []GSIUpdate            `json:"GlobalSecondaryIndexUpdates"`
	StreamSpecification         *StreamSpecification   `json:"StreamSpecification"`
	DeletionProtectionEnabled   *bool                  `json:"DeletionProtectionEnabled"`
	TableClass                  string                 `json:"TableClass"`
}

// TableNameInput is the request of DescribeTable and DeleteTable.
type TableNameInput struct {
	TableName *string `json:"TableName"`
}

// ListTablesInput is the request of ListTables.
type ListTablesInput struct {
	ExclusiveStartTableName *string `json:"ExclusiveStartTableName"`
	Limit                   *int    `json:"Limit"`
}

// exprInput holds the expression parameters common to item operations.
type exprInput struct {
	ExpressionAttributeNames  map[string]string     `json:"ExpressionAttributeNames"`
	ExpressionAttributeValues map[string]attr.Value `json:"ExpressionAttributeValues"`
}

// writeInput holds the parameters PutItem, UpdateItem and DeleteItem share.
type writeInput struct {
	TableName                           *string                      `json:"TableName"`
	ConditionExpression                 *string                      `json:"ConditionExpression"`
	Expected                            map[string]expr.ExpectedAttr `json:"Expected"`
	ConditionalOperator                 string                       `json:"ConditionalOperator"`
	ReturnValues                        string                       `json:"ReturnValues"`
	ReturnValuesOnConditionCheckFailure string                       `json:"ReturnValuesOnConditionCheckFailure"`
	ReturnConsumedCapacity              string                       `json:"ReturnConsumedCapacity"`
	ReturnItemCollectionMetrics         string                       `json:"ReturnItemCollectionMetrics"`
	exprInput
}

// PutItemInput is the request of PutItem.
type PutItemInput struct {
	Item attr.Item `json:"Item"`
	writeInput
}

// GetItemInput is the request of GetItem.
type GetItemInput struct {
	TableName              *string   `json:"TableName"`
	Key                    attr.Item `json:"Key"`
	ProjectionExpression   *string   `json:"ProjectionExpression"`
	AttributesToGet        []string  `json:"AttributesToGet"`
	ConsistentRead         *bool     `json:"ConsistentRead"`
	ReturnConsumedCapacity string    `json:"ReturnConsumedCapacity"`
	exprInput

	// wire is set for requests of the wire protocol: an item returned
	// whole is then transcoded from storage to JSON without being decoded.
	wire bool
}

// UpdateItemInput is the request of UpdateItem.
type UpdateItemInput struct {
	Key              attr.Item                       `json:"Key"`
	UpdateExpression *string                         `json:"UpdateExpression"`
	AttributeUpdates map[string]expr.AttributeUpdate `json:"AttributeUpdates"`
	writeInput
}

// DeleteItemInput is the request of DeleteItem.
type DeleteItemInput struct {
	Key attr.Item `json:"Key"`
	writeInput
}

// QueryInput is the request of Query; Scan uses the same shape.
type QueryInput struct {
	TableName              *string                         `json:"TableName"`
	IndexName              *string                         `json:"IndexName"`
	KeyConditionExpression *string                         `json:"KeyConditionExpression"`
	KeyConditions          map[string]expr.LegacyCondition `json:"KeyConditions"`
	FilterExpression       *string                         `json:"FilterExpression"`
	QueryFilter            map[string]expr.LegacyCondition `json:"QueryFilter"`
	ScanFilter             map[string]expr.LegacyCondition `json:"ScanFilter"`
	ConditionalOperator    string                          `json:"ConditionalOperator"`
	ProjectionExpression   *string                         `json:"ProjectionExpression"`
	AttributesToGet        []string                        `json:"AttributesToGet"`
	Select                 string                          `json:"Select"`
	Limit                  *int64                          `json:"Limit"`
	ExclusiveStartKey      attr.Item                       `json:"ExclusiveStartKey"`
	ScanIndexForward       *bool                           `json:"ScanIndexForward"`
	ConsistentRead         *bool                           `json:"ConsistentRead"`
	Segment                *int64                          `json:"Segment"`
	TotalSegments          *int64                          `json:"TotalSegments"`
	ReturnConsumedCapacity string                          `json:"ReturnConsumedCapacity"`
	exprInput

	wire bool // see readPlan.wire
}

// KeysAndAttributes is one table's part of a BatchGetItem request.
type KeysAndAttributes struct {
	Keys                 []attr.Item `json:"Keys"`
	ProjectionExpression *string     `json:"ProjectionExpression,omitempty"`
	AttributesToGet      []string    `json:"AttributesToGet,omitempty"`
	ConsistentRead       *bool       `json:"ConsistentRead,omitempty"`
	exprInput
}

// BatchGetItemInput is the request of BatchGetItem.
type BatchGetItemInput struct {
	RequestItems           map[string]*KeysAndAttributes `json:"RequestItems"`
	ReturnConsumedCapacity string                        `json:"ReturnConsumedCapacity"`
}

// WriteRequest is one request of BatchWriteItem.
type WriteRequest struct {
	PutRequest *struct {
		Item attr.Item `json:"Item"`
	} `json:"PutRequest,omitempty"`
	DeleteRequest *struct {
		Key attr.Item `json:"Key"`
	} `json:"DeleteRequest,omitempty"`
}

// BatchWriteItemInput is the request of BatchWriteItem.
type BatchWriteItemInput struct {
	RequestItems                map[string][]WriteRequest `json:"RequestItems"`
	ReturnConsumedCapacity      string                    `json:"ReturnConsumedCapacity"`
	ReturnItemCollectionMetrics string                    `json:"ReturnItemCollectionMetrics"`
}
