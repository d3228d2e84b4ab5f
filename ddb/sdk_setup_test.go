package ddb_test

// The harness of the SDK test suite (the ddb/sdk_*_test.go files).
//
// By default every test opens a fresh embedded store in t.TempDir() and talks
// to it through ddb.NewClient. With QUARRY_DDB_TEST_ENDPOINT set (for
// example to a dynalite or DynamoDB Local instance) the same tests run
// against that endpoint instead; tables then get unique names so tests can
// run in parallel against the shared server.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/ddb"
)

// endpointEnv names the environment variable selecting an external endpoint.
const endpointEnv = "QUARRY_DDB_TEST_ENDPOINT"

// externalEndpoint returns the external endpoint under test, or "".
func externalEndpoint() string { return os.Getenv(endpointEnv) }

// isExternal reports whether the suite runs against an external endpoint.
func isExternal() bool { return externalEndpoint() != "" }

// skipIfExternal skips a test the external peer (dynalite) cannot pass; the
// test still runs against the embedded store.
func skipIfExternal(t *testing.T, reason string) {
	t.Helper()
	if isExternal() {
		t.Skip("not supported by the external endpoint: " + reason)
	}
}

// noRetry disables the SDK's retries so error cases fail fast and report
// the server's first answer.
func noRetry(o *dynamodb.Options) {
	o.RetryMaxAttempts = 1
}

// newStore opens a fresh embedded store in t.TempDir(), closed at cleanup.
func newStore(t *testing.T) *ddb.Store {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatalf("ddb.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newClient returns a DynamoDB client for the store under test: the external
// endpoint when QUARRY_DDB_TEST_ENDPOINT is set, else a fresh embedded store.
func newClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	if ep := externalEndpoint(); ep != "" {
		return dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(ep),
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDQUARRYTEST", "quarry-test-secret", ""),
		}, noRetry)
	}
	return ddb.NewClient(newStore(t), noRetry)
}

var nameSanitizer = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// uniqueName returns a table name unique to this test run: the sanitized
// test name plus a random suffix, within DynamoDB's 3..255 characters.
func uniqueName(t *testing.T) string {
	base := nameSanitizer.ReplaceAllString(t.Name(), "_")
	if len(base) > 200 {
		base = base[:200]
	}
	return fmt.Sprintf("%s-%08x", base, rand.Uint32())
}

// tctx returns a context for one request: t.Context() bounded by a timeout.
func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// tableSpec is a compact description of a table to create.
type tableSpec struct {
	Name  string // default: uniqueName(t)
	Hash  string // "pk:S"
	Range string // "sk:N" (optional)
	GSIs  []indexSpec
	LSIs  []indexSpec
	// Provisioned selects PROVISIONED billing (5/5) instead of PAY_PER_REQUEST.
	Provisioned bool
	Stream      types.StreamViewType
}

// indexSpec is a secondary index of a tableSpec.
type indexSpec struct {
	Name       string
	Hash       string // "gpk:S"
	Range      string // optional
	Projection types.ProjectionType
	Include    []string
}

func splitKey(s string) (string, types.ScalarAttributeType) {
	name, typ, ok := strings.Cut(s, ":")
	if !ok {
		panic("key spec must be name:type: " + s)
	}
	return name, types.ScalarAttributeType(typ)
}

func specKeySchema(hash, rng string) []types.KeySchemaElement {
	h, _ := splitKey(hash)
	ks := []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}}
	if rng != "" {
		r, _ := splitKey(rng)
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(r), KeyType: types.KeyTypeRange})
	}
	return ks
}

func specProjection(ix indexSpec) *types.Projection {
	p := &types.Projection{ProjectionType: ix.Projection}
	if p.ProjectionType == "" {
		p.ProjectionType = types.ProjectionTypeAll
	}
	if len(ix.Include) > 0 {
		p.NonKeyAttributes = ix.Include
	}
	return p
}

var provisioned5 = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}

// input builds the CreateTableInput of the spec.
func (sp tableSpec) input() *dynamodb.CreateTableInput {
	defs := map[string]types.ScalarAttributeType{}
	add := func(s string) {
		if s != "" {
			n, typ := splitKey(s)
			defs[n] = typ
		}
	}
	add(sp.Hash)
	add(sp.Range)
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(sp.Name),
		KeySchema: specKeySchema(sp.Hash, sp.Range),
	}
	if sp.Provisioned {
		in.BillingMode = types.BillingModeProvisioned
		in.ProvisionedThroughput = provisioned5
	} else {
		in.BillingMode = types.BillingModePayPerRequest
	}
	for _, ix := range sp.GSIs {
		add(ix.Hash)
		add(ix.Range)
		g := types.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: specKeySchema(ix.Hash, ix.Range), Projection: specProjection(ix)}
		if sp.Provisioned {
			g.ProvisionedThroughput = provisioned5
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, g)
	}
	for _, ix := range sp.LSIs {
		add(ix.Hash)
		add(ix.Range)
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: specKeySchema(ix.Hash, ix.Range), Projection: specProjection(ix)})
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: defs[n]})
	}
	if sp.Stream != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: sp.Stream}
	}
	return in
}

// createTable creates the table of spec (named uniquely unless spec.Name is
// set), waits until it is ACTIVE and deletes it at cleanup. It returns the
// table's name.
func createTable(t *testing.T, c *dynamodb.Client, spec tableSpec) string {
	t.Helper()
	if spec.Name == "" {
		spec.Name = uniqueName(t)
	}
	createTableInput(t, c, spec.input())
	return spec.Name
}

// createTableInput creates a table from a raw input, waits until it is
// ACTIVE and registers its deletion.
func createTableInput(t *testing.T, c *dynamodb.Client, in *dynamodb.CreateTableInput) *dynamodb.CreateTableOutput {
	t.Helper()
	out, err := c.CreateTable(tctx(t), in)
	if err != nil {
		t.Fatalf("CreateTable %s: %v", aws.ToString(in.TableName), err)
	}
	name := aws.ToString(in.TableName)
	t.Cleanup(func() { dropTable(c, name) })
	waitActive(t, c, name)
	return out
}

// dropTable deletes a table, ignoring errors (it may already be gone).
func dropTable(c *dynamodb.Client, name string) {
	cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.DeleteTable(cx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
}

// waitActive waits until the table and all its GSIs are ACTIVE.
func waitActive(t *testing.T, c *dynamodb.Client, name string) *types.TableDescription {
	t.Helper()
	// Generous: a backfill on a loaded machine or a remote endpoint.
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", name, err)
		}
		active := d.Table.TableStatus == types.TableStatusActive
		for _, g := range d.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return d.Table
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s not ACTIVE after 60s: %s", name, d.Table.TableStatus)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attrs is an item or a key.
type attrs = map[string]types.AttributeValue

// Attribute value constructors.
func avS(s string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: s} }
func avN(n string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: n} }
func avB(b []byte) types.AttributeValue     { return &types.AttributeValueMemberB{Value: b} }
func avBool(b bool) types.AttributeValue    { return &types.AttributeValueMemberBOOL{Value: b} }
func avNull() types.AttributeValue          { return &types.AttributeValueMemberNULL{Value: true} }
func avSS(s ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: s} }
func avNS(n ...string) types.AttributeValue { return &types.AttributeValueMemberNS{Value: n} }
func avBS(b ...[]byte) types.AttributeValue { return &types.AttributeValueMemberBS{Value: b} }
func avM(m attrs) types.AttributeValue      { return &types.AttributeValueMemberM{Value: m} }
func avL(l ...types.AttributeValue) types.AttributeValue {
	if l == nil {
		l = []types.AttributeValue{}
	}
	return &types.AttributeValueMemberL{Value: l}
}

// renderAV returns a canonical text of an attribute value: sets are sorted,
// maps ordered by key, so equal values render equally.
func renderAV(v types.AttributeValue) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S:%q", v.Value)
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberB:
		return "B:" + base64.StdEncoding.EncodeToString(v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%v", v.Value)
	case *types.AttributeValueMemberNULL:
		return fmt.Sprintf("NULL:%v", v.Value)
	case *types.AttributeValueMemberM:
		return "M:" + renderItem(v.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = renderAV(e)
		}
		return "L:[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberSS:
		return "SS:" + sortedQuoted(v.Value)
	case *types.AttributeValueMemberNS:
		return "NS:" + sortedQuoted(v.Value)
	case *types.AttributeValueMemberBS:
		s := make([]string, len(v.Value))
		for i, b := range v.Value {
			s[i] = base64.StdEncoding.EncodeToString(b)
		}
		return "BS:" + sortedQuoted(s)
	}
	return fmt.Sprintf("%T", v)
}

func sortedQuoted(in []string) string {
	s := append([]string(nil), in...)
	sort.Strings(s)
	for i := range s {
		s[i] = fmt.Sprintf("%q", s[i])
	}
	return "{" + strings.Join(s, ",") + "}"
}

// renderItem returns the canonical text of an item (nil renders as "<none>").
func renderItem(it attrs) string {
	if it == nil {
		return "<none>"
	}
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q=%s", k, renderAV(it[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// requireItem fails the test unless got equals want (nil want: no item).
func requireItem(t *testing.T, got, want attrs) {
	t.Helper()
	if len(got) == 0 && want == nil {
		return
	}
	if g, w := renderItem(got), renderItem(want); g != w {
		t.Fatalf("item mismatch\n got: %s\nwant: %s", g, w)
	}
}

// putItems writes items into a table.
func putItems(t *testing.T, c *dynamodb.Client, table string, items ...attrs) {
	t.Helper()
	for _, it := range items {
		if _, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatalf("PutItem %s: %v", renderItem(it), err)
		}
	}
}

// batchPut writes many items with BatchWriteItem, 25 at a time.
func batchPut(t *testing.T, c *dynamodb.Client, table string, items []attrs) {
	t.Helper()
	for len(items) > 0 {
		n := min(25, len(items))
		reqs := make([]types.WriteRequest, n)
		for i, it := range items[:n] {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
		}
		pending := map[string][]types.WriteRequest{table: reqs}
		for len(pending) > 0 {
			out, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				t.Fatalf("BatchWriteItem: %v", err)
			}
			pending = out.UnprocessedItems
		}
		items = items[n:]
	}
}

// getItem reads one item (consistently); nil when absent.
func getItem(t *testing.T, c *dynamodb.Client, table string, key attrs) attrs {
	t.Helper()
	out, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem %s: %v", renderItem(key), err)
	}
	return out.Item
}

// requireAPIError fails the test unless err is an API error with the given
// code whose message contains msg (case-insensitively; "" matches any).
func requireAPIError(t *testing.T, err error, code, msg string) smithy.APIError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s (%q)", code, msg)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %T %v, want API error %s", err, err, code)
	}
	if apiErr.ErrorCode() != code {
		t.Fatalf("got error %s: %s; want %s (%q)", apiErr.ErrorCode(), apiErr.ErrorMessage(), code, msg)
	}
	if !strings.Contains(strings.ToLower(apiErr.ErrorMessage()), strings.ToLower(msg)) {
		t.Fatalf("got %s message %q; want it to contain %q", code, apiErr.ErrorMessage(), msg)
	}
	return apiErr
}

// apiErrorCode returns the API error code of err, or "" if it has none.
func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// requireNoError fails the test on error.
func requireNoError(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eaNames and eaValues build ExpressionAttributeNames/Values from pairs.
func eaNames(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func eaValues(kv ...any) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return m
}

// nAttr returns the text of an N attribute of an item ("" when absent).
func nAttr(it attrs, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// sAttr returns the text of an S attribute of an item ("" when absent).
func sAttr(it attrs, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
