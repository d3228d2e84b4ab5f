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
	if l := ops["PutItem"].Latency; l.Count != 3 || l.Sum != ops["PutItem"].Seconds || len(l.Bounds) == 0 || len(l.Counts) != len(l.Bounds) || l.Counts[len(l.Counts)-1] > 3 {
		t.Errorf("PutItem latency: %+v", l)
	}
	if g := ops["GetItem"]; g.Requests != 1 || g.Errors["ResourceNotFoundException"] != 1 {
		t.Errorf("GetItem: %+v", g)
	}
	if ct := ops["CreateTable"]; ct.Requests != 1 || len(ct.Errors) != 0 {
		t.Errorf("CreateTable: %+v", ct)
	}
	if n, none := m.Requests("PutItem"), m.Requests("Scan"); n != 3 || none != 0 {
		t.Errorf("Requests: PutItem %d, Scan %d; want 3 and 0", n, none)
	}
	if m.Tables != 1 || m.WALBytes == 0 || m.DiskBytes == 0 || m.BlockCacheBytes < 0 {
		t.Errorf("storage figures: %+v", m)
	}
	// The commits were fsynced (NoSync is off): Pebble's fsync latencies,
	// in seconds, on ascending bounds.
	f := m.WALFsync
	if f.Count == 0 || f.Sum <= 0 || len(f.Bounds) < 10 || len(f.Counts) != len(f.Bounds) || f.Bounds[0] != 0.0001 || f.Bounds[len(f.Bounds)-1] < 10 {
		t.Fatalf("fsync latencies: %+v", f)
	}
	for i := 1; i < len(f.Bounds); i++ {
		if f.Bounds[i] <= f.Bounds[i-1] || f.Counts[i] < f.Counts[i-1] || f.Counts[i] > f.Count {
			t.Fatalf("fsync latencies not cumulative: %+v", f)
		}
	}
}
