package ddb_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

func tag(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

func renderTags(tags []types.Tag) string {
	parts := make([]string, len(tags))
	for i, tg := range tags {
		parts[i] = aws.ToString(tg.Key) + "=" + aws.ToString(tg.Value)
	}
	return strings.Join(parts, ",")
}

func listTags(t *testing.T, c *dynamodb.Client, arn string) string {
	t.Helper()
	out, err := c.ListTagsOfResource(tctx(t), &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn)})
	requireNoError(t, err, "ListTagsOfResource")
	return renderTags(out.Tags)
}

func tableArn(t *testing.T, c *dynamodb.Client, name string) string {
	t.Helper()
	d, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	requireNoError(t, err, "DescribeTable")
	return aws.ToString(d.Table.TableArn)
}

func TestTagResource(t *testing.T) {
	dir := t.TempDir()
	s, err := ddb.Open(dir, &ddb.Options{NoSync: true})
	requireNoError(t, err, "Open")
	c := ddb.NewClient(s, noRetry)
	in := tableSpec{Name: "tagged", Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "g:S"}}}.input()
	in.Tags = []types.Tag{tag("created", "yes")}
	_, err = c.CreateTable(tctx(t), in)
	requireNoError(t, err, "CreateTable")
	arn := tableArn(t, c, "tagged")
	if got := listTags(t, c, arn); got != "created=yes" {
		t.Fatalf("tags from CreateTable: %s", got)
	}
	steps := []struct {
		name  string
		tags  []types.Tag // TagResource, when set
		untag []string    // else UntagResource
		want  string
	}{
		{name: "add two", tags: []types.Tag{tag("env", "test"), tag("team", "db")}, want: "created=yes,env=test,team=db"},
		{name: "overwrite a value", tags: []types.Tag{tag("env", "prod"), tag("empty", "")}, want: "created=yes,env=prod,team=db,empty="},
		{name: "remove, ignoring unknown keys", untag: []string{"team", "nope"}, want: "created=yes,env=prod,empty="},
		{name: "remove the rest", untag: []string{"created", "env", "empty"}, want: ""},
		{name: "add again", tags: []types.Tag{tag("a b", "c:d/e+f=g.h_i-j@k")}, want: "a b=c:d/e+f=g.h_i-j@k"},
	}
	for _, st := range steps {
		if st.tags != nil {
			_, err = c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: st.tags})
		} else {
			_, err = c.UntagResource(tctx(t), &dynamodb.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: st.untag})
		}
		requireNoError(t, err, st.name)
		if got := listTags(t, c, arn); got != st.want {
			t.Fatalf("%s: tags %q, want %q", st.name, got, st.want)
		}
	}
	// Tags survive a restart, and item operations still work on the table.
	putItems(t, c, "tagged", attrs{"pk": avS("x"), "g": avS("y")})
	requireNoError(t, s.Close(), "Close")
	s, err = ddb.Open(dir, &ddb.Options{NoSync: true})
	requireNoError(t, err, "reopen")
	t.Cleanup(func() { s.Close() })
	c = ddb.NewClient(s, noRetry)
	if got := listTags(t, c, arn); got != "a b=c:d/e+f=g.h_i-j@k" {
		t.Fatalf("tags after restart: %q", got)
	}
	out, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String("tagged"), IndexName: aws.String("gsi"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("y"))})
	requireNoError(t, err, "Query")
	if out.Count != 1 {
		t.Fatalf("index query found %d items", out.Count)
	}
}

func TestTagResourceErrors(t *testing.T) {
	c := newClient(t)
	name := createTable(t, c, tableSpec{Hash: "pk:S"})
	arn := tableArn(t, c, name)
	fifty := make([]types.Tag, 50)
	for i := range fifty {
		fifty[i] = tag(fmt.Sprintf("k%d", i), "v")
	}
	missing := strings.TrimSuffix(arn, name) + "no-such-table"
	cases := []struct {
		name    string
		call    func() error
		code    string
		message string
	}{
		{"tag an unknown table", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(missing), Tags: []types.Tag{tag("a", "b")}})
			return err
		}, "ResourceNotFoundException", "Requested resource not found: ResourcArn: " + missing + " not found"},
		{"list an unknown table", func() error {
			_, err := c.ListTagsOfResource(tctx(t), &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(missing)})
			return err
		}, "ResourceNotFoundException", "not found"},
		{"untag an unknown table", func() error {
			_, err := c.UntagResource(tctx(t), &dynamodb.UntagResourceInput{ResourceArn: aws.String(missing), TagKeys: []string{"a"}})
			return err
		}, "ResourceNotFoundException", "not found"},
		{"another account", func() error {
			_, err := c.ListTagsOfResource(tctx(t), &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(strings.Replace(arn, ":000000000000:", ":111111111111:", 1))})
			return err
		}, "ResourceNotFoundException", "not found"},
		{"malformed ARN", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String("not-a-valid-arn"), Tags: []types.Tag{tag("a", "b")}})
			return err
		}, "ValidationException", "Invalid TableArn: Invalid ResourceArn provided as input not-a-valid-arn"},
		{"index ARN", func() error {
			_, err := c.ListTagsOfResource(tctx(t), &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn + "/index/gsi")})
			return err
		}, "ValidationException", "Invalid TableArn: Invalid ResourceArn provided as input"},
		{"no tags", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{}})
			return err
		}, "ValidationException", "Atleast one Tag needs to be provided as Input."},
		{"no tag keys", func() error {
			_, err := c.UntagResource(tctx(t), &dynamodb.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{}})
			return err
		}, "ValidationException", "Atleast one Tag Key needs to be provided as Input."},
		{"key too long", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag(strings.Repeat("k", 129), "v")}})
			return err
		}, "ValidationException", "at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128"},
		{"value too long", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag("k", strings.Repeat("v", 257))}})
			return err
		}, "ValidationException", "at 'tags.1.member.value' failed to satisfy constraint: Member must have length less than or equal to 256"},
		{"bad character", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag("ok", "#!%")}})
			return err
		}, "ValidationException", "may only contain"},
		{"reserved prefix", func() error {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag("aws:x", "v")}})
			return err
		}, "ValidationException", "aws:"},
		{"more than 50 tags", func() error {
			if _, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: fifty}); err != nil {
				return err
			}
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag("one-more", "v")}})
			return err
		}, "ValidationException", "limit of 50"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireAPIError(t, tc.call(), tc.code, tc.message)
		})
	}
	// Overwriting keys at the limit is fine; the rejected tag is absent.
	_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{tag("k0", "w")}})
	requireNoError(t, err, "overwrite at the limit")
	if got := listTags(t, c, arn); strings.Count(got, "=") != 50 || !strings.HasPrefix(got, "k0=w,") {
		t.Fatalf("tags %q", got)
	}
}

func TestDescribeLimits(t *testing.T) {
	c := newClient(t)
	out, err := c.DescribeLimits(tctx(t), &dynamodb.DescribeLimitsInput{})
	requireNoError(t, err, "DescribeLimits")
	got := fmt.Sprint(aws.ToInt64(out.AccountMaxReadCapacityUnits), aws.ToInt64(out.AccountMaxWriteCapacityUnits), aws.ToInt64(out.TableMaxReadCapacityUnits), aws.ToInt64(out.TableMaxWriteCapacityUnits))
	if got != "80000 80000 40000 40000" {
		t.Fatalf("limits %s", got)
	}
}

func TestDescribeEndpoints(t *testing.T) {
	c := newClient(t)
	out, err := c.DescribeEndpoints(tctx(t), &dynamodb.DescribeEndpointsInput{})
	requireNoError(t, err, "DescribeEndpoints")
	if len(out.Endpoints) != 1 || aws.ToString(out.Endpoints[0].Address) != "ddb.in-process" || out.Endpoints[0].CachePeriodInMinutes != 1440 {
		t.Fatalf("endpoints %d, first %q", len(out.Endpoints), aws.ToString(out.Endpoints[0].Address))
	}
}

// TestConcurrentMetadataChanges runs operations that each replace a table's
// metadata at the same time: none may see the table as missing.
func TestConcurrentMetadataChanges(t *testing.T) {
	skipIfExternal(t, "concurrency stress")
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	d, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(tab)})
	if err != nil {
		t.Fatal(err)
	}
	arn := d.Table.TableArn
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := range 40 {
			_, err := c.TagResource(tctx(t), &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String(fmt.Sprintf("k%d", i%10)), Value: aws.String("v")}}})
			if err != nil {
				errs <- err
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 20 {
			_, err := c.UpdateContinuousBackups(tctx(t), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(tab),
				PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(i%2 == 0)}})
			if err != nil {
				errs <- err
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 20 {
			_, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: aws.String(tab), DeletionProtectionEnabled: aws.Bool(i%2 == 0)})
			if err != nil {
				errs <- err
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
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
