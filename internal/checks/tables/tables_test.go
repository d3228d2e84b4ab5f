package tables_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/tables"
)

func newClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ddb.NewClient(s)
}

func keyString(ks []types.KeySchemaElement) []string {
	var out []string
	for _, k := range ks {
		out = append(out, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return out
}

// TestEnsureTablesAsDocumented describes the tables EnsureTables creates
// and compares them with the original design: USER keyed by PK (the user
// id) and SK ("USER") with the email index (email, PK); CHECK keyed by PK
// (the check id) and SK ("CHECK") with the user-check index (userid, PK)
// and the type-status index (checkType, status) projecting PK, userid and
// createdAt. Billing is on demand; the CHECK table has TTL on expiresAt
// for its run-history items (quarry's addition); no streams.
func TestEnsureTablesAsDocumented(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t)
	names, err := tables.EnsureTables(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	// Without a prefix the tables have the document's names.
	if names.Users != "USER" || names.Checks != "CHECK" {
		t.Fatalf("names %+v", names)
	}
	if _, err := tables.EnsureTables(ctx, client, ""); err != nil {
		t.Fatalf("second EnsureTables: %v", err)
	}
	if other, err := tables.EnsureTables(ctx, client, tables.DefaultPrefix); err != nil || other.Users != "checks-USER" || other.Checks != "checks-CHECK" {
		t.Fatalf("prefix %s: %+v %v", tables.DefaultPrefix, other, err)
	}

	type gsi struct {
		key    []string
		proj   types.ProjectionType
		nonKey []string
	}
	cases := []struct {
		table string
		key   []string
		attrs map[string]types.ScalarAttributeType
		gsis  map[string]gsi
		ttl   string
	}{
		{names.Users, []string{"PK HASH", "SK RANGE"},
			map[string]types.ScalarAttributeType{"PK": "S", "SK": "S", "email": "S"},
			map[string]gsi{tables.EmailIndex: {[]string{"email HASH", "PK RANGE"}, types.ProjectionTypeAll, nil}}, ""},
		{names.Checks, []string{"PK HASH", "SK RANGE"},
			map[string]types.ScalarAttributeType{"PK": "S", "SK": "S", "userid": "S", "checkType": "S", "status": "S"},
			map[string]gsi{
				tables.UserChecksIndex: {[]string{"userid HASH", "PK RANGE"}, types.ProjectionTypeAll, nil},
				// PK, a key of the table, is in every index; the
				// document's other projected attributes are listed.
				tables.TypeStatusIndex: {[]string{"checkType HASH", "status RANGE"}, types.ProjectionTypeInclude, []string{"createdAt", "userid"}},
			}, tables.TTLAttribute},
	}
	for _, c := range cases {
		t.Run(c.table, func(t *testing.T) {
			out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.table)})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Table
			if got := keyString(d.KeySchema); !slices.Equal(got, c.key) {
				t.Errorf("key %v, want %v", got, c.key)
			}
			attrs := map[string]types.ScalarAttributeType{}
			for _, a := range d.AttributeDefinitions {
				attrs[aws.ToString(a.AttributeName)] = a.AttributeType
			}
			if len(attrs) != len(c.attrs) {
				t.Errorf("attribute definitions %v, want %v", attrs, c.attrs)
			}
			for k, v := range c.attrs {
				if attrs[k] != v {
					t.Errorf("attribute %s: %q, want %q", k, attrs[k], v)
				}
			}
			if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
				t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.BillingModeSummary)
			}
			if len(d.GlobalSecondaryIndexes) != len(c.gsis) || len(d.LocalSecondaryIndexes) != 0 {
				t.Errorf("%d GSIs and %d LSIs, want %d and none", len(d.GlobalSecondaryIndexes), len(d.LocalSecondaryIndexes), len(c.gsis))
			}
			for _, g := range d.GlobalSecondaryIndexes {
				name := aws.ToString(g.IndexName)
				w, ok := c.gsis[name]
				if !ok {
					t.Errorf("unexpected GSI %s", name)
					continue
				}
				if got := keyString(g.KeySchema); !slices.Equal(got, w.key) {
					t.Errorf("%s: key %v, want %v", name, got, w.key)
				}
				if g.Projection == nil || g.Projection.ProjectionType != w.proj {
					t.Errorf("%s: projection %+v, want %s", name, g.Projection, w.proj)
					continue
				}
				nk := slices.Clone(g.Projection.NonKeyAttributes)
				sort.Strings(nk)
				if !slices.Equal(nk, w.nonKey) {
					t.Errorf("%s: projected attributes %v, want %v", name, nk, w.nonKey)
				}
			}
			if d.StreamSpecification != nil && aws.ToBool(d.StreamSpecification.StreamEnabled) {
				t.Errorf("unexpected stream %+v", d.StreamSpecification)
			}
			ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(c.table)})
			if err != nil {
				t.Fatal(err)
			}
			td := ttl.TimeToLiveDescription
			enabled := td != nil && td.TimeToLiveStatus == types.TimeToLiveStatusEnabled
			if c.ttl == "" && enabled {
				t.Errorf("unexpected TTL %+v", td)
			}
			if c.ttl != "" && (!enabled || aws.ToString(td.AttributeName) != c.ttl) {
				t.Errorf("TTL %+v, want ENABLED on %s", td, c.ttl)
			}
		})
	}

	// What the type-status index returns of a document-shaped item:
	// exactly the keys and the projected attributes.
	item := map[string]types.AttributeValue{
		"PK": s("abcdef"), "SK": s("CHECK"), "userid": s("123456"), "url": s("https://example.com"),
		"checkType": s("AVAILABILITY"), "delayMs": &types.AttributeValueMemberN{Value: "300000"}, "status": s("ACTIVE"),
		"attributes": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"keyword": s("Example")}},
		"createdAt":  s("2024-06-29T14:00:00Z"), "updatedAt": s("2024-06-29T14:00:00Z"), "lastExecutedAt": s("2024-06-29T14:05:00Z"),
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.Checks), Item: item}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		index, cond string
		values      map[string]types.AttributeValue
		want        []string
	}{
		{tables.TypeStatusIndex, "checkType = :t AND #s = :s", map[string]types.AttributeValue{":t": s("AVAILABILITY"), ":s": s("ACTIVE")},
			[]string{"PK", "SK", "checkType", "createdAt", "status", "userid"}},
		{tables.UserChecksIndex, "userid = :u AND PK = :p", map[string]types.AttributeValue{":u": s("123456"), ":p": s("abcdef")},
			[]string{"PK", "SK", "attributes", "checkType", "createdAt", "delayMs", "lastExecutedAt", "status", "updatedAt", "url", "userid"}},
	} {
		in := &dynamodb.QueryInput{TableName: aws.String(names.Checks), IndexName: aws.String(q.index),
			KeyConditionExpression: aws.String(q.cond), ExpressionAttributeValues: q.values}
		if q.index == tables.TypeStatusIndex {
			in.ExpressionAttributeNames = map[string]string{"#s": "status"}
		}
		out, err := client.Query(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) != 1 {
			t.Fatalf("%s: %d items", q.index, len(out.Items))
		}
		var got []string
		for k := range out.Items[0] {
			got = append(got, k)
		}
		sort.Strings(got)
		if !slices.Equal(got, q.want) {
			t.Errorf("%s returns %v, want %v", q.index, got, q.want)
		}
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
