package ddb_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// renderCapacity renders a ConsumedCapacity compactly:
// "total=2 table=1 gsi:g=1", with r/w suffixes for the read/write split
// ("total=4w4").
func renderCapacity(cc *types.ConsumedCapacity) string {
	if cc == nil {
		return "<nil>"
	}
	num := func(u, r, w *float64) string {
		s := "?"
		if u != nil {
			s = strconv.FormatFloat(*u, 'g', -1, 64)
		}
		if r != nil {
			s += "r" + strconv.FormatFloat(*r, 'g', -1, 64)
		}
		if w != nil {
			s += "w" + strconv.FormatFloat(*w, 'g', -1, 64)
		}
		return s
	}
	parts := []string{"total=" + num(cc.CapacityUnits, cc.ReadCapacityUnits, cc.WriteCapacityUnits)}
	if cc.Table != nil {
		parts = append(parts, "table="+num(cc.Table.CapacityUnits, cc.Table.ReadCapacityUnits, cc.Table.WriteCapacityUnits))
	}
	for _, ix := range []struct {
		kind string
		m    map[string]types.Capacity
	}{{"gsi", cc.GlobalSecondaryIndexes}, {"lsi", cc.LocalSecondaryIndexes}} {
		names := make([]string, 0, len(ix.m))
		for n := range ix.m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := ix.m[n]
			parts = append(parts, ix.kind+":"+n+"="+num(c.CapacityUnits, c.ReadCapacityUnits, c.WriteCapacityUnits))
		}
	}
	return strings.Join(parts, " ")
}

func renderCapacities(ccs []types.ConsumedCapacity, tables ...string) string {
	byName := map[string]string{}
	for i := range ccs {
		byName[aws.ToString(ccs[i].TableName)] = renderCapacity(&ccs[i])
	}
	if len(byName) != len(ccs) {
		return fmt.Sprintf("%d entries for %d tables", len(ccs), len(byName))
	}
	var parts []string
	for _, t := range tables {
		parts = append(parts, byName[t])
	}
	if len(parts) != len(ccs) {
		return fmt.Sprintf("%d entries, want %d", len(ccs), len(tables))
	}
	return strings.Join(parts, "; ")
}

func pad(n int) types.AttributeValue { return avS(strings.Repeat("x", n)) }

// TestConsumedCapacity checks the units each operation reports against
// DynamoDB's billing rules: writes per started 1 KB of the larger of the
// old and new item plus each changed index entry, reads per started 4 KB
// (halved when eventually consistent), Query and Scan on the sum of what
// they read before filtering, transactions at twice the table rate.
func TestConsumedCapacity(t *testing.T) {
	skipIfExternal(t, "exact capacity numbers")
	c := newClient(t)
	a := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{
		{Name: "gsi1", Hash: "gk:S"},
		{Name: "gsi2", Hash: "g2:S", Projection: types.ProjectionTypeKeysOnly},
	}})
	b := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S", LSIs: []indexSpec{{Name: "lsi1", Hash: "pk:S", Range: "lk:S"}}})
	ctx := tctx(t)
	total, indexes := types.ReturnConsumedCapacityTotal, types.ReturnConsumedCapacityIndexes
	put := func(table string, rcc types.ReturnConsumedCapacity, item attrs) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item, ReturnConsumedCapacity: rcc})
			requireNoError(t, err, "PutItem")
			return out.ConsumedCapacity
		}
	}
	update := func(rcc types.ReturnConsumedCapacity, key attrs, expr string, values map[string]types.AttributeValue) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a), Key: key, UpdateExpression: aws.String(expr), ExpressionAttributeValues: values, ReturnConsumedCapacity: rcc})
			requireNoError(t, err, "UpdateItem")
			return out.ConsumedCapacity
		}
	}
	del := func(rcc types.ReturnConsumedCapacity, key attrs) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			out, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(a), Key: key, ReturnConsumedCapacity: rcc})
			requireNoError(t, err, "DeleteItem")
			return out.ConsumedCapacity
		}
	}
	get := func(rcc types.ReturnConsumedCapacity, key attrs, consistent bool, projection string) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			in := &dynamodb.GetItemInput{TableName: aws.String(a), Key: key, ConsistentRead: aws.Bool(consistent), ReturnConsumedCapacity: rcc}
			if projection != "" {
				in.ProjectionExpression = aws.String(projection)
			}
			out, err := c.GetItem(ctx, in)
			requireNoError(t, err, "GetItem")
			return out.ConsumedCapacity
		}
	}
	query := func(in dynamodb.QueryInput) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			out, err := c.Query(ctx, &in)
			requireNoError(t, err, "Query")
			return out.ConsumedCapacity
		}
	}
	scan := func(in dynamodb.ScanInput) func() *types.ConsumedCapacity {
		return func() *types.ConsumedCapacity {
			out, err := c.Scan(ctx, &in)
			requireNoError(t, err, "Scan")
			return out.ConsumedCapacity
		}
	}
	partition := eaValues(":p", avS("p"))
	steps := []struct {
		name string
		run  func() *types.ConsumedCapacity
		want string
	}{
		{"PutItem NONE", put(a, types.ReturnConsumedCapacityNone, attrs{"pk": avS("n")}), "<nil>"},
		{"PutItem default", put(a, "", attrs{"pk": avS("n")}), "<nil>"},
		{"PutItem small", put(a, total, attrs{"pk": avS("a"), "d": pad(100)}), "total=1"},
		{"PutItem 1.5 KB", put(a, total, attrs{"pk": avS("b"), "d": pad(1500)}), "total=2"},
		{"PutItem into an index", put(a, indexes, attrs{"pk": avS("c"), "gk": avS("g1")}), "total=2 table=1 gsi:gsi1=1"},
		{"PutItem TOTAL includes the index", put(a, total, attrs{"pk": avS("c2"), "gk": avS("g1")}), "total=2"},
		{"identical overwrite leaves the index", put(a, indexes, attrs{"pk": avS("c"), "gk": avS("g1")}), "total=1 table=1"},
		{"index key change removes and adds", update(indexes, pk("c"), "SET gk = :g", eaValues(":g", avS("g2"))), "total=3 table=1 gsi:gsi1=2"},
		{"projected attribute change", update(indexes, pk("c"), "SET extra = :o", eaValues(":o", avS("o"))), "total=2 table=1 gsi:gsi1=1"},
		{"KEYS_ONLY entry is small", put(a, indexes, attrs{"pk": avS("d"), "g2": avS("k"), "filler": pad(3000)}), "total=4 table=3 gsi:gsi2=1"},
		{"non-key change skips KEYS_ONLY", update(indexes, pk("d"), "SET extra = :o", eaValues(":o", avS("o"))), "total=3 table=3"},
		{"DeleteItem of an absent item", del(total, pk("zz")), "total=1"},
		{"DeleteItem with an index entry", del(indexes, pk("d")), "total=4 table=3 gsi:gsi2=1"},
		{"shrinking update costs the old size", func() *types.ConsumedCapacity {
			put(a, total, attrs{"pk": avS("e"), "filler": pad(2500)})()
			return update(total, pk("e"), "REMOVE filler", nil)()
		}, "total=3"},
		{"GetItem eventually consistent", get(total, pk("b"), false, ""), "total=0.5"},
		{"GetItem strongly consistent", get(total, pk("b"), true, ""), "total=1"},
		{"GetItem 9 KB", func() *types.ConsumedCapacity {
			put(a, total, attrs{"pk": avS("big"), "g2": avS("big"), "filler": pad(9000)})()
			return get(total, pk("big"), true, "")()
		}, "total=3"},
		{"GetItem 9 KB eventually consistent", get(total, pk("big"), false, ""), "total=1.5"},
		{"GetItem projection costs the whole item", get(total, pk("big"), false, "pk"), "total=1.5"},
		{"GetItem of an absent item", get(indexes, pk("none"), false, ""), "total=0.5 table=0.5"},
		{"Query on KEYS_ONLY index sizes the entries", query(dynamodb.QueryInput{TableName: aws.String(a), IndexName: aws.String("gsi2"), KeyConditionExpression: aws.String("g2 = :g"), ExpressionAttributeValues: eaValues(":g", avS("big")), ReturnConsumedCapacity: indexes}), "total=0.5 table=0 gsi:gsi2=0.5"},
		{"Query with no result", query(dynamodb.QueryInput{TableName: aws.String(a), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: partition, ReturnConsumedCapacity: total}), "total=0.5"},
		{"Query sums the items read", func() *types.ConsumedCapacity {
			for i := range 3 {
				put(b, total, attrs{"pk": avS("p"), "sk": avS(strconv.Itoa(i)), "lk": avS("l" + strconv.Itoa(i)), "filler": pad(2000)})()
			}
			return query(dynamodb.QueryInput{TableName: aws.String(b), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: partition, ReturnConsumedCapacity: total})()
		}, "total=1"},
		{"Query strongly consistent", query(dynamodb.QueryInput{TableName: aws.String(b), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: partition, ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: indexes}), "total=2 table=2"},
		{"Query filter does not lower the cost", query(dynamodb.QueryInput{TableName: aws.String(b), KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("lk = :none"), ExpressionAttributeValues: eaValues(":p", avS("p"), ":none", avS("none")), ReturnConsumedCapacity: total}), "total=1"},
		{"Query Limit reads less", query(dynamodb.QueryInput{TableName: aws.String(b), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: partition, Limit: aws.Int32(1), ReturnConsumedCapacity: total}), "total=0.5"},
		{"Query on an LSI", query(dynamodb.QueryInput{TableName: aws.String(b), IndexName: aws.String("lsi1"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: partition, ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: indexes}), "total=2 table=0 lsi:lsi1=2"},
		{"Scan", scan(dynamodb.ScanInput{TableName: aws.String(b), ReturnConsumedCapacity: total}), "total=1"},
		{"PutItem into an LSI", put(b, indexes, attrs{"pk": avS("q"), "sk": avS("1"), "lk": avS("l")}), "total=2 table=1 lsi:lsi1=1"},
	}
	for _, st := range steps {
		if got := renderCapacity(st.run()); got != st.want {
			t.Errorf("%s: capacity %s, want %s", st.name, got, st.want)
		}
	}
	for _, cc := range []*types.ConsumedCapacity{get(total, pk("b"), false, "")(), put(a, total, attrs{"pk": avS("tn")})()} {
		if aws.ToString(cc.TableName) != a {
			t.Errorf("TableName %q, want %q", aws.ToString(cc.TableName), a)
		}
	}

	t.Run("BatchWriteItem", func(t *testing.T) {
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{
				a: {
					{PutRequest: &types.PutRequest{Item: attrs{"pk": avS("bw1"), "gk": avS("x")}}},
					{PutRequest: &types.PutRequest{Item: attrs{"pk": avS("bw2"), "d": pad(1100)}}},
					{DeleteRequest: &types.DeleteRequest{Key: pk("absent")}},
				},
				b: {{PutRequest: &types.PutRequest{Item: attrs{"pk": avS("bw"), "sk": avS("1")}}}},
			},
			ReturnConsumedCapacity: indexes,
		})
		requireNoError(t, err, "BatchWriteItem")
		if got, want := renderCapacities(out.ConsumedCapacity, a, b), "total=5 table=4 gsi:gsi1=1; total=1 table=1"; got != want {
			t.Fatalf("capacity %s, want %s", got, want)
		}
	})
	t.Run("BatchGetItem", func(t *testing.T) {
		out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				a: {Keys: []attrs{pk("big"), pk("b"), pk("absent")}},
				b: {Keys: []attrs{{"pk": avS("p"), "sk": avS("1")}}, ConsistentRead: aws.Bool(true)},
			},
			ReturnConsumedCapacity: total,
		})
		requireNoError(t, err, "BatchGetItem")
		if got, want := renderCapacities(out.ConsumedCapacity, a, b), "total=2.5; total=1"; got != want {
			t.Fatalf("capacity %s, want %s", got, want)
		}
	})
	t.Run("TransactWriteItems", func(t *testing.T) {
		out, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:          []types.TransactWriteItem{txPut(a, attrs{"pk": avS("tx"), "gk": avS("t1"), "g2": avS("t2")})},
			ReturnConsumedCapacity: indexes,
		})
		requireNoError(t, err, "TransactWriteItems")
		if got, want := renderCapacities(out.ConsumedCapacity, a), "total=4w4 table=2w2 gsi:gsi1=1w1 gsi:gsi2=1w1"; got != want {
			t.Fatalf("capacity %s, want %s", got, want)
		}
		put(a, total, attrs{"pk": avS("checked"), "filler": pad(5000)})()
		out, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{
				txPut(a, pk("tx2")),
				txCheck(a, pk("checked"), "attribute_exists(pk)", nil),
				txDelete(b, attrs{"pk": avS("none"), "sk": avS("none")}),
			},
			ReturnConsumedCapacity: total,
		})
		requireNoError(t, err, "TransactWriteItems")
		if got, want := renderCapacities(out.ConsumedCapacity, a, b), "total=12w12; total=2w2"; got != want {
			t.Fatalf("capacity %s, want %s", got, want)
		}
	})
	t.Run("TransactGetItems", func(t *testing.T) {
		out, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{
			TransactItems: []types.TransactGetItem{
				{Get: &types.Get{TableName: aws.String(a), Key: pk("checked"), ProjectionExpression: aws.String("pk")}},
				{Get: &types.Get{TableName: aws.String(a), Key: pk("missing")}},
			},
			ReturnConsumedCapacity: indexes,
		})
		requireNoError(t, err, "TransactGetItems")
		if got, want := renderCapacities(out.ConsumedCapacity, a), "total=6r6 table=6r6"; got != want {
			t.Fatalf("capacity %s, want %s", got, want)
		}
	})
}

// TestConsumedCapacityValidation checks that every operation rejects an
// unknown ReturnConsumedCapacity.
func TestConsumedCapacityValidation(t *testing.T) {
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	const bogus = types.ReturnConsumedCapacity("BOGUS")
	name := aws.String(tab)
	cases := []struct {
		op   string
		call func() error
	}{
		{"PutItem", func() error {
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: name, Item: pk("x"), ReturnConsumedCapacity: bogus})
			return err
		}},
		{"GetItem", func() error {
			_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: name, Key: pk("x"), ReturnConsumedCapacity: bogus})
			return err
		}},
		{"UpdateItem", func() error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: pk("x"), ReturnConsumedCapacity: bogus})
			return err
		}},
		{"DeleteItem", func() error {
			_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: name, Key: pk("x"), ReturnConsumedCapacity: bogus})
			return err
		}},
		{"Query", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("x")), ReturnConsumedCapacity: bogus})
			return err
		}},
		{"Scan", func() error {
			_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: name, ReturnConsumedCapacity: bogus})
			return err
		}},
		{"BatchGetItem", func() error {
			_, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{tab: {Keys: []attrs{pk("x")}}}, ReturnConsumedCapacity: bogus})
			return err
		}},
		{"BatchWriteItem", func() error {
			_, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tab: {{PutRequest: &types.PutRequest{Item: pk("x")}}}}, ReturnConsumedCapacity: bogus})
			return err
		}},
		{"TransactGetItems", func() error {
			_, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: name, Key: pk("x")}}}, ReturnConsumedCapacity: bogus})
			return err
		}},
		{"TransactWriteItems", func() error {
			_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(tab, pk("x"))}, ReturnConsumedCapacity: bogus})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			requireAPIError(t, tc.call(), "ValidationException",
				"Value 'BOGUS' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]")
		})
	}
	if it := getItem(t, c, tab, pk("x")); it != nil {
		t.Fatal("a rejected request wrote an item")
	}
}
