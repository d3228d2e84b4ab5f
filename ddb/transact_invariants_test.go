package ddb_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestTransactWriteItemsOppositeOrderNoDeadlock runs, at once, transactions
// over the same two items of two tables naming them in opposite orders,
// BatchWriteItems over both tables, and UpdateTables of both: with
// the locks taken in one order (transactWrite's invariants) every call
// completes, and every transaction is applied once to both items.
func TestTransactWriteItemsOppositeOrderNoDeadlock(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "concurrency stress")
	c := newClient(t)
	base := uniqueName(t)
	// The request order b, a is the opposite of the name order a, b.
	a := createTable(t, c, tableSpec{Name: base + "-a", Hash: "pk:S"})
	b := createTable(t, c, tableSpec{Name: base + "-b", Hash: "pk:S"})
	one := eaValues(":one", avN("1"))
	const workers, rounds = 4, 25
	errs := make(chan error, workers+2)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				x, y := txUpdate(a, pk("x"), "ADD n :one", one), txUpdate(b, pk("y"), "ADD n :one", one)
				items := []types.TransactWriteItem{x, y}
				if w%2 == 1 {
					items = []types.TransactWriteItem{y, x}
				}
				if _, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
			}
		}()
	}
	wg.Add(2)
	go func() { // BatchWriteItem over both tables, other items
		defer wg.Done()
		for i := range rounds {
			put := func(k string) types.WriteRequest {
				return types.WriteRequest{PutRequest: &types.PutRequest{Item: attrs{"pk": avS(k), "i": avN(strconv.Itoa(i))}}}
			}
			if _, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				b: {put("batch")}, a: {put("batch")}}}); err != nil {
				errs <- fmt.Errorf("BatchWriteItem: %w", err)
				return
			}
		}
	}()
	go func() { // DDL on both tables: their ddl locks, taken for writing
		defer wg.Done()
		for i := range rounds / 2 {
			name := []string{a, b}[i%2]
			if _, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: aws.String(name), DeletionProtectionEnabled: aws.Bool(i%4 < 2)}); err != nil {
				errs <- fmt.Errorf("UpdateTable: %w", err)
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the calls did not complete: deadlock")
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range []struct{ table, key string }{{a, "x"}, {b, "y"}} {
		if n := nAttr(getItem(t, c, k.table, pk(k.key)), "n"); n != strconv.Itoa(workers*rounds) {
			t.Errorf("%s/%s: n = %s, want %d", k.table, k.key, n, workers*rounds)
		}
	}
}

// TestTransactWriteItemsFailedConditionAppliesNothing: a transaction over
// two tables whose last action's condition fails writes none of its
// actions: no item, no index entry, no change to an existing item.
func TestTransactWriteItemsFailedConditionAppliesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	a := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "by-g", Hash: "g:S"}}})
	b := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, b, attrs{"pk": avS("y"), "n": avN("1")}, attrs{"pk": avS("z"), "st": avS("closed")})
	err := transact(t, c,
		txPut(a, attrs{"pk": avS("new"), "g": avS("G")}),
		txUpdate(b, pk("y"), "ADD n :one", eaValues(":one", avN("1"))),
		txDelete(a, pk("absent")),
		txCheck(b, pk("z"), "st = :open", eaValues(":open", avS("open"))),
	)
	if got := reasonCodes(requireCanceled(t, err)); got != "None,None,None,ConditionalCheckFailed" {
		t.Fatalf("reasons %s", got)
	}
	requireItem(t, getItem(t, c, a, pk("new")), nil)
	out, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: aws.String(a), IndexName: aws.String("by-g"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: eaValues(":g", avS("G"))})
	requireNoError(t, err, "Query by-g")
	if len(out.Items) != 0 {
		t.Errorf("index by-g has %d entries after a cancelled transaction, want 0", len(out.Items))
	}
	requireItem(t, getItem(t, c, b, pk("y")), attrs{"pk": avS("y"), "n": avN("1")})
	requireItem(t, getItem(t, c, b, pk("z")), attrs{"pk": avS("z"), "st": avS("closed")})
}
