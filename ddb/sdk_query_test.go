package ddb_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// scanAll runs a Scan to the end, following LastEvaluatedKey.
func scanAll(t *testing.T, c *dynamodb.Client, in *dynamodb.ScanInput) (items []attrs, pages int) {
	t.Helper()
	in.ExclusiveStartKey = nil
	for {
		pages++
		if pages > 1000 {
			t.Fatal("Scan paging does not terminate")
		}
		out, err := c.Scan(tctx(t), in)
		requireNoError(t, err, "Scan")
		items = append(items, out.Items...)
		if out.LastEvaluatedKey == nil {
			return items, pages
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// column returns the text of attribute name of each item (S or N).
func column(items []attrs, name string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			out[i] = v.Value
		case *types.AttributeValueMemberN:
			out[i] = v.Value
		default:
			out[i] = renderAV(v)
		}
	}
	return out
}

func rat(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("not a number: %q", s)
	}
	return r
}

// requireNumbers fails unless got holds the numbers of want, in order,
// compared by value.
func requireNumbers(t *testing.T, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = rat(t, got[i]).Cmp(rat(t, want[i])) == 0
	}
	if !ok {
		t.Fatalf("got numbers %v, want %v", got, want)
	}
}

// TestSDKQuerySortKeyConditions runs every sort key condition on the table,
// an LSI and a GSI whose keys mirror the table's.
func TestSDKQuerySortKeyConditions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N",
		LSIs: []indexSpec{{Name: "lsi", Hash: "pk:S", Range: "lsk:N"}},
		GSIs: []indexSpec{{Name: "gsi", Hash: "gpk:S", Range: "gsk:N"}},
	})
	sks := []string{"100", "-1.5", "0", "2.5", "-10", "1", "10"}
	var items []attrs
	for _, p := range []string{"p", "q"} {
		for _, sk := range sks {
			items = append(items, attrs{"pk": avS(p), "sk": avN(sk), "lsk": avN(sk), "gpk": avS(p), "gsk": avN(sk), "v": avS(p + sk)})
		}
	}
	batchPut(t, c, tbl, items)
	v := eaValues
	cases := []struct {
		name, cond string
		values     map[string]types.AttributeValue
		want       []string
	}{
		{"partition", "#h = :p", v(), []string{"-10", "-1.5", "0", "1", "2.5", "10", "100"}},
		{"eq", "#h = :p AND #r = :v", v(":v", avN("2.50")), []string{"2.5"}},
		{"eq none", "#h = :p AND #r = :v", v(":v", avN("3")), nil},
		{"lt", "#h = :p AND #r < :v", v(":v", avN("1")), []string{"-10", "-1.5", "0"}},
		{"le", "#h = :p AND #r <= :v", v(":v", avN("1")), []string{"-10", "-1.5", "0", "1"}},
		{"gt", "#h = :p AND #r > :v", v(":v", avN("2.5")), []string{"10", "100"}},
		{"ge", "#h = :p AND #r >= :v", v(":v", avN("2.5")), []string{"2.5", "10", "100"}},
		{"lt negative", "#h = :p AND #r < :v", v(":v", avN("-2")), []string{"-10"}},
		{"gt below all", "#h = :p AND #r > :v", v(":v", avN("-1000")), []string{"-10", "-1.5", "0", "1", "2.5", "10", "100"}},
		{"between", "#h = :p AND #r BETWEEN :a AND :b", v(":a", avN("-1.5"), ":b", avN("2.5")), []string{"-1.5", "0", "1", "2.5"}},
		{"between equal bounds", "#h = :p AND #r BETWEEN :a AND :a", v(":a", avN("10")), []string{"10"}},
		{"between empty", "#h = :p AND #r BETWEEN :a AND :b", v(":a", avN("3"), ":b", avN("9.99")), nil},
		{"sort term first", "#r > :v AND #h = :p", v(":v", avN("10")), []string{"100"}},
		{"parenthesised", "(#h = :p) AND (#r < :v)", v(":v", avN("-1.5")), []string{"-10"}},
		{"missing partition", "#h = :none", v(":none", avS("zz")), nil},
	}
	targets := []struct {
		index      string
		hash, sort string
	}{{"", "pk", "sk"}, {"lsi", "pk", "lsk"}, {"gsi", "gpk", "gsk"}}
	for _, tg := range targets {
		for _, tc := range cases {
			for _, forward := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/forward=%v", tg.index, tc.name, forward), func(t *testing.T) {
					t.Parallel()
					vals := map[string]types.AttributeValue{}
					if strings.Contains(tc.cond, ":p") {
						vals[":p"] = avS("p")
					}
					for k, x := range tc.values {
						vals[k] = x
					}
					names := eaNames("#h", tg.hash)
					if strings.Contains(tc.cond, "#r") {
						names["#r"] = tg.sort
					}
					in := &dynamodb.QueryInput{
						TableName: aws.String(tbl), KeyConditionExpression: aws.String(tc.cond),
						ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
						ScanIndexForward: aws.Bool(forward),
					}
					if tg.index != "" {
						in.IndexName = aws.String(tg.index)
					}
					out, err := c.Query(tctx(t), in)
					requireNoError(t, err, "Query")
					want := slices.Clone(tc.want)
					if !forward {
						slices.Reverse(want)
					}
					requireNumbers(t, column(out.Items, "sk"), want)
					for _, it := range out.Items {
						if sAttr(it, "pk") != "p" || sAttr(it, "v") != "p"+nAttr(it, "sk") {
							t.Fatalf("item from the wrong partition or incomplete: %s", renderItem(it))
						}
					}
					if out.Count != int32(len(want)) || out.ScannedCount != int32(len(want)) {
						t.Errorf("Count=%d ScannedCount=%d, want %d", out.Count, out.ScannedCount, len(want))
					}
				})
			}
		}
	}
}

func TestSDKQueryStringAndBinarySortKeys(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	t.Run("S", func(t *testing.T) {
		t.Parallel()
		tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S"})
		// UTF-8 byte order: upper case before lower case, é (0xC3 0xA9) last.
		sorted := []string{"B", "a", "ab", "abc", "abd", "b", "é"}
		for _, i := range rand.Perm(len(sorted)) {
			putItems(t, c, tbl, attrs{"pk": avS("p"), "sk": avS(sorted[i])})
		}
		got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p"))})
		if g := column(got, "sk"); !slices.Equal(g, sorted) {
			t.Errorf("order = %q, want %q", g, sorted)
		}
		for prefix, want := range map[string][]string{"a": {"a", "ab", "abc", "abd"}, "ab": {"ab", "abc", "abd"}, "abc": {"abc"}, "x": nil, "é": {"é"}} {
			got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :s)"),
				ExpressionAttributeValues: eaValues(":p", avS("p"), ":s", avS(prefix))})
			if g := column(got, "sk"); !slices.Equal(g, want) && (len(g) != 0 || len(want) != 0) {
				t.Errorf("begins_with %q = %q, want %q", prefix, g, want)
			}
		}
	})
	t.Run("B", func(t *testing.T) {
		t.Parallel()
		tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:B"})
		sorted := [][]byte{{0x00}, {0x00, 0x01}, {0x01}, {0x7f}, {0x80}, {0xff}, {0xff, 0x00}}
		for _, i := range rand.Perm(len(sorted)) {
			putItems(t, c, tbl, attrs{"pk": avS("p"), "sk": avB(sorted[i])})
		}
		got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p"))})
		var want []string
		for _, b := range sorted {
			want = append(want, renderAV(avB(b)))
		}
		if g := column(got, "sk"); !slices.Equal(g, want) {
			t.Errorf("binary order = %v, want %v (unsigned bytes)", g, want)
		}
		got = queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :b)"),
			ExpressionAttributeValues: eaValues(":p", avS("p"), ":b", avB([]byte{0xff}))})
		if g := column(got, "sk"); !slices.Equal(g, want[5:]) {
			t.Errorf("begins_with 0xff = %v, want %v", g, want[5:])
		}
		got = queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND sk > :b"),
			ExpressionAttributeValues: eaValues(":p", avS("p"), ":b", avB([]byte{0x7f}))})
		if g := column(got, "sk"); !slices.Equal(g, want[4:]) {
			t.Errorf("sk > 0x7f = %v, want %v", g, want[4:])
		}
	})
}

func TestSDKNumberSortKeyOrder(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	nums := []string{
		"-12345678901234567890123456789012345678", "-1E+10", "-100", "-10.5", "-10", "-1", "-0.5", "-0.001", "-1E-130",
		"0", "1E-130", "0.001", "0.01", "0.1", "1", "1.5", "2", "9.99", "10", "10.5", "100", "1E+10",
		"12345678901234567890123456789012345678", "9.9999999999999999999999999999999999999E+125",
	}
	var items []attrs
	for _, i := range rand.Perm(len(nums)) {
		items = append(items, attrs{"pk": avS("p"), "sk": avN(nums[i])})
	}
	batchPut(t, c, tbl, items)
	got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p"))})
	requireNumbers(t, column(got, "sk"), nums)
	got = queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND sk BETWEEN :a AND :b"),
		ExpressionAttributeValues: eaValues(":p", avS("p"), ":a", avN("-10"), ":b", avN("-0.001"))})
	requireNumbers(t, column(got, "sk"), []string{"-10", "-1", "-0.5", "-0.001"})
	got = queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p AND sk < :z"),
		ExpressionAttributeValues: eaValues(":p", avS("p"), ":z", avN("0")), ScanIndexForward: aws.Bool(false)})
	want := slices.Clone(nums[:9])
	slices.Reverse(want)
	requireNumbers(t, column(got, "sk"), want)
}

func TestSDKQueryPaging(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	var items []attrs
	for i := range 23 {
		items = append(items, attrs{"pk": avS("p"), "sk": avN(fmt.Sprint(i)), "odd": avBool(i%2 == 1)})
		items = append(items, attrs{"pk": avS("other"), "sk": avN(fmt.Sprint(i))})
	}
	batchPut(t, c, tbl, items)
	for _, limit := range []int32{1, 2, 5, 7, 23, 24, 100} {
		for _, forward := range []bool{true, false} {
			for _, filtered := range []bool{false, true} {
				t.Run(fmt.Sprintf("limit=%d/forward=%v/filter=%v", limit, forward, filtered), func(t *testing.T) {
					t.Parallel()
					in := &dynamodb.QueryInput{
						TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"),
						ExpressionAttributeValues: eaValues(":p", avS("p")),
						Limit:                     aws.Int32(limit), ScanIndexForward: aws.Bool(forward),
					}
					if filtered {
						in.FilterExpression = aws.String("odd = :t")
						in.ExpressionAttributeValues[":t"] = avBool(true)
					}
					var got []string
					scanned := int32(0)
					for pages := 0; ; pages++ {
						if pages > 30 {
							t.Fatal("paging does not terminate")
						}
						out, err := c.Query(tctx(t), in)
						requireNoError(t, err, "Query")
						if out.ScannedCount > limit {
							t.Fatalf("ScannedCount %d > Limit %d", out.ScannedCount, limit)
						}
						if out.Count != int32(len(out.Items)) {
							t.Fatalf("Count %d != len(Items) %d", out.Count, len(out.Items))
						}
						scanned += out.ScannedCount
						got = append(got, column(out.Items, "sk")...)
						if out.LastEvaluatedKey == nil {
							break
						}
						if out.ScannedCount != limit {
							t.Fatalf("page stopped after %d items with a LastEvaluatedKey but Limit %d", out.ScannedCount, limit)
						}
						if k := renderItem(out.LastEvaluatedKey); len(out.LastEvaluatedKey) != 2 || sAttr(out.LastEvaluatedKey, "pk") != "p" {
							t.Fatalf("LastEvaluatedKey = %s, want the table key", k)
						}
						in.ExclusiveStartKey = out.LastEvaluatedKey
					}
					var want []string
					for i := range 23 {
						if !filtered || i%2 == 1 {
							want = append(want, fmt.Sprint(i))
						}
					}
					if !forward {
						slices.Reverse(want)
					}
					if !slices.Equal(got, want) {
						t.Errorf("items = %v, want %v", got, want)
					}
					if scanned < 23 || scanned > 24 {
						t.Errorf("total ScannedCount = %d, want 23", scanned)
					}
				})
			}
		}
	}
}

func TestSDKQueryFilterAndSelect(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	var items []attrs
	for i := range 10 {
		items = append(items, attrs{"pk": avS("p"), "sk": avN(fmt.Sprint(i)), "v": avN(fmt.Sprint(i * 10)), "tag": avS(fmt.Sprintf("t%d", i%3)), "x": avS("x")})
	}
	batchPut(t, c, tbl, items)
	query := func(t *testing.T, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		in.TableName = aws.String(tbl)
		if in.KeyConditionExpression == nil {
			in.KeyConditionExpression = aws.String("pk = :p")
		}
		if in.ExpressionAttributeValues == nil {
			in.ExpressionAttributeValues = map[string]types.AttributeValue{}
		}
		in.ExpressionAttributeValues[":p"] = avS("p")
		return c.Query(tctx(t), in)
	}
	t.Run("filter counts", func(t *testing.T) {
		t.Parallel()
		out, err := query(t, &dynamodb.QueryInput{FilterExpression: aws.String("v >= :min"), ExpressionAttributeValues: eaValues(":min", avN("50"))})
		requireNoError(t, err, "Query")
		if out.Count != 5 || out.ScannedCount != 10 || len(out.Items) != 5 {
			t.Errorf("Count=%d ScannedCount=%d len=%d, want 5/10/5", out.Count, out.ScannedCount, len(out.Items))
		}
		out, err = query(t, &dynamodb.QueryInput{FilterExpression: aws.String("v >= :min"), ExpressionAttributeValues: eaValues(":min", avN("50")), Limit: aws.Int32(4)})
		requireNoError(t, err, "Query")
		if out.Count != 0 || out.ScannedCount != 4 || out.LastEvaluatedKey == nil {
			t.Errorf("with Limit 4: Count=%d ScannedCount=%d LEK=%v, want 0/4/set", out.Count, out.ScannedCount, out.LastEvaluatedKey)
		}
		out, err = query(t, &dynamodb.QueryInput{FilterExpression: aws.String("tag IN (:a, :b) AND NOT contains(tag, :c)"),
			ExpressionAttributeValues: eaValues(":a", avS("t0"), ":b", avS("t1"), ":c", avS("1"))})
		requireNoError(t, err, "Query")
		if got := column(out.Items, "sk"); !slices.Equal(got, []string{"0", "3", "6", "9"}) || out.ScannedCount != 10 {
			t.Errorf("filter = %v (scanned %d)", got, out.ScannedCount)
		}
	})
	t.Run("COUNT", func(t *testing.T) {
		t.Parallel()
		out, err := query(t, &dynamodb.QueryInput{Select: types.SelectCount})
		requireNoError(t, err, "Query")
		if out.Count != 10 || out.ScannedCount != 10 || len(out.Items) != 0 {
			t.Errorf("COUNT: Count=%d ScannedCount=%d Items=%d", out.Count, out.ScannedCount, len(out.Items))
		}
		out, err = query(t, &dynamodb.QueryInput{Select: types.SelectCount, FilterExpression: aws.String("tag = :t"), ExpressionAttributeValues: eaValues(":t", avS("t1"))})
		requireNoError(t, err, "Query")
		if out.Count != 3 || out.ScannedCount != 10 || len(out.Items) != 0 {
			t.Errorf("COUNT with filter: Count=%d ScannedCount=%d Items=%d", out.Count, out.ScannedCount, len(out.Items))
		}
	})
	t.Run("ALL_ATTRIBUTES", func(t *testing.T) {
		t.Parallel()
		out, err := query(t, &dynamodb.QueryInput{Select: types.SelectAllAttributes, KeyConditionExpression: aws.String("pk = :p AND sk = :s"), ExpressionAttributeValues: eaValues(":s", avN("4"))})
		requireNoError(t, err, "Query")
		if len(out.Items) != 1 {
			t.Fatalf("got %d items", len(out.Items))
		}
		requireItem(t, out.Items[0], items[4])
	})
	t.Run("SPECIFIC_ATTRIBUTES", func(t *testing.T) {
		t.Parallel()
		out, err := query(t, &dynamodb.QueryInput{Select: types.SelectSpecificAttributes, ProjectionExpression: aws.String("v, #t"), ExpressionAttributeNames: eaNames("#t", "tag"),
			KeyConditionExpression: aws.String("pk = :p AND sk = :s"), ExpressionAttributeValues: eaValues(":s", avN("4"))})
		requireNoError(t, err, "Query")
		if len(out.Items) != 1 {
			t.Fatalf("got %d items", len(out.Items))
		}
		requireItem(t, out.Items[0], attrs{"v": avN("40"), "tag": avS("t1")})
		// A projection alone implies SPECIFIC_ATTRIBUTES.
		out, err = query(t, &dynamodb.QueryInput{ProjectionExpression: aws.String("x"), FilterExpression: aws.String("v = :v"), ExpressionAttributeValues: eaValues(":v", avN("90"))})
		requireNoError(t, err, "Query")
		if len(out.Items) != 1 {
			t.Fatalf("got %d items", len(out.Items))
		}
		requireItem(t, out.Items[0], attrs{"x": avS("x")})
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			in   *dynamodb.QueryInput
		}{
			{"unknown Select", &dynamodb.QueryInput{Select: "EVERYTHING"}},
			{"filter on sort key", &dynamodb.QueryInput{FilterExpression: aws.String("sk > :z"), ExpressionAttributeValues: eaValues(":z", avN("0"))}},
			{"filter on partition key", &dynamodb.QueryInput{FilterExpression: aws.String("pk = :z"), ExpressionAttributeValues: eaValues(":z", avS("p"))}},
			{"limit 0", &dynamodb.QueryInput{Limit: aws.Int32(0)}},
		}
		for _, tc := range cases {
			_, err := query(t, tc.in)
			if err == nil {
				t.Errorf("%s: no error", tc.name)
				continue
			}
			requireAPIError(t, err, "ValidationException", "")
		}
	})
	t.Run("invalid Select", func(t *testing.T) {
		t.Parallel()
		// API Reference, Query, Select: "If you use the ProjectionExpression
		// parameter, then the value for Select can only be
		// SPECIFIC_ATTRIBUTES. Any other value for Select will return an error."
		skipIfExternal(t, "dynalite accepts Select COUNT/ALL_ATTRIBUTES with a ProjectionExpression, and SPECIFIC_ATTRIBUTES without one")
		for _, in := range []*dynamodb.QueryInput{
			{Select: types.SelectCount, ProjectionExpression: aws.String("v")},
			{Select: types.SelectAllAttributes, ProjectionExpression: aws.String("v")},
			{Select: types.SelectSpecificAttributes},
		} {
			_, err := query(t, in)
			requireAPIError(t, err, "ValidationException", "")
		}
	})
	t.Run("ALL_PROJECTED_ATTRIBUTES on table", func(t *testing.T) {
		t.Parallel()
		skipIfExternal(t, "dynalite accepts Select ALL_PROJECTED_ATTRIBUTES without an IndexName")
		_, err := query(t, &dynamodb.QueryInput{Select: types.SelectAllProjectedAttributes})
		requireAPIError(t, err, "ValidationException", "ALL_PROJECTED_ATTRIBUTES")
	})
}

func TestSDKQueryKeyConditionErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	putItems(t, c, tbl, attrs{"pk": avS("p"), "sk": avN("1"), "v": avN("1")})
	v := eaValues
	cases := []struct {
		name, cond string
		values     map[string]types.AttributeValue
		msg        string
	}{
		{"no partition key", "sk = :s", v(":s", avN("1")), ""},
		{"partition key range", "pk > :p", v(":p", avS("p")), ""},
		{"partition key begins_with", "begins_with(pk, :p)", v(":p", avS("p")), ""},
		{"non-key attribute", "pk = :p AND v = :v", v(":p", avS("p"), ":v", avN("1")), ""},
		{"OR", "pk = :p OR sk = :s", v(":p", avS("p"), ":s", avN("1")), ""},
		{"NOT", "NOT pk = :p", v(":p", avS("p")), ""},
		{"three terms", "pk = :p AND sk > :s AND sk < :s", v(":p", avS("p"), ":s", avN("1")), ""},
		{"partition key type", "pk = :p", v(":p", avN("1")), ""},
		{"sort key type", "pk = :p AND sk = :s", v(":p", avS("p"), ":s", avS("1")), ""},
		{"begins_with on number", "pk = :p AND begins_with(sk, :s)", v(":p", avS("p"), ":s", avN("1")), ""},
		{"between reversed", "pk = :p AND sk BETWEEN :b AND :a", v(":p", avS("p"), ":a", avN("1"), ":b", avN("2")), "BETWEEN"},
		{"sort key <>", "pk = :p AND sk <> :s", v(":p", avS("p"), ":s", avN("1")), ""},
		{"IN", "pk IN (:p)", v(":p", avS("p")), ""},
		{"contains", "pk = :p AND contains(sk, :s)", v(":p", avS("p"), ":s", avN("1")), ""},
		{"size", "pk = :p AND size(sk) = :s", v(":p", avS("p"), ":s", avN("1")), ""},
		{"attribute_exists", "pk = :p AND attribute_exists(sk)", v(":p", avS("p")), ""},
		{"path on key", "pk.a = :p", v(":p", avS("p")), ""},
		{"syntax", "pk = ", nil, "syntax"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String(tc.cond), ExpressionAttributeValues: tc.values})
			requireAPIError(t, err, "ValidationException", tc.msg)
		})
	}
	t.Run("no key condition", func(t *testing.T) {
		t.Parallel()
		_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl)})
		requireAPIError(t, err, "ValidationException", "")
	})
	t.Run("unknown index", func(t *testing.T) {
		t.Parallel()
		_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("nope"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: v(":p", avS("p"))})
		requireAPIError(t, err, "ValidationException", "index")
	})
	t.Run("ExclusiveStartKey not a key", func(t *testing.T) {
		t.Parallel()
		_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: v(":p", avS("p")),
			ExclusiveStartKey: attrs{"pk": avS("p")}})
		requireAPIError(t, err, "ValidationException", "")
	})
}

// indexTable creates a table with indexes of every projection type and
// writes items to it: partition p holds 12 items; items with i%4 == 0 lack
// the GSI keys (sparse), items with i%3 == 0 lack the LSI sort key l.
func indexTable(t *testing.T, c *dynamodb.Client) (string, []attrs) {
	t.Helper()
	tbl := createTable(t, c, tableSpec{
		Hash: "pk:S", Range: "sk:N",
		GSIs: []indexSpec{
			{Name: "gsi_all", Hash: "g:S", Range: "gs:N", Projection: types.ProjectionTypeAll},
			{Name: "gsi_keys", Hash: "g:S", Projection: types.ProjectionTypeKeysOnly},
			{Name: "gsi_inc", Hash: "g:S", Range: "gs:N", Projection: types.ProjectionTypeInclude, Include: []string{"inc1"}},
		},
		LSIs: []indexSpec{
			{Name: "lsi_all", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeAll},
			{Name: "lsi_keys", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeKeysOnly},
			{Name: "lsi_inc", Hash: "pk:S", Range: "l2:N", Projection: types.ProjectionTypeInclude, Include: []string{"inc1"}},
		},
	})
	var items []attrs
	for i := range 12 {
		it := attrs{"pk": avS("p"), "sk": avN(fmt.Sprint(i)), "l2": avN(fmt.Sprint(100 - i)), "inc1": avS(fmt.Sprintf("i1-%d", i)), "inc2": avS("i2"), "oth": avN(fmt.Sprint(i))}
		if i%4 != 0 {
			it["g"] = avS(fmt.Sprintf("g%d", i%2))
			it["gs"] = avN(fmt.Sprint(-i))
		}
		if i%3 != 0 {
			it["l"] = avS(fmt.Sprintf("l%02d", 20-i))
		}
		items = append(items, it)
	}
	items = append(items, attrs{"pk": avS("q"), "sk": avN("0"), "g": avS("g1"), "gs": avN("-100"), "l": avS("l"), "l2": avN("0")})
	batchPut(t, c, tbl, items)
	return tbl, items
}

// project keeps only the named attributes of it.
func project(it attrs, names ...string) attrs {
	out := attrs{}
	for _, n := range names {
		if v, ok := it[n]; ok {
			out[n] = v
		}
	}
	return out
}

func TestSDKQueryIndexes(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl, items := indexTable(t, c)
	// The items of partition p with the expected order per index.
	pick := func(keep func(it attrs) bool, less func(a, b attrs) bool) []attrs {
		var out []attrs
		for _, it := range items {
			if keep(it) {
				out = append(out, it)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
		return out
	}
	byGS := func(a, b attrs) bool { return rat(t, nAttr(a, "gs")).Cmp(rat(t, nAttr(b, "gs"))) < 0 }
	g1 := pick(func(it attrs) bool { return sAttr(it, "g") == "g1" }, byGS)
	lsiL := pick(func(it attrs) bool { return sAttr(it, "pk") == "p" && sAttr(it, "l") != "" }, func(a, b attrs) bool { return sAttr(a, "l") < sAttr(b, "l") })
	lsiL2 := pick(func(it attrs) bool { return sAttr(it, "pk") == "p" }, func(a, b attrs) bool { return rat(t, nAttr(a, "l2")).Cmp(rat(t, nAttr(b, "l2"))) < 0 })
	mapItems := func(in []attrs, f func(attrs) attrs) []attrs {
		out := make([]attrs, len(in))
		for i, it := range in {
			out[i] = f(it)
		}
		return out
	}
	cases := []struct {
		name   string
		index  string
		cond   string
		values map[string]types.AttributeValue
		sel    types.Select
		proj   string
		want   []attrs
		// unordered: the index has no sort key, compare as sets.
		unordered bool
	}{
		{"gsi ALL", "gsi_all", "g = :g", eaValues(":g", avS("g1")), "", "", g1, false},
		{"gsi ALL range", "gsi_all", "g = :g AND gs BETWEEN :a AND :b", eaValues(":g", avS("g1"), ":a", avN("-9"), ":b", avN("-5")),
			"", "", pick(func(it attrs) bool {
				return sAttr(it, "g") == "g1" && rat(t, nAttr(it, "gs")).Cmp(big.NewRat(-9, 1)) >= 0 && rat(t, nAttr(it, "gs")).Cmp(big.NewRat(-5, 1)) <= 0
			}, byGS), false},
		{"gsi KEYS_ONLY", "gsi_keys", "g = :g", eaValues(":g", avS("g1")), "", "", mapItems(g1, func(it attrs) attrs { return project(it, "pk", "sk", "g") }), true},
		{"gsi KEYS_ONLY ALL_PROJECTED_ATTRIBUTES", "gsi_keys", "g = :g", eaValues(":g", avS("g1")), types.SelectAllProjectedAttributes, "", mapItems(g1, func(it attrs) attrs { return project(it, "pk", "sk", "g") }), true},
		{"gsi INCLUDE", "gsi_inc", "g = :g", eaValues(":g", avS("g1")), "", "", mapItems(g1, func(it attrs) attrs { return project(it, "pk", "sk", "g", "gs", "inc1") }), false},
		{"gsi INCLUDE projection", "gsi_inc", "g = :g", eaValues(":g", avS("g1")), "", "inc1, sk", mapItems(g1, func(it attrs) attrs { return project(it, "sk", "inc1") }), false},
		{"gsi COUNT", "gsi_keys", "g = :g", eaValues(":g", avS("g1")), types.SelectCount, "", nil, false},
		{"lsi ALL", "lsi_all", "pk = :p", eaValues(":p", avS("p")), "", "", lsiL, false},
		{"lsi ALL begins_with", "lsi_all", "pk = :p AND begins_with(l, :l)", eaValues(":p", avS("p"), ":l", avS("l1")),
			"", "", pick(func(it attrs) bool { return sAttr(it, "pk") == "p" && strings.HasPrefix(sAttr(it, "l"), "l1") }, func(a, b attrs) bool { return sAttr(a, "l") < sAttr(b, "l") }), false},
		{"lsi KEYS_ONLY", "lsi_keys", "pk = :p", eaValues(":p", avS("p")), "", "", mapItems(lsiL, func(it attrs) attrs { return project(it, "pk", "sk", "l") }), false},
		{"lsi KEYS_ONLY ALL_ATTRIBUTES fetches", "lsi_keys", "pk = :p", eaValues(":p", avS("p")), types.SelectAllAttributes, "", lsiL, false},
		{"lsi KEYS_ONLY projection fetches", "lsi_keys", "pk = :p", eaValues(":p", avS("p")), "", "oth, l", mapItems(lsiL, func(it attrs) attrs { return project(it, "oth", "l") }), false},
		{"lsi INCLUDE", "lsi_inc", "pk = :p AND l2 > :z", eaValues(":p", avS("p"), ":z", avN("0")), "", "", mapItems(lsiL2, func(it attrs) attrs { return project(it, "pk", "sk", "l2", "inc1") }), false},
		{"lsi INCLUDE desc", "lsi_inc", "pk = :p", eaValues(":p", avS("p")), types.SelectAllProjectedAttributes, "", mapItems(lsiL2, func(it attrs) attrs { return project(it, "pk", "sk", "l2", "inc1") }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "lsi KEYS_ONLY projection fetches" {
				// Developer Guide, "Local secondary indexes": attributes not
				// projected into an LSI are fetched from the base table.
				skipIfExternal(t, "dynalite does not fetch unprojected attributes of an LSI from the table")
			}
			in := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String(tc.index), KeyConditionExpression: aws.String(tc.cond), ExpressionAttributeValues: tc.values, Select: tc.sel}
			if tc.proj != "" {
				in.ProjectionExpression = aws.String(tc.proj)
			}
			if tc.sel == types.SelectCount {
				out, err := c.Query(tctx(t), in)
				requireNoError(t, err, "Query")
				if out.Count != int32(len(g1)) || len(out.Items) != 0 {
					t.Errorf("COUNT = %d (%d items), want %d", out.Count, len(out.Items), len(g1))
				}
				return
			}
			got := queryAll(t, c, in)
			render := func(in []attrs) []string {
				out := make([]string, len(in))
				for i, it := range in {
					out[i] = renderItem(it)
				}
				if tc.unordered {
					sort.Strings(out)
				}
				return out
			}
			if g, w := render(got), render(tc.want); !slices.Equal(g, w) {
				t.Errorf("got %d items:\n%s\nwant %d:\n%s", len(g), strings.Join(g, "\n"), len(w), strings.Join(w, "\n"))
			}
		})
	}
	t.Run("desc", func(t *testing.T) {
		t.Parallel()
		got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi_all"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("g1")), ScanIndexForward: aws.Bool(false)})
		want := slices.Clone(g1)
		slices.Reverse(want)
		if g, w := column(got, "gs"), column(want, "gs"); !slices.Equal(g, w) {
			t.Errorf("desc gs = %v, want %v", g, w)
		}
	})
	t.Run("paging LastEvaluatedKey", func(t *testing.T) {
		t.Parallel()
		in := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi_all"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("g1")), Limit: aws.Int32(2)}
		out, err := c.Query(tctx(t), in)
		requireNoError(t, err, "Query")
		lek := out.LastEvaluatedKey
		var keys []string
		for k := range lek {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, []string{"g", "gs", "pk", "sk"}) {
			t.Errorf("GSI LastEvaluatedKey attributes = %v, want index and table keys", keys)
		}
		in.Limit = aws.Int32(1)
		got := queryAll(t, c, in)
		if g, w := column(got, "sk"), column(g1, "sk"); !slices.Equal(g, w) {
			t.Errorf("paged GSI query = %v, want %v", g, w)
		}
		lin := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("lsi_keys"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p")), Limit: aws.Int32(3)}
		out, err = c.Query(tctx(t), lin)
		requireNoError(t, err, "Query")
		keys = keys[:0]
		for k := range out.LastEvaluatedKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, []string{"l", "pk", "sk"}) {
			t.Errorf("LSI LastEvaluatedKey attributes = %v", keys)
		}
		got = queryAll(t, c, lin)
		if g, w := column(got, "sk"), column(lsiL, "sk"); !slices.Equal(g, w) {
			t.Errorf("paged LSI query = %v, want %v", g, w)
		}
	})
	t.Run("sparse scan", func(t *testing.T) {
		t.Parallel()
		for index, keep := range map[string]func(attrs) bool{
			"gsi_all":  func(it attrs) bool { return sAttr(it, "g") != "" },
			"gsi_keys": func(it attrs) bool { return sAttr(it, "g") != "" },
			"lsi_keys": func(it attrs) bool { return sAttr(it, "l") != "" },
			"lsi_inc":  func(it attrs) bool { return nAttr(it, "l2") != "" },
		} {
			got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String(index)})
			var want []string
			for _, it := range items {
				if keep(it) {
					want = append(want, sAttr(it, "pk")+"/"+nAttr(it, "sk"))
				}
			}
			var gotKeys []string
			for _, it := range got {
				gotKeys = append(gotKeys, sAttr(it, "pk")+"/"+nAttr(it, "sk"))
			}
			sort.Strings(want)
			sort.Strings(gotKeys)
			if !slices.Equal(gotKeys, want) {
				t.Errorf("scan of %s = %v, want %v", index, gotKeys, want)
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi_keys"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("g1")), Select: types.SelectAllAttributes})
		requireAPIError(t, err, "ValidationException", "")
		_, err = c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi_all"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("g1")), ConsistentRead: aws.Bool(true)})
		requireAPIError(t, err, "ValidationException", "")
		_, err = c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi_all"), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p"))})
		requireAPIError(t, err, "ValidationException", "")
	})
}

// TestSDKIndexMaintenance checks that writes keep the indexes current.
func TestSDKIndexMaintenance(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "g:S", Projection: types.ProjectionTypeInclude, Include: []string{"a"}}}})
	gsiKeys := func(g string) []string {
		got := queryAll(t, c, &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS(g))})
		var out []string
		for _, it := range got {
			out = append(out, sAttr(it, "pk")+"="+sAttr(it, "a"))
		}
		sort.Strings(out)
		return out
	}
	expect := func(g string, want ...string) {
		t.Helper()
		if got := gsiKeys(g); !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("index g=%s holds %v, want %v", g, got, want)
		}
	}
	putItems(t, c, tbl, attrs{"pk": avS("1"), "g": avS("x"), "a": avS("a1")}, attrs{"pk": avS("2"), "g": avS("x"), "a": avS("a2")}, attrs{"pk": avS("3"), "a": avS("a3")})
	expect("x", "1=a1", "2=a2")
	// Changing the index key moves the entry.
	_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("1")}, UpdateExpression: aws.String("SET g = :y"), ExpressionAttributeValues: eaValues(":y", avS("y"))})
	requireNoError(t, err, "UpdateItem")
	expect("x", "2=a2")
	expect("y", "1=a1")
	// Changing a projected attribute updates the entry.
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("2")}, UpdateExpression: aws.String("SET a = :v"), ExpressionAttributeValues: eaValues(":v", avS("new"))})
	requireNoError(t, err, "UpdateItem")
	expect("x", "2=new")
	// Removing the index key drops the entry; setting it adds one.
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("2")}, UpdateExpression: aws.String("REMOVE g")})
	requireNoError(t, err, "UpdateItem")
	expect("x")
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("3")}, UpdateExpression: aws.String("SET g = :y"), ExpressionAttributeValues: eaValues(":y", avS("y"))})
	requireNoError(t, err, "UpdateItem")
	expect("y", "1=a1", "3=a3")
	// PutItem replacing and DeleteItem.
	putItems(t, c, tbl, attrs{"pk": avS("1"), "g": avS("x"), "a": avS("again")})
	expect("y", "3=a3")
	expect("x", "1=again")
	_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("3")}})
	requireNoError(t, err, "DeleteItem")
	expect("y")
	// BatchWriteItem maintains indexes too.
	_, err = c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: {
		{DeleteRequest: &types.DeleteRequest{Key: attrs{"pk": avS("1")}}},
		{PutRequest: &types.PutRequest{Item: attrs{"pk": avS("4"), "g": avS("x"), "a": avS("a4")}}},
	}}})
	requireNoError(t, err, "BatchWriteItem")
	expect("x", "4=a4")
	// An index key of the wrong type is rejected.
	_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("5"), "g": avN("1")}})
	requireAPIError(t, err, "ValidationException", "")
	// An empty string as index key is rejected (Developer Guide, "Supported
	// data types": a String can be empty unless it is a table or index key).
	if !isExternal() { // dynalite accepts it
		_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("5"), "g": avS("")}})
		requireAPIError(t, err, "ValidationException", "")
	}
}

func TestSDKPageSizeLimit(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	const n = 30
	pad := strings.Repeat("x", 100*1024)
	var items []attrs
	for i := range n {
		items = append(items, attrs{"pk": avS("p"), "sk": avN(fmt.Sprint(i)), "pad": avS(pad)})
	}
	// ~3 MB: BatchWriteItem accepts at most 16 MB per request.
	batchPut(t, c, tbl, items)
	check := func(t *testing.T, what string, pageCounts []int, total int) {
		t.Helper()
		if len(pageCounts) < 3 {
			t.Errorf("%s: %d pages %v, want at least 3 pages of about 1 MB", what, len(pageCounts), pageCounts)
		}
		if pageCounts[0] < 5 || pageCounts[0] > 12 {
			t.Errorf("%s: first page holds %d items of 100 KB, want about 10 (1 MB)", what, pageCounts[0])
		}
		if total != n {
			t.Errorf("%s: %d items in all, want %d", what, total, n)
		}
	}
	t.Run("query", func(t *testing.T) {
		t.Parallel()
		for _, sel := range []types.Select{types.SelectAllAttributes, types.SelectCount} {
			in := &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("p")), Select: sel}
			var counts []int
			seen := map[string]bool{}
			total := 0
			for range 50 {
				out, err := c.Query(tctx(t), in)
				requireNoError(t, err, "Query")
				counts = append(counts, int(out.Count))
				total += int(out.Count)
				for _, it := range out.Items {
					k := nAttr(it, "sk")
					if seen[k] {
						t.Fatalf("item %s returned twice", k)
					}
					seen[k] = true
				}
				if out.LastEvaluatedKey == nil {
					break
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
			check(t, "query "+string(sel), counts, total)
		}
	})
	t.Run("scan", func(t *testing.T) {
		t.Parallel()
		in := &dynamodb.ScanInput{TableName: aws.String(tbl)}
		var counts []int
		total := 0
		for range 50 {
			out, err := c.Scan(tctx(t), in)
			requireNoError(t, err, "Scan")
			counts = append(counts, len(out.Items))
			total += len(out.Items)
			if out.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
		check(t, "scan", counts, total)
	})
	t.Run("filtered scan", func(t *testing.T) {
		t.Parallel()
		// The 1 MB applies to the data read, before the filter.
		out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl), FilterExpression: aws.String("sk = :none"), ExpressionAttributeValues: eaValues(":none", avN("-1"))})
		requireNoError(t, err, "Scan")
		if out.LastEvaluatedKey == nil || out.ScannedCount >= n || out.Count != 0 {
			t.Errorf("filtered scan page: Count=%d ScannedCount=%d LEK=%v", out.Count, out.ScannedCount, out.LastEvaluatedKey != nil)
		}
	})
}

func TestSDKScan(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N", GSIs: []indexSpec{{Name: "gsi", Hash: "g:N", Projection: types.ProjectionTypeKeysOnly}}})
	var items []attrs
	all := map[string]bool{}
	for i := range 60 {
		for j := range 3 {
			it := attrs{"pk": avS(fmt.Sprintf("p%03d", i)), "sk": avN(fmt.Sprint(j)), "v": avN(fmt.Sprint(i*3 + j))}
			if j == 0 {
				it["g"] = avN(fmt.Sprint(i % 7))
			}
			items = append(items, it)
			all[fmt.Sprintf("p%03d/%d", i, j)] = true
		}
	}
	batchPut(t, c, tbl, items)
	key := func(it attrs) string { return sAttr(it, "pk") + "/" + nAttr(it, "sk") }
	t.Run("whole table", func(t *testing.T) {
		t.Parallel()
		got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(tbl)})
		if len(got) != len(items) {
			t.Fatalf("scan returned %d items, want %d", len(got), len(items))
		}
		seen := map[string]bool{}
		for _, it := range got {
			if seen[key(it)] || !all[key(it)] {
				t.Fatalf("unexpected or duplicate item %s", key(it))
			}
			seen[key(it)] = true
		}
	})
	t.Run("paging and filter", func(t *testing.T) {
		t.Parallel()
		for _, limit := range []int32{1, 7, 50, 180, 1000} {
			in := &dynamodb.ScanInput{TableName: aws.String(tbl), Limit: aws.Int32(limit), FilterExpression: aws.String("v < :v"), ExpressionAttributeValues: eaValues(":v", avN("90"))}
			seen := map[string]bool{}
			scanned := 0
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatal("scan does not terminate")
				}
				out, err := c.Scan(tctx(t), in)
				requireNoError(t, err, "Scan")
				if out.ScannedCount > limit {
					t.Fatalf("ScannedCount %d > Limit %d", out.ScannedCount, limit)
				}
				scanned += int(out.ScannedCount)
				for _, it := range out.Items {
					if seen[key(it)] {
						t.Fatalf("limit %d: item %s twice", limit, key(it))
					}
					if rat(t, nAttr(it, "v")).Cmp(big.NewRat(90, 1)) >= 0 {
						t.Fatalf("filter let %s through", renderItem(it))
					}
					seen[key(it)] = true
				}
				if out.LastEvaluatedKey == nil {
					break
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
			if len(seen) != 90 || scanned < len(items) || scanned > len(items)+1 {
				t.Errorf("limit %d: %d items (want 90), scanned %d (want %d)", limit, len(seen), scanned, len(items))
			}
		}
	})
	t.Run("segments", func(t *testing.T) {
		t.Parallel()
		for _, total := range []int32{1, 2, 4, 7} {
			owner := map[string]int32{}
			partSeg := map[string]int32{}
			for seg := range total {
				for _, limit := range []*int32{nil, aws.Int32(5)} {
					got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(tbl), Segment: aws.Int32(seg), TotalSegments: aws.Int32(total), Limit: limit})
					for _, it := range got {
						k := key(it)
						if o, dup := owner[k]; dup && (o != seg || limit == nil) {
							t.Fatalf("TotalSegments %d: item %s in segments %d and %d", total, k, o, seg)
						}
						owner[k] = seg
						if s, ok := partSeg[sAttr(it, "pk")]; ok && s != seg {
							t.Errorf("TotalSegments %d: partition %s split over segments %d and %d", total, sAttr(it, "pk"), s, seg)
						}
						partSeg[sAttr(it, "pk")] = seg
					}
				}
			}
			if len(owner) != len(items) {
				t.Errorf("TotalSegments %d: union of segments holds %d items, want %d", total, len(owner), len(items))
			}
		}
	})
	t.Run("index segments", func(t *testing.T) {
		t.Parallel()
		seen := map[string]bool{}
		for seg := range int32(4) {
			got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("gsi"), Segment: aws.Int32(seg), TotalSegments: aws.Int32(4)})
			for _, it := range got {
				if seen[key(it)] {
					t.Fatalf("item %s in two segments", key(it))
				}
				seen[key(it)] = true
				if len(it) != 3 {
					t.Errorf("KEYS_ONLY index item %s", renderItem(it))
				}
			}
		}
		if len(seen) != 60 {
			t.Errorf("index segments hold %d items, want 60", len(seen))
		}
	})
	t.Run("select", func(t *testing.T) {
		t.Parallel()
		out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl), Select: types.SelectCount, FilterExpression: aws.String("sk = :z"), ExpressionAttributeValues: eaValues(":z", avN("0"))})
		requireNoError(t, err, "Scan")
		if out.Count != 60 || out.ScannedCount != 180 || len(out.Items) != 0 {
			t.Errorf("COUNT: Count=%d ScannedCount=%d Items=%d", out.Count, out.ScannedCount, len(out.Items))
		}
		got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(tbl), ProjectionExpression: aws.String("v")})
		for _, it := range got {
			if len(it) != 1 || nAttr(it, "v") == "" {
				t.Fatalf("projected scan item %s", renderItem(it))
			}
		}
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		cases := []*dynamodb.ScanInput{
			{Segment: aws.Int32(4), TotalSegments: aws.Int32(4)},
			{TotalSegments: aws.Int32(2)},
			{Segment: aws.Int32(-1), TotalSegments: aws.Int32(2)},
			{Segment: aws.Int32(0), TotalSegments: aws.Int32(0)},
			{Limit: aws.Int32(0)},
			{IndexName: aws.String("nope")},
			{ExclusiveStartKey: attrs{"pk": avS("p000")}},
		}
		if !isExternal() {
			// API Reference, Scan: "If you provide Segment, you must also
			// provide TotalSegments"; TotalSegments is at most 1000000; a
			// ProjectionExpression requires Select SPECIFIC_ATTRIBUTES.
			// dynalite accepts all three.
			cases = append(cases,
				&dynamodb.ScanInput{Segment: aws.Int32(0)},
				&dynamodb.ScanInput{Segment: aws.Int32(0), TotalSegments: aws.Int32(1000001)},
				&dynamodb.ScanInput{Select: types.SelectCount, ProjectionExpression: aws.String("v")},
			)
		}
		for i, in := range cases {
			in.TableName = aws.String(tbl)
			_, err := c.Scan(tctx(t), in)
			if err == nil {
				t.Errorf("case %d: no error", i)
				continue
			}
			requireAPIError(t, err, "ValidationException", "")
		}
	})
}
