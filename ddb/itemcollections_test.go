package ddb_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestItemCollectionMetrics checks ReturnItemCollectionMetrics SIZE: tables
// with a local secondary index report the item collection of the written
// key; tables without one report nothing.
func TestItemCollectionMetrics(t *testing.T) {
	c := newClient(t)
	withLSI := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S",
		LSIs: []indexSpec{{Name: "by-l", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeKeysOnly}}})
	plain := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S"})
	item := map[string]types.AttributeValue{"pk": avS("p1"), "sk": avS("a"), "l": avS("x")}
	check := func(name string, m *types.ItemCollectionMetrics, want bool) {
		t.Helper()
		if !want {
			if m != nil {
				t.Errorf("%s: metrics %+v for a table without LSIs", name, m)
			}
			return
		}
		if m == nil || m.ItemCollectionKey["pk"].(*types.AttributeValueMemberS).Value != "p1" || len(m.SizeEstimateRangeGB) != 2 {
			t.Fatalf("%s: metrics %+v", name, m)
		}
	}
	for _, tc := range []struct {
		table string
		want  bool
	}{{withLSI, true}, {plain, false}} {
		put, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tc.table), Item: item, ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
		if err != nil {
			t.Fatal(err)
		}
		check("PutItem", put.ItemCollectionMetrics, tc.want)
		key := map[string]types.AttributeValue{"pk": avS("p1"), "sk": avS("a")}
		upd, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tc.table), Key: key,
			UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": avN("1")},
			ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
		if err != nil {
			t.Fatal(err)
		}
		check("UpdateItem", upd.ItemCollectionMetrics, tc.want)
		bw, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			tc.table: {{DeleteRequest: &types.DeleteRequest{Key: key}}}}, ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize})
		if err != nil {
			t.Fatal(err)
		}
		if tc.want {
			if ms := bw.ItemCollectionMetrics[tc.table]; len(ms) != 1 {
				t.Fatalf("BatchWriteItem metrics %+v", bw.ItemCollectionMetrics)
			} else {
				check("BatchWriteItem", &ms[0], true)
			}
		} else if len(bw.ItemCollectionMetrics) != 0 {
			t.Errorf("BatchWriteItem metrics %+v for a table without LSIs", bw.ItemCollectionMetrics)
		}
	}
	_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(plain), Item: item, ReturnItemCollectionMetrics: "LOTS"})
	requireAPIError(t, err, "ValidationException", "returnItemCollectionMetrics")
}
