package ddb_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// exprOp runs one operation whose expression is built from a template in
// which {P} stands for a document path and {V} for a value operand.
type exprOp struct {
	name string
	// values reports whether the operation takes ExpressionAttributeValues.
	values bool
	run    func(t *testing.T, c *dynamodb.Client, tbl, path, value string, names map[string]string, vals map[string]types.AttributeValue) error
}

func exprOps() []exprOp {
	cond := func(p, v string) string {
		return "attribute_not_exists(" + p + ") OR " + p + " = " + v
	}
	return []exprOp{
		{"PutItem", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("a"), "sk": avN("1")},
				ConditionExpression: aws.String(cond(p, v)), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
		{"UpdateItem", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("a"), "sk": avN("2")},
				UpdateExpression: aws.String("SET " + p + " = " + v), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
		{"UpdateItem condition", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			vals = maps.Clone(vals)
			if vals == nil {
				vals = map[string]types.AttributeValue{}
			}
			vals[":one"] = avN("1")
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("a"), "sk": avN("3")},
				UpdateExpression: aws.String("SET x = :one"), ConditionExpression: aws.String(cond(p, v)), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
		{"DeleteItem", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			_, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("a"), "sk": avN("4")},
				ConditionExpression: aws.String(cond(p, v)), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
		{"GetItem", false, func(t *testing.T, c *dynamodb.Client, tbl, p, _ string, n map[string]string, _ map[string]types.AttributeValue) error {
			_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("a"), "sk": avN("1")},
				ProjectionExpression: aws.String(p + ", sk"), ExpressionAttributeNames: n})
			return err
		}},
		{"BatchGetItem", false, func(t *testing.T, c *dynamodb.Client, tbl, p, _ string, n map[string]string, _ map[string]types.AttributeValue) error {
			_, err := c.BatchGetItem(tctx(t), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{tbl: {
				Keys: []attrs{{"pk": avS("a"), "sk": avN("1")}}, ProjectionExpression: aws.String(p), ExpressionAttributeNames: n}}})
			return err
		}},
		{"Query filter", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			vals = maps.Clone(vals)
			if vals == nil {
				vals = map[string]types.AttributeValue{}
			}
			vals[":pk"] = avS("a")
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :pk"),
				FilterExpression: aws.String(cond(p, v)), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
		{"Query projection", false, func(t *testing.T, c *dynamodb.Client, tbl, p, _ string, n map[string]string, _ map[string]types.AttributeValue) error {
			_, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :pk"),
				ProjectionExpression: aws.String(p), ExpressionAttributeNames: n, ExpressionAttributeValues: eaValues(":pk", avS("a"))})
			return err
		}},
		{"Scan", true, func(t *testing.T, c *dynamodb.Client, tbl, p, v string, n map[string]string, vals map[string]types.AttributeValue) error {
			_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl),
				FilterExpression: aws.String(cond(p, v)), ExpressionAttributeNames: n, ExpressionAttributeValues: vals})
			return err
		}},
	}
}

func TestSDKExpressionAttributeNamesAndValues(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	putItems(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1"), "status": avN("1")})
	one := eaValues(":v", avN("1"))
	cases := []struct {
		name       string
		path, val  string
		names      map[string]string
		values     map[string]types.AttributeValue
		needsValue bool   // the case is about values: skip operations without them
		msg        string // "" means success
	}{
		{"placeholders", "#p", ":v", eaNames("#p", "status"), one, false, ""},
		{"plain name", "plain", ":v", nil, one, false, ""},
		{"undefined name", "#nope", ":v", nil, one, false, "#nope"},
		{"undefined name among others", "#nope", ":v", eaNames("#p", "x"), one, false, "#nope"},
		{"undefined value", "x", ":nope", nil, nil, true, ":nope"},
		{"undefined value among others", "x", ":nope", nil, eaValues(":v", avN("1")), true, ":nope"},
		{"unused name", "x", ":v", eaNames("#unused", "y"), one, false, "#unused"},
		{"unused value", "x", ":v", nil, eaValues(":v", avN("1"), ":unused", avN("2")), true, ":unused"},
		{"reserved word status", "status", ":v", nil, one, false, "reserved keyword"},
		{"reserved word TTL", "TTL", ":v", nil, one, false, "reserved keyword"},
		{"reserved word name", "name", ":v", nil, one, false, "reserved keyword"},
		{"reserved word any case", "StAtUs", ":v", nil, one, false, "reserved keyword"},
		{"reserved word nested", "m.#p.size", ":v", eaNames("#p", "x"), one, false, "reserved keyword"},
		{"reserved word behind placeholder nested", "m.#p.#q", ":v", eaNames("#p", "size", "#q", "data"), one, false, ""},
		{"name key without #", "x", ":v", map[string]string{"bad": "x"}, one, false, "invalid key"},
		{"value key without :", "x", ":v", nil, map[string]types.AttributeValue{":v": avN("1"), "bad": avN("1")}, true, "invalid key"},
	}
	for _, op := range exprOps() {
		for _, tc := range cases {
			if tc.needsValue && !op.values {
				continue // the operation has no ExpressionAttributeValues
			}
			if op.name == "UpdateItem" && strings.Contains(tc.path, ".") && tc.msg == "" {
				continue // SET of a nested path needs an existing parent
			}
			t.Run(op.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				vals := tc.values
				val := tc.val
				if !op.values {
					vals, val = nil, ""
				}
				err := op.run(t, c, tbl, tc.path, val, tc.names, vals)
				if tc.msg == "" {
					requireNoError(t, err, op.name)
					return
				}
				requireAPIError(t, err, "ValidationException", tc.msg)
			})
		}
	}
}

func TestSDKExpressionParamsWithoutExpressions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	key := attrs{"pk": avS("a")}
	checks := map[string]error{}
	_, checks["GetItem names"] = c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key, ExpressionAttributeNames: eaNames("#a", "a")})
	_, checks["PutItem values"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ExpressionAttributeValues: eaValues(":a", avS("a"))})
	_, checks["PutItem names"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ExpressionAttributeNames: eaNames("#a", "a")})
	_, checks["DeleteItem values"] = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key, ExpressionAttributeValues: eaValues(":a", avS("a"))})
	_, checks["Scan names"] = c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tbl), ExpressionAttributeNames: eaNames("#a", "a")})
	_, checks["PutItem empty values"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ConditionExpression: aws.String("attribute_not_exists(a)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{}})
	_, checks["PutItem empty names"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ConditionExpression: aws.String("attribute_not_exists(a)"),
		ExpressionAttributeNames: map[string]string{}})
	for what, err := range checks {
		t.Run(what, func(t *testing.T) {
			requireAPIError(t, err, "ValidationException", "ExpressionAttribute")
		})
	}
}
