package ddb_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/ddb"
)

// txPut, txUpdate, txDelete and txCheck build transaction actions.
func txPut(table string, item attrs) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: item}}
}

func txUpdate(table string, key attrs, update string, values map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: key, UpdateExpression: aws.String(update), ExpressionAttributeValues: values}}
}

func txDelete(table string, key attrs) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(table), Key: key}}
}

func txCheck(table string, key attrs, cond string, values map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key, ConditionExpression: aws.String(cond), ExpressionAttributeValues: values}}
}

func pk(s string) attrs { return attrs{"pk": avS(s)} }

// requireCanceled fails unless err is a TransactionCanceledException and
// returns its reasons.
func requireCanceled(t *testing.T, err error) []types.CancellationReason {
	t.Helper()
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("got %v, want TransactionCanceledException", err)
	}
	codes := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	want := "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"
	if got := aws.ToString(tce.Message); got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	return tce.CancellationReasons
}

func reasonCodes(rs []types.CancellationReason) string {
	codes := make([]string, len(rs))
	for i, r := range rs {
		codes[i] = aws.ToString(r.Code)
	}
	return strings.Join(codes, ",")
}

func transact(t *testing.T, c *dynamodb.Client, items ...types.TransactWriteItem) error {
	t.Helper()
	_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

func TestTransactWriteItemsAppliesAllActions(t *testing.T) {
	c := newClient(t)
	a := createTable(t, c, tableSpec{Hash: "pk:S"})
	b := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	putItems(t, c, a, attrs{"pk": avS("upd"), "n": avN("1")}, attrs{"pk": avS("del")}, attrs{"pk": avS("chk"), "ok": avBool(true)})
	err := transact(t, c,
		txPut(a, attrs{"pk": avS("new"), "v": avS("x")}),
		txUpdate(a, pk("upd"), "SET n = n + :one", eaValues(":one", avN("1"))),
		txDelete(a, pk("del")),
		txCheck(a, pk("chk"), "ok = :t", eaValues(":t", avBool(true))),
		txPut(b, attrs{"pk": avS("p"), "sk": avN("7")}),
		txUpdate(b, attrs{"pk": avS("p"), "sk": avN("8")}, "SET created = :t", eaValues(":t", avBool(true))),
	)
	requireNoError(t, err, "TransactWriteItems")
	requireItem(t, getItem(t, c, a, pk("new")), attrs{"pk": avS("new"), "v": avS("x")})
	requireItem(t, getItem(t, c, a, pk("upd")), attrs{"pk": avS("upd"), "n": avN("2")})
	requireItem(t, getItem(t, c, a, pk("del")), nil)
	requireItem(t, getItem(t, c, b, attrs{"pk": avS("p"), "sk": avN("7")}), attrs{"pk": avS("p"), "sk": avN("7")})
	requireItem(t, getItem(t, c, b, attrs{"pk": avS("p"), "sk": avN("8")}), attrs{"pk": avS("p"), "sk": avN("8"), "created": avBool(true)})
}

func TestTransactWriteItemsCancellation(t *testing.T) {
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S", GSIs: []indexSpec{{Name: "gsi", Hash: "gk:S"}}})
	putItems(t, c, tab,
		attrs{"pk": avS("locked"), "status": avS("locked")},
		attrs{"pk": avS("str"), "n": avS("not a number")},
		attrs{"pk": avS("big"), "blob": avS(strings.Repeat("x", 300_000))},
	)
	witness := txPut(tab, attrs{"pk": avS("witness")})
	cases := []struct {
		name    string
		items   []types.TransactWriteItem
		codes   string
		message map[int]string // reason messages to check, by index
		item    map[int]attrs  // reason items to check, by index
	}{
		{
			name:  "condition fails on ConditionCheck",
			items: []types.TransactWriteItem{witness, {ConditionCheck: &types.ConditionCheck{TableName: aws.String(tab), Key: pk("locked"), ConditionExpression: aws.String("#s = :u"), ExpressionAttributeNames: eaNames("#s", "status"), ExpressionAttributeValues: eaValues(":u", avS("unlocked"))}}},
			codes: "None,ConditionalCheckFailed", message: map[int]string{1: "The conditional request failed"},
		},
		{
			name: "two failing Puts report both, in order",
			items: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("locked")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
				witness,
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("str")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			},
			codes: "ConditionalCheckFailed,None,ConditionalCheckFailed",
		},
		{
			name: "ALL_OLD returns the item with the reason",
			items: []types.TransactWriteItem{witness, {Delete: &types.Delete{
				TableName: aws.String(tab), Key: pk("locked"), ConditionExpression: aws.String("attribute_not_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}},
			codes: "None,ConditionalCheckFailed", item: map[int]attrs{1: {"pk": avS("locked"), "status": avS("locked")}},
		},
		{
			name:  "Update with attribute_exists on an absent item",
			items: []types.TransactWriteItem{{Update: &types.Update{TableName: aws.String(tab), Key: pk("absent"), UpdateExpression: aws.String("ADD hits :one"), ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: eaValues(":one", avN("1"))}}, witness},
			codes: "ConditionalCheckFailed,None",
		},
		{
			name:  "update operand of the wrong type",
			items: []types.TransactWriteItem{witness, txUpdate(tab, pk("str"), "SET n = n + :one", eaValues(":one", avN("1")))},
			codes: "None,ValidationError", message: map[int]string{1: "An operand in the update expression has an incorrect data type"},
		},
		{
			name:  "update makes the item too large",
			items: []types.TransactWriteItem{witness, txUpdate(tab, pk("big"), "SET more = :v", eaValues(":v", avS(strings.Repeat("y", 200_000))))},
			codes: "None,ValidationError", message: map[int]string{1: "Item size to update has exceeded the maximum allowed size"},
		},
		{
			name:  "update gives an index key the wrong type",
			items: []types.TransactWriteItem{witness, txUpdate(tab, pk("locked"), "SET gk = :n", eaValues(":n", avN("1")))},
			codes: "None,ValidationError", message: map[int]string{1: "One or more parameter values were invalid: Type mismatch for Index Key gk Expected: S Actual: N IndexName: gsi"},
		},
		{
			name:  "Put key of the wrong type",
			items: []types.TransactWriteItem{txPut(tab, attrs{"pk": avN("5")}), witness},
			codes: "ValidationError,None", message: map[int]string{0: "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N"},
		},
		{
			name:  "Delete key of the wrong type",
			items: []types.TransactWriteItem{witness, txDelete(tab, attrs{"pk": avN("5")})},
			codes: "None,ValidationError", message: map[int]string{1: "The provided key element does not match the schema"},
		},
		{
			name: "validation stops at the first invalid action",
			items: []types.TransactWriteItem{
				txPut(tab, attrs{"pk": avN("7")}),
				txPut(tab, attrs{"pk": avN("8")}),
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("locked")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			},
			codes: "ValidationError,None,None", message: map[int]string{0: "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N"},
		},
		{
			name: "an invalid key hides an earlier failing condition",
			items: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("locked")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
				txDelete(tab, attrs{"pk": avN("5")}),
			},
			codes: "None,ValidationError", message: map[int]string{1: "The provided key element does not match the schema"},
		},
		{
			name: "an update error hides a later failing condition",
			items: []types.TransactWriteItem{
				txUpdate(tab, pk("str"), "SET n = n + :one", eaValues(":one", avN("1"))),
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("locked")}, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			},
			codes: "ValidationError,None", message: map[int]string{0: "An operand in the update expression has an incorrect data type"},
		},
		{
			name:  "ConditionCheck key with an extra attribute",
			items: []types.TransactWriteItem{witness, txCheck(tab, attrs{"pk": avS("locked"), "x": avS("y")}, "attribute_exists(pk)", nil)},
			codes: "None,ValidationError", message: map[int]string{1: "The provided key element does not match the schema"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reasons := requireCanceled(t, transact(t, c, tc.items...))
			if got := reasonCodes(reasons); got != tc.codes {
				t.Fatalf("reasons %s, want %s", got, tc.codes)
			}
			for i, m := range tc.message {
				if got := aws.ToString(reasons[i].Message); got != m {
					t.Errorf("reason %d message %q, want %q", i, got, m)
				}
			}
			for i, it := range tc.item {
				requireItem(t, reasons[i].Item, it)
			}
			for i, r := range reasons {
				if aws.ToString(r.Code) == "None" && r.Message != nil {
					t.Errorf("reason %d is None with message %q", i, *r.Message)
				}
			}
			for i, r := range reasons {
				if _, ok := tc.item[i]; !ok && r.Item != nil {
					t.Errorf("reason %d has an unexpected Item", i)
				}
			}
			requireItem(t, getItem(t, c, tab, pk("witness")), nil)
		})
	}
	requireItem(t, getItem(t, c, tab, pk("locked")), attrs{"pk": avS("locked"), "status": avS("locked")})
	requireItem(t, getItem(t, c, tab, pk("absent")), nil)
}

func TestTransactWriteItemsValidation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	many := func(n int) []types.TransactWriteItem {
		items := make([]types.TransactWriteItem, n)
		for i := range items {
			items[i] = txPut(tab, pk(fmt.Sprintf("k%d", i)))
		}
		return items
	}
	big := func(i int) types.TransactWriteItem {
		return txPut(tab, attrs{"pk": avS(fmt.Sprintf("big%d", i)), "b": avS(strings.Repeat("x", 350_000))})
	}
	cases := []struct {
		name    string
		in      dynamodb.TransactWriteItemsInput
		code    string
		message string
	}{
		{"empty list", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{}}, "ValidationException",
			"1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"101 actions", dynamodb.TransactWriteItemsInput{TransactItems: many(101)}, "ValidationException",
			"failed to satisfy constraint: Member must have length less than or equal to 100"},
		{"bad ReturnConsumedCapacity", dynamodb.TransactWriteItemsInput{TransactItems: many(1), ReturnConsumedCapacity: "BOGUS"}, "ValidationException",
			"1 validation error detected: Value 'BOGUS' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]"},
		{"bad ReturnItemCollectionMetrics", dynamodb.TransactWriteItemsInput{TransactItems: many(1), ReturnItemCollectionMetrics: "BOGUS2"}, "ValidationException",
			"Value 'BOGUS2' at 'returnItemCollectionMetrics' failed to satisfy constraint: Member must satisfy enum value set: [SIZE, NONE]"},
		{"token too long", dynamodb.TransactWriteItemsInput{TransactItems: many(1), ClientRequestToken: aws.String(strings.Repeat("x", 37))}, "ValidationException",
			"at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36"},
		{"one item twice", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(tab, pk("dup")), txCheck(tab, pk("dup"), "attribute_exists(pk)", nil)}}, "ValidationException",
			"Transaction request cannot include multiple operations on one item"},
		{"table does not exist", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut("no-such-table", pk("x"))}}, "ResourceNotFoundException",
			"Requested resource not found"},
		{"unused value before a missing table", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut("no-such-table", pk("x")), txCheck(tab, pk("x2"), "attribute_exists(pk)", eaValues(":v", avS("x")))}}, "ValidationException",
			"Value provided in ExpressionAttributeValues unused in expressions: keys: {:v}"},
		{"syntax error", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txCheck(tab, pk("x"), "attribute_not_exists(", nil)}}, "ValidationException",
			"Invalid ConditionExpression: Syntax error"},
		{"empty string key", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txDelete(tab, pk(""))}}, "ValidationException",
			"One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: pk"},
		{"update of a key attribute", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txUpdate(tab, pk("x"), "SET pk = :v", eaValues(":v", avS("y")))}}, "ValidationException",
			"Cannot update attribute pk. This attribute is part of the key"},
		{"Put item over 400 KB", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{txPut(tab, attrs{"pk": avS("x"), "b": avS(strings.Repeat("x", 410_000))})}}, "ValidationException",
			"Item size has exceeded the maximum allowed size"},
		{"over 4 MB in all", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{big(1), big(2), big(3), big(4), big(5), big(6), big(7), big(8), big(9), big(10), big(11), big(12)}}, "ValidationException",
			"Transaction request size cannot exceed 4 MB"},
		{"two members in one action", dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(tab), Item: pk("a")}, Delete: &types.Delete{TableName: aws.String(tab), Key: pk("b")}}}}, "ValidationException",
			"TransactItems can only contain one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.TransactWriteItems(tctx(t), &tc.in)
			requireAPIError(t, err, tc.code, tc.message)
		})
	}
	out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tab)})
	requireNoError(t, err, "Scan")
	if out.Count != 0 {
		t.Fatalf("rejected transactions wrote %d items", out.Count)
	}
	// Exactly 100 actions and 10 items of 350 KB are within the limits.
	requireNoError(t, transact(t, c, many(100)...), "100 actions")
	requireNoError(t, transact(t, c, big(1), big(2), big(3), big(4), big(5), big(6), big(7), big(8), big(9), big(10)), "3.5 MB")
	// The limit is on the request's payload, not on the stored items it
	// names: deleting 4.2 MB of items in one transaction is allowed.
	requireNoError(t, transact(t, c, big(11), big(12)), "0.7 MB")
	var dels []types.TransactWriteItem
	for i := 1; i <= 12; i++ {
		dels = append(dels, txDelete(tab, pk(fmt.Sprintf("big%d", i))))
	}
	requireNoError(t, transact(t, c, dels...), "deleting 4.2 MB")
}

// clock is a settable time source for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestTransactWriteItemsClientRequestToken(t *testing.T) {
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := ddb.Open(t.TempDir(), &ddb.Options{Now: clk.Now, NoSync: true})
	requireNoError(t, err, "Open")
	t.Cleanup(func() { s.Close() })
	c := ddb.NewClient(s, noRetry)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	in := func(token, v string) *dynamodb.TransactWriteItemsInput {
		return &dynamodb.TransactWriteItemsInput{
			ClientRequestToken:     aws.String(token),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			TransactItems: []types.TransactWriteItem{
				txUpdate(tab, pk("k"), "ADD n :one", eaValues(":one", avN("1"))),
				txPut(tab, attrs{"pk": avS("v"), "v": avS(v)}),
			},
		}
	}
	first, err := c.TransactWriteItems(tctx(t), in("tok-1", "a"))
	requireNoError(t, err, "first call")
	if cc := first.ConsumedCapacity; len(cc) != 1 || aws.ToFloat64(cc[0].WriteCapacityUnits) != 4 || cc[0].ReadCapacityUnits != nil {
		t.Fatalf("first call capacity %+v, want 4 write units", cc)
	}
	// The same request again: success, nothing written, read units reported.
	clk.advance(9 * time.Minute)
	again, err := c.TransactWriteItems(tctx(t), in("tok-1", "a"))
	requireNoError(t, err, "repeated call")
	if cc := again.ConsumedCapacity; len(cc) != 1 || aws.ToFloat64(cc[0].ReadCapacityUnits) != 4 || cc[0].WriteCapacityUnits != nil {
		t.Fatalf("repeated call capacity %+v, want 4 read units", cc)
	}
	if n := nAttr(getItem(t, c, tab, pk("k")), "n"); n != "1" {
		t.Fatalf("n = %s after a repeated call, want 1", n)
	}
	// The same token with other parameters.
	_, err = c.TransactWriteItems(tctx(t), in("tok-1", "b"))
	requireAPIError(t, err, "IdempotentParameterMismatchException", "same client token")
	// A cancelled transaction does not use up its token.
	_, err = c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{
		ClientRequestToken: aws.String("tok-2"),
		TransactItems:      []types.TransactWriteItem{txCheck(tab, pk("k"), "n = :nine", eaValues(":nine", avN("9")))},
	})
	requireCanceled(t, err)
	_, err = c.TransactWriteItems(tctx(t), in("tok-2", "c"))
	requireNoError(t, err, "token of a cancelled transaction")
	// Ten minutes after the first call completed, the token is new again.
	clk.advance(time.Minute)
	_, err = c.TransactWriteItems(tctx(t), in("tok-1", "b"))
	requireNoError(t, err, "token after 10 minutes")
	if it := getItem(t, c, tab, pk("k")); nAttr(it, "n") != "3" {
		t.Fatalf("n = %s, want 3", nAttr(it, "n"))
	}
	requireItem(t, getItem(t, c, tab, pk("v")), attrs{"pk": avS("v"), "v": avS("b")})
}

// TestTransactWriteItemsConcurrentTransfers moves money between accounts
// from many goroutines; the balance conditions and the item locks must keep
// the total constant and no balance negative, and every read transaction
// must see a constant total.
func TestTransactWriteItemsConcurrentTransfers(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "concurrency stress")
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	const accounts, initial, workers, transfers = 6, 100, 20, 50
	gets := make([]types.TransactGetItem, accounts)
	for i := range accounts {
		id := "acct" + strconv.Itoa(i)
		putItems(t, c, tab, attrs{"pk": avS(id), "balance": avN(strconv.Itoa(initial))})
		gets[i] = types.TransactGetItem{Get: &types.Get{TableName: aws.String(tab), Key: pk(id)}}
	}
	var wg sync.WaitGroup
	var done, canceled atomic.Int64
	errs := make(chan error, workers+1)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range transfers {
				from, to := (w+i)%accounts, (w+2*i+1)%accounts
				if from == to {
					to = (to + 1) % accounts
				}
				amt := eaValues(":amt", avN(strconv.Itoa(1+(w*7+i)%30)))
				_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: aws.String(tab), Key: pk("acct" + strconv.Itoa(from)), UpdateExpression: aws.String("SET balance = balance - :amt"), ConditionExpression: aws.String("balance >= :amt"), ExpressionAttributeValues: amt}},
					{Update: &types.Update{TableName: aws.String(tab), Key: pk("acct" + strconv.Itoa(to)), UpdateExpression: aws.String("SET balance = balance + :amt"), ExpressionAttributeValues: amt}},
				}})
				var tce *types.TransactionCanceledException
				switch {
				case err == nil:
					done.Add(1)
				case errors.As(err, &tce):
					canceled.Add(1)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: gets})
			if err != nil {
				errs <- err
				return
			}
			sum := 0
			for _, r := range out.Responses {
				n, _ := strconv.Atoi(nAttr(r.Item, "balance"))
				sum += n
			}
			if sum != accounts*initial {
				errs <- fmt.Errorf("TransactGetItems saw a total of %d, want %d", sum, accounts*initial)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum := 0
	for i := range accounts {
		n, _ := strconv.Atoi(nAttr(getItem(t, c, tab, pk("acct"+strconv.Itoa(i))), "balance"))
		if n < 0 {
			t.Errorf("acct%d has a negative balance %d", i, n)
		}
		sum += n
	}
	if sum != accounts*initial {
		t.Fatalf("total %d after %d transfers (%d cancelled), want %d", sum, done.Load(), canceled.Load(), accounts*initial)
	}
	if done.Load() == 0 {
		t.Fatal("no transfer succeeded")
	}
	t.Logf("%d transfers, %d cancelled", done.Load(), canceled.Load())
}

// TestTransactWriteItemsRacesPutItem runs compare-and-swap increments of one
// item through transactions and through conditional PutItems at once: every
// success must claim a distinct version, so the final version counts them.
func TestTransactWriteItemsRacesPutItem(t *testing.T) {
	skipIfExternal(t, "concurrency stress")
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, tab, attrs{"pk": avS("x"), "v": avN("0")})
	read := func() int {
		n, _ := strconv.Atoi(nAttr(getItem(t, c, tab, pk("x")), "v"))
		return n
	}
	var txWins, putWins atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	worker := func(useTx bool) {
		defer wg.Done()
		for range 60 {
			cur := read()
			vals := eaValues(":cur", avN(strconv.Itoa(cur)))
			var err error
			if useTx {
				_, err = c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS("x"), "v": avN(strconv.Itoa(cur + 1))}, ConditionExpression: aws.String("v = :cur"), ExpressionAttributeValues: vals}},
					txPut(tab, attrs{"pk": avS("claim-" + strconv.Itoa(cur+1))}),
				}})
			} else {
				_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tab), Item: attrs{"pk": avS("x"), "v": avN(strconv.Itoa(cur + 1))}, ConditionExpression: aws.String("v = :cur"), ExpressionAttributeValues: vals})
			}
			var tce *types.TransactionCanceledException
			var ccf *types.ConditionalCheckFailedException
			switch {
			case err == nil && useTx:
				txWins.Add(1)
			case err == nil:
				putWins.Add(1)
			case errors.As(err, &tce), errors.As(err, &ccf):
			default:
				errs <- err
				return
			}
		}
	}
	for i := range 4 {
		wg.Add(1)
		go worker(i%2 == 0)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := read(), int(txWins.Load()+putWins.Load()); got != want {
		t.Fatalf("version %d after %d transaction and %d PutItem successes: a write was lost", got, txWins.Load(), putWins.Load())
	}
	out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tab), FilterExpression: aws.String("begins_with(pk, :c)"), ExpressionAttributeValues: eaValues(":c", avS("claim-"))})
	requireNoError(t, err, "Scan")
	if out.Count != int32(txWins.Load()) {
		t.Fatalf("%d claims for %d transaction successes", out.Count, txWins.Load())
	}
	if txWins.Load() == 0 || putWins.Load() == 0 {
		t.Logf("one side never won (tx %d, put %d)", txWins.Load(), putWins.Load())
	}
}

func TestTransactGetItems(t *testing.T) {
	c := newClient(t)
	a := createTable(t, c, tableSpec{Hash: "pk:S"})
	b := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	putItems(t, c, a, attrs{"pk": avS("one"), "x": avN("1"), "y": avS("why")})
	putItems(t, c, b, attrs{"pk": avS("p"), "sk": avN("1"), "z": avBool(true)})
	get := func(table string, key attrs) types.TransactGetItem {
		return types.TransactGetItem{Get: &types.Get{TableName: aws.String(table), Key: key}}
	}
	proj := get(a, pk("one"))
	proj.Get.ProjectionExpression = aws.String("#y")
	proj.Get.ExpressionAttributeNames = eaNames("#y", "y")
	out, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		get(b, attrs{"pk": avS("p"), "sk": avN("1")}),
		get(a, pk("missing")),
		proj,
	}})
	requireNoError(t, err, "TransactGetItems")
	if len(out.Responses) != 3 {
		t.Fatalf("%d responses, want 3", len(out.Responses))
	}
	requireItem(t, out.Responses[0].Item, attrs{"pk": avS("p"), "sk": avN("1"), "z": avBool(true)})
	requireItem(t, out.Responses[1].Item, nil)
	requireItem(t, out.Responses[2].Item, attrs{"y": avS("why")})

	cases := []struct {
		name    string
		items   []types.TransactGetItem
		rcc     types.ReturnConsumedCapacity
		code    string
		message string
	}{
		{"empty list", []types.TransactGetItem{}, "", "ValidationException", "Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"bad ReturnConsumedCapacity", []types.TransactGetItem{get(a, pk("one"))}, "BOGUS", "ValidationException", "Value 'BOGUS' at 'returnConsumedCapacity'"},
		{"table does not exist", []types.TransactGetItem{get("no-such-table", pk("one"))}, "", "ResourceNotFoundException", "Requested resource not found"},
		{"one item twice", []types.TransactGetItem{get(a, pk("one")), get(a, pk("one"))}, "", "ValidationException", "Transaction request cannot include multiple operations on one item"},
		{"empty key value", []types.TransactGetItem{get(a, pk(""))}, "", "ValidationException", "cannot contain an empty string value"},
		{"bad projection", []types.TransactGetItem{{Get: &types.Get{TableName: aws.String(a), Key: pk("one"), ProjectionExpression: aws.String("!!!")}}}, "", "ValidationException", `Invalid ProjectionExpression: Syntax error; token: "!", near: "!!"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: tc.items, ReturnConsumedCapacity: tc.rcc})
			requireAPIError(t, err, tc.code, tc.message)
		})
	}
	t.Run("101 gets", func(t *testing.T) {
		items := make([]types.TransactGetItem, 101)
		for i := range items {
			items[i] = get(a, pk(strconv.Itoa(i)))
		}
		_, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: items})
		requireAPIError(t, err, "ValidationException", "Member must have length less than or equal to 100")
		_, err = c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: items[:100]})
		requireNoError(t, err, "100 gets")
	})
	t.Run("key not matching the schema", func(t *testing.T) {
		_, err := c.TransactGetItems(tctx(t), &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{get(a, pk("one")), get(a, attrs{})}})
		reasons := requireCanceled(t, err)
		if got := reasonCodes(reasons); got != "None,ValidationError" {
			t.Fatalf("reasons %s", got)
		}
		if got := aws.ToString(reasons[1].Message); got != "The provided key element does not match the schema" {
			t.Fatalf("message %q", got)
		}
	})
}

// TestTransactWriteItemsLimitUnderContention is the quota pattern of the
// seed designs (Wallcrawler's project concurrency, Checks' checkLimit): 20
// concurrent transactions each increment a counter guarded by a limit of 5
// and insert one item; exactly 5 commit and the counter says 5.
func TestTransactWriteItemsLimitUnderContention(t *testing.T) {
	c := newClient(t)
	tab := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, tab, attrs{"pk": avS("project"), "count": avN("0"), "limit": avN("5")})
	const n = 20
	start := make(chan struct{})
	var wg sync.WaitGroup
	var committed, canceled atomic.Int64
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{TableName: aws.String(tab), Key: pk("project"),
					UpdateExpression:          aws.String("SET #c = #c + :one"),
					ConditionExpression:       aws.String("#c < #l"),
					ExpressionAttributeNames:  map[string]string{"#c": "count", "#l": "limit"},
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": avN("1")}}},
				{Put: &types.Put{TableName: aws.String(tab), Item: attrs{"pk": avS(fmt.Sprintf("session-%d", i))},
					ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			}})
			var tce *types.TransactionCanceledException
			switch {
			case err == nil:
				committed.Add(1)
			case errors.As(err, &tce):
				if got := reasonCodes(tce.CancellationReasons); got != "ConditionalCheckFailed,None" {
					errs <- fmt.Errorf("cancellation reasons %s", got)
				}
				canceled.Add(1)
			default:
				// TransactionConflictException would also be a valid answer
				// from DynamoDB; the embedded store serialises instead.
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if committed.Load() != 5 || canceled.Load() != n-5 {
		t.Fatalf("%d committed, %d cancelled; want 5 and %d", committed.Load(), canceled.Load(), n-5)
	}
	out, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tab)})
	if err != nil {
		t.Fatal(err)
	}
	sessions, count := 0, ""
	for _, it := range out.Items {
		if id := it["pk"].(*types.AttributeValueMemberS).Value; id == "project" {
			count = it["count"].(*types.AttributeValueMemberN).Value
		} else {
			sessions++
		}
	}
	if sessions != 5 || count != "5" {
		t.Fatalf("%d sessions and count %s after the race; want 5 and 5", sessions, count)
	}
}
