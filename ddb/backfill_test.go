package ddb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// Online GSI creation: UpdateTable returns with the index CREATING and a
// background goroutine backfills it (backfill.go).

const backfillItems = 3000

// backfillTable creates a table of backfillItems items in a store opened
// in dir; three items in four carry the future index key g.
// The store is the test's own: closeStore closes it (once; cleanup too).
func backfillTable(t *testing.T, dir string) (s *ddb.Store, c *dynamodb.Client, name string, closeStore func() error) {
	t.Helper()
	s, err := ddb.Open(dir, &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatalf("ddb.Open: %v", err)
	}
	var once sync.Once
	closeStore = func() (err error) {
		once.Do(func() { err = s.Close() })
		return err
	}
	t.Cleanup(func() { closeStore() })
	c = ddb.NewClient(s, noRetry)
	name = "backfilled"
	_, err = c.CreateTable(tctx(t), tableSpec{Name: name, Hash: "pk:S"}.input())
	requireNoError(t, err, "CreateTable")
	waitActive(t, c, name)
	items := make([]attrs, 0, backfillItems)
	for i := range backfillItems {
		it := attrs{"pk": avS(fmt.Sprintf("p%05d", i)), "v": avN(fmt.Sprint(i))}
		if i%4 != 0 {
			it["g"] = avS(fmt.Sprintf("g%d", i%5))
		}
		items = append(items, it)
	}
	batchPut(t, c, name, items)
	return s, c, name, closeStore
}

func addGSI(t *testing.T, c *dynamodb.Client, name string) *types.TableDescription {
	t.Helper()
	out, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName:  aws.String("byG"),
			KeySchema:  specKeySchema("g:S", "pk:S"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}}},
	})
	requireNoError(t, err, "UpdateTable create GSI")
	return out.TableDescription
}

// requireCreating checks that d shows index byG backfilling.
func requireCreating(t *testing.T, d *types.TableDescription) {
	t.Helper()
	if d.TableStatus != types.TableStatusUpdating {
		t.Errorf("TableStatus = %s, want UPDATING", d.TableStatus)
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "byG" {
			if g.IndexStatus != types.IndexStatusCreating || !aws.ToBool(g.Backfilling) {
				t.Errorf("index byG: IndexStatus %s, Backfilling %v; want CREATING, true", g.IndexStatus, aws.ToBool(g.Backfilling))
			}
			return
		}
	}
	t.Errorf("description lacks index byG")
}

// checkBackfilled compares the index byG, read whole, with the table's items
// that carry g: no entry missing, stale or duplicated.
func checkBackfilled(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	all, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(name)})
	want := map[string]string{}
	for _, it := range all {
		if _, ok := it["g"]; ok {
			want[sAttr(it, "pk")] = renderItem(it)
		}
	}
	got, _ := scanAll(t, c, &dynamodb.ScanInput{TableName: aws.String(name), IndexName: aws.String("byG")})
	seen := map[string]bool{}
	for _, it := range got {
		pk := sAttr(it, "pk")
		if seen[pk] {
			t.Errorf("index holds %s twice", pk)
		}
		seen[pk] = true
		if w, ok := want[pk]; !ok {
			t.Errorf("stale index entry: %s", renderItem(it))
		} else if r := renderItem(it); r != w {
			t.Errorf("index entry %s, item %s", r, w)
		}
	}
	for pk, w := range want {
		if !seen[pk] {
			t.Errorf("index lacks %s", w)
		}
	}
	// Query reads the same entries.
	for g := range 5 {
		q := queryAll(t, c, &dynamodb.QueryInput{
			TableName: aws.String(name), IndexName: aws.String("byG"),
			KeyConditionExpression:    aws.String("g = :g"),
			ExpressionAttributeValues: eaValues(":g", avS(fmt.Sprintf("g%d", g))),
		})
		for _, it := range q {
			if sAttr(it, "g") != fmt.Sprintf("g%d", g) {
				t.Errorf("Query g = g%d returned %s", g, renderItem(it))
			}
		}
		cnt := 0
		for _, it := range all {
			if sAttr(it, "g") == fmt.Sprintf("g%d", g) {
				cnt++
			}
		}
		if len(q) != cnt {
			t.Errorf("Query g = g%d: %d items, want %d", g, len(q), cnt)
		}
	}
}

func TestBackfillAsync(t *testing.T) {
	t.Parallel()
	s, c, name, _ := backfillTable(t, t.TempDir())
	release := make(chan struct{})
	paused := make(chan struct{}, 1)
	s.SetBackfillHookForTest(func(_ string, chunk int) bool {
		if chunk == 1 {
			paused <- struct{}{}
			<-release
		}
		return true
	})
	// UpdateTable answers while the backfill is held at its first chunk:
	// it does not wait for the backfill.
	added := make(chan *types.TableDescription, 1)
	go func() { added <- addGSI(t, c, name) }()
	var d *types.TableDescription
	select {
	case d = <-added:
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("UpdateTable waits for the backfill")
	}
	requireCreating(t, d)
	<-paused
	requireCreating(t, describe(t, c, name))
	// Writes do not wait for the backfill.
	putItems(t, c, name, attrs{"pk": avS("during"), "g": avS("g1"), "v": avN("-1")})
	close(release)
	d = waitActive(t, c, name)
	for _, g := range d.GlobalSecondaryIndexes {
		if g.Backfilling != nil && *g.Backfilling {
			t.Errorf("ACTIVE index still Backfilling")
		}
	}
	checkBackfilled(t, c, name)
}

func TestBackfillQueryCreatingIndex(t *testing.T) {
	t.Parallel()
	s, c, name, _ := backfillTable(t, t.TempDir())
	release := make(chan struct{})
	paused := make(chan struct{}, 1)
	s.SetBackfillHookForTest(func(_ string, chunk int) bool {
		if chunk == 1 {
			paused <- struct{}{}
			<-release
		}
		return true
	})
	addGSI(t, c, name)
	<-paused
	msg := "Cannot read from backfilling global secondary index: byG"
	_, err := c.Query(tctx(t), &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String("byG"),
		KeyConditionExpression:    aws.String("g = :g"),
		ExpressionAttributeValues: eaValues(":g", avS("g1")),
	})
	requireAPIError(t, err, "ValidationException", msg)
	_, err = c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(name), IndexName: aws.String("byG")})
	requireAPIError(t, err, "ValidationException", msg)
	close(release)
	waitActive(t, c, name)
	checkBackfilled(t, c, name)
}

// TestBackfillConcurrentWrites writes to the table while it backfills: at
// every chunk boundary (puts, index key changes, removals, deletes, spread
// over the done and the pending part of the table) and from a concurrent
// writer throughout.
func TestBackfillConcurrentWrites(t *testing.T) {
	t.Parallel()
	s, c, name, _ := backfillTable(t, t.TempDir())
	ctx := context.Background()
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	mutate := func(r *rand.Rand, tag string) {
		pk := fmt.Sprintf("p%05d", r.IntN(backfillItems+200))
		key := attrs{"pk": avS(pk)}
		switch r.IntN(5) {
		case 0:
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: attrs{"pk": avS(pk), "g": avS(fmt.Sprintf("g%d", r.IntN(5))), "v": avN("7"), "w": avS(tag)}})
			fail(err)
		case 1:
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: key,
				UpdateExpression:          aws.String("SET g = :g, w = :w"),
				ExpressionAttributeValues: eaValues(":g", avS(fmt.Sprintf("g%d", r.IntN(5))), ":w", avS(tag))})
			fail(err)
		case 2:
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: key,
				UpdateExpression: aws.String("REMOVE g")})
			fail(err)
		case 3:
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(name), Key: key})
			fail(err)
		case 4:
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: key,
				UpdateExpression:          aws.String("SET w = :w"),
				ExpressionAttributeValues: eaValues(":w", avS(tag))})
			fail(err)
		}
	}
	hr := rand.New(rand.NewPCG(1, 2))
	s.SetBackfillHookForTest(func(_ string, chunk int) bool {
		for range 40 {
			mutate(hr, fmt.Sprintf("hook%d", chunk))
		}
		return true
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mutate(r, fmt.Sprintf("w%d", i))
		}
	}()
	requireCreating(t, addGSI(t, c, name))
	waitActive(t, c, name)
	close(stop)
	wg.Wait()
	for _, err := range errs {
		t.Errorf("write during backfill: %v", err)
	}
	checkBackfilled(t, c, name)
}

// TestBackfillResumesAfterReopen stops the backfill after its first chunk
// (as a crash would), closes the store and reopens it: the backfill starts
// over and completes.
func TestBackfillResumesAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, c, name, closeStore := backfillTable(t, dir)
	stopped := make(chan struct{})
	s.SetBackfillHookForTest(func(_ string, chunk int) bool {
		close(stopped)
		return false
	})
	addGSI(t, c, name)
	<-stopped
	requireCreating(t, describe(t, c, name))
	putItems(t, c, name, attrs{"pk": avS("p00002"), "v": avN("2")}) // drops g
	if err := closeStore(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := ddb.Open(dir, &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s2.Close() })
	c2 := ddb.NewClient(s2, noRetry)
	waitActive(t, c2, name)
	checkBackfilled(t, c2, name)
}

// TestBackfillCloseDuringBackfill closes the store while the backfill
// runs: Close waits for it, and the next Open completes it.
func TestBackfillCloseDuringBackfill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, c, name, closeStore := backfillTable(t, dir)
	addGSI(t, c, name)
	if err := closeStore(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := ddb.Open(dir, &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s2.Close() })
	c2 := ddb.NewClient(s2, noRetry)
	waitActive(t, c2, name)
	checkBackfilled(t, c2, name)
}

// TestBackfillDeletedDuringBackfill deletes the table, or the index,
// while it backfills: the backfill stops and writes nothing afterwards.
func TestBackfillDeletedDuringBackfill(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"table", "index"} {
		t.Run(what, func(t *testing.T) {
			s, c, name, _ := backfillTable(t, t.TempDir())
			release := make(chan struct{})
			paused := make(chan struct{}, 1)
			chunks := 0
			s.SetBackfillHookForTest(func(_ string, chunk int) bool {
				chunks = chunk
				if chunk == 1 {
					paused <- struct{}{}
					<-release
				}
				return true
			})
			addGSI(t, c, name)
			<-paused
			if what == "table" {
				_, err := c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
				requireNoError(t, err, "DeleteTable")
			} else {
				_, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: aws.String(name),
					GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("byG")}}}})
				requireNoError(t, err, "UpdateTable delete GSI")
			}
			close(release)
			s.WaitBackfillsForTest()
			if chunks != 1 {
				t.Errorf("backfill went on to chunk %d", chunks)
			}
			if n := s.IndexKeyCountForTest(); n != 0 {
				t.Errorf("%d index entries remain", n)
			}
			if what == "index" {
				d := describe(t, c, name)
				if d.TableStatus != types.TableStatusActive || len(d.GlobalSecondaryIndexes) != 0 {
					t.Errorf("after deleting the index: %s, %d GSIs", d.TableStatus, len(d.GlobalSecondaryIndexes))
				}
			}
		})
	}
}
