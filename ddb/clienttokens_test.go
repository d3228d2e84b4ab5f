package ddb_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// tokenTx is a tokened transaction that adds 1 to the counter n of item
// "k" and puts item "v" with attribute v.
func tokenTx(table, token, v string) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{
		ClientRequestToken:     aws.String(token),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		TransactItems: []types.TransactWriteItem{
			txUpdate(table, pk("k"), "ADD n :one", eaValues(":one", avN("1"))),
			txPut(table, attrs{"pk": avS("v"), "v": avS(v)}),
		},
	}
}

// openTokenStore opens the store in dir with clock clk and no background
// loop, and creates table tokens unless it exists.
func openTokenStore(t *testing.T, dir string, clk *clock) (*ddb.Store, *dynamodb.Client) {
	t.Helper()
	s, err := ddb.Open(dir, &ddb.Options{Now: clk.Now, NoSync: true, TTLInterval: -1})
	requireNoError(t, err, "Open")
	c := ddb.NewClient(s, noRetry)
	if _, err := c.DescribeTable(tctx(t), &dynamodb.DescribeTableInput{TableName: aws.String("tokens")}); err != nil {
		_, err = c.CreateTable(tctx(t), tableSpec{Name: "tokens", Hash: "pk:S"}.input())
		requireNoError(t, err, "CreateTable")
	}
	return s, c
}

func TestTransactTokenSurvivesReopen(t *testing.T) {
	if externalEndpoint() != "" {
		t.Skip("reopens the embedded store")
	}
	dir := t.TempDir()
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, c := openTokenStore(t, dir, clk)
	_, err := c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "a"))
	requireNoError(t, err, "first call")
	// A ConditionCheck-only transaction has a token record and no item write.
	_, err = c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{
		ClientRequestToken: aws.String("tok-check"),
		TransactItems:      []types.TransactWriteItem{txCheck("tokens", pk("k"), "n = :one", eaValues(":one", avN("1")))},
	})
	requireNoError(t, err, "check")
	requireNoError(t, s.Close(), "Close")

	// (1) After a restart, within the window, the same request answers as
	// before (with the read units of a replay) without applying again.
	clk.advance(5 * time.Minute)
	s, c = openTokenStore(t, dir, clk)
	defer func() { s.Close() }()
	again, err := c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "a"))
	requireNoError(t, err, "repeated call after reopen")
	if cc := again.ConsumedCapacity; len(cc) != 1 || aws.ToFloat64(cc[0].ReadCapacityUnits) != 4 || cc[0].WriteCapacityUnits != nil {
		t.Fatalf("repeated call capacity %+v, want 4 read units", cc)
	}
	if n := nAttr(getItem(t, c, "tokens", pk("k")), "n"); n != "1" {
		t.Fatalf("n = %s after a repeated call after reopen, want 1", n)
	}
	// (2) Other parameters with the same token: mismatch, also after a restart.
	_, err = c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "b"))
	requireAPIError(t, err, "IdempotentParameterMismatchException", "same client token")
	requireNoError(t, s.Close(), "Close")
	s, c = openTokenStore(t, dir, clk)
	_, err = c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "b"))
	requireAPIError(t, err, "IdempotentParameterMismatchException", "same client token")
	_, err = c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{
		ClientRequestToken: aws.String("tok-check"),
		TransactItems:      []types.TransactWriteItem{txCheck("tokens", pk("k"), "n = :one", eaValues(":one", avN("1")))},
	})
	requireNoError(t, err, "check replay")
	requireNoError(t, s.Close(), "Close")

	// (3) Ten minutes after the commit the token is free again, after a
	// restart too: the transaction applies.
	clk.advance(5 * time.Minute)
	s, c = openTokenStore(t, dir, clk)
	_, err = c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "b"))
	requireNoError(t, err, "token after 10 minutes")
	if n := nAttr(getItem(t, c, "tokens", pk("k")), "n"); n != "2" {
		t.Fatalf("n = %s, want 2", n)
	}
	requireItem(t, getItem(t, c, "tokens", pk("v")), attrs{"pk": avS("v"), "v": avS("b")})
	// The new use is durable in turn.
	requireNoError(t, s.Close(), "Close")
	clk.advance(time.Minute)
	s, c = openTokenStore(t, dir, clk)
	_, err = c.TransactWriteItems(tctx(t), tokenTx("tokens", "tok-1", "b"))
	requireNoError(t, err, "repeated second use")
	if n := nAttr(getItem(t, c, "tokens", pk("k")), "n"); n != "2" {
		t.Fatalf("n = %s after repeating the second use, want 2", n)
	}
}

func TestTransactTokenSweep(t *testing.T) {
	if externalEndpoint() != "" {
		t.Skip("inspects the embedded store")
	}
	dir := t.TempDir()
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, c := openTokenStore(t, dir, clk)
	defer func() { s.Close() }()
	for _, tok := range []string{"a", "b"} {
		_, err := c.TransactWriteItems(tctx(t), tokenTx("tokens", tok, tok))
		requireNoError(t, err, "tokened call "+tok)
	}
	clk.advance(5 * time.Minute)
	_, err := c.TransactWriteItems(tctx(t), tokenTx("tokens", "c", "c"))
	requireNoError(t, err, "tokened call c")
	ok, exp, err := s.TokenRecordForTest("a")
	requireNoError(t, err, "token record")
	if !ok || !exp.Equal(time.Date(2030, 1, 1, 0, 10, 0, 0, time.UTC)) {
		t.Fatalf("token record of a: %v, expires %v", ok, exp)
	}
	// Deleting the table leaves the store-wide tokens alone.
	_, err = c.DeleteTable(tctx(t), &dynamodb.DeleteTableInput{TableName: aws.String("tokens")})
	requireNoError(t, err, "DeleteTable")
	if ok, _, _ := s.TokenRecordForTest("a"); !ok {
		t.Fatal("DeleteTable removed a token record")
	}
	if n, err := s.SweepTokensForTest(clk.Now()); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v", n, err)
	}
	clk.advance(5 * time.Minute)
	if n, err := s.SweepTokensForTest(clk.Now()); err != nil || n != 2 {
		t.Fatalf("sweep at expiry of a and b: %d, %v; want 2", n, err)
	}
	for tok, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if ok, _, _ := s.TokenRecordForTest(tok); ok != want {
			t.Fatalf("token record of %s present = %v, want %v", tok, ok, want)
		}
	}
	// An expired token looked up is deleted and free (the table is gone,
	// so the new use fails with ResourceNotFound, not with a replay).
	clk.advance(5 * time.Minute)
	_, err = c.TransactWriteItems(tctx(t), tokenTx("tokens", "c", "c"))
	requireAPIError(t, err, "ResourceNotFoundException", "")
	if ok, _, _ := s.TokenRecordForTest("c"); ok {
		t.Fatal("expired token record of c not deleted on lookup")
	}
	if n, err := s.SweepTokensForTest(clk.Now()); err != nil || n != 0 {
		t.Fatalf("sweep after lazy deletion: %d, %v", n, err)
	}
}
