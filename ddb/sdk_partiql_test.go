package ddb_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func execStmt(t *testing.T, c *dynamodb.Client, stmt string, params ...types.AttributeValue) (*dynamodb.ExecuteStatementOutput, error) {
	t.Helper()
	return c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt), Parameters: params})
}

func mustExec(t *testing.T, c *dynamodb.Client, stmt string, params ...types.AttributeValue) []attrs {
	t.Helper()
	out, err := execStmt(t, c, stmt, params...)
	requireNoError(t, err, stmt)
	return out.Items
}

func TestSDKPartiQLStatements(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N", GSIs: []indexSpec{{Name: "byG", Hash: "g:S", Projection: types.ProjectionTypeAll}}})
	q := `"` + tbl + `"`

	// INSERT with literals of every kind and a parameter.
	mustExec(t, c, `INSERT INTO `+q+` VALUE {'pk': 'a', 'sk': 1, 'g': 'x', 's': 'it''s', 'n': 1.50, 'b': true, 'z': null, 'l': [1, 'two'], 'm': {'in': {'deep': 'yes'}}, 'ss': <<'p', 'q'>>, 'ns': <<3, 4>>, 'bin': ?}`, avB([]byte{1, 2}))
	requireItem(t, getItem(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1")}), attrs{
		"pk": avS("a"), "sk": avN("1"), "g": avS("x"), "s": avS("it's"), "n": avN("1.5"), "b": avBool(true), "z": avNull(),
		"l": avL(avN("1"), avS("two")), "m": avM(attrs{"in": avM(attrs{"deep": avS("yes")})}), "ss": avSS("p", "q"), "ns": avNS("3", "4"), "bin": avB([]byte{1, 2}),
	})
	for i, sk := range []string{"2", "3", "4"} {
		mustExec(t, c, `INSERT INTO `+q+` VALUE {'pk': ?, 'sk': ?, 'g': ?, 'v': ?}`, avS("a"), avN(sk), avS([]string{"x", "y", "y"}[i]), avN(sk))
	}
	mustExec(t, c, `INSERT INTO `+q+` VALUE {'pk': 'b', 'sk': 1, 'v': 10}`)

	// INSERT of an existing key.
	_, err := execStmt(t, c, `INSERT INTO `+q+` VALUE {'pk': 'a', 'sk': 1}`)
	requireAPIError(t, err, "DuplicateItemException", "Duplicate primary key")

	// SELECT by full key, a partition (Query), a sort-key range, begins_with, a Scan with a filter.
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE pk = 'a' AND sk = 1`); len(items) != 1 || sAttr(items[0], "s") != "it's" {
		t.Fatalf("select by key = %v", items)
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE pk = ?`, avS("a")); len(items) != 4 {
		t.Fatalf("select partition: %d items", len(items))
	}
	if items := mustExec(t, c, `SELECT sk FROM `+q+` WHERE pk = 'a' AND sk BETWEEN 2 AND 3`); len(items) != 2 || len(items[0]) != 1 {
		t.Fatalf("select between = %v", items)
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE 'a' = pk AND sk > 1 AND v >= 3 AND NOT (v = 4)`); len(items) != 1 || nAttr(items[0], "v") != "3" {
		t.Fatalf("select with filter = %v", items)
	}
	// ORDER BY the sort key.
	if items := mustExec(t, c, `SELECT sk FROM `+q+` WHERE pk = 'a' ORDER BY sk DESC`); len(items) != 4 || nAttr(items[0], "sk") != "4" || nAttr(items[3], "sk") != "1" {
		t.Fatalf("ORDER BY DESC = %v", items)
	}
	_, err = execStmt(t, c, `SELECT * FROM `+q+` ORDER BY sk`)
	requireAPIError(t, err, "ValidationException", "ORDER BY")
	// Conditions on key attributes beyond the key condition.
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE pk = 'a' AND sk > 1 AND sk < 4`); len(items) != 2 {
		t.Fatalf("select two sort-key bounds: %d items", len(items))
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE pk = 'a' AND sk <> 2 AND (sk = 1 OR v = 3)`); len(items) != 2 {
		t.Fatalf("select sk <> / OR: %d items", len(items))
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE v IN [2, 10] OR attribute_type(m, 'M')`); len(items) != 3 {
		t.Fatalf("scan IN/OR: %d items", len(items))
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE s IS MISSING AND v IS NOT MISSING AND size(g) = 1 AND contains(g, 'y')`); len(items) != 2 {
		t.Fatalf("scan missing/size/contains: %d items", len(items))
	}
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE begins_with(s, 'it')`); len(items) != 1 {
		t.Fatalf("scan begins_with: %d items", len(items))
	}
	// Projection of nested paths names them by their last element.
	items := mustExec(t, c, `SELECT m.in.deep, l[1], "pk" FROM `+q+` WHERE pk = 'a' AND sk = 1`)
	if len(items) != 1 {
		t.Fatalf("nested projection = %v", items)
	}
	requireItem(t, items[0], attrs{"deep": avS("yes"), "l": avS("two"), "pk": avS("a")})
	// A GSI.
	if items := mustExec(t, c, `SELECT * FROM `+q+`."byG" WHERE g = 'y'`); len(items) != 2 {
		t.Fatalf("index select: %d items", len(items))
	}

	// pk IN [...] queries each partition; paging crosses partitions.
	if items := mustExec(t, c, `SELECT * FROM `+q+` WHERE pk IN ['b', 'a', 'zz', 'b'] AND sk >= 1`); len(items) != 5 || sAttr(items[0], "pk") != "b" {
		t.Fatalf("select IN: %v", items)
	}
	var inSeen []attrs
	var inNext *string
	for pages := 0; ; pages++ {
		out, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk IN ['a', 'zz', 'b']`), Limit: aws.Int32(2), NextToken: inNext})
		requireNoError(t, err, "paged IN select")
		inSeen = append(inSeen, out.Items...)
		if out.NextToken == nil {
			break
		}
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		inNext = out.NextToken
	}
	if len(inSeen) != 5 {
		t.Fatalf("paged IN saw %d items", len(inSeen))
	}
	_, err = c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM ` + q), NextToken: aws.String("garbage")})
	requireAPIError(t, err, "ValidationException", "NextToken")

	// Paging with Limit / NextToken.
	var seen []attrs
	var next *string
	for pages := 0; ; pages++ {
		out, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = 'a'`), Limit: aws.Int32(3), NextToken: next})
		requireNoError(t, err, "paged select")
		seen = append(seen, out.Items...)
		if out.NextToken == nil {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		next = out.NextToken
	}
	if len(seen) != 4 {
		t.Fatalf("paging saw %d items", len(seen))
	}

	// UPDATE: SET literal, arithmetic, list_append, set_add, REMOVE.
	mustExec(t, c, `UPDATE `+q+` SET s = 'new', n = n + 1 SET l = list_append(l, [3]) SET ss = set_add(ss, <<'r'>>) REMOVE z, b WHERE pk = 'a' AND sk = 1`)
	it := getItem(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1")})
	if sAttr(it, "s") != "new" || nAttr(it, "n") != "2.5" || len(it["l"].(*types.AttributeValueMemberL).Value) != 3 || len(it["ss"].(*types.AttributeValueMemberSS).Value) != 3 || it["z"] != nil || it["b"] != nil {
		t.Fatalf("after update: %s", renderItem(it))
	}
	// RETURNING.
	items = mustExec(t, c, `UPDATE `+q+` SET v = 30 WHERE pk = 'a' AND sk = 3 RETURNING MODIFIED OLD *`)
	if len(items) != 1 || len(items[0]) != 1 || nAttr(items[0], "v") != "3" {
		t.Fatalf("RETURNING MODIFIED OLD = %v", items)
	}
	items = mustExec(t, c, `UPDATE `+q+` SET v = v + 1 WHERE pk = 'a' AND sk = 3 RETURNING ALL NEW *`)
	if len(items) != 1 || nAttr(items[0], "v") != "31" || sAttr(items[0], "g") != "y" {
		t.Fatalf("RETURNING ALL NEW = %v", items)
	}
	// UPDATE of a missing item, and with a failing extra condition.
	_, err = execStmt(t, c, `UPDATE `+q+` SET s = 'x' WHERE pk = 'nope' AND sk = 1`)
	requireAPIError(t, err, "ConditionalCheckFailedException", "")
	_, err = execStmt(t, c, `UPDATE `+q+` SET s = 'x' WHERE pk = 'a' AND sk = 1 AND s = 'old'`)
	requireAPIError(t, err, "ConditionalCheckFailedException", "")
	// The WHERE must pin the whole key.
	_, err = execStmt(t, c, `UPDATE `+q+` SET s = 'x' WHERE pk = 'a'`)
	requireAPIError(t, err, "ValidationException", "key attributes")

	// DELETE, of an existing and a missing item, and with a condition.
	if items := mustExec(t, c, `DELETE FROM `+q+` WHERE pk = 'b' AND sk = 1 RETURNING ALL OLD *`); len(items) != 1 || nAttr(items[0], "v") != "10" {
		t.Fatalf("DELETE RETURNING ALL OLD = %v", items)
	}
	if it := getItem(t, c, tbl, attrs{"pk": avS("b"), "sk": avN("1")}); it != nil {
		t.Fatalf("after delete: %s", renderItem(it))
	}
	mustExec(t, c, `DELETE FROM `+q+` WHERE pk = 'b' AND sk = 1`)
	_, err = execStmt(t, c, `DELETE FROM `+q+` WHERE pk = 'a' AND sk = 2 AND v = 99`)
	requireAPIError(t, err, "ConditionalCheckFailedException", "")

	// Errors.
	_, err = execStmt(t, c, `SELECTT * FROMM `+q)
	requireAPIError(t, err, "ValidationException", "line 1, column 1")
	_, err = execStmt(t, c, `SELECT * FROM `+q+` WHERE pk = ?`)
	requireAPIError(t, err, "ValidationException", "parameters")
	_, err = execStmt(t, c, `SELECT * FROM "no-such-table-partiql" WHERE pk = 'x'`)
	requireAPIError(t, err, "ResourceNotFoundException", "")
}

func TestSDKPartiQLBatch(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	q := `"` + tbl + `"`
	putItems(t, c, tbl, attrs{"pk": avS("a"), "v": avS("one")}, attrs{"pk": avS("dup")})

	out, err := c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`INSERT INTO ` + q + ` VALUE {'pk': 'b', 'v': 'two'}`)},
		{Statement: aws.String(`INSERT INTO ` + q + ` VALUE {'pk': 'dup'}`)},
		{Statement: aws.String(`UPDATE ` + q + ` SET v = ? WHERE pk = 'a'`), Parameters: []types.AttributeValue{avS("uno")}},
		{Statement: aws.String(`UPDATE ` + q + ` SET v = 'x' WHERE pk = 'missing'`)},
		{Statement: aws.String(`DELETE FROM "no-such-table-partiql" WHERE pk = 'x'`)},
	}})
	requireNoError(t, err, "BatchExecuteStatement")
	var codes []string
	for _, r := range out.Responses {
		code := ""
		if r.Error != nil {
			code = string(r.Error.Code)
		}
		codes = append(codes, code)
	}
	want := []string{"", "DuplicateItem", "", "ConditionalCheckFailed", "ResourceNotFound"}
	if len(codes) != len(want) {
		t.Fatalf("codes = %q", codes)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes = %q, want %q", codes, want)
		}
	}
	if v := sAttr(getItem(t, c, tbl, attrs{"pk": avS("a")}), "v"); v != "uno" {
		t.Fatalf("update in batch: v = %q", v)
	}
	if getItem(t, c, tbl, attrs{"pk": avS("b")}) == nil {
		t.Fatal("insert in batch did not happen")
	}

	// Reads: an item found, one missing.
	out, err = c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = 'b'`)},
		{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = 'zzz'`)},
		{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE v = 'x'`)},
	}})
	requireNoError(t, err, "BatchExecuteStatement reads")
	if len(out.Responses) != 3 || sAttr(out.Responses[0].Item, "v") != "two" || out.Responses[1].Item != nil || out.Responses[1].Error != nil ||
		out.Responses[2].Error == nil || out.Responses[2].Error.Code != types.BatchStatementErrorCodeEnumValidationError {
		t.Fatalf("batch reads = %+v", out.Responses)
	}

	_, err = c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{}})
	requireAPIError(t, err, "ValidationException", "")
}

func TestSDKPartiQLTransaction(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	q := `"` + tbl + `"`
	putItems(t, c, tbl, attrs{"pk": avS("a"), "n": avN("1")})

	stmts := func(ss ...string) []types.ParameterizedStatement {
		var out []types.ParameterizedStatement
		for _, s := range ss {
			out = append(out, types.ParameterizedStatement{Statement: aws.String(s)})
		}
		return out
	}
	// One failing condition: nothing is written.
	_, err := c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`INSERT INTO `+q+` VALUE {'pk': 'b'}`,
		`UPDATE `+q+` SET n = n + 1 WHERE pk = 'a' AND n = 5`,
	)})
	apiErr := requireAPIError(t, err, "TransactionCanceledException", "")
	var tce *types.TransactionCanceledException
	if !errors.As(apiErr, &tce) || len(tce.CancellationReasons) != 2 || aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" {
		t.Fatalf("cancellation reasons: %v", err)
	}
	if getItem(t, c, tbl, attrs{"pk": avS("b")}) != nil {
		t.Fatal("cancelled transaction wrote its INSERT")
	}
	// A duplicate INSERT cancels with DuplicateItem.
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`INSERT INTO `+q+` VALUE {'pk': 'a'}`,
		`INSERT INTO `+q+` VALUE {'pk': 'c'}`,
	)})
	apiErr = requireAPIError(t, err, "TransactionCanceledException", "")
	if !errors.As(apiErr, &tce) || aws.ToString(tce.CancellationReasons[0].Code) != "DuplicateItem" {
		t.Fatalf("cancellation reasons: %v", err)
	}
	if getItem(t, c, tbl, attrs{"pk": avS("c")}) != nil {
		t.Fatal("cancelled transaction wrote its second INSERT")
	}
	// Success: all applied.
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`INSERT INTO `+q+` VALUE {'pk': 'b', 'n': 7}`,
		`UPDATE `+q+` SET n = n + 1 WHERE pk = 'a' AND n = 1`,
	)})
	requireNoError(t, err, "ExecuteTransaction")
	if nAttr(getItem(t, c, tbl, attrs{"pk": avS("a")}), "n") != "2" || getItem(t, c, tbl, attrs{"pk": avS("b")}) == nil {
		t.Fatal("transaction not applied")
	}
	// EXISTS is a condition check.
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`EXISTS(SELECT * FROM `+q+` WHERE pk = 'a' AND n = 99)`,
		`UPDATE `+q+` SET n = 0 WHERE pk = 'b'`,
	)})
	apiErr = requireAPIError(t, err, "TransactionCanceledException", "")
	if !errors.As(apiErr, &tce) || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
		t.Fatalf("cancellation reasons: %v", err)
	}
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`EXISTS(SELECT * FROM `+q+` WHERE pk = 'a' AND n = 2 AND x IS MISSING)`,
		`UPDATE `+q+` SET n = 8 WHERE pk = 'b'`,
	)})
	requireNoError(t, err, "ExecuteTransaction with EXISTS")
	if nAttr(getItem(t, c, tbl, attrs{"pk": avS("b")}), "n") != "8" {
		t.Fatal("transaction with EXISTS not applied")
	}
	_, err = execStmt(t, c, `EXISTS(SELECT * FROM `+q+` WHERE pk = 'a')`)
	requireAPIError(t, err, "ValidationException", "EXISTS")
	// A read transaction.
	out, err := c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`SELECT n FROM `+q+` WHERE pk = 'a'`,
		`SELECT * FROM `+q+` WHERE pk = 'zzz'`,
		`SELECT * FROM `+q+` WHERE pk = 'b'`,
	)})
	requireNoError(t, err, "read ExecuteTransaction")
	if len(out.Responses) != 3 || nAttr(out.Responses[0].Item, "n") != "2" || len(out.Responses[0].Item) != 1 || out.Responses[1].Item != nil || nAttr(out.Responses[2].Item, "n") != "8" {
		t.Fatalf("read transaction = %+v", out.Responses)
	}
	// Mixed reads and writes, and no statements, are rejected.
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: stmts(
		`SELECT * FROM `+q+` WHERE pk = 'a'`,
		`DELETE FROM `+q+` WHERE pk = 'b'`,
	)})
	requireAPIError(t, err, "ValidationException", "")
	_, err = c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{}})
	requireAPIError(t, err, "ValidationException", "")
}

func TestSDKPartiQLBatchMixed(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	q := `"` + tbl + `"`
	_, err := c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = 'a'`)},
		{Statement: aws.String(`DELETE FROM ` + q + ` WHERE pk = 'a'`)},
	}})
	requireAPIError(t, err, "ValidationException", "all reads or all writes")
	// A statement that does not parse fails alone.
	out, err := c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = 'a'`)},
		{Statement: aws.String(`SELEC * FROM ` + q)},
	}})
	requireNoError(t, err, "BatchExecuteStatement")
	if out.Responses[0].Error != nil || out.Responses[1].Error == nil || out.Responses[1].Error.Code != types.BatchStatementErrorCodeEnumValidationError {
		t.Fatalf("responses = %+v", out.Responses)
	}
}

func TestSDKPartiQLCapacityAndErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	q := `"` + tbl + `"`
	putItems(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1")}, attrs{"pk": avS("b"), "sk": avN("1")})

	out, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{
		Statement:              aws.String(`SELECT * FROM ` + q + ` WHERE pk IN ['a', 'b']`),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes,
	})
	requireNoError(t, err, "SELECT IN with capacity")
	if len(out.Items) != 2 || out.ConsumedCapacity == nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) < 1 || aws.ToString(out.ConsumedCapacity.TableName) != tbl {
		t.Fatalf("capacity = %+v", out.ConsumedCapacity)
	}
	wout, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{
		Statement:              aws.String(`INSERT INTO ` + q + ` VALUE {'pk': 'c', 'sk': 1}`),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	requireNoError(t, err, "INSERT with capacity")
	if wout.ConsumedCapacity == nil || aws.ToFloat64(wout.ConsumedCapacity.CapacityUnits) != 1 {
		t.Fatalf("write capacity = %+v", wout.ConsumedCapacity)
	}
	bout, err := c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`DELETE FROM ` + q + ` WHERE pk = 'c' AND sk = 1`)},
		{Statement: aws.String(`DELETE FROM ` + q + ` WHERE pk = 'b' AND sk = 1`)},
	}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	requireNoError(t, err, "batch with capacity")
	if len(bout.ConsumedCapacity) != 1 || aws.ToFloat64(bout.ConsumedCapacity[0].CapacityUnits) != 2 {
		t.Fatalf("batch capacity = %+v", bout.ConsumedCapacity)
	}

	// A condition failure can return the item.
	_, err = c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{
		Statement:                           aws.String(`UPDATE ` + q + ` SET x = 1 WHERE pk = 'a' AND sk = 1 AND x = 5`),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	apiErr := requireAPIError(t, err, "ConditionalCheckFailedException", "")
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(apiErr, &ccf) || sAttr(ccf.Item, "pk") != "a" {
		t.Fatalf("condition failure item: %v", err)
	}

	for _, stmt := range []string{
		`SELECT * FROM ` + q + ` WHERE list_append(a, b) = c`,
		`SELECT * FROM ` + q + ` WHERE a + 1 = 2`,
		`UPDATE ` + q + ` SET a = set_add(b, <<'x'>>) WHERE pk = 'a' AND sk = 1`,
		`SELECT * FROM ` + q + `."nope" WHERE pk = 'a'`,
		`SELECT * FROM ` + q + ` WHERE pk = 'a' ORDER BY other`,
		`DELETE FROM ` + q + ` WHERE sk = 1`,
	} {
		_, err := execStmt(t, c, stmt)
		requireAPIError(t, err, "ValidationException", "")
	}
	_, err = c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`DELETE FROM ` + q + ` WHERE pk = 'a' AND sk = 1`), Limit: aws.Int32(1)})
	requireAPIError(t, err, "ValidationException", "Limit")
	_, err = c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(``)})
	requireAPIError(t, err, "ValidationException", "")
}
