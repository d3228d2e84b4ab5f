package ddb_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSDKTypesRoundTrip(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	item := attrs{
		"pk":       avS("all"),
		"s":        avS("héllo, 世界 \u0000 \"quoted\" <tag> &"),
		"empty_s":  avS(""),
		"n":        avN("-12.5"),
		"b":        avB([]byte{0, 1, 2, 0xfe, 0xff}),
		"empty_b":  avB([]byte{}),
		"bool_t":   avBool(true),
		"bool_f":   avBool(false),
		"null":     avNull(),
		"m":        avM(attrs{"x": avS("y"), "nested": avM(attrs{"l": avL(avN("1"), avM(attrs{}))})}),
		"empty_m":  avM(attrs{}),
		"l":        avL(avS("a"), avN("1"), avB([]byte("b")), avBool(false), avNull(), avL(), avSS("x")),
		"empty_l":  avL(),
		"ss":       avSS("a", "b", "c", ""),
		"ns":       avNS("1", "-2.5", "1E+3", "0"),
		"bs":       avBS([]byte("a"), []byte{0}, []byte{}),
		"Unicode名": avS("name"),
	}
	putItems(t, c, tbl, item)
	got := getItem(t, c, tbl, attrs{"pk": avS("all")})
	// NS members are compared by value: their text may be canonicalised.
	gotNS, _ := got["ns"].(*types.AttributeValueMemberNS)
	if gotNS == nil || len(gotNS.Value) != 4 {
		t.Fatalf("NS read back as %s", renderAV(got["ns"]))
	}
	vals := map[string]bool{}
	for _, n := range gotNS.Value {
		vals[rat(t, n).RatString()] = true
	}
	for _, n := range []string{"1", "-5/2", "1000", "0"} {
		if !vals[n] {
			t.Errorf("NS lost %s: %v", n, gotNS.Value)
		}
	}
	want := maps.Clone(item)
	delete(want, "ns")
	delete(got, "ns")
	requireItem(t, got, want)

	// The attributevalue package maps Go values both ways.
	type rec struct {
		PK    string            `dynamodbav:"pk"`
		Name  string            `dynamodbav:"name"`
		Count int               `dynamodbav:"count"`
		Ratio float64           `dynamodbav:"ratio"`
		Tags  []string          `dynamodbav:"tags,stringset"`
		Meta  map[string]string `dynamodbav:"meta"`
		Raw   []byte            `dynamodbav:"raw"`
		OK    bool              `dynamodbav:"ok"`
		Ptr   *string           `dynamodbav:"ptr"`
	}
	in := rec{PK: "rec", Name: "n", Count: 42, Ratio: 0.25, Tags: []string{"x", "y"}, Meta: map[string]string{"k": "v"}, Raw: []byte("raw"), OK: true}
	av, err := attributevalue.MarshalMap(in)
	requireNoError(t, err, "MarshalMap")
	putItems(t, c, tbl, av)
	var out rec
	requireNoError(t, attributevalue.UnmarshalMap(getItem(t, c, tbl, attrs{"pk": avS("rec")}), &out), "UnmarshalMap")
	if out.PK != in.PK || out.Name != in.Name || out.Count != in.Count || out.Ratio != in.Ratio || strings.Join(out.Tags, ",") != "x,y" && strings.Join(out.Tags, ",") != "y,x" ||
		out.Meta["k"] != "v" || string(out.Raw) != "raw" || !out.OK || out.Ptr != nil {
		t.Errorf("attributevalue round trip: got %+v, want %+v", out, in)
	}
}

func TestSDKNumbers(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	valid := []struct{ in, want string }{
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
		{"-12345678901234567890123456789012345678", "-12345678901234567890123456789012345678"},
		{"0.12345678901234567890123456789012345678", "0.12345678901234567890123456789012345678"},
		{"1.50", "1.5"},
		{"007", "7"},
		{"0.10", "0.1"},
		{"100", "100"},
		{"-0.0", ""},
		{"1000000000000000000000000000000000000000000", ""},
		{"9.9999999999999999999999999999999999999E+125", ""},
		{"1E-130", ""},
		{"-1E-130", ""},
		{"1e2", ""},
		{"12345678901234567890123456789012345678000", ""},
	}
	for _, tc := range valid {
		t.Run("valid "+tc.in, func(t *testing.T) {
			t.Parallel()
			pk := avS("n" + tc.in)
			putItems(t, c, tbl, attrs{"pk": pk, "n": avN(tc.in), "ns": avNS(tc.in, "42.42")})
			got := getItem(t, c, tbl, attrs{"pk": pk})
			n := nAttr(got, "n")
			if tc.want != "" && n != tc.want {
				t.Errorf("N %q read back as %q, want %q", tc.in, n, tc.want)
			}
			if rat(t, n).Cmp(rat(t, tc.in)) != 0 {
				t.Errorf("N %q read back as %q: different value", tc.in, n)
			}
			// Arithmetic keeps the precision.
			out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": pk},
				UpdateExpression: aws.String("SET m = n + :z"), ExpressionAttributeValues: eaValues(":z", avN("0")), ReturnValues: types.ReturnValueUpdatedNew})
			requireNoError(t, err, "UpdateItem")
			if m := nAttr(out.Attributes, "m"); rat(t, m).Cmp(rat(t, tc.in)) != 0 {
				t.Errorf("n + 0 = %q, want %q", m, tc.in)
			}
		})
	}
	invalid := []struct{ in, msg string }{
		{"123456789012345678901234567890123456789", "38"},
		{"1.23456789012345678901234567890123456789", "38"},
		{"1E+126", ""},
		{"-1E+126", ""},
		{"1E-131", ""},
		{"abc", ""},
		{"", ""},
		{"1.2.3", ""},
		{"NaN", ""},
		{"Infinity", ""},
		{"0x10", ""},
		{"1e", ""},
	}
	for _, tc := range invalid {
		t.Run("invalid "+tc.in, func(t *testing.T) {
			t.Parallel()
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("bad"), "n": avN(tc.in)}})
			requireAPIError(t, err, "ValidationException", tc.msg)
			_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("bad"), "ns": avNS("1", tc.in)}})
			requireAPIError(t, err, "ValidationException", tc.msg)
		})
	}
	t.Run("arithmetic overflow", func(t *testing.T) {
		t.Parallel()
		skipIfExternal(t, "dynalite stores the result of n + n beyond 9.99E+125")
		putItems(t, c, tbl, attrs{"pk": avS("big"), "n": avN("9.9999999999999999999999999999999999999E+125")})
		_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("big")},
			UpdateExpression: aws.String("SET n = n + n")})
		requireAPIError(t, err, "ValidationException", "")
	})
}

func TestSDKSetValidation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	cases := map[string]types.AttributeValue{
		"empty SS":                 avSS(),
		"empty NS":                 avNS(),
		"empty BS":                 avBS(),
		"duplicate SS":             avSS("a", "b", "a"),
		"duplicate NS":             avNS("1", "2", "1"),
		"duplicate NS by value":    avNS("1", "1.0"),
		"duplicate BS":             avBS([]byte("x"), []byte("x")),
		"NULL false":               &types.AttributeValueMemberNULL{Value: false},
		"nested empty SS in map":   avM(attrs{"s": avSS()}),
		"nested duplicate in list": avL(avNS("1", "01")),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("a"), "v": v}})
			requireAPIError(t, err, "ValidationException", "")
			// The same values are rejected in expression values.
			_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("a")},
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: eaValues(":v", v)})
			requireAPIError(t, err, "ValidationException", "")
		})
	}
	if it := getItem(t, c, tbl, attrs{"pk": avS("a")}); it != nil {
		t.Errorf("an invalid write stored %s", renderItem(it))
	}
}

func TestSDKItemAndKeyLimits(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S"})
	hb := createTable(t, c, tableSpec{Hash: "pk:B"})
	key := func(pk, sk string) attrs { return attrs{"pk": avS(pk), "sk": avS(sk)} }
	withAttr := func(k attrs, name string, v types.AttributeValue) attrs {
		out := attrs{name: v}
		for n, x := range k {
			out[n] = x
		}
		return out
	}
	t.Run("item size", func(t *testing.T) {
		t.Parallel()
		// Size counts attribute names and values: pk(2)+1, sk(2)+1, d(1).
		big := strings.Repeat("x", 400*1024-8)
		putItems(t, c, tbl, withAttr(key("a", "b"), "d", avS(big)))
		if it := getItem(t, c, tbl, key("a", "b")); len(sAttr(it, "d")) != len(big) {
			t.Errorf("400 KB item not stored whole")
		}
		_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: withAttr(key("a", "c"), "d", avS(big+"xx"))})
		requireAPIError(t, err, "ValidationException", "size")
		_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: withAttr(key("a", "c"), "d", avS(strings.Repeat("y", 500*1024)))})
		requireAPIError(t, err, "ValidationException", "size")
		// An update that grows the item past the limit fails and changes nothing.
		_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("a", "b"),
			UpdateExpression: aws.String("SET e = :e"), ExpressionAttributeValues: eaValues(":e", avS("more than two bytes"))})
		requireAPIError(t, err, "ValidationException", "size")
		if it := getItem(t, c, tbl, key("a", "b")); it["e"] != nil {
			t.Errorf("oversized update was applied")
		}
	})
	t.Run("key sizes", func(t *testing.T) {
		t.Parallel()
		putItems(t, c, tbl, key(strings.Repeat("h", 2048), strings.Repeat("r", 1024)))
		requireItem(t, getItem(t, c, tbl, key(strings.Repeat("h", 2048), strings.Repeat("r", 1024))), key(strings.Repeat("h", 2048), strings.Repeat("r", 1024)))
		_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key(strings.Repeat("h", 2049), "r")})
		requireAPIError(t, err, "ValidationException", "")
		_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("h", strings.Repeat("r", 1025))})
		requireAPIError(t, err, "ValidationException", "")
		_, err = c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key(strings.Repeat("h", 2049), "r")})
		requireAPIError(t, err, "ValidationException", "")
		// Multi-byte characters count in UTF-8 bytes: 683 × 3 bytes > 2048.
		if !isExternal() { // dynalite accepts it
			_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key(strings.Repeat("€", 683), "r")})
			requireAPIError(t, err, "ValidationException", "")
		}
		putItems(t, c, hb, attrs{"pk": avB(make([]byte, 2048))})
		_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(hb), Item: attrs{"pk": avB(make([]byte, 2049))}})
		requireAPIError(t, err, "ValidationException", "")
	})
	t.Run("key validation", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			do   func() error
		}{
			{"PutItem empty hash key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("", "r")})
				return err
			}},
			{"PutItem empty range key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key("h", "")})
				return err
			}},
			{"PutItem empty binary key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(hb), Item: attrs{"pk": avB([]byte{})}})
				return err
			}},
			{"GetItem empty key", func() error {
				_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key("", "r")})
				return err
			}},
			{"PutItem wrong key type", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avN("1"), "sk": avS("r")}})
				return err
			}},
			{"PutItem set as key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avSS("h"), "sk": avS("r")}})
				return err
			}},
			{"GetItem wrong key type", func() error {
				_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("h"), "sk": avN("1")}})
				return err
			}},
			{"PutItem missing range key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("h"), "v": avS("r")}})
				return err
			}},
			{"PutItem missing hash key", func() error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"sk": avS("h")}})
				return err
			}},
			{"GetItem missing range key", func() error {
				_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("h")}})
				return err
			}},
			{"GetItem extra attribute", func() error {
				_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: withAttr(key("h", "r"), "v", avS("x"))})
				return err
			}},
			{"DeleteItem extra attribute", func() error {
				_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: withAttr(key("h", "r"), "v", avS("x"))})
				return err
			}},
			{"UpdateItem extra attribute", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: withAttr(key("h", "r"), "v", avS("x")), UpdateExpression: aws.String("REMOVE w")})
				return err
			}},
			{"UpdateItem missing key", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"sk": avS("r")}, UpdateExpression: aws.String("REMOVE w")})
				return err
			}},
			{"UpdateItem SET hash key", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("h", "r"), UpdateExpression: aws.String("SET pk = :v"), ExpressionAttributeValues: eaValues(":v", avS("x"))})
				return err
			}},
			{"UpdateItem SET range key to same value", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("h", "r"), UpdateExpression: aws.String("SET sk = :v"), ExpressionAttributeValues: eaValues(":v", avS("r"))})
				return err
			}},
			{"UpdateItem REMOVE range key", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("h", "r"), UpdateExpression: aws.String("REMOVE sk")})
				return err
			}},
			{"UpdateItem empty key", func() error {
				_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("h", ""), UpdateExpression: aws.String("REMOVE w")})
				return err
			}},
		}
		for _, tc := range cases {
			requireAPIErrorNamed(t, tc.name, tc.do(), "ValidationException")
		}
		if it := getItem(t, c, tbl, key("h", "r")); it != nil {
			t.Errorf("a rejected write stored %s", renderItem(it))
		}
	})
	t.Run("unknown table", func(t *testing.T) {
		t.Parallel()
		name := aws.String(uniqueName(t) + "-missing")
		k := key("h", "r")
		errs := map[string]error{}
		_, errs["GetItem"] = c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: name, Key: k})
		_, errs["PutItem"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: name, Item: k})
		_, errs["UpdateItem"] = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: k, UpdateExpression: aws.String("REMOVE w")})
		_, errs["DeleteItem"] = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: name, Key: k})
		_, errs["Query"] = c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: eaValues(":p", avS("h"))})
		_, errs["Scan"] = c.Scan(tctx(t), &dynamodb.ScanInput{TableName: name})
		_, errs["DescribeTable"] = c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: name})
		_, errs["DeleteTable"] = c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: name})
		_, errs["UpdateTable"] = c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: name, BillingMode: types.BillingModePayPerRequest})
		for op, err := range errs {
			requireAPIErrorNamed(t, op, err, "ResourceNotFoundException")
		}
	})
}

// requireAPIErrorNamed is requireAPIError for a list of named checks: it
// reports a mismatch with t.Errorf and goes on.
func requireAPIErrorNamed(t *testing.T, name string, err error, code string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Helper()
		requireAPIError(t, err, code, "")
	})
}
