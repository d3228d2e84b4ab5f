package ddb

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeFastCases are request bodies of the operations with a fast
// decoder, simple and not: each must decode through decodeRequest (with
// the fast path) exactly as through encoding/json alone, as the request of
// every such operation.
var decodeFastCases = []string{
	`{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"N":"1"}}}`,
	`{"ConsistentRead":true,"Key":{"pk":{"S":"a"}},"TableName":"t","ReturnConsumedCapacity":"TOTAL"}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ConsistentRead":false,"ProjectionExpression":"a, b"}`,
	` { "TableName" : "t\u00e9\n" , "Key" : { "pk" : { "S" : "\ud83d\ude00" } } } `,
	`{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1.50"},"ss":{"SS":["x","y"]},"m":{"M":{"l":{"L":[{"BOOL":true},{"NULL":true},{"B":"AAE="}]}}}}}`,
	`{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)","ReturnValues":"ALL_OLD","ReturnValuesOnConditionCheckFailure":"ALL_OLD","ReturnItemCollectionMetrics":"SIZE"}`,
	// Duplicates: the last wins.
	`{"TableName":"a","TableName":"b","Key":{"pk":{"S":"a"},"pk":{"S":"b"}},"Key":{"k":{"N":"2"}}}`,
	// Not simple: encoding/json decides.
	`{"tablename":"t","Key":{"pk":{"S":"a"}}}`,
	`{"TableName":"t","tableName":"u","Key":{"pk":{"S":"a"}}}`,
	`{"TableName":null,"Key":null}`,
	`{"TableName":5,"Key":{"pk":{"S":"a"}}}`,
	`{"TableName":"t","Key":[]}`,
	`{"TableName":"t","Key":{"pk":{"S":"a","N":"1"}}}`,
	`{"TableName":"t","Key":{"pk":{"N":"x"}}}`,
	`{"TableName":"t","Key":{"pk":{}}}`,
	`{"TableName":"t","Key":{"pk":{"S":5}}}`,
	`{"TableName":"t","Key":{"pk":{"SS":[]}}}`,
	`{"TableName":"t","Item":{"pk":{"B":"!!"}}}`,
	`{"TableName":"t","ConsistentRead":"yes","Key":{"pk":{"S":"a"}}}`,
	`{"TableName":"t","ReturnConsumedCapacity":null,"Key":{"pk":{"S":"a"}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#a":"a"},"ProjectionExpression":"#a"}`,
	`{"TableName":"t","Item":{"pk":{"S":"a"}},"Expected":{"pk":{"Exists":false}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"Unknown":[1,{"x":null}]}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}}`,
	`{"TableName":"t"} {}`,
	`[]`, `null`, `"x"`, `{}`, ``, ` `,
	`{"TableName":"t","Key":{"pk":{"S":"a\x"}}}`,
	`{"TableName":"` + strings.Repeat("x", 300) + `","Key":{"pk":{"S":"a"}}}`,

	// UpdateItem and DeleteItem.
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #n = :v ADD c :one","ConditionExpression":"attribute_exists(pk) AND #n <> :v","ExpressionAttributeNames":{"#n":"n"},"ExpressionAttributeValues":{":v":{"S":"x"},":one":{"N":"1"}},"ReturnValues":"UPDATED_NEW","ConditionalOperator":"AND"}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{},"ExpressionAttributeValues":{}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#a":"a","#a":"b"},"ExpressionAttributeValues":{":v":{"S":"x"},":v":{"N":"2"}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#a":"a"},"ExpressionAttributeNames":{"#b":"b"}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":a":{"S":"a"}},"ExpressionAttributeValues":{":b":{"S":"b"}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":null,"ExpressionAttributeValues":null}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#a":null}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#a":5}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":["#a"]}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":null}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":"x"}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":{"S":"x","N":"1"}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":{"N":"1e999"}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":{"B":5}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":null}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":["SET a = :v"]}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ReturnValues":null,"ConditionalOperator":5}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"AttributeUpdates":{"a":{"Action":"PUT","Value":{"S":"v"}}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"Expected":{"a":{"Value":{"S":"v"}}}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"ExpressionAttributeNames":{"#\u0061":"\u0062\ud800"}}`,
	`{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #n = :v","ExpressionAttributeNames":{"#n":"` + strings.Repeat("n", 65536) + `"},"ExpressionAttributeValues":{":v":{"S":"x"}}}`,
	`{"TableName":"t","Item":{"pk":{"S":"a"},"` + strings.Repeat("n", 65536) + `":{"S":"x"}}}`,

	// TransactWriteItems: Checks' record (Put and Update with
	// conditions, expression parameters and a token), and hostile shapes.
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1"}},"ConditionExpression":"attribute_not_exists(pk)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}},{"Update":{"TableName":"u","Key":{"pk":{"S":"b"}},"UpdateExpression":"SET #r = :r, #t = :t","ConditionExpression":"#t < :t","ExpressionAttributeNames":{"#r":"lastResult","#t":"lastExecutedAt"},"ExpressionAttributeValues":{":r":{"M":{"ok":{"BOOL":true}}},":t":{"N":"1700000000"}}}}],"ClientRequestToken":"tok-1","ReturnConsumedCapacity":"TOTAL","ReturnItemCollectionMetrics":"SIZE"}`,
	`{"TransactItems":[{"Delete":{"TableName":"t","Key":{"pk":{"S":"a"}}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"c"}},"ConditionExpression":"attribute_exists(pk)"}}]}`,
	`{"TransactItems":[]}`,
	`{"TransactItems":[{}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}},"Delete":{"TableName":"t","Key":{"pk":{"S":"a"}}}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}},"Put":{"ConditionExpression":"x"}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}}],"TransactItems":[{"Delete":{"TableName":"t","Key":{"pk":{"S":"a"}}}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","TableName":"u","Item":{"pk":{"S":"a"}},"Item":{"pk":{"S":"b"}}}}],"ClientRequestToken":"a","ClientRequestToken":"b"}`,
	`{"TransactItems":[null]}`,
	`{"TransactItems":null}`,
	`{"TransactItems":{}}`,
	`{"TransactItems":[{"Put":null}]}`,
	`{"TransactItems":[{"Put":[]}]}`,
	`{"TransactItems":[{"put":{"TableName":"t"}}]}`,
	`{"TransactItems":[{"Put":{"tablename":"t"}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Extra":1}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}},"ExpressionAttributeValues":{":v":{"SS":["a","a"]}}}}]}`,
	`{"TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #n = :v","ExpressionAttributeNames":{"#n":"` + strings.Repeat("n", 65536) + `"},"ExpressionAttributeValues":{":v":{"S":"x"}}}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"},"` + strings.Repeat("n", 65536) + `":{"S":"x"}}}}]}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}}],"ClientRequestToken":null}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}}],"ClientRequestToken":7}`,
	`{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"}}}},]}`,
	`{"TransactItems":[1,2]}`,
}

func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	for i, body := range decodeFastCases {
		checkDecodeFast(t, fmt.Sprint(i), []byte(body))
	}
}

// TestDecodeFastTakesCommonShapes: the shapes SDKs send for each operation
// with a fast decoder, Checks' record and claim included, are decoded by
// the fast path, not handed to encoding/json.
func TestDecodeFastTakesCommonShapes(t *testing.T) {
	for _, c := range []struct {
		in   fastDecoder
		body string
	}{
		{new(GetItemInput), decodeFastCases[0]},
		{new(GetItemInput), `{"TableName":"t","Key":{"pk":{"S":"a"}},"ProjectionExpression":"#a","ExpressionAttributeNames":{"#a":"a"}}`},
		{new(PutItemInput), decodeFastCases[4]},
		{new(PutItemInput), `{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"#p <> :p","ExpressionAttributeNames":{"#p":"pk"},"ExpressionAttributeValues":{":p":{"S":"b"}}}`},
		{new(UpdateItemInput), `{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #n = :v ADD c :one","ConditionExpression":"attribute_exists(pk) AND #n <> :v","ExpressionAttributeNames":{"#n":"n"},"ExpressionAttributeValues":{":v":{"S":"x"},":one":{"N":"1"}},"ReturnValues":"UPDATED_NEW"}`},
		{new(DeleteItemInput), `{"TableName":"t","Key":{"pk":{"S":"a"}},"ConditionExpression":"attribute_exists(pk)","ReturnValues":"ALL_OLD"}`},
		{new(TransactWriteItemsInput), `{"TransactItems":[{"Put":{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1"}},"ConditionExpression":"attribute_not_exists(pk)"}},{"Update":{"TableName":"u","Key":{"pk":{"S":"b"}},"UpdateExpression":"SET #r = :r","ConditionExpression":"#r <> :r","ExpressionAttributeNames":{"#r":"lastResult"},"ExpressionAttributeValues":{":r":{"M":{"ok":{"BOOL":true}}}}}},{"Delete":{"TableName":"t","Key":{"pk":{"S":"c"}}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"d"}},"ConditionExpression":"attribute_exists(pk)"}}],"ClientRequestToken":"tok-1","ReturnConsumedCapacity":"TOTAL"}`},
	} {
		if !c.in.decodeFast([]byte(c.body)) {
			t.Errorf("%T %s: fast path refused it", c.in, c.body)
		}
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, body := range decodeFastCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeFast(t, "fuzz", body) })
}

// checkDecodeFast decodes body as the request of each operation with a
// fast decoder through decodeRequest and through encoding/json alone, and
// compares the results.
func checkDecodeFast(t *testing.T, name string, body []byte) {
	t.Helper()
	std := body
	if len(strings.TrimSpace(string(body))) == 0 {
		std = []byte("{}")
	}
	for _, pair := range []struct{ fast, ref any }{
		{new(GetItemInput), new(GetItemInput)},
		{new(PutItemInput), new(PutItemInput)},
		{new(UpdateItemInput), new(UpdateItemInput)},
		{new(DeleteItemInput), new(DeleteItemInput)},
		{new(TransactWriteItemsInput), new(TransactWriteItemsInput)},
	} {
		errFast := decodeRequest(body, pair.fast)
		errRef := decodeJSON(std, pair.ref)
		if fmt.Sprint(errFast) != fmt.Sprint(errRef) {
			t.Errorf("%s %T %q: error %v, encoding/json's %v", name, pair.fast, body, errFast, errRef)
			continue
		}
		if errRef == nil && !reflect.DeepEqual(pair.fast, pair.ref) {
			t.Errorf("%s %T %q: decoded %+v, encoding/json %+v", name, pair.fast, body, pair.fast, pair.ref)
		}
	}
}

// BenchmarkDecodeRequest decodes ddbbench's GetItem and PutItem requests
// through decodeRequest (fast path) and through encoding/json alone.
func BenchmarkDecodeRequest(b *testing.B) {
	bodies := []struct {
		name string
		body []byte
		in   func() any
	}{
		{"GetItem", []byte(`{"Key":{"pk":{"S":"p3"},"sk":{"N":"123"}},"TableName":"ddbbench"}`), func() any { return new(GetItemInput) }},
		{"PutItem", []byte(`{"Item":{"pk":{"S":"k12345"},"sk":{"N":"0"},"payload":{"S":"` + strings.Repeat("x", 160) + `"},"n":{"N":"42"}},"TableName":"ddbbench"}`), func() any { return new(PutItemInput) }},
		{"UpdateItem", []byte(`{"TableName":"checks","Key":{"pk":{"S":"CHECK#1"}},"UpdateExpression":"SET #o = :me, #u = :until","ConditionExpression":"attribute_not_exists(#o) OR #u < :now","ExpressionAttributeNames":{"#o":"owner","#u":"claimedUntil"},"ExpressionAttributeValues":{":me":{"S":"node-1"},":until":{"N":"1700000060"},":now":{"N":"1700000000"}}}`), func() any { return new(UpdateItemInput) }},
		{"TransactWriteItems", []byte(`{"TransactItems":[{"Put":{"TableName":"runs","Item":{"pk":{"S":"CHECK#1"},"sk":{"N":"1700000000"},"status":{"N":"200"},"ms":{"N":"12"}},"ConditionExpression":"attribute_not_exists(pk)"}},{"Update":{"TableName":"checks","Key":{"pk":{"S":"CHECK#1"}},"UpdateExpression":"SET #r = :r, #t = :t","ConditionExpression":"#t < :t","ExpressionAttributeNames":{"#r":"lastResult","#t":"lastExecutedAt"},"ExpressionAttributeValues":{":r":{"M":{"ok":{"BOOL":true}}},":t":{"N":"1700000000"}}}}],"ClientRequestToken":"0123456789abcdef0123456789abcdef"}`), func() any { return new(TransactWriteItemsInput) }},
	}
	for _, c := range bodies {
		for _, d := range []struct {
			name   string
			decode func([]byte, any) error
		}{{"fast", decodeRequest}, {"encoding-json", decodeJSON}} {
			b.Run(c.name+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := d.decode(c.body, c.in()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
