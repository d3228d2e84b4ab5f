package ddb_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/quarrydb/quarry/ddb"
)

// The crash test runs a child process (this test binary, re-executed) that
// writes under load and prints one line per acknowledged write. The parent
// kills it with SIGKILL mid-stream, reopens the store and checks that every
// acknowledged write is there and that the table and its index agree.
//
// Each key goes through a fixed sequence of writes, one at a time:
// 1 put (v=1, g=A), 2 update (v=2, g=B), 3 delete. After a crash a key must
// be in the state of its last acknowledged step or of the step after it
// (the write in flight may or may not have landed).

const crashTable = "crash-table"

func crashCreateTable(ctx context.Context, c *dynamodb.Client) error {
	var stream *types.StreamSpecification
	if os.Getenv("QUARRY_CRASH_STREAM") != "" {
		stream = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	in := &dynamodb.CreateTableInput{
		StreamSpecification: stream,
		TableName:           aws.String(crashTable),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("v"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("g-index"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("v"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		BillingMode: types.BillingModePayPerRequest,
	}
	if os.Getenv("QUARRY_CRASH_NO_INDEX") != "" {
		// Nothing derives from the items: PutItem writes without reading
		// the item it replaces (putBlind).
		in.AttributeDefinitions, in.GlobalSecondaryIndexes = in.AttributeDefinitions[:1], nil
	}
	_, err := c.CreateTable(ctx, in)
	return err
}

func crashChild(dir string) {
	s, err := ddb.Open(dir, nil)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	c := ddb.NewClient(s)
	ctx := context.Background()
	if err := crashCreateTable(ctx, c); err != nil {
		fmt.Println("create:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	// With QUARRY_CRASH_BATCH, puts and deletes go through BatchWriteItem.
	batch := os.Getenv("QUARRY_CRASH_BATCH") != ""
	var mu sync.Mutex
	ack := func(key string, step int) {
		mu.Lock()
		fmt.Printf("ack %s %d\n", key, step)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}
				item := map[string]types.AttributeValue{
					"pk": k["pk"], "v": &types.AttributeValueMemberN{Value: "1"}, "g": &types.AttributeValueMemberS{Value: "A"},
					"pad": &types.AttributeValueMemberS{Value: strings.Repeat("x", 200)}}
				var err error
				if batch {
					err = crashBatchWrite(ctx, c, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
				} else {
					_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(crashTable), Item: item})
				}
				if err != nil {
					fmt.Println("put:", err)
					os.Exit(4)
				}
				ack(key, 1)
				_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(crashTable), Key: k,
					UpdateExpression:          aws.String("SET v = :v, g = :g"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: "2"}, ":g": &types.AttributeValueMemberS{Value: "B"}}})
				if err != nil {
					fmt.Println("update:", err)
					os.Exit(4)
				}
				ack(key, 2)
				if i%2 == 0 {
					continue // keep half of the keys
				}
				if batch {
					err = crashBatchWrite(ctx, c, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
				} else {
					_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(crashTable), Key: k})
				}
				if err != nil {
					fmt.Println("delete:", err)
					os.Exit(4)
				}
				ack(key, 3)
			}
		}()
	}
	wg.Wait()
}

// crashBatchWrite writes one request with BatchWriteItem; an unprocessed
// request is an error.
func crashBatchWrite(ctx context.Context, c *dynamodb.Client, r types.WriteRequest) error {
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{crashTable: {r}}})
	if err == nil && len(out.UnprocessedItems) != 0 {
		err = errors.New("unprocessed items")
	}
	return err
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("QUARRY_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		return
	}
	if dir := os.Getenv("QUARRY_TOKEN_CRASH_CHILD"); dir != "" {
		tokenCrashChild(dir)
		return
	}
	if dir := os.Getenv("QUARRY_LOCK_CHILD"); dir != "" {
		lockChild(dir)
		return
	}
	os.Exit(m.Run())
}

func TestCrashKill9(t *testing.T) {
	t.Parallel()
	t.Run("plain", func(t *testing.T) { t.Parallel(); crashRun(t, false, true, false) })
	t.Run("with stream", func(t *testing.T) { t.Parallel(); crashRun(t, true, true, false) })
	t.Run("without index", func(t *testing.T) { t.Parallel(); crashRun(t, false, false, false) })
	// BatchWriteItem on a table without index writes without reading the
	// items it replaces or deletes.
	t.Run("batch writes without index", func(t *testing.T) { t.Parallel(); crashRun(t, false, false, true) })
}

// crashRun runs the crash test on a table with a stream or not, and with
// its index g-index or none; with batch, puts and deletes go through
// BatchWriteItem.
func crashRun(t *testing.T, withStream, withIndex, batch bool) {
	if os.Getenv("QUARRY_DDB_TEST_ENDPOINT") != "" {
		t.Skip("the crash test drives the embedded store")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUARRY_CRASH_CHILD="+dir)
	if withStream {
		cmd.Env = append(cmd.Env, "QUARRY_CRASH_STREAM=1")
	}
	if !withIndex {
		cmd.Env = append(cmd.Env, "QUARRY_CRASH_NO_INDEX=1")
	}
	if batch {
		cmd.Env = append(cmd.Env, "QUARRY_CRASH_BATCH=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := map[string]int{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	acks := 0
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 3 && f[0] == "ack" {
			n, _ := strconv.Atoi(f[2])
			last[f[1]] = n
			acks++
		} else if line != "ready" {
			t.Fatalf("child: %s", line)
		}
		if acks >= 3000 || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	// Drain acks printed before the kill landed.
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ack" {
			n, _ := strconv.Atoi(f[2])
			last[f[1]] = n
			acks++
		}
	}
	cmd.Wait()
	if acks < 100 {
		t.Fatalf("only %d acknowledged writes before the kill", acks)
	}

	s, err := ddb.Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	c := ddb.NewClient(s)

	table := crashScanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(crashTable)})

	// state: 0 absent, 1 (v=1,g=A), 2 (v=2,g=B)
	stateOf := func(item map[string]types.AttributeValue) int {
		if item == nil {
			return 0
		}
		return map[string]int{"1": 1, "2": 2}[item["v"].(*types.AttributeValueMemberN).Value]
	}
	stepState := func(step int) int { return []int{0, 1, 2, 0}[step] }
	for key, step := range last {
		got := stateOf(table[key])
		ok := got == stepState(step) || (step < 3 && got == stepState(step+1))
		if step == 2 && got == 0 {
			n, _ := strconv.Atoi(key[strings.Index(key, "-")+1:])
			ok = n%2 == 1 // only odd keys are deleted
		}
		if !ok {
			t.Errorf("key %s: last acknowledged step %d, found state %d", key, step, got)
		}
	}
	if !withIndex {
		t.Logf("%d acknowledged writes over %d keys; %d items survive", acks, len(last), len(table))
		return
	}
	// The index holds exactly the table's items, with the same values.
	index := crashScanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(crashTable), IndexName: aws.String("g-index")})
	if len(index) != len(table) {
		t.Errorf("index has %d entries, table %d items", len(index), len(table))
	}
	for key, item := range table {
		ie, ok := index[key]
		if !ok {
			t.Errorf("item %s missing from the index", key)
			continue
		}
		if stateOf(ie) != stateOf(item) || ie["g"].(*types.AttributeValueMemberS).Value != item["g"].(*types.AttributeValueMemberS).Value {
			t.Errorf("index entry of %s is stale", key)
		}
	}
	t.Logf("%d acknowledged writes over %d keys; %d items survive", acks, len(last), len(table))
	if !withStream {
		return
	}
	// Every write that landed has exactly one stream record, in order, and
	// there is no record of a write that did not land. The steps of a key
	// that landed are its last acknowledged step, plus the step in flight
	// when the table shows it.
	applied := map[string]int{}
	for key, item := range table {
		applied[key] = stateOf(item) // 1 or 2
	}
	for key, step := range last {
		if _, present := table[key]; !present && step >= 2 {
			applied[key] = 3
		}
		if applied[key] < step {
			t.Errorf("key %s: acknowledged step %d but the table shows step %d", key, step, applied[key])
		}
	}
	records := crashReadStream(t, s)
	events := []string{"", "INSERT", "MODIFY", "REMOVE"}
	for key, recs := range records {
		if len(recs) != applied[key] {
			t.Errorf("key %s: %d stream records %v, want %d", key, len(recs), recs, applied[key])
			continue
		}
		for i, ev := range recs {
			if ev != events[i+1] {
				t.Errorf("key %s: records %v out of order", key, recs)
			}
		}
	}
	for key, n := range applied {
		if n > 0 && len(records[key]) == 0 {
			t.Errorf("key %s: %d writes landed but no stream record", key, n)
		}
	}
}

// crashReadStream reads the whole stream of the crash table and returns the
// event names of each key in stream order.
func crashReadStream(t *testing.T, s *ddb.Store) map[string][]string {
	t.Helper()
	ctx := context.Background()
	sc := ddb.NewStreamsClient(s)
	ls, err := sc.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(crashTable)})
	if err != nil || len(ls.Streams) != 1 {
		t.Fatalf("ListStreams: %v %v", ls, err)
	}
	ds, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: ls.Streams[0].StreamArn})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	lastSeq := ""
	for _, sh := range ds.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: ls.Streams[0].StreamArn,
			ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			page, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				key := r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS).Value
				out[key] = append(out[key], string(r.EventName))
				if seq := *r.Dynamodb.SequenceNumber; seq <= lastSeq {
					t.Errorf("sequence numbers not increasing: %s after %s", seq, lastSeq)
				} else {
					lastSeq = seq
				}
			}
			if len(page.Records) == 0 {
				break
			}
			iter = page.NextShardIterator
		}
	}
	return out
}

func crashScanAll(t *testing.T, c *dynamodb.Client, in *dynamodb.ScanInput) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			k := it["pk"].(*types.AttributeValueMemberS).Value
			if _, dup := out[k]; dup {
				t.Errorf("scan returned %s twice", k)
			}
			out[k] = it
		}
	}
	return out
}

// TestDataDirLocked checks that a second process cannot open a data
// directory that a store holds.
func TestDataDirLocked(t *testing.T) {
	if os.Getenv("QUARRY_DDB_TEST_ENDPOINT") != "" {
		t.Skip("embedded store only")
	}
	dir := t.TempDir()
	s, err := ddb.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUARRY_LOCK_CHILD="+dir)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "locked: true") {
		t.Fatalf("second process opening the same directory: %s", out)
	}
}

func lockChild(dir string) {
	_, err := ddb.Open(dir, nil)
	fmt.Printf("locked: %v (%v)\n", errors.Is(err, ddb.ErrLocked), err)
}
