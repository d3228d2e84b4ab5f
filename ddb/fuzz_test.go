package ddb_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quarrydb/quarry/ddb"
)

var fuzzOps = []string{"CreateTable", "DescribeTable", "ListTables", "DeleteTable", "UpdateTable", "PutItem", "GetItem",
	"UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
	"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"}

// FuzzRequest sends arbitrary bodies to every operation of a store that has
// one table with a GSI and an LSI: no body may crash the server, answer 500,
// or produce a response that is not a JSON object.
func FuzzRequest(f *testing.F) {
	seeds := []string{
		`{}`, `null`, `[]`, `{"TableName":"fuzz-table"}`, `{"TableName":5}`, `{`, `{"TableName":"fuzz-table","Item":{"pk":{"S":"a"},"sk":{"N":"1"}}}`,
		`{"TableName":"fuzz-table","Item":{"pk":{"S":"a"},"sk":{"N":"1e400"}}}`,
		`{"TableName":"fuzz-table","Key":{"pk":{"S":"a"},"sk":{"N":"1"}},"UpdateExpression":"SET a.b[3] = :v","ExpressionAttributeValues":{":v":{"L":[]}}}`,
		`{"TableName":"fuzz-table","KeyConditionExpression":"pk = :p AND begins_with(sk, :s)","ExpressionAttributeValues":{":p":{"S":"a"},":s":{"N":"1"}}}`,
		`{"TableName":"fuzz-table","IndexName":"gsi","KeyConditionExpression":"g = :g","ExpressionAttributeValues":{":g":{"S":"x"}},"Limit":1,"ExclusiveStartKey":{"pk":{"S":"a"}}}`,
		`{"TableName":"fuzz-table","Segment":1,"TotalSegments":0}`,
		`{"RequestItems":{"fuzz-table":{"Keys":[{"pk":{"S":"a"},"sk":{"N":"1"}},{"pk":{"S":"a"},"sk":{"N":"1.0"}}]}}}`,
		`{"RequestItems":{"fuzz-table":[{"PutRequest":{"Item":{"pk":{"B":"AA=="}}}}]}}`,
		`{"TableName":"fuzz-table","GlobalSecondaryIndexUpdates":[{"Create":{"IndexName":"g2","KeySchema":[{"AttributeName":"h","KeyType":"HASH"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}}],"AttributeDefinitions":[{"AttributeName":"h","AttributeType":"S"}]}`,
		`{"TableName":"fuzz-table","Item":{"pk":{"S":"a"},"sk":{"N":"2"},"m":{"M":{"x":{"SS":["a","a"]}}}}}`,
		`{"TableName":"fuzz-table","Item":{"pk":{"S":""},"sk":{"N":"2"}}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	for _, s := range []struct {
		op   int
		body string
	}{
		{13, `{"Statement":"SELECT * FROM \"fuzz-table\" WHERE pk = ? AND sk > 1 AND sk < 3","Parameters":[{"S":"a"}],"Limit":1}`},
		{13, `{"Statement":"SELECT a.b[1] FROM \"fuzz-table\".\"gsi\" WHERE g = 'x'","NextToken":"e30="}`},
		{13, `{"Statement":"UPDATE \"fuzz-table\" SET a = a + 1 REMOVE b WHERE pk = 'a' AND sk = 1"}`},
		{14, `{"Statements":[{"Statement":"INSERT INTO \"fuzz-table\" VALUE {'pk': 'a', 'sk': ?}","Parameters":[{"N":"1"}]}]}`},
		{15, `{"TransactStatements":[{"Statement":"DELETE FROM \"fuzz-table\" WHERE pk = 'a' AND sk = 1"}]}`},
	} {
		f.Add(uint8(s.op), []byte(s.body))
	}
	store, err := ddb.Open(f.TempDir(), nil)
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	h := store.Handler()
	post(f, h, "CreateTable", `{"TableName":"fuzz-table","BillingMode":"PAY_PER_REQUEST",
		"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"},{"AttributeName":"g","AttributeType":"S"},{"AttributeName":"l","AttributeType":"B"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],
		"GlobalSecondaryIndexes":[{"IndexName":"gsi","KeySchema":[{"AttributeName":"g","KeyType":"HASH"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["a"]}}],
		"LocalSecondaryIndexes":[{"IndexName":"lsi","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"l","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}]}`)
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		name := fuzzOps[int(op)%len(fuzzOps)]
		if name == "DeleteTable" {
			name = "DescribeTable" // keep the table for the next inputs
		}
		code, resp := post(t, h, name, string(body))
		if code >= 500 {
			t.Fatalf("%s %q: status %d: %s", name, body, code, resp)
		}
		var m map[string]any
		if err := json.Unmarshal(resp, &m); err != nil {
			t.Fatalf("%s %q: response is not a JSON object: %s", name, body, resp)
		}
		if code != 200 {
			if _, ok := m["__type"]; !ok {
				t.Fatalf("%s: error without __type: %s", name, resp)
			}
		}
	})
}

func post(tb testing.TB, h http.Handler, op, body string) (int, []byte) {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(body)))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}
