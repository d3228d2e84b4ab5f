package ddb_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestPutItemReplacing checks what a PutItem replacing an item answers and
// changes besides the item, in each case where that depends on the item
// it replaces: the table's index entries, expiry entries and change
// records, and the request's condition, ReturnValues and consumed
// capacity. A PutItem whose outcome depends on none of them writes without
// reading the old item; each case would see the difference.
func TestPutItemReplacing(t *testing.T) {
	item := replaceItem
	cases := []struct {
		name string
		// create makes the table and returns its stream ARN ("" for none).
		create func(e *stEnv, table string) string
		// first is stored before the PutItem under test, in.
		first map[string]dtypes.AttributeValue
		in    dynamodb.PutItemInput
		// check inspects the answer and the store afterwards.
		check func(t *testing.T, e *stEnv, table, arn string, out *dynamodb.PutItemOutput, err error)
	}{{
		name:   "plain table: the new item replaces the old",
		create: func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:  item("a", "v", "old", "gone", "x"),
		in:     dynamodb.PutItemInput{Item: item("a", "v", "new")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			got := e.get(table, "a")
			if stAttrS(toStream(got), "v") != "new" || got["gone"] != nil {
				t.Fatalf("item after replacement: %v, want only pk and v=new", got)
			}
		},
	}, {
		name:   "global index: the old item's entry leaves the index",
		create: createIndexedTable,
		first:  item("a", "g", "x"),
		in:     dynamodb.PutItemInput{Item: item("a", "g", "y")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			wantIndexCounts(t, e, table, map[string]int32{"x": 0, "y": 1})
		},
	}, {
		name:   "time to live: the new item's expiry is indexed",
		create: createTTLTable,
		first:  item("a", "v", "no expiry"),
		in:     dynamodb.PutItemInput{Item: item("a", "v", "expires", "exp", replaceExpiry)},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			e.clock.Add(time.Hour)
			e.sweepOlderThan(t, 1)
			if got := e.get(table, "a"); got != nil {
				t.Fatalf("expired item survived the TTL sweep: %v", got)
			}
		},
	}, {
		name:   "stream: the replacement is recorded as MODIFY with the old image",
		create: func(e *stEnv, table string) string { return e.createTable(table, "NEW_AND_OLD_IMAGES") },
		first:  item("a", "v", "old"),
		in:     dynamodb.PutItemInput{Item: item("a", "v", "new")},
		check: func(t *testing.T, e *stEnv, _, arn string, _ *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			recs := e.readAll(arn)
			if len(recs) != 2 {
				t.Fatalf("%d stream records, want INSERT and MODIFY", len(recs))
			}
			r := recs[1]
			if r.EventName != stypes.OperationTypeModify || stAttrS(r.Dynamodb.OldImage, "v") != "old" || stAttrS(r.Dynamodb.NewImage, "v") != "new" {
				t.Fatalf("second record: %s old %v new %v, want MODIFY old v=old new v=new", r.EventName, r.Dynamodb.OldImage, r.Dynamodb.NewImage)
			}
		},
	}, {
		name:   "ReturnValues ALL_OLD answers the old item",
		create: func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:  item("a", "v", "old"),
		in:     dynamodb.PutItemInput{Item: item("a", "v", "new"), ReturnValues: dtypes.ReturnValueAllOld},
		check: func(t *testing.T, _ *stEnv, _, _ string, out *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			if stAttrS(toStream(out.Attributes), "v") != "old" {
				t.Fatalf("Attributes %v, want the old item", out.Attributes)
			}
		},
	}, {
		name:   "consumed capacity counts the larger of the old and new items",
		create: func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:  item("a", "big", strings.Repeat("x", 3000)),
		in:     dynamodb.PutItemInput{Item: item("a"), ReturnConsumedCapacity: dtypes.ReturnConsumedCapacityTotal},
		check: func(t *testing.T, _ *stEnv, _, _ string, out *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			if out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != 3 {
				t.Fatalf("ConsumedCapacity %+v, want 3 units (the 3 KB old item)", out.ConsumedCapacity)
			}
		},
	}, {
		name:   "a condition on the old item is evaluated",
		create: func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:  item("a", "v", "old"),
		in:     dynamodb.PutItemInput{Item: item("a", "v", "new"), ConditionExpression: aws.String("attribute_not_exists(pk)")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.PutItemOutput, err error) {
			stWantErr(t, err, "ConditionalCheckFailedException", "The conditional request failed")
			if got := e.get(table, "a"); stAttrS(toStream(got), "v") != "old" {
				t.Fatalf("item after a failed condition: %v, want v=old", got)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := stNew(t)
			table := "replace"
			arn := tc.create(e, table)
			e.put(table, tc.first)
			in := tc.in
			in.TableName = aws.String(table)
			out, err := e.db.PutItem(e.ctx, &in)
			tc.check(t, e, table, arn, out, err)
		})
	}
}

// TestBatchWriteItemReplacing checks, as TestPutItemReplacing does for
// PutItem, what a BatchWriteItem replacing or deleting stored items changes
// besides the items themselves: index entries, expiry entries, change
// records and the consumed capacity. A BatchWriteItem whose outcome depends
// on none of them writes without reading the old items; each case would
// see the difference.
func TestBatchWriteItemReplacing(t *testing.T) {
	item := replaceItem
	put := func(it map[string]dtypes.AttributeValue) dtypes.WriteRequest {
		return dtypes.WriteRequest{PutRequest: &dtypes.PutRequest{Item: it}}
	}
	del := func(pk string) dtypes.WriteRequest {
		return dtypes.WriteRequest{DeleteRequest: &dtypes.DeleteRequest{Key: map[string]dtypes.AttributeValue{"pk": stS(pk)}}}
	}
	cases := []struct {
		name   string
		create func(e *stEnv, table string) string
		// first are stored before the BatchWriteItem under test.
		first       []map[string]dtypes.AttributeValue
		writes      []dtypes.WriteRequest
		returnUnits bool // ReturnConsumedCapacity TOTAL
		check       func(t *testing.T, e *stEnv, table, arn string, out *dynamodb.BatchWriteItemOutput)
	}{{
		name:   "plain table: puts replace, deletes remove",
		create: func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:  []map[string]dtypes.AttributeValue{item("a", "v", "old", "gone", "x"), item("b", "v", "old")},
		writes: []dtypes.WriteRequest{put(item("a", "v", "new")), del("b"), del("never")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.BatchWriteItemOutput) {
			if got := e.get(table, "a"); stAttrS(toStream(got), "v") != "new" || got["gone"] != nil {
				t.Fatalf("item a after replacement: %v, want only pk and v=new", got)
			}
			for _, pk := range []string{"b", "never"} {
				if got := e.get(table, pk); got != nil {
					t.Fatalf("item %s after its delete: %v", pk, got)
				}
			}
		},
	}, {
		name:   "global index: old entries leave the index",
		create: createIndexedTable,
		first:  []map[string]dtypes.AttributeValue{item("a", "g", "x"), item("b", "g", "x")},
		writes: []dtypes.WriteRequest{put(item("a", "g", "y")), del("b")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.BatchWriteItemOutput) {
			wantIndexCounts(t, e, table, map[string]int32{"x": 0, "y": 1})
		},
	}, {
		name:   "time to live: the new item's expiry is indexed",
		create: createTTLTable,
		first:  []map[string]dtypes.AttributeValue{item("a", "v", "no expiry")},
		writes: []dtypes.WriteRequest{put(item("a", "v", "expires", "exp", replaceExpiry))},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.BatchWriteItemOutput) {
			e.clock.Add(time.Hour)
			e.sweepOlderThan(t, 1)
			if got := e.get(table, "a"); got != nil {
				t.Fatalf("expired item survived the TTL sweep: %v", got)
			}
		},
	}, {
		name:   "stream: MODIFY and REMOVE with the old images",
		create: func(e *stEnv, table string) string { return e.createTable(table, "NEW_AND_OLD_IMAGES") },
		first:  []map[string]dtypes.AttributeValue{item("a", "v", "old"), item("b", "v", "old b")},
		writes: []dtypes.WriteRequest{put(item("a", "v", "new")), del("b")},
		check: func(t *testing.T, e *stEnv, _, arn string, _ *dynamodb.BatchWriteItemOutput) {
			recs := e.readAll(arn)
			if len(recs) != 4 {
				t.Fatalf("%d stream records, want INSERT, INSERT, MODIFY and REMOVE", len(recs))
			}
			got := map[stypes.OperationType]string{}
			for _, r := range recs[2:] {
				got[r.EventName] = stAttrS(r.Dynamodb.OldImage, "v")
			}
			if got[stypes.OperationTypeModify] != "old" || got[stypes.OperationTypeRemove] != "old b" {
				t.Fatalf("last two records' old images by event: %v, want MODIFY v=old and REMOVE v=old b", got)
			}
		},
	}, {
		name:        "consumed capacity counts the larger of the old and new items",
		create:      func(e *stEnv, table string) string { return e.createTable(table, "") },
		first:       []map[string]dtypes.AttributeValue{item("a", "big", strings.Repeat("x", 3000)), item("b", "big", strings.Repeat("x", 2000))},
		writes:      []dtypes.WriteRequest{put(item("a")), del("b")},
		returnUnits: true,
		check: func(t *testing.T, _ *stEnv, _, _ string, out *dynamodb.BatchWriteItemOutput) {
			if len(out.ConsumedCapacity) != 1 || aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits) != 5 {
				t.Fatalf("ConsumedCapacity %+v, want 5 units (the 3 KB and 2 KB old items)", out.ConsumedCapacity)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := stNew(t)
			table := "replace"
			arn := tc.create(e, table)
			for _, it := range tc.first {
				e.put(table, it)
			}
			in := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]dtypes.WriteRequest{table: tc.writes}}
			if tc.returnUnits {
				in.ReturnConsumedCapacity = dtypes.ReturnConsumedCapacityTotal
			}
			out, err := e.db.BatchWriteItem(e.ctx, in)
			mustNil(t, err)
			if len(out.UnprocessedItems) != 0 {
				t.Fatalf("UnprocessedItems %v", out.UnprocessedItems)
			}
			tc.check(t, e, table, arn, out)
		})
	}
}

// replaceItem returns an item with hash key pk and the attributes kv
// (name, then a string or an int).
func replaceItem(pk string, kv ...any) map[string]dtypes.AttributeValue {
	it := map[string]dtypes.AttributeValue{"pk": stS(pk)}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			it[kv[i].(string)] = stS(v)
		case int:
			it[kv[i].(string)] = stN(v)
		}
	}
	return it
}

// replaceExpiry is a minute after the start of stNew's clock.
var replaceExpiry = int(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC).Unix())

// createIndexedTable creates table with the global index byG on g.
func createIndexedTable(e *stEnv, table string) string {
	_, err := e.db.CreateTable(e.ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []dtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: dtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: dtypes.ScalarAttributeTypeS}},
		KeySchema:   []dtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dtypes.KeyTypeHash}},
		BillingMode: dtypes.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []dtypes.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []dtypes.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: dtypes.KeyTypeHash}},
			Projection: &dtypes.Projection{ProjectionType: dtypes.ProjectionTypeAll}}},
	})
	mustNil(e.t, err)
	return ""
}

// createTTLTable creates table with time to live on exp.
func createTTLTable(e *stEnv, table string) string {
	e.createTable(table, "")
	_, err := e.db.UpdateTimeToLive(e.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &dtypes.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
	mustNil(e.t, err)
	return ""
}

// wantIndexCounts checks how many items index byG of table holds for each
// value of g.
func wantIndexCounts(t *testing.T, e *stEnv, table string, want map[string]int32) {
	t.Helper()
	for g, n := range want {
		out, err := e.db.Query(e.ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"),
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]dtypes.AttributeValue{":g": stS(g)}})
		mustNil(t, err)
		if out.Count != n {
			t.Errorf("index byG, g = %q: %d items, want %d", g, out.Count, n)
		}
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// get returns the item of table with hash key pk, or nil.
func (e *stEnv) get(table, pk string) map[string]dtypes.AttributeValue {
	e.t.Helper()
	out, err := e.db.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: map[string]dtypes.AttributeValue{"pk": stS(pk)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatalf("GetItem: %v", err)
	}
	return out.Item
}

// sweepOlderThan runs the TTL sweep, which must delete at least min items.
func (e *stEnv) sweepOlderThan(t *testing.T, min int) {
	t.Helper()
	n, err := e.store.SweepExpired(e.ctx)
	mustNil(t, err)
	if n < min {
		t.Fatalf("TTL sweep deleted %d items, want at least %d", n, min)
	}
}

// toStream converts an item's string attributes to the streams types, for
// stAttrS.
func toStream(it map[string]dtypes.AttributeValue) map[string]stypes.AttributeValue {
	out := map[string]stypes.AttributeValue{}
	for k, v := range it {
		if s, ok := v.(*dtypes.AttributeValueMemberS); ok {
			out[k] = &stypes.AttributeValueMemberS{Value: s.Value}
		}
	}
	return out
}
