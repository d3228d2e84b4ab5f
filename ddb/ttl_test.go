package ddb_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// stubClock is a settable clock for Options.Now.
type stubClock struct{ unix atomic.Int64 }

func (c *stubClock) Now() time.Time      { return time.Unix(c.unix.Load(), 0) }
func (c *stubClock) Set(t time.Time)     { c.unix.Store(t.Unix()) }
func (c *stubClock) Add(d time.Duration) { c.unix.Add(int64(d / time.Second)) }

func TestTTLSweep(t *testing.T) {
	clock := &stubClock{}
	clock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := ddb.Open(t.TempDir(), &ddb.Options{Now: clock.Now, TTLInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := ddb.NewClient(s)
	ctx := context.Background()
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("sessions"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("status"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("expiresAt"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("status-expiresAt-index"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("status"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("expiresAt"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now().Unix()
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	items := map[string]types.AttributeValue{
		"before-enable":  n(now - 10), // written before TTL is enabled: indexed by the enable
		"past":           n(now - 60),
		"fraction":       &types.AttributeValueMemberN{Value: strconv.FormatInt(now-1, 10) + ".9"},
		"now":            n(now), // not yet: expiry must be strictly in the past
		"future":         n(now + 3600),
		"ancient":        n(now - 6*365*24*3600), // more than five years ago: ignored
		"negative":       n(-5),
		"milliseconds":   n(now * 1000), // far future in seconds
		"updated-future": n(now - 60),   // moved to the future below
	}
	put := func(id string, exp types.AttributeValue) {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("sessions"), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "status": &types.AttributeValueMemberS{Value: "RUNNING"}, "expiresAt": exp}})
		if err != nil {
			t.Fatalf("put %s: %v", id, err)
		}
	}
	put("before-enable", items["before-enable"])
	// A String TTL never expires (expiresAt is an N index key here, so use another attribute name via a second table below).
	d, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("sessions")})
	if err != nil || d.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Fatalf("describe before enable: %+v %v", d, err)
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("sessions"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("expiresAt")}})
	if err != nil {
		t.Fatal(err)
	}
	for id, v := range items {
		if id != "before-enable" {
			put(id, v)
		}
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("sessions"),
		Key:                       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "updated-future"}},
		UpdateExpression:          aws.String("SET expiresAt = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": n(now + 60)}})
	if err != nil {
		t.Fatal(err)
	}
	// Expired items are still readable until swept, as in DynamoDB.
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("sessions"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "past"}}})
	if err != nil || got.Item == nil {
		t.Fatalf("expired item before the sweep: %v %v", got, err)
	}
	deleted, err := s.SweepExpired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 3 {
		t.Errorf("deleted %d items, want 3 (before-enable, past, fraction)", deleted)
	}
	want := map[string]bool{"now": true, "future": true, "ancient": true, "negative": true, "milliseconds": true, "updated-future": true}
	check := func(want map[string]bool) {
		t.Helper()
		scan, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("sessions")})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, it := range scan.Items {
			have[it["id"].(*types.AttributeValueMemberS).Value] = true
		}
		for id := range want {
			if !have[id] {
				t.Errorf("%s was deleted", id)
			}
		}
		for id := range have {
			if !want[id] {
				t.Errorf("%s survived", id)
			}
		}
		// The index follows the table.
		q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("sessions"), IndexName: aws.String("status-expiresAt-index"),
			KeyConditionExpression:    aws.String("#s = :r"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: "RUNNING"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range q.Items {
			if id := it["id"].(*types.AttributeValueMemberS).Value; !want[id] {
				t.Errorf("index still lists %s", id)
			}
		}
	}
	check(want)
	// An hour and a minute later, "now", "updated-future" and "future" are gone too.
	clock.Add(3601 * time.Second)
	if _, err := s.SweepExpired(ctx); err != nil {
		t.Fatal(err)
	}
	delete(want, "now")
	delete(want, "future")
	delete(want, "updated-future")
	check(want)

	// Disabling needs the same attribute name; enabling twice fails.
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("sessions"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("expiresAt")}})
	requireAPIError(t, err, "ValidationException", "TimeToLive is already enabled")
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("sessions"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(false), AttributeName: aws.String("other")}})
	requireAPIError(t, err, "ValidationException", "different AttributeName")
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("sessions"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(false), AttributeName: aws.String("expiresAt")}})
	if err != nil {
		t.Fatal(err)
	}
	// With TTL disabled nothing expires.
	put("late", n(clock.Now().Unix()-100))
	if n, _ := s.SweepExpired(ctx); n != 0 {
		t.Fatalf("swept %d items with TTL disabled", n)
	}
}

// TestTTLBackgroundSweeper checks that the sweeper runs by itself.
func TestTTLBackgroundSweeper(t *testing.T) {
	s, err := ddb.Open(t.TempDir(), &ddb.Options{TTLInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := ddb.NewClient(s)
	ctx := context.Background()
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("ttl-bg"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ttl-bg"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("ttl")}})
	if err != nil {
		t.Fatal(err)
	}
	for id, v := range map[string]types.AttributeValue{
		"x":      &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix()-5, 10)},
		"string": &types.AttributeValueMemberS{Value: strconv.FormatInt(time.Now().Unix()-5, 10)}, // not a Number: never expires
	} {
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ttl-bg"), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "ttl": v}})
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ttl-bg"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil {
			s, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ttl-bg"), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "string"}}})
			if err != nil || s.Item == nil {
				t.Fatalf("an item with a String TTL was deleted (%v)", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the background sweeper did not delete the expired item")
		}
		time.Sleep(20 * time.Millisecond)
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
