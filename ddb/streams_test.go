package ddb_test

// DynamoDB Streams through aws-sdk-go-v2: a dynamodb and a dynamodbstreams
// client on one in-process store, with a settable clock.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/quarrydb/quarry/ddb"
)

// stClock is a settable millisecond clock for Options.Now.
type stClock struct{ ms atomic.Int64 }

func newSTClock() *stClock {
	c := &stClock{}
	c.ms.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

func (c *stClock) Now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *stClock) Add(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *stClock) Seconds() int64      { return c.ms.Load() / 1000 }
func (c *stClock) Options() *ddb.Options {
	return &ddb.Options{Now: c.Now, NoSync: true, TTLInterval: -1}
}

// stEnv is a store with its two clients.
type stEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *stClock
	store *ddb.Store
	db    *dynamodb.Client
	st    *dynamodbstreams.Client
}

func stOpen(t *testing.T, dir string, clock *stClock, opts *ddb.Options) *stEnv {
	t.Helper()
	if opts == nil {
		opts = clock.Options()
	}
	s, err := ddb.Open(dir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &stEnv{t: t, ctx: context.Background(), clock: clock, store: s,
		db: ddb.NewClient(s, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }),
		st: ddb.NewStreamsClient(s, func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })}
}

func stNew(t *testing.T) *stEnv {
	t.Helper()
	e := stOpen(t, t.TempDir(), newSTClock(), nil)
	t.Cleanup(func() { e.store.Close() })
	return e
}

func stS(v string) dtypes.AttributeValue { return &dtypes.AttributeValueMemberS{Value: v} }
func stN(v int) dtypes.AttributeValue    { return &dtypes.AttributeValueMemberN{Value: strconv.Itoa(v)} }

func stWantErr(t *testing.T, err error, code, msg string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want %s", err, code)
	}
	if ae.ErrorCode() != code || !strings.Contains(ae.ErrorMessage(), msg) {
		t.Fatalf("got %s: %s; want %s containing %q", ae.ErrorCode(), ae.ErrorMessage(), code, msg)
	}
}

// createTable creates table name (hash key pk) with a stream of viewType
// ("" for none) and returns the stream ARN.
func (e *stEnv) createTable(name, viewType string) string {
	e.t.Helper()
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: dtypes.ScalarAttributeTypeS}},
		KeySchema:            []dtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dtypes.KeyTypeHash}},
		BillingMode:          dtypes.BillingModePayPerRequest,
	}
	if viewType != "" {
		in.StreamSpecification = &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewType(viewType)}
	}
	out, err := e.db.CreateTable(e.ctx, in)
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
	return aws.ToString(out.TableDescription.LatestStreamArn)
}

func (e *stEnv) put(table string, item map[string]dtypes.AttributeValue) {
	e.t.Helper()
	if _, err := e.db.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		e.t.Fatalf("put: %v", err)
	}
}

// listArns returns the stream ARNs ListStreams answers for in.
func (e *stEnv) listArns(in *dynamodbstreams.ListStreamsInput) []string {
	e.t.Helper()
	out, err := e.st.ListStreams(e.ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	var arns []string
	for _, s := range out.Streams {
		arns = append(arns, aws.ToString(s.StreamArn))
	}
	return arns
}

func (e *stEnv) describe(arn string) *stypes.StreamDescription {
	e.t.Helper()
	out, err := e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		e.t.Fatalf("describe stream: %v", err)
	}
	return out.StreamDescription
}

func (e *stEnv) shardID(arn string) string {
	e.t.Helper()
	d := e.describe(arn)
	if len(d.Shards) != 1 {
		e.t.Fatalf("shards: %+v", d.Shards)
	}
	return aws.ToString(d.Shards[0].ShardId)
}

func (e *stEnv) iterator(arn string, typ stypes.ShardIteratorType, seq string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(e.shardID(arn)), ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := e.st.GetShardIterator(e.ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ShardIterator), nil
}

func (e *stEnv) mustIterator(arn string, typ stypes.ShardIteratorType, seq string) string {
	e.t.Helper()
	it, err := e.iterator(arn, typ, seq)
	if err != nil {
		e.t.Fatalf("GetShardIterator %s: %v", typ, err)
	}
	return it
}

// drain reads from it until a page comes back empty (or the shard ends)
// and returns the records and the last NextShardIterator ("" when closed).
func (e *stEnv) drain(it string) ([]stypes.Record, string) {
	e.t.Helper()
	var all []stypes.Record
	for it != "" {
		out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
		if err != nil {
			e.t.Fatalf("GetRecords: %v", err)
		}
		all = append(all, out.Records...)
		it = aws.ToString(out.NextShardIterator)
		if len(out.Records) == 0 {
			break
		}
	}
	return all, it
}

func (e *stEnv) readAll(arn string) []stypes.Record {
	e.t.Helper()
	recs, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, ""))
	return recs
}

func stSeq(r stypes.Record) string { return aws.ToString(r.Dynamodb.SequenceNumber) }

func stAttrS(m map[string]stypes.AttributeValue, name string) string {
	if v, ok := m[name].(*stypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func stAttrN(m map[string]stypes.AttributeValue, name string) string {
	if v, ok := m[name].(*stypes.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// stCheckOrder checks the sequence numbers are 21 digits and strictly
// increasing, and the event ids unique.
func stCheckOrder(t *testing.T, recs []stypes.Record) {
	t.Helper()
	ids := map[string]bool{}
	prev := ""
	for i, r := range recs {
		q := stSeq(r)
		if len(q) != 21 {
			t.Fatalf("record %d: sequence number %q is not 21 digits", i, q)
		}
		if q <= prev {
			t.Fatalf("record %d: sequence number %s not after %s", i, q, prev)
		}
		prev = q
		id := aws.ToString(r.EventID)
		if id == "" || ids[id] {
			t.Fatalf("record %d: event id %q empty or repeated", i, id)
		}
		ids[id] = true
	}
}

func TestStreamViewTypesAndEvents(t *testing.T) {
	for _, vt := range []string{"KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"} {
		t.Run(vt, func(t *testing.T) {
			e := stNew(t)
			arn := e.createTable("events", vt)
			tbl := aws.String("events")
			item := func(pk string, v int) map[string]dtypes.AttributeValue {
				return map[string]dtypes.AttributeValue{"pk": stS(pk), "v": stN(v)}
			}
			key := func(pk string) map[string]dtypes.AttributeValue {
				return map[string]dtypes.AttributeValue{"pk": stS(pk)}
			}
			update := func(v int) {
				_, err := e.db.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("a"),
					UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]dtypes.AttributeValue{":v": stN(v)}})
				if err != nil {
					t.Fatal(err)
				}
			}
			batch := func(reqs ...dtypes.WriteRequest) {
				if _, err := e.db.BatchWriteItem(e.ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]dtypes.WriteRequest{"events": reqs}}); err != nil {
					t.Fatal(err)
				}
			}
			del := func(pk string) {
				if _, err := e.db.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key(pk)}); err != nil {
					t.Fatal(err)
				}
			}
			e.put("events", item("a", 1))                                                  // INSERT a
			e.put("events", item("a", 1))                                                  // unchanged: no record
			update(2)                                                                      // MODIFY a 1→2
			update(2)                                                                      // unchanged: no record
			batch(dtypes.WriteRequest{PutRequest: &dtypes.PutRequest{Item: item("b", 1)}}, // INSERT b
				dtypes.WriteRequest{PutRequest: &dtypes.PutRequest{Item: item("a", 3)}}) // MODIFY a 2→3
			del("a")                                                                        // REMOVE a
			del("missing")                                                                  // nothing to delete: no record
			batch(dtypes.WriteRequest{DeleteRequest: &dtypes.DeleteRequest{Key: key("b")}}) // REMOVE b

			recs := e.readAll(arn)
			stCheckOrder(t, recs)
			type ev struct {
				name, pk, oldV, newV string
			}
			var got []ev
			for _, r := range recs {
				d := r.Dynamodb
				if aws.ToString(r.EventVersion) != "1.1" || aws.ToString(r.EventSource) != "aws:dynamodb" || aws.ToString(r.AwsRegion) != "us-east-1" {
					t.Fatalf("record envelope: %+v", r)
				}
				if r.UserIdentity != nil {
					t.Fatalf("user identity on a user change: %+v", r.UserIdentity)
				}
				if string(d.StreamViewType) != vt {
					t.Fatalf("StreamViewType %s", d.StreamViewType)
				}
				if len(d.Keys) != 1 || stAttrS(d.Keys, "pk") == "" {
					t.Fatalf("keys %+v", d.Keys)
				}
				if d.ApproximateCreationDateTime == nil || d.ApproximateCreationDateTime.Unix() != e.clock.Seconds() {
					t.Fatalf("ApproximateCreationDateTime %v", d.ApproximateCreationDateTime)
				}
				size := int64(0)
				for _, img := range []map[string]stypes.AttributeValue{d.Keys, d.NewImage, d.OldImage} {
					for k, v := range img {
						size += int64(len(k))
						switch v := v.(type) {
						case *stypes.AttributeValueMemberS:
							size += int64(len(v.Value))
						case *stypes.AttributeValueMemberN:
							size += 2 // one-digit number
						}
					}
				}
				if aws.ToInt64(d.SizeBytes) != size {
					t.Fatalf("SizeBytes %d, want %d", aws.ToInt64(d.SizeBytes), size)
				}
				wantNew := (vt == "NEW_IMAGE" || vt == "NEW_AND_OLD_IMAGES") && r.EventName != stypes.OperationTypeRemove
				wantOld := (vt == "OLD_IMAGE" || vt == "NEW_AND_OLD_IMAGES") && r.EventName != stypes.OperationTypeInsert
				if (d.NewImage != nil) != wantNew || (d.OldImage != nil) != wantOld {
					t.Fatalf("%s %s: NewImage %v OldImage %v", vt, r.EventName, d.NewImage, d.OldImage)
				}
				got = append(got, ev{string(r.EventName), stAttrS(d.Keys, "pk"), stAttrN(d.OldImage, "v"), stAttrN(d.NewImage, "v")})
			}
			img := func(v string, kind string) string {
				if (kind == "new" && (vt == "NEW_IMAGE" || vt == "NEW_AND_OLD_IMAGES")) || (kind == "old" && (vt == "OLD_IMAGE" || vt == "NEW_AND_OLD_IMAGES")) {
					return v
				}
				return ""
			}
			want := []ev{
				{"INSERT", "a", "", img("1", "new")},
				{"MODIFY", "a", img("1", "old"), img("2", "new")},
				{"INSERT", "b", "", img("1", "new")},
				{"MODIFY", "a", img("2", "old"), img("3", "new")},
				{"REMOVE", "a", img("3", "old"), ""},
				{"REMOVE", "b", img("1", "old"), ""},
			}
			if len(got) == len(want) && got[2] != want[2] { // the batch's two writes in either order
				got[2], got[3] = got[3], got[2]
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestStreamConcurrentWritersOrdered(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("busy", "NEW_IMAGE")
	const writers, writes, keysPer = 16, 50, 5
	it := e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, "")

	// A reader tails the stream while the writers run.
	type seen struct {
		recs []stypes.Record
		err  error
	}
	done := make(chan seen, 1)
	go func() {
		var s seen
		deadline := time.Now().Add(2 * time.Minute)
		for len(s.recs) < writers*writes && time.Now().Before(deadline) {
			out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(37)})
			if err != nil {
				s.err = err
				break
			}
			s.recs = append(s.recs, out.Records...)
			it = aws.ToString(out.NextShardIterator)
			if len(out.Records) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		done <- s
	}()
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < writes; j++ {
				_, err := e.db.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String("busy"), Item: map[string]dtypes.AttributeValue{
					"pk": stS(fmt.Sprintf("g%d-k%d", g, j%keysPer)), "n": stN(j)}})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	if len(s.recs) != writers*writes {
		t.Fatalf("tailing reader saw %d records, want %d", len(s.recs), writers*writes)
	}
	stCheckOrder(t, s.recs)
	last := map[string]int{}
	for _, r := range s.recs {
		pk := stAttrS(r.Dynamodb.Keys, "pk")
		n, _ := strconv.Atoi(stAttrN(r.Dynamodb.NewImage, "n"))
		if p, ok := last[pk]; ok && n != p+keysPer {
			t.Fatalf("key %s: write %d after %d", pk, n, p)
		}
		if _, ok := last[pk]; !ok && n >= keysPer {
			t.Fatalf("key %s: first record is write %d", pk, n)
		}
		want := "MODIFY"
		if n < keysPer {
			want = "INSERT"
		}
		if string(r.EventName) != want {
			t.Fatalf("key %s write %d: %s", pk, n, r.EventName)
		}
		last[pk] = n
	}
	if len(last) != writers*keysPer {
		t.Fatalf("%d keys, want %d", len(last), writers*keysPer)
	}
	// A second reader from the start sees the same records.
	again := e.readAll(arn)
	if len(again) != len(s.recs) || stSeq(again[0]) != stSeq(s.recs[0]) || stSeq(again[len(again)-1]) != stSeq(s.recs[len(s.recs)-1]) {
		t.Fatalf("re-read %d records, want %d", len(again), len(s.recs))
	}
}

func TestStreamIteratorTypes(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("iters", "KEYS_ONLY")
	for _, pk := range []string{"a", "b", "c"} {
		e.put("iters", map[string]dtypes.AttributeValue{"pk": stS(pk)})
	}
	recs := e.readAll(arn)
	if len(recs) != 3 {
		t.Fatalf("TRIM_HORIZON: %d records", len(recs))
	}
	pks := func(rs []stypes.Record) string {
		var s []string
		for _, r := range rs {
			s = append(s, stAttrS(r.Dynamodb.Keys, "pk"))
		}
		return strings.Join(s, ",")
	}
	latest := e.mustIterator(arn, stypes.ShardIteratorTypeLatest, "")
	if got, next := e.drain(latest); len(got) != 0 || next == "" {
		t.Fatalf("LATEST before a write: %d records, next %q", len(got), next)
	}
	e.put("iters", map[string]dtypes.AttributeValue{"pk": stS("d")})
	if got, _ := e.drain(latest); pks(got) != "d" {
		t.Fatalf("LATEST: %s", pks(got))
	}
	b := stSeq(recs[1])
	if got, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, b)); pks(got) != "b,c,d" {
		t.Fatalf("AT_SEQUENCE_NUMBER: %s", pks(got))
	}
	if got, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAfterSequenceNumber, b)); pks(got) != "c,d" {
		t.Fatalf("AFTER_SEQUENCE_NUMBER: %s", pks(got))
	}
	// Paging with Limit.
	it := e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, "")
	var paged []stypes.Record
	for i := 0; i < 5; i++ {
		out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Records) > 1 {
			t.Fatalf("Limit 1 returned %d records", len(out.Records))
		}
		paged = append(paged, out.Records...)
		it = aws.ToString(out.NextShardIterator)
	}
	if pks(paged) != "a,b,c,d" {
		t.Fatalf("paged: %s", pks(paged))
	}
	// Errors.
	_, err := e.iterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, "")
	stWantErr(t, err, "ValidationException", "SequenceNumber")
	_, err = e.iterator(arn, stypes.ShardIteratorTypeAfterSequenceNumber, "00000000000000000000x")
	stWantErr(t, err, "ValidationException", "SequenceNumber")
	_, err = e.iterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, "999999999999999999999")
	stWantErr(t, err, "ValidationException", "SequenceNumber")
	_, err = e.st.GetShardIterator(e.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: aws.String("shardId-00000000000000000000-00000000"), ShardIteratorType: stypes.ShardIteratorTypeLatest})
	stWantErr(t, err, "ResourceNotFoundException", "Shard")
	_, err = e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn[:strings.LastIndex(arn, "/")+1] + "2020-01-01T00:00:00.000")})
	stWantErr(t, err, "ResourceNotFoundException", "Stream")
	_, err = e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String("this-is-not-a-stream-arn-at-all-no-no-no")})
	stWantErr(t, err, "ValidationException", "StreamArn")
	_, err = e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(1001)})
	stWantErr(t, err, "ValidationException", "limit")
}

func TestStreamIteratorExpiredAndInvalid(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("expiry", "NEW_IMAGE")
	e.put("expiry", map[string]dtypes.AttributeValue{"pk": stS("a")})
	it := e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, "")
	e.clock.Add(14 * time.Minute)
	out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	if err != nil || len(out.Records) != 1 {
		t.Fatalf("14 minutes old: %v %v", out, err)
	}
	next := aws.ToString(out.NextShardIterator)
	e.clock.Add(2 * time.Minute)
	_, err = e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	var exp *stypes.ExpiredIteratorException
	if !errors.As(err, &exp) || !strings.Contains(exp.ErrorMessage(), "Iterator expired. The iterator was created at time") ||
		!strings.Contains(exp.ErrorMessage(), "while right now it's") {
		t.Fatalf("16 minutes old: %v", err)
	}
	// The NextShardIterator is valid 15 minutes from its own issue.
	if _, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(next)}); err != nil {
		t.Fatalf("next iterator: %v", err)
	}
	for _, bad := range []string{"garbage", arn + "|1|AAAA", next[:len(next)-3] + "xyz", strings.Replace(next, "/stream/", "/stream/x", 1)} {
		_, err = e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(bad)})
		stWantErr(t, err, "ValidationException", "Invalid ShardIterator")
	}
}

func TestStreamTrimmedData(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("trim", "NEW_AND_OLD_IMAGES")
	e.put("trim", map[string]dtypes.AttributeValue{"pk": stS("old")})
	old := e.readAll(arn)
	if len(old) != 1 {
		t.Fatalf("%d records", len(old))
	}
	oldSeq := stSeq(old[0])
	e.clock.Add(23 * time.Hour)
	if err := e.store.TrimStreams(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := e.readAll(arn); len(got) != 1 {
		t.Fatalf("23 hours: %d records", len(got))
	}
	e.clock.Add(2 * time.Hour)
	e.put("trim", map[string]dtypes.AttributeValue{"pk": stS("new")})
	check := func(when string) {
		t.Helper()
		got := e.readAll(arn)
		if len(got) != 1 || stAttrS(got[0].Dynamodb.Keys, "pk") != "new" {
			t.Fatalf("%s: TRIM_HORIZON read %d records", when, len(got))
		}
		for _, typ := range []stypes.ShardIteratorType{stypes.ShardIteratorTypeAtSequenceNumber, stypes.ShardIteratorTypeAfterSequenceNumber} {
			_, err := e.iterator(arn, typ, oldSeq)
			var tr *stypes.TrimmedDataAccessException
			if !errors.As(err, &tr) {
				t.Fatalf("%s: %s of a trimmed record: %v", when, typ, err)
			}
		}
		if got, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, stSeq(got[0]))); len(got) != 1 {
			t.Fatalf("%s: AT the young record: %d records", when, len(got))
		}
	}
	check("aged out") // readable no more, though still in the log
	if err := e.store.TrimStreams(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	check("trimmed")
	// The items themselves are untouched.
	out, err := e.db.Scan(e.ctx, &dynamodb.ScanInput{TableName: aws.String("trim")})
	if err != nil || out.Count != 2 {
		t.Fatalf("scan: %v %v", out, err)
	}
}

func TestStreamEnableDisableListStreams(t *testing.T) {
	e := stNew(t)
	e.createTable("plain", "")
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("before")})
	list := e.listArns
	if got := list(&dynamodbstreams.ListStreamsInput{}); len(got) != 0 {
		t.Fatalf("streams before enabling: %v", got)
	}
	upd := func(enabled bool, vt dtypes.StreamViewType) *dtypes.TableDescription {
		t.Helper()
		out, err := e.db.UpdateTable(e.ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain"),
			StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(enabled), StreamViewType: vt}})
		if err != nil {
			t.Fatal(err)
		}
		return out.TableDescription
	}
	arn1 := aws.ToString(upd(true, dtypes.StreamViewTypeNewAndOldImages).LatestStreamArn)
	if got := list(&dynamodbstreams.ListStreamsInput{}); !reflect.DeepEqual(got, []string{arn1}) {
		t.Fatalf("after enabling: %v, want %s", got, arn1)
	}
	d := e.describe(arn1)
	if d.StreamStatus != stypes.StreamStatusEnabled || d.StreamViewType != stypes.StreamViewTypeNewAndOldImages || aws.ToString(d.TableName) != "plain" ||
		len(d.KeySchema) != 1 || aws.ToString(d.KeySchema[0].AttributeName) != "pk" || d.CreationRequestDateTime == nil ||
		d.Shards[0].SequenceNumberRange.EndingSequenceNumber != nil || !strings.HasPrefix(aws.ToString(d.Shards[0].ShardId), "shardId-") {
		t.Fatalf("enabled stream: %+v %+v", d, d.Shards)
	}
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("during1")})
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("during2")})
	e.clock.Add(time.Second)
	upd(false, "")
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("after")})
	d = e.describe(arn1)
	recs, next := e.drain(e.mustIterator(arn1, stypes.ShardIteratorTypeTrimHorizon, ""))
	if d.StreamStatus != stypes.StreamStatusDisabled || len(recs) != 2 || next != "" {
		t.Fatalf("disabled stream: status %s, %d records, next %q", d.StreamStatus, len(recs), next)
	}
	r := d.Shards[0].SequenceNumberRange
	if aws.ToString(r.StartingSequenceNumber) != stSeq(recs[0]) || aws.ToString(r.EndingSequenceNumber) != stSeq(recs[1]) {
		t.Fatalf("range %s..%s, records %s..%s", aws.ToString(r.StartingSequenceNumber), aws.ToString(r.EndingSequenceNumber), stSeq(recs[0]), stSeq(recs[1]))
	}
	if got, next := e.drain(e.mustIterator(arn1, stypes.ShardIteratorTypeLatest, "")); len(got) != 0 || next != "" {
		t.Fatalf("LATEST of a disabled stream: %d records, next %q", len(got), next)
	}
	e.clock.Add(time.Second)
	arn2 := aws.ToString(upd(true, dtypes.StreamViewTypeKeysOnly).LatestStreamArn)
	e.put("plain", map[string]dtypes.AttributeValue{"pk": stS("second")})
	if arn2 == arn1 {
		t.Fatal("re-enabling reused the stream ARN")
	}
	if got := list(&dynamodbstreams.ListStreamsInput{TableName: aws.String("plain")}); !reflect.DeepEqual(got, []string{arn1, arn2}) {
		t.Fatalf("two streams: %v", got)
	}
	if got := e.readAll(arn2); len(got) != 1 || stAttrS(got[0].Dynamodb.Keys, "pk") != "second" {
		t.Fatalf("second stream: %v", got)
	}
	// The disabled stream is gone 24 hours after it was disabled.
	e.clock.Add(25 * time.Hour)
	if got := list(&dynamodbstreams.ListStreamsInput{}); !reflect.DeepEqual(got, []string{arn2}) {
		t.Fatalf("a day later: %v", got)
	}
	_, err := e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn1)})
	stWantErr(t, err, "ResourceNotFoundException", "not found")
}

func TestStreamListStreamsPages(t *testing.T) {
	e := stNew(t)
	var want []string
	for _, name := range []string{"t-a", "t-b", "t-c"} {
		want = append(want, e.createTable(name, "KEYS_ONLY"))
	}
	e.createTable("t-d", "") // no stream
	p1, err := e.st.ListStreams(e.ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.Streams) != 2 || p1.LastEvaluatedStreamArn == nil || aws.ToString(p1.LastEvaluatedStreamArn) != aws.ToString(p1.Streams[1].StreamArn) {
		t.Fatalf("page 1: %+v", p1)
	}
	p2, err := e.st.ListStreams(e.ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(2), ExclusiveStartStreamArn: p1.LastEvaluatedStreamArn})
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Streams) != 1 || p2.LastEvaluatedStreamArn != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	var got []string
	for _, s := range append(p1.Streams, p2.Streams...) {
		got = append(got, aws.ToString(s.StreamArn))
		if !strings.HasPrefix(aws.ToString(s.StreamArn), "arn:aws:dynamodb:us-east-1:000000000000:table/"+aws.ToString(s.TableName)+"/stream/"+aws.ToString(s.StreamLabel)) {
			t.Fatalf("stream %+v", s)
		}
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streams %v, want %v", got, want)
	}
	one, err := e.st.ListStreams(e.ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("t-b")})
	if err != nil || len(one.Streams) != 1 || aws.ToString(one.Streams[0].StreamArn) != want[1] {
		t.Fatalf("TableName filter: %+v %v", one, err)
	}
	_, err = e.st.ListStreams(e.ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("nope")})
	stWantErr(t, err, "ResourceNotFoundException", "nope")
}

func TestStreamTTLDeletionIdentity(t *testing.T) {
	e := stNew(t)
	arn := e.createTable("ttl", "OLD_IMAGE")
	if _, err := e.db.UpdateTimeToLive(e.ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ttl"),
		TimeToLiveSpecification: &dtypes.TimeToLiveSpecification{Enabled: aws.Bool(true), AttributeName: aws.String("exp")}}); err != nil {
		t.Fatal(err)
	}
	e.put("ttl", map[string]dtypes.AttributeValue{"pk": stS("x"), "exp": stN(int(e.clock.Seconds()) - 10)})
	e.put("ttl", map[string]dtypes.AttributeValue{"pk": stS("y")})
	if _, err := e.db.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{TableName: aws.String("ttl"), Key: map[string]dtypes.AttributeValue{"pk": stS("y")}}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.store.SweepExpired(e.ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	recs := e.readAll(arn)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs[:3] {
		if r.UserIdentity != nil {
			t.Fatalf("%s by a user has identity %+v", r.EventName, r.UserIdentity)
		}
	}
	ttl := recs[3]
	if ttl.EventName != stypes.OperationTypeRemove || ttl.UserIdentity == nil || aws.ToString(ttl.UserIdentity.Type) != "Service" ||
		aws.ToString(ttl.UserIdentity.PrincipalId) != "dynamodb.amazonaws.com" || stAttrS(ttl.Dynamodb.OldImage, "pk") != "x" {
		t.Fatalf("TTL record: %+v %+v", ttl, ttl.UserIdentity)
	}
}

func TestStreamRecordsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := newSTClock()
	e := stOpen(t, dir, clock, &ddb.Options{Now: clock.Now, TTLInterval: -1})
	arn := e.createTable("durable", "NEW_IMAGE")
	for i := 0; i < 5; i++ {
		e.put("durable", map[string]dtypes.AttributeValue{"pk": stS(fmt.Sprint(i))})
	}
	before := e.readAll(arn)
	it := e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, "")
	e.store.Close()

	e = stOpen(t, dir, clock, &ddb.Options{Now: clock.Now, TTLInterval: -1})
	defer e.store.Close()
	// An iterator of the previous instance stays valid for its 15 minutes:
	// a consumer reads on across a restart.
	resumed, _ := e.drain(it)
	if !reflect.DeepEqual(stSeqs(resumed), stSeqs(before)) {
		t.Fatalf("old iterator after restart read %v, want %v", stSeqs(resumed), stSeqs(before))
	}
	clock.Add(16 * time.Minute)
	_, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	var exp *stypes.ExpiredIteratorException
	if !errors.As(err, &exp) {
		t.Fatalf("old iterator 16 minutes later: %v", err)
	}
	after := e.readAll(arn)
	if !reflect.DeepEqual(stSeqs(before), stSeqs(after)) || aws.ToString(before[4].EventID) != aws.ToString(after[4].EventID) {
		t.Fatalf("records before %v, after %v", stSeqs(before), stSeqs(after))
	}
	e.put("durable", map[string]dtypes.AttributeValue{"pk": stS("5")})
	if got, _ := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeAfterSequenceNumber, stSeq(after[4]))); len(got) != 1 || stSeq(got[0]) <= stSeq(after[4]) {
		t.Fatalf("after restart: %v", stSeqs(got))
	}
}

func stSeqs(recs []stypes.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = stSeq(r)
	}
	return out
}

// TestStreamCrashAgreement crashes the store (unsynced data lost, on a
// strict in-memory file system) while writers run, and checks that after
// recovery the stream and the table agree: replaying the stream gives the
// table, and every write acknowledged before the crash point is there.
func TestStreamCrashAgreement(t *testing.T) {
	fs := vfs.NewStrictMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := fs.OpenDir("/")
	if err != nil || root.Sync() != nil || root.Close() != nil {
		t.Fatal("sync /", err)
	}
	clock := newSTClock()
	opts := func() *ddb.Options { return &ddb.Options{Now: clock.Now, FS: fs, TTLInterval: -1} }
	e := stOpen(t, "/db", clock, opts())
	arn := e.createTable("crash", "NEW_AND_OLD_IMAGES")

	var acked, total atomic.Int64
	var crashed atomic.Bool
	ackedAtCrash := int64(-1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pk := stS(fmt.Sprintf("w%d-%d", w, i%7))
				var err error
				if i%3 == 2 {
					_, err = e.db.DeleteItem(e.ctx, &dynamodb.DeleteItemInput{TableName: aws.String("crash"), Key: map[string]dtypes.AttributeValue{"pk": pk}})
				} else {
					_, err = e.db.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String("crash"), Item: map[string]dtypes.AttributeValue{"pk": pk, "i": stN(i)}})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !crashed.Load() {
					acked.Add(1)
				} else {
					total.Add(1)
				}
			}
		}()
	}
	for acked.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	// From here on nothing reaches the disk.
	fs.SetIgnoreSyncs(true)
	crashed.Store(true)
	ackedAtCrash = acked.Load()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	e.store.Close()
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)

	e = stOpen(t, "/db", clock, opts())
	defer e.store.Close()
	recs := e.readAll(arn)
	stCheckOrder(t, recs)
	if int64(len(recs)) < ackedAtCrash/2 { // deletes of missing items write no record
		t.Fatalf("%d records after the crash, %d writes acknowledged before it", len(recs), ackedAtCrash)
	}
	replay := map[string]string{}
	for _, r := range recs {
		pk := stAttrS(r.Dynamodb.Keys, "pk")
		if prev, ok := replay[pk]; (ok && r.EventName == stypes.OperationTypeInsert) || (!ok && r.EventName != stypes.OperationTypeInsert) ||
			(ok && stAttrN(r.Dynamodb.OldImage, "i") != prev) {
			t.Fatalf("record %s %s does not follow %q", r.EventName, pk, prev)
		}
		if r.EventName == stypes.OperationTypeRemove {
			delete(replay, pk)
		} else {
			replay[pk] = stAttrN(r.Dynamodb.NewImage, "i")
		}
	}
	out, err := e.db.Scan(e.ctx, &dynamodb.ScanInput{TableName: aws.String("crash"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]string{}
	for _, it := range out.Items {
		table[it["pk"].(*dtypes.AttributeValueMemberS).Value] = it["i"].(*dtypes.AttributeValueMemberN).Value
	}
	t.Logf("%d writes acknowledged before the crash, %d in all; %d records, %d items after it", ackedAtCrash, acked.Load()+total.Load(), len(recs), len(table))
	if !reflect.DeepEqual(replay, table) {
		t.Fatalf("stream replay (%d items) and table (%d items) disagree", len(replay), len(table))
	}
}

// TestStreamOutlivesDeletedTable checks DynamoDB's rule for DeleteTable: the
// table's stream becomes DISABLED and stays listed and readable for 24
// hours, across a restart and beside a new table of the same name; then it
// is gone.
func TestStreamOutlivesDeletedTable(t *testing.T) {
	dir := t.TempDir()
	clock := newSTClock()
	e := stOpen(t, dir, clock, nil)
	arn := e.createTable("gone", "NEW_IMAGE")
	e.createTable("plain", "")
	for i := 0; i < 3; i++ {
		e.put("gone", map[string]dtypes.AttributeValue{"pk": stS(fmt.Sprint(i))})
	}
	it := e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, "")
	for _, name := range []string{"gone", "plain"} {
		if _, err := e.db.DeleteTable(e.ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(table string) []string {
		t.Helper()
		in := &dynamodbstreams.ListStreamsInput{}
		if table != "" {
			in.TableName = aws.String(table)
		}
		return e.listArns(in) // e is reopened below
	}
	check := func(when string) {
		t.Helper()
		if got := list(""); !reflect.DeepEqual(got, []string{arn}) {
			t.Fatalf("%s: ListStreams = %v, want %s", when, got, arn)
		}
		d := e.describe(arn)
		if d.StreamStatus != stypes.StreamStatusDisabled || aws.ToString(d.TableName) != "gone" || d.Shards[0].SequenceNumberRange.EndingSequenceNumber == nil {
			t.Fatalf("%s: %+v %+v", when, d, d.Shards)
		}
		recs, next := e.drain(e.mustIterator(arn, stypes.ShardIteratorTypeTrimHorizon, ""))
		if len(recs) != 3 || stAttrS(recs[2].Dynamodb.NewImage, "pk") != "2" || next != "" {
			t.Fatalf("%s: read %d records, next %q", when, len(recs), next)
		}
	}
	check("after DeleteTable")
	// The iterator taken before the deletion reads on.
	if recs, _ := e.drain(it); len(recs) != 3 {
		t.Fatalf("old iterator read %d records", len(recs))
	}

	// A new table of the same name has its own stream; the old one keeps
	// its records only.
	clock.Add(time.Second)
	arn2 := e.createTable("gone", "NEW_IMAGE")
	e.put("gone", map[string]dtypes.AttributeValue{"pk": stS("new")})
	if got := list("gone"); !reflect.DeepEqual(got, []string{arn, arn2}) {
		t.Fatalf("two streams of gone: %v, want %v", got, []string{arn, arn2})
	}
	if _, err := e.db.DeleteTable(e.ctx, &dynamodb.DeleteTableInput{TableName: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	if got := list("gone"); len(got) != 2 {
		t.Fatalf("after deleting the second table: %v", got)
	}
	e.store.Close()

	e = stOpen(t, dir, clock, nil)
	defer func() { e.store.Close() }()
	if got := list(""); !reflect.DeepEqual(got, []string{arn, arn2}) {
		t.Fatalf("after restart: %v", got)
	}
	d := e.describe(arn)
	if d.StreamStatus != stypes.StreamStatusDisabled {
		t.Fatalf("after restart: %+v", d)
	}
	if recs, _ := e.drain(e.mustIterator(arn2, stypes.ShardIteratorTypeTrimHorizon, "")); len(recs) != 1 || stAttrS(recs[0].Dynamodb.NewImage, "pk") != "new" {
		t.Fatalf("second stream after restart: %d records", len(recs))
	}

	// 24 hours after the first deletion its stream is gone; the second,
	// deleted a second later, goes a second later.
	clock.Add(24*time.Hour - time.Second)
	if err := e.store.TrimStreams(clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := list(""); !reflect.DeepEqual(got, []string{arn2}) {
		t.Fatalf("24 h after the first deletion: %v", got)
	}
	_, err := e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	stWantErr(t, err, "ResourceNotFoundException", "")
	clock.Add(time.Second)
	if err := e.store.TrimStreams(clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := list(""); len(got) != 0 {
		t.Fatalf("after both expired: %v", got)
	}
	_, err = e.st.ListStreams(e.ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String("gone")})
	stWantErr(t, err, "ResourceNotFoundException", "")
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
	e.put("busy", map[string]dtypes.AttributeValue{"pk": avS("x")})
	e.put("busy", map[string]dtypes.AttributeValue{"pk": avS("y")})
	if later := aws.ToString(e.describe(arn).Shards[0].SequenceNumberRange.StartingSequenceNumber); later == start {
		t.Logf("the advertised start did not move (%s)", start)
	}
	it := e.mustIterator(arn, stypes.ShardIteratorTypeAtSequenceNumber, start)
	e.put("empty", map[string]dtypes.AttributeValue{"pk": avS("a")})
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
