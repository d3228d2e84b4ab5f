package tables_test

import (
	"context"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
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

type keyElem struct{ name, typ string }

func keys(ks []types.KeySchemaElement) []keyElem {
	var out []keyElem
	for _, k := range ks {
		out = append(out, keyElem{aws.ToString(k.AttributeName), string(k.KeyType)})
	}
	return out
}

func equalKeys(a, b []keyElem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEnsureTablesAsDocumented(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t)
	names, err := tables.EnsureTables(ctx, client, "t1-")
	if err != nil {
		t.Fatal(err)
	}
	if names.Sessions != "t1-wallcrawler-sessions" || names.Projects != "t1-wallcrawler-projects" ||
		names.APIKeys != "t1-wallcrawler-api-keys" || names.Contexts != "t1-wallcrawler-contexts" {
		t.Fatalf("names = %+v", names)
	}
	// Idempotent: a second call changes nothing and does not fail.
	if _, err := tables.EnsureTables(ctx, client, "t1-"); err != nil {
		t.Fatalf("second EnsureTables: %v", err)
	}
	list, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := append([]string(nil), list.TableNames...)
	sort.Strings(got)
	want := names.All()
	sort.Strings(want)
	if len(got) != 4 || !equalKeys(toKE(got), toKE(want)) {
		t.Fatalf("tables = %v, want %v", got, want)
	}

	type gsi struct {
		keys []keyElem
		proj types.ProjectionType
	}
	cases := []struct {
		name  string
		key   []keyElem
		gsis  map[string]gsi
		attrs map[string]types.ScalarAttributeType
	}{
		{names.Sessions, []keyElem{{"sessionId", "HASH"}}, map[string]gsi{
			"projectId-createdAt-index": {[]keyElem{{"projectId", "HASH"}, {"createdAt", "RANGE"}}, types.ProjectionTypeAll},
			"status-expiresAt-index":    {[]keyElem{{"status", "HASH"}, {"expiresAt", "RANGE"}}, types.ProjectionTypeKeysOnly},
		}, map[string]types.ScalarAttributeType{"sessionId": "S", "projectId": "S", "createdAt": "S", "status": "S", "expiresAt": "N"}},
		{names.Projects, []keyElem{{"projectId", "HASH"}}, nil, map[string]types.ScalarAttributeType{"projectId": "S"}},
		{names.APIKeys, []keyElem{{"apiKeyHash", "HASH"}}, map[string]gsi{
			"projectId-index": {[]keyElem{{"projectId", "HASH"}}, types.ProjectionTypeAll},
		}, map[string]types.ScalarAttributeType{"apiKeyHash": "S", "projectId": "S"}},
		{names.Contexts, []keyElem{{"contextId", "HASH"}}, nil, map[string]types.ScalarAttributeType{"contextId": "S"}},
	}
	for _, c := range cases {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(c.name)})
		if err != nil {
			t.Fatal(err)
		}
		d := out.Table
		if d.TableStatus != types.TableStatusActive {
			t.Errorf("%s: status %s", c.name, d.TableStatus)
		}
		if !equalKeys(keys(d.KeySchema), c.key) {
			t.Errorf("%s: key %v, want %v", c.name, keys(d.KeySchema), c.key)
		}
		if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("%s: billing mode %+v, want PAY_PER_REQUEST", c.name, d.BillingModeSummary)
		}
		attrs := map[string]types.ScalarAttributeType{}
		for _, a := range d.AttributeDefinitions {
			attrs[aws.ToString(a.AttributeName)] = a.AttributeType
		}
		if len(attrs) != len(c.attrs) {
			t.Errorf("%s: attribute definitions %v, want %v", c.name, attrs, c.attrs)
		}
		for k, v := range c.attrs {
			if attrs[k] != v {
				t.Errorf("%s: attribute %s type %q, want %q", c.name, k, attrs[k], v)
			}
		}
		if len(d.GlobalSecondaryIndexes) != len(c.gsis) {
			t.Errorf("%s: %d GSIs, want %d", c.name, len(d.GlobalSecondaryIndexes), len(c.gsis))
		}
		for _, g := range d.GlobalSecondaryIndexes {
			w, ok := c.gsis[aws.ToString(g.IndexName)]
			if !ok {
				t.Errorf("%s: unexpected GSI %s", c.name, aws.ToString(g.IndexName))
				continue
			}
			if !equalKeys(keys(g.KeySchema), w.keys) {
				t.Errorf("%s/%s: key %v, want %v", c.name, aws.ToString(g.IndexName), keys(g.KeySchema), w.keys)
			}
			if g.Projection == nil || g.Projection.ProjectionType != w.proj {
				t.Errorf("%s/%s: projection %+v, want %s", c.name, aws.ToString(g.IndexName), g.Projection, w.proj)
			}
		}
		if len(d.LocalSecondaryIndexes) != 0 {
			t.Errorf("%s: unexpected LSIs", c.name)
		}
		stream := d.StreamSpecification != nil && aws.ToBool(d.StreamSpecification.StreamEnabled)
		if c.name == names.Sessions {
			if !stream || d.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages {
				t.Errorf("%s: stream %+v, want NEW_AND_OLD_IMAGES", c.name, d.StreamSpecification)
			}
			if aws.ToString(d.LatestStreamArn) == "" {
				t.Errorf("%s: no LatestStreamArn", c.name)
			}
		} else if stream {
			t.Errorf("%s: unexpected stream", c.name)
		}

		ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(c.name)})
		if err != nil {
			t.Fatal(err)
		}
		td := ttl.TimeToLiveDescription
		if c.name == names.Sessions {
			if td == nil || td.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(td.AttributeName) != "expiresAt" {
				t.Errorf("%s: TTL %+v, want ENABLED on expiresAt", c.name, td)
			}
		} else if td != nil && td.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
			t.Errorf("%s: unexpected TTL", c.name)
		}

		cb, err := client.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(c.name)})
		if err != nil {
			t.Fatal(err)
		}
		if p := cb.ContinuousBackupsDescription.PointInTimeRecoveryDescription; p == nil || p.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
			t.Errorf("%s: PITR %+v, want ENABLED", c.name, p)
		}
	}
}

func toKE(s []string) []keyElem {
	out := make([]keyElem, len(s))
	for i, v := range s {
		out[i] = keyElem{name: v}
	}
	return out
}

func TestEnsureTablesDefaultPrefixAndConcurrentCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := tables.EnsureTables(ctx, client, "")
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, n := range []string{"wallcrawler-sessions", "wallcrawler-projects", "wallcrawler-api-keys", "wallcrawler-contexts"} {
		if _, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(n)}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}
