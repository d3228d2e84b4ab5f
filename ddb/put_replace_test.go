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
	item := func(pk string, kv ...any) map[string]dtypes.AttributeValue {
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
	// A minute after the start of stNew's clock.
	expiry := int(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC).Unix())
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
		name: "global index: the old item's entry leaves the index",
		create: func(e *stEnv, table string) string {
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
			mustNil(t, err)
			return ""
		},
		first: item("a", "g", "x"),
		in:    dynamodb.PutItemInput{Item: item("a", "g", "y")},
		check: func(t *testing.T, e *stEnv, table, _ string, _ *dynamodb.PutItemOutput, err error) {
			mustNil(t, err)
			for g, want := range map[string]int32{"x": 0, "y": 1} {
				out, err := e.db.Query(e.ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"),
					KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]dtypes.AttributeValue{":g": stS(g)}})
				mustNil(t, err)
				if out.Count != want {
					t.Errorf("index byG, g = %q: %d items, want %d", g, out.Count, want)
				}
			}
		},
	}, {
		name: "time to live: the new item's expiry is indexed",
		create: func(e *stEnv, table string) string {
			e.createTable(table, "")
			_, err := e.db.UpdateTimeToLive(e.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
				TimeToLiveSpecification: &dtypes.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
			mustNil(t, err)
			return ""
		},
		first: item("a", "v", "no expiry"),
		in:    dynamodb.PutItemInput{Item: item("a", "v", "expires", "exp", expiry)},
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
