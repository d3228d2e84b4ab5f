package ddb

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestWireReadsMatchDecodedReads checks that GetItem, Query and Scan as the
// wire protocol serves them (stored items transcoded straight to JSON)
// answer byte for byte as the decoded path does, paging included.
func TestWireReadsMatchDecodedReads(t *testing.T) {
	s, err := Open("db", &Options{FS: vfs.NewMem(), TTLInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func(f opFunc, body string) []byte {
		t.Helper()
		out, err := f(s, []byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var buf bytes.Buffer
		if err := encodeOutput(&buf, out); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	call(operations[dynamoAPI]["CreateTable"], `{"TableName":"raw","BillingMode":"PAY_PER_REQUEST",
		"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"},{"AttributeName":"g","AttributeType":"S"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],
		"GlobalSecondaryIndexes":[{"IndexName":"byG","KeySchema":[{"AttributeName":"g","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]}`)
	for i := 0; i < 60; i++ {
		call(operations[dynamoAPI]["PutItem"], fmt.Sprintf(`{"TableName":"raw","Item":{"pk":{"S":"p%d"},"sk":{"N":"%d"},"g":{"S":"g%d"},
			"s":{"S":"héllo <%d> \"q\""},"n":{"N":"-%d.50"},"b":{"B":"AAEC"},"t":{"BOOL":true},"z":{"NULL":true},
			"m":{"M":{"x":{"L":[{"S":"a"},{"M":{}},{"NS":["1","2.5"]}]},"y":{"SS":["a","b"]}}},"bs":{"BS":["AA==","AQ=="]}}}`, i%3, i, i%2, i, i))
	}
	decoded := map[string]opFunc{"GetItem": op((*Store).GetItem), "Query": op((*Store).Query), "Scan": op((*Store).Scan)}
	for _, tc := range []struct{ op, body string }{
		{"GetItem", `{"TableName":"raw","Key":{"pk":{"S":"p1"},"sk":{"N":"4"}}}`},
		{"GetItem", `{"TableName":"raw","Key":{"pk":{"S":"p1"},"sk":{"N":"5"}}}`},
		{"GetItem", `{"TableName":"raw","Key":{"pk":{"S":"p1"},"sk":{"N":"4"}},"ReturnConsumedCapacity":"TOTAL"}`},
		{"GetItem", `{"TableName":"raw","Key":{"pk":{"S":"p1"},"sk":{"N":"4"}},"ProjectionExpression":"s, m.x[2]"}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"p0"}}}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p AND sk > :s","ExpressionAttributeValues":{":p":{"S":"p0"},":s":{"N":"10"}},"Limit":4,"ScanIndexForward":false,"ReturnConsumedCapacity":"INDEXES"}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"p2"}},"Limit":5,"ExclusiveStartKey":{"pk":{"S":"p2"},"sk":{"N":"8"}}}`},
		{"Query", `{"TableName":"raw","IndexName":"byG","KeyConditionExpression":"g = :g","ExpressionAttributeValues":{":g":{"S":"g1"}},"Limit":3}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p","FilterExpression":"n < :s","ExpressionAttributeValues":{":p":{"S":"p0"},":s":{"N":"-30"}}}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"p0"}},"Select":"COUNT"}`},
		{"Query", `{"TableName":"raw","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"nobody"}}}`},
		{"Scan", `{"TableName":"raw","Limit":7}`},
		{"Scan", `{"TableName":"raw","Segment":1,"TotalSegments":3}`},
		{"Scan", `{"TableName":"raw","IndexName":"byG"}`},
	} {
		want := call(decoded[tc.op], tc.body)
		got := call(operations[dynamoAPI][tc.op], tc.body)
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s:\n wire    %s\n decoded %s", tc.op, tc.body, got, want)
		}
	}
	// The wire path is the one taken for plain reads.
	q, _ := operations[dynamoAPI]["Query"](s, []byte(`{"TableName":"raw","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"p0"}}}`))
	g, _ := operations[dynamoAPI]["GetItem"](s, []byte(`{"TableName":"raw","Key":{"pk":{"S":"p1"},"sk":{"N":"4"}}}`))
	if q.(*QueryOutput).itemsJSON == nil || g.(*GetItemOutput).itemJSON == nil {
		t.Error("wire Query or GetItem decoded the items")
	}
}
