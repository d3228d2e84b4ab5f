package ddb_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// benchTable opens a store with opts and creates table "bench" (pk S, sk N).
func benchTable(b *testing.B, opts *ddb.Options) (*ddb.Store, http.Handler) {
	s, err := ddb.Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	h := s.Handler()
	post(b, h, "CreateTable", `{"TableName":"bench","BillingMode":"PAY_PER_REQUEST",
		"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`)
	return s, h
}

func benchStore(b *testing.B) http.Handler {
	_, h := benchTable(b, nil)
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

// BenchmarkInProcessClient measures a whole call through the aws-sdk-go-v2
// client of NewClient, as quarry's systems make them: the SDK's work plus
// the store's, without a socket.
func BenchmarkInProcessClient(b *testing.B) {
	s, h := benchTable(b, &ddb.Options{NoSync: true, TTLInterval: -1})
	for i := 0; i < 100; i++ {
		post(b, h, "PutItem", fmt.Sprintf(`{"TableName":"bench","Item":{"pk":{"S":"p"},"sk":{"N":"%d"},"title":{"S":"%s"}}}`, i, strings.Repeat("t", 100)))
	}
	c := ddb.NewClient(s)
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberN{Value: "7"}}
	b.Run("GetItem", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("bench"), Key: key})
			if err != nil || out.Item == nil {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("PutItem", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "w"}, "sk": &types.AttributeValueMemberN{Value: strconv.Itoa(i)}}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bench"), Item: item}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Query10", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("bench"), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "p"}}, Limit: aws.Int32(10)})
			if err != nil || len(out.Items) != 10 {
				b.Fatal(out, err)
			}
		}
	})
}
