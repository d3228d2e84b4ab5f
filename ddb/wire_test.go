package ddb_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
)

// TestServeTrustedWire sends the same requests to two stores, one through
// Handler (net/http) and one through ServeTrustedWire (the core other HTTP
// servers call, as bench/peers/fasthttp does), and checks that every
// answer is the same: status, Content-Type, X-Amz-Crc32 and body.
func TestServeTrustedWire(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) }
	open := func() *ddb.Store {
		s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	viaHTTP, viaWire := open().Handler(), open()
	requests := []struct {
		name, method, path, target, body string
	}{
		{"health check", "GET", "/", "", ""},
		{"GET elsewhere", "GET", "/x", "", ""},
		{"unknown operation", "POST", "/", "DynamoDB_20120810.Nope", "{}"},
		{"no target", "POST", "/", "", "{}"},
		{"create table", "POST", "/", "DynamoDB_20120810.CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST",
			"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}]}`},
		{"put", "POST", "/", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1.50"}}}`},
		{"get", "POST", "/", "DynamoDB_20120810.GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`},
		{"get missing", "POST", "/", "DynamoDB_20120810.GetItem", `{"TableName":"t","Key":{"pk":{"S":"b"}}}`},
		{"condition fails", "POST", "/", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)"}`},
		{"malformed", "POST", "/", "DynamoDB_20120810.GetItem", `{"TableName":`},
		{"empty body", "POST", "/", "DynamoDB_20120810.ListTables", ""},
		{"empty answer", "POST", "/", "DynamoDB_20120810.TagResource", `{"ResourceArn":"arn:aws:dynamodb:us-east-1:000000000000:table/t","Tags":[{"Key":"k","Value":"v"}]}`},
		{"describe endpoints", "POST", "/", "DynamoDB_20120810.DescribeEndpoints", "{}"},
		{"too large", "POST", "/", "DynamoDB_20120810.PutItem", `{"TableName":"t","Item":{"pk":{"S":"` + strings.Repeat("x", 16<<20) + `"}}}`},
	}
	id := regexp.MustCompile(`^[0-9A-F]{32}$`)
	seen := map[string]bool{}
	for _, r := range requests {
		req := httptest.NewRequest(r.method, "http://127.0.0.1:8000"+r.path, strings.NewReader(r.body))
		if r.target != "" {
			req.Header.Set("X-Amz-Target", r.target)
		}
		rec := httptest.NewRecorder()
		viaHTTP.ServeHTTP(rec, req)

		var got ddb.WireAnswer
		calls := 0
		viaWire.ServeTrustedWire(&ddb.WireRequest{Method: r.method, Path: r.path, Host: "127.0.0.1:8000", Target: r.target, Body: []byte(r.body)},
			func(a ddb.WireAnswer) {
				calls++
				got = a
				got.Body = bytes.Clone(a.Body)
			})
		if calls != 1 {
			t.Errorf("%s: answered %d times, want once", r.name, calls)
			continue
		}
		want := rec.Result()
		if got.Status != want.StatusCode || got.ContentType != want.Header.Get("Content-Type") ||
			got.CRC32 != want.Header.Get("X-Amz-Crc32") || !bytes.Equal(got.Body, rec.Body.Bytes()) {
			t.Errorf("%s: ServeTrustedWire answered %d %q crc %q %.200s\nHandler answered %d %q crc %q %.200s", r.name,
				got.Status, got.ContentType, got.CRC32, got.Body,
				want.StatusCode, want.Header.Get("Content-Type"), want.Header.Get("X-Amz-Crc32"), rec.Body.Bytes())
		}
		for _, rid := range []string{got.RequestID, want.Header.Get("X-Amzn-Requestid")} {
			if !id.MatchString(rid) || seen[rid] {
				t.Errorf("%s: request id %q: want 32 upper-case hexadecimal digits, unique", r.name, rid)
			}
			seen[rid] = true
		}
		if r.method == http.MethodPost && got.CRC32 == "" {
			t.Errorf("%s: no X-Amz-Crc32", r.name)
		}
	}
}
