package ddb_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/ddb"
)

func benchStore(b *testing.B) http.Handler {
	s, err := ddb.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	h := s.Handler()
	post(b, h, "CreateTable", `{"TableName":"bench","BillingMode":"PAY_PER_REQUEST",
		"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`)
	for i := 0; i < 1000; i++ {
		code, resp := post(b, h, "PutItem", fmt.Sprintf(`{"TableName":"bench","Item":{"pk":{"S":"p%d"},"sk":{"N":"%d"},"title":{"S":"%s"},"price":{"N":"12.5"},"tags":{"SS":["a","b","c"]},"m":{"M":{"x":{"N":"1"},"y":{"L":[{"S":"q"},{"BOOL":true}]}}}}}`, i%10, i, strings.Repeat("t", 100)))
		if code != 200 {
			b.Fatal(string(resp))
		}
	}
	return h
}

// BenchmarkHandlerGetItem measures the server side of GetItem: decode,
// read, encode, without any client.
func BenchmarkHandlerGetItem(b *testing.B) {
	h := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, resp := post(b, h, "GetItem", fmt.Sprintf(`{"TableName":"bench","Key":{"pk":{"S":"p%d"},"sk":{"N":"%d"}}}`, i%10, i%1000))
		if code != 200 {
			b.Fatal(string(resp))
		}
	}
}

func BenchmarkHandlerQuery100(b *testing.B) {
	h := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, resp := post(b, h, "Query", fmt.Sprintf(`{"TableName":"bench","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{":p":{"S":"p%d"}},"Limit":100}`, i%10))
		if code != 200 {
			b.Fatal(string(resp))
		}
	}
}

func BenchmarkHandlerPutItem(b *testing.B) {
	h := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			code, resp := post(b, h, "PutItem", fmt.Sprintf(`{"TableName":"bench","Item":{"pk":{"S":"q%d"},"sk":{"N":"%d"},"title":{"S":"x"}}}`, i%10, i))
			if code != 200 {
				b.Fatal(string(resp))
			}
		}
	})
}
