package ddb_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestSDKCreateTableNullsAndTags checks CreateTable's messages for a missing
// AttributeName, a key schema naming one attribute twice, and bad Tags,
// and that a rejected request creates nothing.
func TestSDKCreateTableNullsAndTags(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	defs := func(names ...string) []types.AttributeDefinition {
		var d []types.AttributeDefinition
		for _, n := range names {
			d = append(d, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS})
		}
		return d
	}
	ks := func(hash, rng string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
		if rng != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
		}
		return k
	}
	manyTags := func(n int) []types.Tag {
		var tags []types.Tag
		for i := 0; i < n; i++ {
			tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
		}
		return tags
	}
	const sameName = "Both the Hash Key and the Range Key element in the KeySchema have the same name"
	cases := []struct {
		name string
		in   dynamodb.CreateTableInput
		msg  string
	}{
		// For the table's own key schema, DynamoDB reports the missing
		// definition first (recorded by the conformance suite).
		{"table HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", "pk")}, "Invalid KeySchema: Some index key attribute have no definition"},
		{"GSI HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk", "g"), KeySchema: ks("pk", ""),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks("g", "g"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}, sameName},
		{"LSI HASH and RANGE the same", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk", "sk"), KeySchema: ks("pk", "sk"),
			LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"), KeySchema: ks("pk", "pk"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}, sameName},
		{"51 tags", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: manyTags(51)},
			"One or more parameter values were invalid: The number of tags exceeds the limit of 50"},
		{"tag key too long", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}}},
			"at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128"},
		{"tag value too long", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}}},
			"at 'tags.1.member.value' failed to satisfy constraint: Member must have length less than or equal to 256"},
		{"tag with a forbidden character", dynamodb.CreateTableInput{AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""), Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("a*b")}}},
			"Tag keys and values may only contain"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			name := fmt.Sprintf("%s-%d", uniqueName(t), i)
			in.TableName = aws.String(name)
			in.BillingMode = types.BillingModePayPerRequest
			_, err := c.CreateTable(tctx(t), &in)
			if !strings.HasPrefix(tc.msg, "at ") && !strings.HasPrefix(tc.msg, "Tag keys") {
				requireAPIErrorExact(t, err, "ValidationException", tc.msg)
			} else {
				requireAPIError(t, err, "ValidationException", tc.msg)
			}
			_, err = c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			requireAPIError(t, err, "ResourceNotFoundException", "")
		})
	}
	// 50 valid tags are accepted.
	name := uniqueName(t) + "-50"
	_, err := c.CreateTable(tctx(t), &dynamodb.CreateTableInput{TableName: aws.String(name), AttributeDefinitions: defs("pk"), KeySchema: ks("pk", ""),
		BillingMode: types.BillingModePayPerRequest, Tags: manyTags(50)})
	requireNoError(t, err, "CreateTable with 50 tags")
	t.Cleanup(func() { dropTable(c, name) })
}

// TestSDKDeleteTableDescription checks the members of DeleteTable's
// TableDescription on the wire: those DynamoDB returns for a table being
// deleted, and no others.
func TestSDKDeleteTableDescription(t *testing.T) {
	t.Parallel()
	_, url := newWireServer(t)
	cases := []struct {
		name, body string
		want       []string
	}{
		{"provisioned", `{"TableName":"%s","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5}}`,
			[]string{"ItemCount", "ProvisionedThroughput", "TableArn", "TableId", "TableName", "TableSizeBytes", "TableStatus"}},
		{"on demand with a stream", `{"TableName":"%s","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST","StreamSpecification":{"StreamEnabled":true,"StreamViewType":"KEYS_ONLY"}}`,
			[]string{"BillingModeSummary", "ItemCount", "LatestStreamArn", "LatestStreamLabel", "ProvisionedThroughput", "StreamSpecification", "TableArn", "TableId", "TableName", "TableSizeBytes", "TableStatus"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("deleting-%d", i)
			if r := wirePost(t, url, "DynamoDB_20120810.CreateTable", fmt.Sprintf(tc.body, name)); r.status != http.StatusOK {
				t.Fatalf("CreateTable: %d %s", r.status, r.raw)
			}
			wirePost(t, url, "DynamoDB_20120810.PutItem", fmt.Sprintf(`{"TableName":"%s","Item":{"pk":{"S":"a"}}}`, name))
			r := wirePost(t, url, "DynamoDB_20120810.DeleteTable", fmt.Sprintf(`{"TableName":"%s"}`, name))
			if r.status != http.StatusOK {
				t.Fatalf("DeleteTable: %d %s", r.status, r.raw)
			}
			d, _ := r.body["TableDescription"].(map[string]any)
			var got []string
			for k := range d {
				got = append(got, k)
			}
			if g, w := sortedQuoted(got), sortedQuoted(tc.want); g != w {
				t.Fatalf("members %s, want %s", g, w)
			}
			if d["TableStatus"] != "DELETING" || d["TableName"] != name || d["ItemCount"] != float64(1) {
				t.Fatalf("description %s", r.raw)
			}
		})
	}
}

// TestSDKTagResourceValidation checks TagResource's and UntagResource's
// answers: messages for a missing Value and bad ARNs, and an empty body.
func TestSDKTagResourceValidation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	arn := aws.ToString(waitActive(t, c, tbl).TableArn)
	cases := []struct {
		name string
		in   dynamodb.TagResourceInput
		code string
		msg  string
	}{
		{"not an ARN", dynamodb.TagResourceInput{ResourceArn: aws.String("not-a-valid-arn"), Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}, "ValidationException",
			"Invalid TableArn: Invalid ResourceArn provided as input not-a-valid-arn"},
		{"ARN of a missing table", dynamodb.TagResourceInput{ResourceArn: aws.String(arn + "-gone"), Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}, "ResourceNotFoundException",
			"Requested resource not found: ResourcArn: " + arn + "-gone not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.TagResource(tctx(t), &tc.in)
			requireAPIErrorExact(t, err, tc.code, tc.msg)
		})
	}

	// On the wire, both answer 200 with an empty body.
	_, url := newWireServer(t)
	r := wirePost(t, url, "DynamoDB_20120810.CreateTable", `{"TableName":"tagged","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`)
	desc, _ := r.body["TableDescription"].(map[string]any)
	warn, _ := desc["TableArn"].(string)
	for _, op := range []struct{ target, body string }{
		{"DynamoDB_20120810.TagResource", `{"ResourceArn":"` + warn + `","Tags":[{"Key":"a","Value":"1"}]}`},
		{"DynamoDB_20120810.UntagResource", `{"ResourceArn":"` + warn + `","TagKeys":["a"]}`},
	} {
		r := wirePost(t, url, op.target, op.body)
		if r.status != http.StatusOK || len(r.raw) != 0 || r.header.Get("Content-Length") != "0" {
			t.Errorf("%s: status %d, body %q, Content-Length %q; want 200 and no body", op.target, r.status, r.raw, r.header.Get("Content-Length"))
		}
	}
}

// TestSDKUpdateTimeToLiveAttributeName checks the constraint messages for
// a missing, an empty and a long AttributeName.
func TestSDKUpdateTimeToLiveAttributeName(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	cases := []struct {
		name string
		attr *string
		msg  string
	}{
		{"empty", aws.String(""), "1 validation error detected: Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"256 bytes", aws.String(strings.Repeat("a", 256)), "1 validation error detected: Value '" + strings.Repeat("a", 256) + "' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.UpdateTimeToLive(tctx(t), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tbl),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: tc.attr}})
			requireAPIErrorExact(t, err, "ValidationException", tc.msg)
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

// TestStreamsShardStartSequenceNumber checks GetShardIterator with the
// shard's advertised StartingSequenceNumber, on an empty shard and on one
// with records, and a SequenceNumber with TRIM_HORIZON or LATEST.
func TestStreamsShardStartSequenceNumber(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("empty", "NEW_IMAGE")
	e.createTable("busy", "")
	start := aws.ToString(e.describe(arn).Shards[0].SequenceNumberRange.StartingSequenceNumber)
	for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeAtSequenceNumber, stypes.ShardIteratorTypeAfterSequenceNumber} {
		t.Run("empty shard "+string(typ), func(t *testing.T) {
			if recs, _ := e.drain(e.mustIterator(arn, typ, start)); len(recs) != 0 {
				t.Fatalf("%d records from an empty shard", len(recs))
			}
		})
	}
	// Writes elsewhere move the store's sequence numbers on: the start
	// advertised before stays valid, and reads what the shard gets later.
	e.put("busy", map[string]types.AttributeValue{"pk": avS("x")})
	e.put("busy", map[string]types.AttributeValue{"pk": avS("y")})
	if later := aws.ToString(e.describe(arn).Shards[0].SequenceNumberRange.StartingSequenceNumber); later == start {
		t.Logf("the advertised start did not move (%s)", start)
	}
	it := e.mustIterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, start)
	e.put("empty", map[string]types.AttributeValue{"pk": avS("a")})
	if recs, _ := e.drain(it); len(recs) != 1 {
		t.Fatalf("%d records after one write, want 1", len(recs))
	}
	// Now the shard starts at its first record.
	first := aws.ToString(e.describe(arn).Shards[0].SequenceNumberRange.StartingSequenceNumber)
	if recs, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, first)); len(recs) != 1 {
		t.Fatalf("AT the first record: %d records, want 1", len(recs))
	}
	if recs, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAfterSequenceNumber, first)); len(recs) != 0 {
		t.Fatalf("AFTER the only record: %d records, want 0", len(recs))
	}
	for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeTrimHorizon, stypes.ShardIteratorTypeLatest} {
		t.Run(string(typ)+" with a SequenceNumber", func(t *testing.T) {
			_, err := e.iterator(arn, typ, first)
			stWantErr(t, err, "ValidationException", "SequenceNumber cannot be specified with ShardIteratorType "+string(typ))
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
