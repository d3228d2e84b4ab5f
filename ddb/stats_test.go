package ddb_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/quarrydb/quarry/ddb"
)

// TestMetricsCountRequests checks the per-operation counters and storage
// figures operators read from Store.Metrics.
func TestMetricsCountRequests(t *testing.T) {
	s, err := ddb.Open(t.TempDir(), &ddb.Options{TTLInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := ddb.NewClient(s, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("metered"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	for i := 0; i < 2; i++ {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("metered"), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("metered"), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}); err == nil {
		t.Fatal("conditional put succeeded")
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("missing"), Key: item}); err == nil {
		t.Fatal("GetItem on a missing table succeeded")
	}

	m := s.Metrics()
	ops := map[string]ddb.OpMetrics{}
	for _, o := range m.Ops {
		ops[o.Op] = o
	}
	if len(ops) != 3 {
		t.Fatalf("operations counted: %+v", m.Ops)
	}
	if p := ops["PutItem"]; p.Requests != 3 || p.Errors["ConditionalCheckFailedException"] != 1 || len(p.Errors) != 1 || p.Seconds <= 0 {
		t.Errorf("PutItem: %+v", p)
	}
	if g := ops["GetItem"]; g.Requests != 1 || g.Errors["ResourceNotFoundException"] != 1 {
		t.Errorf("GetItem: %+v", g)
	}
	if ct := ops["CreateTable"]; ct.Requests != 1 || len(ct.Errors) != 0 {
		t.Errorf("CreateTable: %+v", ct)
	}
	if m.Tables != 1 || m.WALBytes == 0 || m.DiskBytes == 0 || m.BlockCacheBytes < 0 {
		t.Errorf("storage figures: %+v", m)
	}
}
