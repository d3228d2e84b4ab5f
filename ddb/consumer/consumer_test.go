package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/consumer"
)

// clock is a settable clock for the store.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *clock) Add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

type env struct {
	t     *testing.T
	ctx   context.Context
	clock *clock
	store *ddb.Store
	db    *dynamodb.Client
	st    *dynamodbstreams.Client
}

func open(t *testing.T, dir string, c *clock) *env {
	t.Helper()
	s, err := ddb.Open(dir, &ddb.Options{Now: c.Now, NoSync: true, TTLInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), clock: c, store: s,
		db: ddb.NewClient(s, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }),
		st: ddb.NewStreamsClient(s, func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })}
}

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

// createTable creates a table with a NEW_IMAGE stream and returns its ARN.
func (e *env) createTable(name string) string {
	e.t.Helper()
	out, err := e.db.CreateTable(e.ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: dtypes.ScalarAttributeTypeS}},
		KeySchema:            []dtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dtypes.KeyTypeHash}},
		BillingMode:          dtypes.BillingModePayPerRequest,
		StreamSpecification:  &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewImage},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.TableDescription.LatestStreamArn)
}

func (e *env) put(table string, pks ...string) {
	e.t.Helper()
	for _, pk := range pks {
		if _, err := e.db.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]dtypes.AttributeValue{"pk": &dtypes.AttributeValueMemberS{Value: pk}}}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func pkOf(r types.Record) string {
	return r.Dynamodb.Keys["pk"].(*types.AttributeValueMemberS).Value
}

// collector records what a handler saw.
type collector struct {
	mu      sync.Mutex
	calls   [][]string // every call, failed ones included
	handled []string   // records of successful calls
	failN   int        // fail this many calls first
}

func (c *collector) handle(_ context.Context, recs []types.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pks []string
	for _, r := range recs {
		pks = append(pks, pkOf(r))
	}
	c.calls = append(c.calls, pks)
	if c.failN > 0 {
		c.failN--
		return errors.New("handler failure")
	}
	c.handled = append(c.handled, pks...)
	return nil
}

func (c *collector) snapshot() (calls [][]string, handled []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.calls...), append([]string(nil), c.handled...)
}

// run starts cons and returns a stop function that cancels it and returns
// Run's error.
func run(cons *consumer.Consumer) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cons.Run(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("Run did not stop")
		}
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func fastOptions() consumer.Options {
	return consumer.Options{PollInterval: 2 * time.Millisecond, RetryBackoff: 5 * time.Millisecond}
}

func TestConsumerAtLeastOnceHandlerFailsOnce(t *testing.T) {
	e := open(t, t.TempDir(), newClock())
	defer e.store.Close()
	arn := e.createTable("orders")
	e.put("orders", "a", "b", "c")
	col := &collector{failN: 1}
	cp := consumer.NewMemoryCheckpointer()
	var errs atomic.Int32
	opts := fastOptions()
	opts.OnError = func(error) { errs.Add(1) }
	stop := run(consumer.New(e.st, arn, cp, col.handle, opts))
	waitFor(t, "the first three records", func() bool { _, h := col.snapshot(); return len(h) == 3 })
	e.put("orders", "d", "e")
	waitFor(t, "five records checkpointed", func() bool {
		_, h := col.snapshot()
		cur, _ := cp.Load(e.ctx, arn)
		return len(h) == 5 && cur == aws.ToString(readAll(t, e, arn)[4].Dynamodb.SequenceNumber)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	calls, handled := col.snapshot()
	if fmt.Sprint(handled) != "[a b c d e]" {
		t.Fatalf("handled %v", handled)
	}
	if fmt.Sprint(calls[0]) != "[a b c]" || fmt.Sprint(calls[1]) != "[a b c]" {
		t.Fatalf("the failed batch was not delivered again: calls %v", calls)
	}
	if errs.Load() != 1 {
		t.Fatalf("OnError called %d times, want 1", errs.Load())
	}
}

func readAll(t *testing.T, e *env, arn string) []types.Record {
	t.Helper()
	d, err := e.st.DescribeStream(e.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	it, err := e.st.GetShardIterator(e.ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn),
		ShardId: d.StreamDescription.Shards[0].ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.st.GetRecords(e.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	return out.Records
}

func TestConsumerResumesFromTableCheckpointAfterRestart(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	e := open(t, dir, clk)
	arn := e.createTable("events")
	cp := consumer.NewTableCheckpointer(e.db, "checkpoints")
	if err := cp.CreateTable(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.CreateTable(e.ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	e.put("events", "1", "2", "3")
	col := &collector{}
	stop := run(consumer.New(e.st, arn, cp, col.handle, fastOptions()))
	waitFor(t, "three records checkpointed", func() bool {
		_, h := col.snapshot()
		cur, err := cp.Load(e.ctx, arn)
		return len(h) == 3 && err == nil && cur == aws.ToString(readAll(t, e, arn)[2].Dynamodb.SequenceNumber)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	saved, err := cp.Load(e.ctx, arn)
	if err != nil || saved == "" {
		t.Fatalf("checkpoint %q %v", saved, err)
	}
	// A save of an older position is ignored (another process is ahead).
	if err := cp.Save(e.ctx, arn, "000000000000000000001"); err != nil {
		t.Fatal(err)
	}
	if got, _ := cp.Load(e.ctx, arn); got != saved {
		t.Fatalf("checkpoint moved back to %s from %s", got, saved)
	}
	e.store.Close()

	// Another process: the store reopened, new clients, a new consumer.
	e = open(t, dir, clk)
	defer e.store.Close()
	e.put("events", "4", "5")
	cp = consumer.NewTableCheckpointer(e.db, "checkpoints")
	col2 := &collector{}
	stop = run(consumer.New(e.st, arn, cp, col2.handle, fastOptions()))
	waitFor(t, "two new records", func() bool { _, h := col2.snapshot(); return len(h) >= 2 })
	time.Sleep(20 * time.Millisecond) // nothing else may arrive
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, h := col2.snapshot(); fmt.Sprint(h) != "[4 5]" {
		t.Fatalf("after restart handled %v, want [4 5]", h)
	}
}

func TestConsumerStartLatestAndExpiredIterator(t *testing.T) {
	e := open(t, t.TempDir(), newClock())
	defer e.store.Close()
	arn := e.createTable("feed")
	e.put("feed", "old")
	col := &collector{}
	var polls atomic.Int64
	opts := fastOptions()
	opts.StartPosition = types.ShardIteratorTypeLatest
	opts.AfterPoll = func(int) { polls.Add(1) }
	stop := run(consumer.New(e.st, arn, consumer.NewMemoryCheckpointer(), col.handle, opts))
	waitFor(t, "a first poll", func() bool { return polls.Load() > 0 })
	e.put("feed", "new1")
	waitFor(t, "new1", func() bool { _, h := col.snapshot(); return len(h) == 1 })
	// The consumer's iterator expires while the stream is idle.
	e.clock.Add(16 * time.Minute)
	n := polls.Load()
	waitFor(t, "polls after the expiry", func() bool { return polls.Load() > n+2 })
	e.put("feed", "new2")
	waitFor(t, "new2", func() bool { _, h := col.snapshot(); return len(h) == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, h := col.snapshot(); fmt.Sprint(h) != "[new1 new2]" {
		t.Fatalf("handled %v", h)
	}
}

func TestConsumerEndsWithDisabledStream(t *testing.T) {
	e := open(t, t.TempDir(), newClock())
	defer e.store.Close()
	arn := e.createTable("closing")
	e.put("closing", "x", "y")
	e.clock.Add(time.Second)
	if _, err := e.db.UpdateTable(e.ctx, &dynamodb.UpdateTableInput{TableName: aws.String("closing"),
		StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(false)}}); err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := consumer.New(e.st, arn, consumer.NewMemoryCheckpointer(), col.handle, fastOptions()).Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (ctx %v)", err, ctx.Err())
	}
	if _, h := col.snapshot(); fmt.Sprint(h) != "[x y]" {
		t.Fatalf("handled %v", h)
	}
	// A stream that does not exist is an error.
	bad := arn[:len(arn)-5] + "9.999"
	if err := consumer.New(e.st, bad, consumer.NewMemoryCheckpointer(), col.handle, fastOptions()).Run(ctx); err == nil {
		t.Fatal("Run on a missing stream returned nil")
	}
}

// TestConsumerIdleIntervalAndWake: with Interval reporting an hour, a new
// record waits for the pause; a send on Wake ends the pause, and from then
// on the interval Interval reports is used.
func TestConsumerIdleIntervalAndWake(t *testing.T) {
	e := open(t, t.TempDir(), newClock())
	defer e.store.Close()
	arn := e.createTable("events")
	col := &collector{}
	var fast atomic.Bool
	var polls atomic.Int64
	wake := make(chan struct{}, 1)
	opts := fastOptions()
	opts.StartPosition = types.ShardIteratorTypeLatest
	opts.Interval = func() time.Duration {
		if fast.Load() {
			return 2 * time.Millisecond
		}
		return time.Hour
	}
	opts.Wake = wake
	opts.AfterPoll = func(int) { polls.Add(1) }
	stop := run(consumer.New(e.st, arn, consumer.NewMemoryCheckpointer(), col.handle, opts))
	defer stop()
	waitFor(t, "the first (empty) poll", func() bool { return polls.Load() >= 1 })
	e.put("events", "a")
	for i := 0; i < 20; i++ { // the consumer is in its hour-long pause
		if _, h := col.snapshot(); len(h) != 0 || polls.Load() != 1 {
			t.Fatalf("polled during the idle pause: %d polls, %v", polls.Load(), h)
		}
		time.Sleep(time.Millisecond)
	}
	fast.Store(true)
	wake <- struct{}{}
	waitFor(t, "the record after the wake", func() bool { _, h := col.snapshot(); return len(h) == 1 })
	e.put("events", "b", "c")
	waitFor(t, "later records at the fast interval", func() bool { _, h := col.snapshot(); return len(h) == 3 })
}

// TestConsumerChanges: with the store's StreamChanges and an hour-long poll
// interval, every write of the table reaches the handler without a poll in
// between, and writes of another table do not make it read.
func TestConsumerChanges(t *testing.T) {
	e := open(t, t.TempDir(), newClock())
	defer e.store.Close()
	arn := e.createTable("events")
	e.createTable("noise")
	col := &collector{}
	var polls, empty atomic.Int64
	opts := fastOptions()
	opts.StartPosition = types.ShardIteratorTypeLatest
	opts.PollInterval = time.Hour
	opts.Changes = e.store.StreamChanges
	opts.AfterPoll = func(n int) {
		polls.Add(1)
		if n == 0 {
			empty.Add(1)
		}
	}
	stop := run(consumer.New(e.st, arn, consumer.NewMemoryCheckpointer(), col.handle, opts))
	defer stop()
	waitFor(t, "the first (empty) poll", func() bool { return empty.Load() == 1 })
	for i, pk := range []string{"a", "b", "c"} {
		e.put("events", pk)
		// The write, then the empty read that precedes the next wait.
		waitFor(t, "write "+pk, func() bool { _, h := col.snapshot(); return len(h) == i+1 && empty.Load() == int64(i+2) })
	}
	before := polls.Load()
	e.put("noise", "x", "y")
	e.put("events", "d")
	waitFor(t, "write d", func() bool { _, h := col.snapshot(); return len(h) == 4 && empty.Load() == 5 })
	if n := polls.Load() - before; n != 2 {
		t.Fatalf("%d reads for one write among writes of another table, want 2 (the write, then an empty read)", n)
	}
}
