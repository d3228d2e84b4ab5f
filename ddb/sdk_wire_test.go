package ddb_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// wireResponse is a raw HTTP answer of the store.
type wireResponse struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any // nil when the body is not a JSON object
}

func wirePost(t *testing.T, url, target, body string) wireResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	requireNoError(t, err, "NewRequest")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	resp, err := http.DefaultClient.Do(req)
	requireNoError(t, err, "POST")
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	requireNoError(t, err, "read body")
	r := wireResponse{status: resp.StatusCode, header: resp.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r
}

// requireWireError checks an error response: status 400, a JSON body whose
// __type ends with #code, and a message.
func requireWireError(t *testing.T, r wireResponse, code string, wantMessage bool) {
	t.Helper()
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400; body %s", r.status, r.raw)
	}
	if r.body == nil {
		t.Fatalf("error body is not a JSON object: %q", r.raw)
	}
	typ, _ := r.body["__type"].(string)
	if !strings.HasSuffix(typ, "#"+code) {
		t.Fatalf("__type = %q, want ...#%s; body %s", typ, code, r.raw)
	}
	if wantMessage {
		msg, _ := r.body["message"].(string)
		if msg == "" {
			msg, _ = r.body["Message"].(string)
		}
		if msg == "" {
			t.Fatalf("error without a message: %s", r.raw)
		}
	}
}

func newWireServer(t *testing.T) (*ddb.Store, string) {
	t.Helper()
	skipIfExternal(t, "raw wire tests run against the embedded store only")
	s := newStore(t)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func TestSDKWireProtocol(t *testing.T) {
	t.Parallel()
	s, url := newWireServer(t)
	c := ddb.NewClient(s, noRetry)
	createTable(t, c, tableSpec{Name: "wire", Hash: "pk:S"})
	const api = "DynamoDB_20120810."

	t.Run("malformed JSON", func(t *testing.T) {
		for _, body := range []string{`{"TableName": "wire"`, `hello`, `[`, `{"TableName": "wire",}`, "\x00\xff", `{"TableName": "wire"} {}`, `{"TableName": "wire"}}`, `{"TableName": "wire"}]`} {
			t.Run(body, func(t *testing.T) {
				requireWireError(t, wirePost(t, url, api+"DescribeTable", body), "SerializationException", true)
			})
		}
	})
	t.Run("wrong JSON types", func(t *testing.T) {
		for _, body := range []string{`{"TableName": 5}`, `{"TableName": ["wire"]}`, `{"TableName": {"S": "wire"}}`, `{"TableName": true}`, `[]`, `"wire"`, `5`} {
			requireWireError(t, wirePost(t, url, api+"DescribeTable", body), "SerializationException", true)
		}
		requireWireError(t, wirePost(t, url, api+"ListTables", `{"Limit": "5"}`), "SerializationException", true)
		requireWireError(t, wirePost(t, url, api+"GetItem", `{"TableName": "wire", "Key": {"pk": "a"}}`), "SerializationException", true)
		requireWireError(t, wirePost(t, url, api+"GetItem", `{"TableName": "wire", "Key": []}`), "SerializationException", true)
	})
	t.Run("invalid attribute values", func(t *testing.T) {
		for _, av := range []string{`{}`, `{"S": "a", "N": "1"}`, `{"N": "x"}`, `{"SS": []}`, `{"NULL": false}`, `{"B": "not base64!"}`, `{"L": [{}]}`, `{"M": {"a": {}}}`} {
			r := wirePost(t, url, api+"PutItem", `{"TableName": "wire", "Item": {"pk": {"S": "a"}, "v": `+av+`}}`)
			if r.status != http.StatusBadRequest || r.body == nil {
				t.Fatalf("value %s: status %d body %s", av, r.status, r.raw)
			}
			typ, _ := r.body["__type"].(string)
			if !strings.HasSuffix(typ, "#ValidationException") && !strings.HasSuffix(typ, "#SerializationException") {
				t.Errorf("value %s: __type %q", av, typ)
			}
		}
	})
	t.Run("unknown operation", func(t *testing.T) {
		for _, target := range []string{api + "NoSuchOperation", "DynamoDB_20111205.ListTables", "Nope.ListTables", "ListTables", api, ""} {
			r := wirePost(t, url, target, `{}`)
			requireWireError(t, r, "UnknownOperationException", false)
		}
	})
	t.Run("validation error", func(t *testing.T) {
		r := wirePost(t, url, api+"DescribeTable", `{"TableName": "x"}`)
		requireWireError(t, r, "ValidationException", true)
		if typ := r.body["__type"].(string); typ != "com.amazon.coral.validate#ValidationException" {
			t.Errorf("__type = %q", typ)
		}
		r = wirePost(t, url, api+"DescribeTable", `{"TableName": "nosuchtable"}`)
		requireWireError(t, r, "ResourceNotFoundException", true)
		if typ := r.body["__type"].(string); typ != "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException" {
			t.Errorf("__type = %q", typ)
		}
		r = wirePost(t, url, api+"PutItem", `{"TableName": "wire", "Item": {"pk": {"S": "c"}}, "ConditionExpression": "attribute_exists(pk)"}`)
		requireWireError(t, r, "ConditionalCheckFailedException", true)
	})
	t.Run("success", func(t *testing.T) {
		r := wirePost(t, url, api+"ListTables", `{}`)
		if r.status != http.StatusOK {
			t.Fatalf("status %d body %s", r.status, r.raw)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
			t.Errorf("Content-Type = %q", ct)
		}
		if r.header.Get("x-amzn-RequestId") == "" {
			t.Errorf("no x-amzn-RequestId")
		}
		if crc := r.header.Get("x-amz-crc32"); crc != strconv.FormatUint(uint64(crc32.ChecksumIEEE(r.raw)), 10) {
			t.Errorf("x-amz-crc32 = %q does not match the body", crc)
		}
		if names, _ := r.body["TableNames"].([]any); len(names) != 1 || names[0] != "wire" {
			t.Errorf("TableNames = %v", r.body["TableNames"])
		}
		// An empty body is an empty request.
		if r := wirePost(t, url, api+"ListTables", ``); r.status != http.StatusOK {
			t.Errorf("empty body: status %d body %s", r.status, r.raw)
		}
		r = wirePost(t, url, api+"PutItem", `{"TableName": "wire", "Item": {"pk": {"S": "a"}, "n": {"N": "1.50"}, "b": {"B": "AAE="}}}`)
		if r.status != http.StatusOK {
			t.Fatalf("PutItem: status %d body %s", r.status, r.raw)
		}
		r = wirePost(t, url, api+"GetItem", `{"TableName": "wire", "Key": {"pk": {"S": "a"}}, "UnknownMember": 1}`)
		if r.status != http.StatusOK || !bytes.Contains(r.raw, []byte(`"n":{"N":"1.5"}`)) || !bytes.Contains(r.raw, []byte(`"b":{"B":"AAE="}`)) {
			t.Errorf("GetItem: status %d body %s", r.status, r.raw)
		}
	})
}

// wireOps are the operations the fuzz test exercises, each with a valid
// request body against the table "fzt" that fuzzTable creates.
var wireOps = map[string]string{
	"CreateTable": `{"TableName":"fznew","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"},{"AttributeName":"g","AttributeType":"S"}],
		"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],"BillingMode":"PAY_PER_REQUEST",
		"GlobalSecondaryIndexes":[{"IndexName":"gsi","KeySchema":[{"AttributeName":"g","KeyType":"HASH"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["a"]}}],
		"LocalSecondaryIndexes":[{"IndexName":"lsi","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"g","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}],
		"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_IMAGE"}}`,
	"DescribeTable": `{"TableName":"fzt"}`,
	"ListTables":    `{"Limit":2,"ExclusiveStartTableName":"faa"}`,
	"DeleteTable":   `{"TableName":"fzt"}`,
	"UpdateTable": `{"TableName":"fzt","AttributeDefinitions":[{"AttributeName":"h","AttributeType":"N"}],
		"GlobalSecondaryIndexUpdates":[{"Create":{"IndexName":"new","KeySchema":[{"AttributeName":"h","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}}}]}`,
	"PutItem": `{"TableName":"fzt","Item":{"pk":{"S":"a"},"sk":{"N":"1"},"g":{"S":"x"},"m":{"M":{"l":{"L":[{"N":"1"},{"SS":["a"]}]}}}},
		"ConditionExpression":"attribute_not_exists(#p) OR (n BETWEEN :lo AND :hi AND size(m.l) > :lo)","ExpressionAttributeNames":{"#p":"pk"},
		"ExpressionAttributeValues":{":lo":{"N":"0"},":hi":{"N":"10"}},"ReturnValues":"ALL_OLD","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`,
	"GetItem": `{"TableName":"fzt","Key":{"pk":{"S":"a"},"sk":{"N":"0"}},"ProjectionExpression":"#p, m.l[1], n","ExpressionAttributeNames":{"#p":"pk"},"ConsistentRead":true}`,
	"UpdateItem": `{"TableName":"fzt","Key":{"pk":{"S":"a"},"sk":{"N":"0"}},
		"UpdateExpression":"SET n = if_not_exists(n, :z) + :one, m.l = list_append(m.l, :l) REMOVE x ADD s :ss DELETE t :ss",
		"ConditionExpression":"attribute_type(n, :t) OR attribute_not_exists(n)",
		"ExpressionAttributeValues":{":z":{"N":"0"},":one":{"N":"1"},":l":{"L":[{"S":"q"}]},":ss":{"SS":["a","b"]},":t":{"S":"N"}},"ReturnValues":"UPDATED_NEW"}`,
	"DeleteItem": `{"TableName":"fzt","Key":{"pk":{"S":"b"},"sk":{"N":"1"}},"ConditionExpression":"contains(s, :v) AND NOT begins_with(g, :v)",
		"ExpressionAttributeValues":{":v":{"S":"a"}},"ReturnValues":"ALL_OLD"}`,
	"Query": `{"TableName":"fzt","KeyConditionExpression":"pk = :p AND sk BETWEEN :a AND :b","FilterExpression":"n IN (:a, :b) OR attribute_exists(m)",
		"ProjectionExpression":"pk, sk, n, m.l[0]","ExpressionAttributeValues":{":p":{"S":"a"},":a":{"N":"0"},":b":{"N":"100"}},
		"Limit":3,"ScanIndexForward":false,"ExclusiveStartKey":{"pk":{"S":"a"},"sk":{"N":"50"}}}`,
	"Scan": `{"TableName":"fzt","IndexName":"gsi","FilterExpression":"size(#g) >= :one","ExpressionAttributeNames":{"#g":"g"},
		"ExpressionAttributeValues":{":one":{"N":"1"}},"Segment":1,"TotalSegments":3,"Limit":5,"Select":"ALL_PROJECTED_ATTRIBUTES"}`,
	"BatchGetItem": `{"RequestItems":{"fzt":{"Keys":[{"pk":{"S":"a"},"sk":{"N":"0"}},{"pk":{"S":"b"},"sk":{"N":"1"}}],"ProjectionExpression":"pk, g"}}}`,
	"BatchWriteItem": `{"RequestItems":{"fzt":[{"PutRequest":{"Item":{"pk":{"S":"c"},"sk":{"N":"3"},"g":{"S":"y"},"bs":{"BS":["AAE="]}}}},
		{"DeleteRequest":{"Key":{"pk":{"S":"a"},"sk":{"N":"5"}}}}]}}`,
}

// fuzzTable creates table fzt (with a GSI and an LSI) and a few items.
func fuzzTable(t *testing.T, c *dynamodb.Client) {
	t.Helper()
	createTable(t, c, tableSpec{Name: "fzt", Hash: "pk:S", Range: "sk:N",
		GSIs: []indexSpec{{Name: "gsi", Hash: "g:S", Projection: types.ProjectionTypeKeysOnly}},
		LSIs: []indexSpec{{Name: "lsi", Hash: "pk:S", Range: "l:S", Projection: types.ProjectionTypeAll}}})
	var items []attrs
	for i := range 20 {
		items = append(items, attrs{"pk": avS([]string{"a", "b"}[i%2]), "sk": avN(fmt.Sprint(i)), "g": avS(fmt.Sprint(i % 3)), "l": avS("l"),
			"n": avN(fmt.Sprint(i)), "s": avSS("a", "b"), "m": avM(attrs{"l": avL(avN("1"), avS("x"))})})
	}
	batchPut(t, c, "fzt", items)
}

var fuzzTokens = strings.Fields(`SET REMOVE ADD DELETE AND OR NOT BETWEEN IN ( ) ( ) , , = = <> < <= > >= + - . [ ] [0] [1] [99999999999] 0 1
	#p #g #nope :v :a :b :one :z :nope pk sk n m l s g a size attribute_exists attribute_not_exists attribute_type begins_with contains
	if_not_exists list_append m.l m.l[0] #p.#p n[0] é 𝄞 status`)

// fuzzExpression returns a random expression made of expression tokens.
func fuzzExpression(r *rand.Rand) string {
	n := 1 + r.IntN(12)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fuzzTokens[r.IntN(len(fuzzTokens))]
	}
	sep := " "
	if r.IntN(4) == 0 {
		sep = ""
	}
	return strings.Join(parts, sep)
}

// fuzzValue returns a random JSON value, often a (possibly invalid)
// AttributeValue.
func fuzzValue(r *rand.Rand, depth int) any {
	switch r.IntN(16) {
	case 0:
		return nil
	case 1:
		return r.IntN(3) == 0
	case 2:
		return []float64{0, -1, 1e300, 3.5, 1 << 62}[r.IntN(5)]
	case 3:
		return []string{"", "a", "fz", "x\u0000y", strings.Repeat("z", 300), "é", "AAE=", "!!", "1e999", "-0", "NaN"}[r.IntN(11)]
	case 4:
		return fuzzExpression(r)
	case 5:
		if depth > 3 {
			return nil
		}
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = fuzzValue(r, depth+1)
		}
		return l
	case 6:
		if depth > 3 {
			return map[string]any{}
		}
		m := map[string]any{}
		for range r.IntN(4) {
			m[[]string{"S", "N", "B", "M", "L", "SS", "NS", "BS", "NULL", "BOOL", "pk", "sk", "Item", "Key"}[r.IntN(14)]] = fuzzValue(r, depth+1)
		}
		return m
	}
	// An AttributeValue, valid or not.
	avs := []string{`{"S":"a"}`, `{"S":""}`, `{"N":"1"}`, `{"N":"1E+200"}`, `{"N":"abc"}`, `{"N":""}`, `{"B":"AAE="}`, `{"B":""}`, `{"B":"%%"}`,
		`{"BOOL":true}`, `{"NULL":true}`, `{"NULL":false}`, `{"M":{}}`, `{"M":{"a":{"S":"b"}}}`, `{"M":{"a":{}}}`, `{"L":[]}`, `{"L":[{"N":"1"},{}]}`,
		`{"SS":[]}`, `{"SS":["a","a"]}`, `{"SS":["a"]}`, `{"NS":["1","1.0"]}`, `{"NS":["x"]}`, `{"BS":["AAE=","AAE="]}`, `{"S":1}`, `{"N":1}`,
		`{"S":"a","N":"1"}`, `{}`, `{"Q":"a"}`, `{"L":null}`, `{"M":null}`, `{"SS":null}`, `{"M":{"":{"S":"x"}}}`}
	var v any
	json.Unmarshal([]byte(avs[r.IntN(len(avs))]), &v)
	return v
}

// mutate changes one random place of a decoded JSON document.
func mutate(r *rand.Rand, v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 || r.IntN(6) == 0 {
			if r.IntN(2) == 0 {
				x[fmt.Sprintf("Unknown%d", r.IntN(3))] = fuzzValue(r, depth)
			} else {
				return fuzzValue(r, depth)
			}
			return x
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		k := keys[r.IntN(len(keys))]
		switch r.IntN(5) {
		case 0:
			delete(x, k)
		case 1:
			x[k] = fuzzValue(r, depth)
		default:
			x[k] = mutate(r, x[k], depth+1)
		}
		return x
	case []any:
		if len(x) == 0 || r.IntN(5) == 0 {
			switch r.IntN(3) {
			case 0:
				return append(x, fuzzValue(r, depth))
			case 1:
				if len(x) > 0 {
					return append(x, x[0]) // duplicate an element
				}
				return nil
			default:
				return fuzzValue(r, depth)
			}
		}
		i := r.IntN(len(x))
		x[i] = mutate(r, x[i], depth+1)
		return x
	case string:
		switch r.IntN(4) {
		case 0, 1:
			return fuzzExpression(r)
		case 2:
			return []string{"", "fzt", "gsi", "lsi", "ALL_OLD", "UPDATED_NEW", "COUNT", "SPECIFIC_ATTRIBUTES", "S", "N", "HASH", "RANGE", "KEYS_ONLY", "PROVISIONED"}[r.IntN(14)]
		}
		return fuzzValue(r, depth)
	}
	return fuzzValue(r, depth)
}

// garble returns a fuzzed request body derived from a valid one.
func garble(r *rand.Rand, valid string) string {
	switch r.IntN(10) {
	case 0: // byte-level damage
		b := []byte(valid)
		for range 1 + r.IntN(4) {
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{"{}[]\",:0a\\"[r.IntN(10)]}, b[i:]...)...)
			}
		}
		return string(b)
	case 1: // truncation
		return valid[:r.IntN(len(valid))]
	case 2: // a random document
		b, _ := json.Marshal(fuzzValue(r, 0))
		return string(b)
	}
	var doc any
	if err := json.Unmarshal([]byte(valid), &doc); err != nil {
		panic(err)
	}
	for range 1 + r.IntN(3) {
		doc = mutate(r, doc, 0)
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func fuzzSeed() uint64 {
	if s := os.Getenv("QUARRY_DDB_FUZZ_SEED"); s != "" {
		n, _ := strconv.ParseUint(s, 10, 64)
		return n
	}
	return 20120810
}

// TestSDKWireFuzz sends garbled bodies to every operation: the store must
// answer each with 200 or a 400 error carrying __type, never 500, and keep
// working.
func TestSDKWireFuzz(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "raw wire tests run against the embedded store only")
	perOp := 300
	if n, err := strconv.Atoi(os.Getenv("QUARRY_DDB_FUZZ_N")); err == nil && n > 0 {
		perOp = n
	}
	seed := fuzzSeed()
	ops := make([]string, 0, len(wireOps))
	for op := range wireOps {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for i, op := range ops {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			s, url := newWireServer(t)
			c := ddb.NewClient(s, noRetry)
			fuzzTable(t, c)
			valid := wireOps[op]
			// The valid request itself is accepted (or fails cleanly).
			if r := wirePost(t, url, "DynamoDB_20120810."+op, valid); r.status != http.StatusOK {
				t.Fatalf("valid %s: status %d body %s", op, r.status, r.raw)
			}
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			codes := map[string]int{}
			for n := range perOp {
				body := garble(r, valid)
				resp := wirePost(t, url, "DynamoDB_20120810."+op, body)
				switch resp.status {
				case http.StatusOK:
					codes["200"]++
					if resp.body == nil {
						t.Fatalf("case %d: 200 with a body that is not a JSON object: %q\nrequest: %s", n, resp.raw, body)
					}
				case http.StatusBadRequest:
					typ, _ := resp.body["__type"].(string)
					if typ == "" {
						t.Fatalf("case %d: 400 without __type: %q\nrequest: %s", n, resp.raw, body)
					}
					codes[typ[strings.LastIndex(typ, "#")+1:]]++
				default:
					t.Fatalf("case %d (seed %d): status %d body %s\nrequest: %s", n, seed, resp.status, resp.raw, body)
				}
			}
			t.Logf("%s: %v", op, codes)
			// The store still serves requests.
			if op != "DeleteTable" {
				_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String("fzt")})
				requireNoError(t, err, "Scan after fuzzing")
			}
			_, err := c.ListTables(tctx(t), &dynamodb.ListTablesInput{})
			requireNoError(t, err, "ListTables after fuzzing")
		})
	}
}

// TestSDKWireNullAttributeValue: a JSON null where an AttributeValue belongs
// must be rejected, not stored as an empty value that no read can decode.
func TestSDKWireNullAttributeValue(t *testing.T) {
	t.Parallel()
	s, url := newWireServer(t)
	c := ddb.NewClient(s, noRetry)
	const api = "DynamoDB_20120810."
	for _, tc := range []struct{ name, op, body, key string }{
		{"PutItem", "PutItem", `{"TableName":"wire","Item":{"pk":{"S":"p"},"v":null}}`, "p"},
		{"PutItem nested in map", "PutItem", `{"TableName":"wire","Item":{"pk":{"S":"m"},"v":{"M":{"a":null}}}}`, "m"},
		{"PutItem nested in list", "PutItem", `{"TableName":"wire","Item":{"pk":{"S":"l"},"v":{"L":[null]}}}`, "l"},
		{"BatchWriteItem", "BatchWriteItem", `{"RequestItems":{"wire":[{"PutRequest":{"Item":{"pk":{"S":"b"},"v":null}}}]}}`, "b"},
		{"UpdateItem value", "UpdateItem", `{"TableName":"wire","Key":{"pk":{"S":"u"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":null}}`, "u"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case gets a fresh table named "wire".
			createTable(t, c, tableSpec{Name: "wire", Hash: "pk:S"})
			defer dropTable(c, "wire")
			r := wirePost(t, url, api+tc.op, tc.body)
			if r.status != http.StatusBadRequest {
				t.Errorf("%s with a null AttributeValue: status %d body %s, want 400", tc.op, r.status, r.raw)
			}
			get := wirePost(t, url, api+"GetItem", `{"TableName":"wire","Key":{"pk":{"S":"`+tc.key+`"}}}`)
			if get.status != http.StatusOK {
				t.Errorf("GetItem of the item afterwards: status %d body %s", get.status, get.raw)
			}
			scan := wirePost(t, url, api+"Scan", `{"TableName":"wire"}`)
			if scan.status != http.StatusOK {
				t.Errorf("Scan afterwards: status %d body %s", scan.status, scan.raw)
			}
		})
	}
}

// TestSDKHealthCheck checks GET /: 200 and "healthy: " with the host the
// client addressed.
func TestSDKHealthCheck(t *testing.T) {
	t.Parallel()
	_, url := newWireServer(t)
	for _, host := range []string{"", "dynamodb.us-east-1.amazonaws.com", "localhost:8000"} {
		t.Run(host, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/", nil)
			requireNoError(t, err, "NewRequest")
			want := strings.TrimPrefix(url, "http://")
			if host != "" {
				req.Host, want = host, host
			}
			resp, err := http.DefaultClient.Do(req)
			requireNoError(t, err, "GET /")
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || string(body) != "healthy: "+want+" " {
				t.Fatalf("GET / = %d %q, want 200 %q", resp.StatusCode, body, "healthy: "+want+" ")
			}
		})
	}
}

// TestWireMissingMembers checks the messages for members the SDK would not
// let a request leave out: they are sent as raw JSON.
func TestWireMissingMembers(t *testing.T) {
	t.Parallel()
	_, url := newWireServer(t)
	r := wirePost(t, url, "DynamoDB_20120810.CreateTable", `{"TableName":"ttl","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`)
	desc, _ := r.body["TableDescription"].(map[string]any)
	arn, _ := desc["TableArn"].(string)
	const create = `{"TableName":"tab%d","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST",`
	cases := []struct {
		name, target, body, msg string
	}{
		{"CreateTable AttributeName", "CreateTable", create + `"AttributeDefinitions":[{"AttributeType":"S"}]}`,
			"1 validation error detected: Value null at 'attributeDefinitions.1.member.attributeName' failed to satisfy constraint: Member must not be null"},
		{"CreateTable second AttributeName", "CreateTable", create + `"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeType":"N"}]}`,
			"1 validation error detected: Value null at 'attributeDefinitions.2.member.attributeName' failed to satisfy constraint: Member must not be null"},
		{"CreateTable AttributeType", "CreateTable", create + `"AttributeDefinitions":[{"AttributeName":"pk"}]}`,
			"1 validation error detected: Value null at 'attributeDefinitions.1.member.attributeType' failed to satisfy constraint: Member must not be null"},
		{"CreateTable tag Value", "CreateTable", create + `"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"Tags":[{"Key":"k"}]}`,
			"1 validation error detected: Value null at 'tags.1.member.value' failed to satisfy constraint: Member must not be null"},
		{"TagResource Value", "TagResource", `{"ResourceArn":"` + arn + `","Tags":[{"Key":"a","Value":"1"},{"Key":"b"}]}`,
			"1 validation error detected: Value null at 'tags.2.member.value' failed to satisfy constraint: Member must not be null"},
		{"TagResource Key", "TagResource", `{"ResourceArn":"` + arn + `","Tags":[{"Value":"1"}]}`,
			"1 validation error detected: Value null at 'tags.1.member.key' failed to satisfy constraint: Member must not be null"},
		{"UpdateTimeToLive AttributeName", "UpdateTimeToLive", `{"TableName":"ttl","TimeToLiveSpecification":{"Enabled":true}}`,
			"1 validation error detected: Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if strings.Contains(body, "%d") {
				body = fmt.Sprintf(body, i)
			}
			r := wirePost(t, url, "DynamoDB_20120810."+tc.target, body)
			requireWireError(t, r, "ValidationException", true)
			if got, _ := r.body["message"].(string); got != tc.msg {
				t.Fatalf("message %q, want %q", got, tc.msg)
			}
		})
	}
	r = wirePost(t, url, "DynamoDB_20120810.ListTables", `{}`)
	if names, _ := r.body["TableNames"].([]any); len(names) != 1 {
		t.Fatalf("rejected CreateTable calls left tables: %s", r.raw)
	}
}
