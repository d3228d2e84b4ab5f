package ddb_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSDKBatchGetItem(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	t1 := createTable(t, c, tableSpec{Hash: "pk:S"})
	t2 := createTable(t, c, tableSpec{Hash: "pk:N", Range: "sk:S"})
	var items []attrs
	for i := range 50 {
		items = append(items, attrs{"pk": avS(fmt.Sprintf("k%03d", i)), "v": avN(fmt.Sprint(i)), "w": avS("w")})
	}
	batchPut(t, c, t1, items)
	putItems(t, c, t2, attrs{"pk": avN("1"), "sk": avS("a"), "v": avS("x")})

	t.Run("100 keys, half missing", func(t *testing.T) {
		t.Parallel()
		var keys []attrs
		for i := range 100 {
			keys = append(keys, attrs{"pk": avS(fmt.Sprintf("k%03d", i))})
		}
		out, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{t1: {Keys: keys}}})
		requireNoError(t, err, "BatchGetItem")
		if len(out.UnprocessedKeys) != 0 {
			t.Errorf("UnprocessedKeys = %v", out.UnprocessedKeys)
		}
		got := out.Responses[t1]
		if len(got) != 50 {
			t.Fatalf("got %d items, want 50", len(got))
		}
		byKey := map[string]attrs{}
		for _, it := range got {
			byKey[sAttr(it, "pk")] = it
		}
		for _, it := range items {
			requireItem(t, byKey[sAttr(it, "pk")], it)
		}
	})
	t.Run("two tables with projection", func(t *testing.T) {
		t.Parallel()
		out, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			t1: {Keys: []attrs{{"pk": avS("k001")}, {"pk": avS("k002")}, {"pk": avS("zzz")}}, ProjectionExpression: aws.String("#v"), ExpressionAttributeNames: eaNames("#v", "v")},
			t2: {Keys: []attrs{{"pk": avN("1"), "sk": avS("a")}, {"pk": avN("1"), "sk": avS("b")}}, ConsistentRead: aws.Bool(true)},
		}})
		requireNoError(t, err, "BatchGetItem")
		vs := column(out.Responses[t1], "v")
		sort.Strings(vs)
		if fmt.Sprint(vs) != "[1 2]" {
			t.Errorf("table 1 values = %v", vs)
		}
		for _, it := range out.Responses[t1] {
			if len(it) != 1 {
				t.Errorf("projected item %s", renderItem(it))
			}
		}
		if len(out.Responses[t2]) != 1 {
			t.Fatalf("table 2 returned %d items", len(out.Responses[t2]))
		}
		requireItem(t, out.Responses[t2][0], attrs{"pk": avN("1"), "sk": avS("a"), "v": avS("x")})
	})
	t.Run("101 keys", func(t *testing.T) {
		t.Parallel()
		var keys []attrs
		for i := range 101 {
			keys = append(keys, attrs{"pk": avS(fmt.Sprintf("k%03d", i))})
		}
		_, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{t1: {Keys: keys}}})
		requireAPIError(t, err, "ValidationException", "")
		// 101 over two tables too.
		_, err = c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			t1: {Keys: keys[:100]},
			t2: {Keys: []attrs{{"pk": avN("1"), "sk": avS("a")}}},
		}})
		requireAPIError(t, err, "ValidationException", "")
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		cases := map[string]map[string]types.KeysAndAttributes{
			"duplicate keys":  {t1: {Keys: []attrs{{"pk": avS("k001")}, {"pk": avS("k001")}}}},
			"no keys":         {t1: {Keys: []attrs{}}},
			"wrong key type":  {t1: {Keys: []attrs{{"pk": avN("1")}}}},
			"extra attribute": {t1: {Keys: []attrs{{"pk": avS("k001"), "v": avN("1")}}}},
			"missing range":   {t2: {Keys: []attrs{{"pk": avN("1")}}}},
			"no tables":       {},
		}
		for name, req := range cases {
			_, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: req})
			if err == nil {
				t.Errorf("%s: no error", name)
				continue
			}
			requireAPIError(t, err, "ValidationException", "")
		}
		_, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"no-such-table": {Keys: []attrs{{"pk": avS("a")}}}}})
		requireAPIError(t, err, "ResourceNotFoundException", "")
	})
}

func TestSDKBatchWriteItem(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	t1 := createTable(t, c, tableSpec{Hash: "pk:S"})
	t2 := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	put := func(it attrs) types.WriteRequest { return types.WriteRequest{PutRequest: &types.PutRequest{Item: it}} }
	del := func(k attrs) types.WriteRequest {
		return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
	}

	t.Run("mixed across two tables", func(t *testing.T) {
		putItems(t, c, t1, attrs{"pk": avS("old1")}, attrs{"pk": avS("old2")})
		putItems(t, c, t2, attrs{"pk": avS("old"), "sk": avN("1")})
		var reqs1 []types.WriteRequest
		for i := range 20 {
			reqs1 = append(reqs1, put(attrs{"pk": avS(fmt.Sprintf("n%02d", i)), "v": avN(fmt.Sprint(i))}))
		}
		reqs1 = append(reqs1, del(attrs{"pk": avS("old1")}), del(attrs{"pk": avS("never-existed")}))
		reqs2 := []types.WriteRequest{
			put(attrs{"pk": avS("x"), "sk": avN("1"), "v": avS("new")}),
			put(attrs{"pk": avS("x"), "sk": avN("2")}),
			del(attrs{"pk": avS("old"), "sk": avN("1")}),
		}
		out, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{t1: reqs1, t2: reqs2}})
		requireNoError(t, err, "BatchWriteItem of 25")
		if len(out.UnprocessedItems) != 0 {
			t.Errorf("UnprocessedItems = %v", out.UnprocessedItems)
		}
		for i := range 20 {
			requireItem(t, getItem(t, c, t1, attrs{"pk": avS(fmt.Sprintf("n%02d", i))}), attrs{"pk": avS(fmt.Sprintf("n%02d", i)), "v": avN(fmt.Sprint(i))})
		}
		requireItem(t, getItem(t, c, t1, attrs{"pk": avS("old1")}), nil)
		requireItem(t, getItem(t, c, t1, attrs{"pk": avS("old2")}), attrs{"pk": avS("old2")})
		requireItem(t, getItem(t, c, t2, attrs{"pk": avS("x"), "sk": avN("1")}), attrs{"pk": avS("x"), "sk": avN("1"), "v": avS("new")})
		requireItem(t, getItem(t, c, t2, attrs{"pk": avS("old"), "sk": avN("1")}), nil)
		// A put replaces the whole item.
		_, err = c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{t2: {put(attrs{"pk": avS("x"), "sk": avN("1")})}}})
		requireNoError(t, err, "BatchWriteItem")
		requireItem(t, getItem(t, c, t2, attrs{"pk": avS("x"), "sk": avN("1")}), attrs{"pk": avS("x"), "sk": avN("1")})
	})
	t.Run("invalid", func(t *testing.T) {
		var many []types.WriteRequest
		for i := range 26 {
			many = append(many, put(attrs{"pk": avS(fmt.Sprintf("m%02d", i))}))
		}
		cases := map[string]map[string][]types.WriteRequest{
			"26 requests":              {t1: many},
			"duplicate puts":           {t1: {put(attrs{"pk": avS("d")}), put(attrs{"pk": avS("d"), "v": avN("1")})}},
			"put and delete same key":  {t1: {put(attrs{"pk": avS("d")}), del(attrs{"pk": avS("d")})}},
			"duplicate numeric keys":   {t2: {put(attrs{"pk": avS("d"), "sk": avN("1")}), put(attrs{"pk": avS("d"), "sk": avN("1.0")})}},
			"missing key":              {t1: {put(attrs{"v": avS("d")})}},
			"delete with extra attrib": {t1: {del(attrs{"pk": avS("d"), "v": avS("x")})}},
			"empty request list":       {t1: {}},
			"no tables":                {},
			"empty request":            {t1: {{}}},
		}
		if !isExternal() {
			// API Reference, BatchWriteItem: at most 25 put or delete
			// requests in all; WriteRequest: "You can only request one of
			// these operations, not both". dynalite accepts both cases.
			cases["26 over two tables"] = map[string][]types.WriteRequest{t1: many[:20], t2: {put(attrs{"pk": avS("a"), "sk": avN("1")}), put(attrs{"pk": avS("a"), "sk": avN("2")}), put(attrs{"pk": avS("a"), "sk": avN("3")}), put(attrs{"pk": avS("a"), "sk": avN("4")}), put(attrs{"pk": avS("a"), "sk": avN("5")}), put(attrs{"pk": avS("a"), "sk": avN("6")})}}
			cases["put and delete in one"] = map[string][]types.WriteRequest{t1: {{PutRequest: &types.PutRequest{Item: attrs{"pk": avS("d")}}, DeleteRequest: &types.DeleteRequest{Key: attrs{"pk": avS("d")}}}}}
		}
		for name, req := range cases {
			_, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err == nil {
				t.Errorf("%s: no error", name)
				continue
			}
			requireAPIError(t, err, "ValidationException", "")
		}
		// Nothing of the rejected batches was written.
		for _, k := range []string{"m00", "m19", "d"} {
			requireItem(t, getItem(t, c, t1, attrs{"pk": avS(k)}), nil)
		}
		_, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"no-such-table": {put(attrs{"pk": avS("a")})}}})
		requireAPIError(t, err, "ResourceNotFoundException", "")
	})
}
