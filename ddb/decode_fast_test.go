package ddb

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeFastCases are request bodies of GetItem and PutItem, simple and
// not: each must decode through decodeRequest (with the fast path) exactly
// as through encoding/json alone.
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
}

func TestDecodeFastMatchesEncodingJSON(t *testing.T) {
	for i, body := range decodeFastCases {
		checkDecodeFast(t, fmt.Sprint(i), []byte(body))
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, body := range decodeFastCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeFast(t, "fuzz", body) })
}

// checkDecodeFast decodes body as GetItem's and PutItem's request through
// decodeRequest and through encoding/json alone, and compares the results.
func checkDecodeFast(t *testing.T, name string, body []byte) {
	t.Helper()
	std := body
	if len(strings.TrimSpace(string(body))) == 0 {
		std = []byte("{}")
	}
	for _, pair := range []struct{ fast, ref any }{
		{new(GetItemInput), new(GetItemInput)},
		{new(PutItemInput), new(PutItemInput)},
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
