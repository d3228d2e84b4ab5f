package ddb_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestSDKLegacyExpressionConflicts checks DynamoDB's table of which legacy
// parameters may be combined with which expression parameters: every pair
// conflicts except KeyConditions, which conflicts only with
// KeyConditionExpression.
func TestSDKLegacyExpressionConflicts(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	putItems(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1"), "x": avS("keep"), "y": avS("y")})
	name := aws.String(tbl)
	key := attrs{"pk": avS("a"), "sk": avN("1")}
	kc := map[string]types.Condition{"pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{avS("a")}}}
	filter := map[string]types.Condition{"x": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{avS("keep")}}}
	expected := map[string]types.ExpectedAttributeValue{"x": {Value: avS("keep")}}
	const mix = "Can not use both expression and non-expression parameters in the same request: "
	cases := []struct {
		name string
		run  func() error
		msg  string // "" when the request is valid
	}{
		{"Query KeyConditions + FilterExpression", func() error {
			out, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, FilterExpression: aws.String("x = :v"), ExpressionAttributeValues: eaValues(":v", avS("keep"))})
			if err == nil && out.Count != 1 {
				t.Errorf("Count %d, want 1", out.Count)
			}
			return err
		}, ""},
		{"Query KeyConditions + ProjectionExpression", func() error {
			out, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, ProjectionExpression: aws.String("y")})
			if err == nil && (len(out.Items) != 1 || len(out.Items[0]) != 1) {
				t.Errorf("Items %v, want one item with y only", out.Items)
			}
			return err
		}, ""},
		{"Query KeyConditions + KeyConditionExpression", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, KeyConditionExpression: aws.String("pk = :v"), ExpressionAttributeValues: eaValues(":v", avS("a"))})
			return err
		}, mix + "Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}"},
		{"Query QueryFilter + FilterExpression", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, QueryFilter: filter, FilterExpression: aws.String("x = :v"), ExpressionAttributeValues: eaValues(":v", avS("keep"))})
			return err
		}, mix + "Non-expression parameters: {QueryFilter} Expression parameters: {FilterExpression}"},
		{"Query AttributesToGet + ProjectionExpression", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, AttributesToGet: []string{"x"}, ProjectionExpression: aws.String("y")})
			return err
		}, mix + "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"},
		{"Query AttributesToGet + FilterExpression", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditionExpression: aws.String("pk = :v"), AttributesToGet: []string{"x"}, FilterExpression: aws.String("x = :v"), ExpressionAttributeValues: eaValues(":v", avS("a"))})
			return err
		}, mix + "Non-expression parameters: {AttributesToGet} Expression parameters: {KeyConditionExpression, FilterExpression}"},
		{"Query QueryFilter + ProjectionExpression", func() error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: name, KeyConditions: kc, QueryFilter: filter, ProjectionExpression: aws.String("y")})
			return err
		}, mix + "Non-expression parameters: {QueryFilter} Expression parameters: {ProjectionExpression}"},
		{"Scan ScanFilter + FilterExpression", func() error {
			_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: name, ScanFilter: filter, FilterExpression: aws.String("x = :v"), ExpressionAttributeValues: eaValues(":v", avS("keep"))})
			return err
		}, mix + "Non-expression parameters: {ScanFilter} Expression parameters: {FilterExpression}"},
		{"Scan AttributesToGet + ProjectionExpression", func() error {
			_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: name, AttributesToGet: []string{"x"}, ProjectionExpression: aws.String("y")})
			return err
		}, mix + "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"},
		{"GetItem AttributesToGet + ProjectionExpression", func() error {
			_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: name, Key: key, AttributesToGet: []string{"x"}, ProjectionExpression: aws.String("y")})
			return err
		}, mix + "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"},
		{"PutItem Expected + ConditionExpression", func() error {
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: name, Item: key, Expected: expected, ConditionExpression: aws.String("attribute_exists(x)")})
			return err
		}, mix + "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"},
		{"DeleteItem Expected + ConditionExpression", func() error {
			_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: name, Key: key, Expected: expected, ConditionExpression: aws.String("attribute_exists(x)")})
			return err
		}, mix + "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"},
		{"UpdateItem AttributeUpdates + UpdateExpression", func() error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: key, AttributeUpdates: map[string]types.AttributeValueUpdate{"z": {Value: avS("z")}}, UpdateExpression: aws.String("SET z = :v"), ExpressionAttributeValues: eaValues(":v", avS("z"))})
			return err
		}, mix + "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}"},
		{"UpdateItem Expected + UpdateExpression", func() error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: key, Expected: expected, UpdateExpression: aws.String("SET z = :v"), ExpressionAttributeValues: eaValues(":v", avS("z"))})
			return err
		}, mix + "Non-expression parameters: {Expected} Expression parameters: {UpdateExpression}"},
		{"UpdateItem AttributeUpdates + ConditionExpression", func() error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: key, AttributeUpdates: map[string]types.AttributeValueUpdate{"z": {Value: avS("z")}}, ConditionExpression: aws.String("attribute_exists(x)")})
			return err
		}, mix + "Non-expression parameters: {AttributeUpdates} Expression parameters: {ConditionExpression}"},
		{"UpdateItem AttributeUpdates + Expected", func() error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: name, Key: key, AttributeUpdates: map[string]types.AttributeValueUpdate{"z": {Value: avS("z")}}, Expected: expected})
			return err
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if tc.msg == "" {
				requireNoError(t, err, tc.name)
				return
			}
			requireAPIErrorExact(t, err, "ValidationException", tc.msg)
		})
	}
}

// requireAPIErrorExact fails unless err is the API error code with exactly
// the message msg.
func requireAPIErrorExact(t *testing.T, err error, code, msg string) {
	t.Helper()
	apiErr := requireAPIError(t, err, code, msg)
	if got := apiErr.ErrorMessage(); got != msg {
		t.Fatalf("message %q, want exactly %q", got, msg)
	}
}

// TestSDKExpectedLegacyConditions checks Expected's NOT_CONTAINS on a
// missing attribute and ConditionalOperator with an empty Expected.
func TestSDKExpectedLegacyConditions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, tbl, attrs{"pk": avS("a"), "tags": avSS("red", "blue"), "s": avS("hello")})
	name := aws.String(tbl)
	key := attrs{"pk": avS("a")}
	notContains := func(attr string, v types.AttributeValue) map[string]types.ExpectedAttributeValue {
		return map[string]types.ExpectedAttributeValue{attr: {ComparisonOperator: types.ComparisonOperatorNotContains, AttributeValueList: []types.AttributeValue{v}}}
	}
	cases := []struct {
		name string
		in   dynamodb.UpdateItemInput
		code string // "" when the update succeeds
		msg  string
	}{
		{"NOT_CONTAINS on a missing attribute fails", dynamodb.UpdateItemInput{Expected: notContains("missing", avS("x"))}, "ConditionalCheckFailedException", "The conditional request failed"},
		{"NOT_CONTAINS on a missing item fails", dynamodb.UpdateItemInput{Key: attrs{"pk": avS("nobody")}, Expected: notContains("tags", avS("x"))}, "ConditionalCheckFailedException", "The conditional request failed"},
		{"NOT_CONTAINS of a member fails", dynamodb.UpdateItemInput{Expected: notContains("tags", avS("red"))}, "ConditionalCheckFailedException", "The conditional request failed"},
		{"NOT_CONTAINS of a non-member passes", dynamodb.UpdateItemInput{Expected: notContains("tags", avS("green"))}, "", ""},
		{"NOT_CONTAINS of a substring passes", dynamodb.UpdateItemInput{Expected: notContains("s", avS("xyz"))}, "", ""},
		{"ConditionalOperator with an empty Expected", dynamodb.UpdateItemInput{Expected: map[string]types.ExpectedAttributeValue{}, ConditionalOperator: types.ConditionalOperatorAnd}, "ValidationException",
			"ConditionalOperator can only be used when Expected or KeyConditions or QueryFilter or ScanFilter is present"},
		{"ConditionalOperator without Expected", dynamodb.UpdateItemInput{ConditionalOperator: types.ConditionalOperatorOr}, "ValidationException",
			"ConditionalOperator can only be used when Expected or KeyConditions or QueryFilter or ScanFilter is present"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.TableName = name
			if in.Key == nil {
				in.Key = key
			}
			in.AttributeUpdates = map[string]types.AttributeValueUpdate{"n": {Value: avN("1")}}
			_, err := c.UpdateItem(tctx(t), &in)
			if tc.code == "" {
				requireNoError(t, err, "UpdateItem")
				return
			}
			requireAPIErrorExact(t, err, tc.code, tc.msg)
		})
	}
	// The same empty Expected with ConditionalOperator fails PutItem and
	// DeleteItem too.
	_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: name, Item: key, Expected: map[string]types.ExpectedAttributeValue{}, ConditionalOperator: types.ConditionalOperatorOr})
	requireAPIError(t, err, "ValidationException", "ConditionalOperator can only be used")
	_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: name, Key: key, Expected: map[string]types.ExpectedAttributeValue{}, ConditionalOperator: types.ConditionalOperatorAnd})
	requireAPIError(t, err, "ValidationException", "ConditionalOperator can only be used")
}

// TestSDKScanSegmentStartKey checks that a parallel Scan rejects an
// ExclusiveStartKey of another segment, on the table and on an index.
func TestSDKScanSegmentStartKey(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "g:S"}}})
	var items []attrs
	for i := 0; i < 40; i++ {
		items = append(items, attrs{"pk": avS(fmt.Sprintf("k%d", i)), "g": avS(fmt.Sprintf("g%d", i))})
	}
	putItems(t, c, tbl, items...)
	for _, index := range []*string{nil, aws.String("gsi")} {
		// A key from each of the two segments.
		keys := make([]attrs, 2)
		for seg := int32(0); seg < 2; seg++ {
			out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: index, Segment: aws.Int32(seg), TotalSegments: aws.Int32(2), Limit: aws.Int32(1)})
			requireNoError(t, err, "Scan")
			if out.LastEvaluatedKey == nil {
				t.Fatalf("segment %d of 2 has at most one item", seg)
			}
			keys[seg] = out.LastEvaluatedKey
		}
		cases := []struct {
			name     string
			seg, tot int32
			esk      attrs
			msg      string
		}{
			{"own segment 0", 0, 2, keys[0], ""},
			{"own segment 1", 1, 2, keys[1], ""},
			{"segment 1's key in segment 0", 0, 2, keys[1], "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: 2 Segment: 0"},
			{"segment 0's key in segment 1", 1, 2, keys[0], "The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: 2 Segment: 1"},
			{"one segment takes any key", 0, 1, keys[1], ""},
		}
		for _, tc := range cases {
			t.Run(aws.ToString(index)+" "+tc.name, func(t *testing.T) {
				_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: index, Segment: aws.Int32(tc.seg), TotalSegments: aws.Int32(tc.tot), ExclusiveStartKey: tc.esk})
				if tc.msg == "" {
					requireNoError(t, err, "Scan")
					return
				}
				requireAPIErrorExact(t, err, "ValidationException", tc.msg)
			})
		}
	}
}

// TestSDKNumberLimits checks the messages for malformed and out-of-range
// numbers, and that zero with any exponent is zero.
func TestSDKNumberLimits(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	const (
		overflow  = "Number overflow. Attempting to store a number with magnitude larger than supported range"
		underflow = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
	)
	cases := []struct {
		n, stored, msg string
	}{
		{"abc", "", "The parameter cannot be converted to a numeric value: abc"},
		{"1.2.3", "", "The parameter cannot be converted to a numeric value: 1.2.3"},
		{"1e", "", "The parameter cannot be converted to a numeric value: 1e"},
		{"", "", "The parameter cannot be converted to a numeric value"},
		{"1E+126", "", overflow},
		{"-9.99E+200", "", overflow},
		{"1E+99999999999", "", overflow},
		{"1E-131", "", underflow},
		{"-1E-99999999999", "", underflow},
		{"0E+1000", "0", ""},
		{"-0.000E-1000", "0", ""},
		{"0E+99999999999", "0", ""},
		{"9.9999999999999999999999999999999999999E+125", "999999999999999999999999999999999999990000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", ""},
		{"1E-130", "0." + strings.Repeat("0", 129) + "1", ""},
	}
	for i, tc := range cases {
		t.Run(tc.n, func(t *testing.T) {
			key := attrs{"pk": avS(fmt.Sprintf("n%d", i))}
			item := attrs{"pk": key["pk"], "n": avN(tc.n)}
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item})
			if tc.msg != "" {
				requireAPIErrorExact(t, err, "ValidationException", tc.msg)
				return
			}
			requireNoError(t, err, "PutItem")
			requireItem(t, getItem(t, c, tbl, key), attrs{"pk": key["pk"], "n": avN(tc.stored)})
		})
	}
}
