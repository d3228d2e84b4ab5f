package main

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// startNull serves the null server for the flags args on a free loopback
// port and returns its URL; it stops when the test ends.
func startNull(t *testing.T, args ...string) (*config, string) {
	t.Helper()
	cfg, err := parseFlags(append([]string{"-null-listen", "127.0.0.1:0"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	l, err := listenNull(cfg.nullListen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log strings.Builder
	serve := serveNull
	if cfg.nullRaw {
		serve = serveNullRaw
	}
	go func() { done <- serve(ctx, cfg, l, &log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serveNull: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("serveNull did not return after cancel")
		}
	})
	return cfg, "http://" + l.Addr().String()
}

// TestNullServerSDK drives both null servers (net/http and the raw loop)
// through the SDK as the benchmark does.
func TestNullServerSDK(t *testing.T) {
	t.Run("net/http", func(t *testing.T) { testNullServerSDK(t) })
	t.Run("raw", func(t *testing.T) { testNullServerSDK(t, "-null-raw") })
}

func testNullServerSDK(t *testing.T, extra ...string) {
	cfg, url := startNull(t, append([]string{"-get-items", "40", "-partitions", "2", "-per-partition", "30", "-page", "7", "-item-bytes", "300", "-concurrency", "2", "-table", "nulltest"}, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	c := newClient(url)

	// Setup: DeleteTable (not found), CreateTable, DescribeTable (waiter).
	if err := setupTable(ctx, c, cfg.table); err != nil {
		t.Fatalf("setupTable: %v", err)
	}
	dt, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.table)})
	if err != nil {
		t.Fatal(err)
	}
	if tb := dt.Table; tb == nil || aws.ToString(tb.TableName) != "nulltest" || tb.TableStatus != types.TableStatusActive ||
		len(tb.KeySchema) != 2 || aws.ToString(tb.KeySchema[0].AttributeName) != "pk" || tb.KeySchema[0].KeyType != types.KeyTypeHash ||
		aws.ToString(tb.KeySchema[1].AttributeName) != "sk" || tb.KeySchema[1].KeyType != types.KeyTypeRange {
		t.Fatalf("DescribeTable: %+v", dt.Table)
	}
	var rnf *types.ResourceNotFoundException
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(cfg.table)}); !errors.As(err, &rnf) {
		t.Fatalf("DeleteTable: %v, want ResourceNotFoundException", err)
	}

	// Preload: BatchWriteItem from -concurrency clients.
	if err := preload(ctx, cfg, url); err != nil {
		t.Fatalf("preload: %v", err)
	}

	// The three measured operations, with the benchmark's own checks.
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, op := range allOps {
		if err := makeOp(cfg, op)(ctx, c, rnd); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	g, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cfg.table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: getKey(1)}, "sk": nAV(0)}})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, k := range []string{"pk", "sk", "n", "ts", "payload"} {
		switch v := g.Item[k].(type) {
		case *types.AttributeValueMemberS:
			size += len(k) + len(v.Value)
		case *types.AttributeValueMemberN:
			if _, err := strconv.ParseInt(v.Value, 10, 64); err != nil {
				t.Errorf("GetItem %s: %v", k, err)
			}
			size += len(k) + len(v.Value)
		default:
			t.Errorf("GetItem %s: %T", k, v)
		}
	}
	if len(g.Item) != 5 || size < 250 || size > 350 {
		t.Errorf("GetItem: %d attributes, ~%d bytes, want 5, ~300", len(g.Item), size)
	}
	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(cfg.table), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: queryKey(0)}}, Limit: aws.Int32(7)})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Items) != 7 || q.Count != 7 || q.ScannedCount != 7 || len(q.LastEvaluatedKey) != 2 {
		t.Errorf("Query: %d items, Count %d, ScannedCount %d, LastEvaluatedKey %v", len(q.Items), q.Count, q.ScannedCount, q.LastEvaluatedKey)
	}

	// Anything else is an UnknownOperationException.
	_, err = c.ListTables(ctx, &dynamodb.ListTablesInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnknownOperationException" {
		t.Fatalf("ListTables: %v, want UnknownOperationException", err)
	}
}

func TestNullServerWire(t *testing.T) {
	_, url := startNull(t)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"TableName":"ddbbench","Item":{}}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "{}" || resp.Header.Get("Content-Type") != "application/x-amz-json-1.0" ||
		resp.Header.Get("X-Amz-Crc32") != "2745614147" || resp.Header.Get("X-Amzn-RequestId") == "" {
		t.Errorf("PutItem: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// Every answer carries the CRC32 of its own body and a request id.
	for _, op := range []string{"DeleteTable", "CreateTable", "DescribeTable", "BatchWriteItem", "GetItem", "PutItem", "Query", "ListTables", ""} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 200
		if op == "DeleteTable" || op == "ListTables" || op == "" {
			want = 400
		}
		if resp.StatusCode != want || resp.Header.Get("X-Amz-Crc32") != strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10) ||
			resp.Header.Get("X-Amzn-RequestId") == "" || !json.Valid(body) {
			t.Errorf("%s: %d %v %q", op, resp.StatusCode, resp.Header, body)
		}
	}
}

func TestNullListenLoopbackOnly(t *testing.T) {
	for _, a := range []string{"0.0.0.0:8000", ":8000", "10.0.0.1:8000", "example.com:80", "127.0.0.1"} {
		if _, err := parseFlags([]string{"-null-listen", a}); err == nil {
			t.Errorf("-null-listen %s accepted", a)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "localhost:8000", "[::1]:8000"} {
		if _, err := parseFlags([]string{"-null-listen", a}); err != nil {
			t.Errorf("-null-listen %s: %v", a, err)
		}
	}
	if _, err := parseFlags([]string{"-null-listen", "127.0.0.1:0", "-targets", "x=http://127.0.0.1:1"}); err == nil {
		t.Error("-null-listen with -targets accepted")
	}
}
