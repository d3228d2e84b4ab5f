package ddb_test

// Stored-item limits and robustness: DynamoDB's 32-level nesting limit on
// every write path, undecodable stored items that must not block a table,
// "Item": {} for a projection that matches nothing, remove-only updates of
// missing items, and attribute-name lengths.

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/ddb/attr"
)

const nestingMsg = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"

// deepMap wraps a scalar leaf in n single-member maps: n = 31 puts the
// leaf at level 32, the deepest DynamoDB accepts.
func deepMap(n int) types.AttributeValue {
	var v types.AttributeValue = avS("leaf")
	for i := 0; i < n; i++ {
		v = avM(attrs{"n": v})
	}
	return v
}

// deepList does the same with single-element lists.
func deepList(n int) types.AttributeValue {
	var v types.AttributeValue = avN("1")
	for i := 0; i < n; i++ {
		v = avL(v)
	}
	return v
}

// depthOf counts the maps around the leaf of a deepMap.
func depthOf(v types.AttributeValue) int {
	n := 0
	for {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return n
		}
		n++
		v = m.Value["n"]
	}
}

// storeClients returns a client of one embedded store in-process and one
// over HTTP, with the store, for tests that run both ways.
func storeClients(t *testing.T) []struct {
	name string
	c    *dynamodb.Client
	s    *ddb.Store
} {
	t.Helper()
	skipIfExternal(t, "the embedded store's own behaviour")
	s1, s2 := newStore(t), newStore(t)
	srv := httptest.NewServer(s2.Handler())
	t.Cleanup(srv.Close)
	wire := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDQUARRYTEST", "quarry-test-secret", ""),
	}, noRetry)
	return []struct {
		name string
		c    *dynamodb.Client
		s    *ddb.Store
	}{{"in-process", ddb.NewClient(s1, noRetry), s1}, {"wire", wire, s2}}
}

// TestNestingLimit pins DynamoDB's 32-level limit on every write path: a
// value of 31 maps or lists around a scalar is stored and read back, 32
// (and the original report's 64) are a ValidationException that writes
// nothing.
func TestNestingLimit(t *testing.T) {
	for _, cl := range storeClients(t) {
		t.Run(cl.name, func(t *testing.T) {
			c := cl.c
			tab := createTable(t, c, tableSpec{Hash: "pk:S"})
			tn := aws.String(tab)
			key := func(k string) attrs { return attrs{"pk": avS(k)} }
			put := func(k string, d types.AttributeValue) error {
				_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: tn, Item: attrs{"pk": avS(k), "d": d}})
				return err
			}
			partiqlMap := func(n int) string { return strings.Repeat("{'n':", n) + "1" + strings.Repeat("}", n) }

			writes := []struct {
				name  string
				run   func(k string, n int) error
				wrote bool // whether an accepted write stores d at key k
			}{
				{"PutItem map", func(k string, n int) error { return put(k, deepMap(n)) }, true},
				{"PutItem list", func(k string, n int) error { return put(k, deepList(n)) }, true},
				{"BatchWriteItem", func(k string, n int) error {
					_, err := c.BatchWriteItem(tctx(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
						tab: {{PutRequest: &types.PutRequest{Item: attrs{"pk": avS(k), "d": deepMap(n)}}}}}})
					return err
				}, true},
				{"TransactWriteItems Put", func(k string, n int) error {
					_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
						{Put: &types.Put{TableName: tn, Item: attrs{"pk": avS(k), "d": deepMap(n)}}}}})
					return err
				}, true},
				{"UpdateItem SET", func(k string, n int) error {
					_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: tn, Key: key(k),
						UpdateExpression: aws.String("SET d = :d"), ExpressionAttributeValues: attrs{":d": deepMap(n)}})
					return err
				}, true},
				{"UpdateItem condition value", func(k string, n int) error {
					_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: tn, Key: key(k),
						UpdateExpression: aws.String("SET x = :x"), ConditionExpression: aws.String("attribute_not_exists(d) OR d <> :d"),
						ExpressionAttributeValues: attrs{":x": avS("y"), ":d": deepMap(n)}})
					return err
				}, false},
				{"PutItem condition value", func(k string, n int) error {
					_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: tn, Item: key(k),
						ConditionExpression: aws.String("attribute_not_exists(d) OR d <> :d"), ExpressionAttributeValues: attrs{":d": deepMap(n)}})
					return err
				}, false},
				{"ExecuteStatement INSERT", func(k string, n int) error {
					_, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{
						Statement: aws.String("INSERT INTO \"" + tab + "\" VALUE {'pk':'" + k + "','d':" + partiqlMap(n) + "}")})
					return err
				}, true},
				{"ExecuteStatement UPDATE", func(k string, n int) error {
					if _, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: tn, Item: key(k)}); err != nil {
						return err
					}
					_, err := c.ExecuteStatement(tctx(t), &dynamodb.ExecuteStatementInput{
						Statement: aws.String("UPDATE \"" + tab + "\" SET d = " + partiqlMap(n) + " WHERE pk='" + k + "'")})
					return err
				}, true},
				{"ExecuteTransaction INSERT", func(k string, n int) error {
					_, err := c.ExecuteTransaction(tctx(t), &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
						{Statement: aws.String("INSERT INTO \"" + tab + "\" VALUE {'pk':'" + k + "','d':" + partiqlMap(n) + "}")}}})
					return err
				}, true},
			}
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					k := strings.ReplaceAll(w.name, " ", "-")
					if err := w.run(k+"-31", 31); err != nil {
						t.Fatalf("31 levels around a scalar: %v", err)
					}
					if w.wrote && strings.Contains(w.name, "map") {
						if got := depthOf(getItem(t, c, tab, key(k+"-31"))["d"]); got != 31 {
							t.Fatalf("read back %d levels, want 31", got)
						}
					}
					for _, n := range []int{32, 33, 64} {
						requireAPIError(t, w.run(k+"-deep", n), "ValidationException", nestingMsg)
					}
					if it := getItem(t, c, tab, key(k+"-deep")); it != nil && it["d"] != nil {
						t.Fatalf("a refused write stored d: %s", renderItem(it))
					}
				})
			}

			// BatchExecuteStatement answers per statement.
			out, err := c.BatchExecuteStatement(tctx(t), &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
				{Statement: aws.String("INSERT INTO \"" + tab + "\" VALUE {'pk':'bes','d':" + partiqlMap(32) + "}")}}})
			if err != nil {
				t.Fatal(err)
			}
			if e := out.Responses[0].Error; e == nil || e.Code != types.BatchStatementErrorCodeEnumValidationError || !strings.Contains(aws.ToString(e.Message), "Nesting Levels") {
				t.Fatalf("BatchExecuteStatement: %+v", out.Responses[0].Error)
			}

			// An update whose result would be too deep is refused and
			// changes nothing: m.n×k = :v puts :v's 16 maps at levels
			// k+1..k+16.
			put("upd", deepMap(16))
			path := func(k int) string { return "d" + strings.Repeat(".n", k) }
			_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: tn, Key: key("upd"),
				UpdateExpression: aws.String("SET " + path(16) + " = :v"), ExpressionAttributeValues: attrs{":v": deepMap(16)}})
			requireAPIError(t, err, "ValidationException", nestingMsg)
			if got := depthOf(getItem(t, c, tab, key("upd"))["d"]); got != 16 {
				t.Fatalf("after a refused update: %d levels, want 16 (unchanged)", got)
			}
			_, err = c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{TableName: tn, Key: key("upd"), UpdateExpression: aws.String("SET " + path(16) + " = :v"),
					ExpressionAttributeValues: attrs{":v": deepMap(16)}}}}})
			requireAPIError(t, err, "TransactionCanceledException", "ValidationError")
			var tce *types.TransactionCanceledException
			if !errors.As(err, &tce) || len(tce.CancellationReasons) != 1 || !strings.Contains(aws.ToString(tce.CancellationReasons[0].Message), "Nesting Levels") {
				t.Fatalf("TransactWriteItems Update: %v", err)
			}
			if _, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: tn, Key: key("upd"),
				UpdateExpression: aws.String("SET " + path(15) + " = :v"), ExpressionAttributeValues: attrs{":v": deepMap(16)}}); err != nil {
				t.Fatalf("an update to 31 levels: %v", err)
			}
			if got := depthOf(getItem(t, c, tab, key("upd"))["d"]); got != 31 {
				t.Fatalf("after the update: %d levels, want 31", got)
			}
		})
	}
}

// TestCorruptStoredItem is the second half of the original report: a stored
// item that cannot be decoded made GetItem, Scan and even DeleteItem of the
// table fail. Now Scan and Query skip it (logged, counted in
// Metrics.CorruptItems), reads of other items work, a read of it names its
// key, and DeleteItem removes it with its index entries.
func TestCorruptStoredItem(t *testing.T) {
	for _, cl := range storeClients(t) {
		t.Run(cl.name, func(t *testing.T) {
			c := cl.c
			tab := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S", Stream: types.StreamViewTypeNewAndOldImages,
				GSIs: []indexSpec{{Name: "by-g", Hash: "g:S"}}})
			tn := aws.String(tab)
			for _, sk := range []string{"a", "b", "c"} {
				putItems(t, c, tab, attrs{"pk": avS("p"), "sk": avS(sk), "g": avS("G"), "v": avS(sk)})
			}
			putItems(t, c, tab, attrs{"pk": avS("q"), "sk": avS("x"), "g": avS("G")})
			before := cl.s.IndexKeyCountForTest()
			if err := cl.s.CorruptItemForTest(tab, attr.Item{"pk": attr.Str("p"), "sk": attr.Str("b")}, []byte{0x05, 0xff, 0x00}); err != nil {
				t.Fatal(err)
			}
			bad := attrs{"pk": avS("p"), "sk": avS("b")}

			// Reads of the corrupt item name its key.
			_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: tn, Key: bad})
			requireAPIError(t, err, "InternalServerError", `{"pk":{"S":"p"},"sk":{"S":"b"}}`)
			_, err = c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: tn, Key: bad, ProjectionExpression: aws.String("v")})
			requireAPIError(t, err, "InternalServerError", "in table "+tab)
			_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: tn, Key: bad, UpdateExpression: aws.String("SET v = :v"),
				ExpressionAttributeValues: attrs{":v": avS("z")}})
			requireAPIError(t, err, "InternalServerError", "cannot be decoded")

			// Reads of other items work; pages leave the corrupt one out.
			if it := getItem(t, c, tab, attrs{"pk": avS("p"), "sk": avS("c")}); it == nil {
				t.Fatal("GetItem of another item: none")
			}
			reads := []struct {
				name string
				run  func() ([]attrs, error)
				want int
			}{
				{"Scan", func() ([]attrs, error) {
					o, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: tn})
					if err != nil {
						return nil, err
					}
					return o.Items, nil
				}, 3},
				{"Scan filtered", func() ([]attrs, error) {
					o, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: tn, FilterExpression: aws.String("attribute_exists(g)")})
					if err != nil {
						return nil, err
					}
					return o.Items, nil
				}, 3},
				{"Query", func() ([]attrs, error) {
					o, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"),
						ExpressionAttributeValues: attrs{":p": avS("p")}})
					if err != nil {
						return nil, err
					}
					return o.Items, nil
				}, 2},
				{"Scan with Limit 1 pages", func() ([]attrs, error) {
					var all []attrs
					var start attrs
					for {
						o, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: tn, Limit: aws.Int32(1), ExclusiveStartKey: start})
						if err != nil {
							return nil, err
						}
						all = append(all, o.Items...)
						if o.LastEvaluatedKey == nil {
							return all, nil
						}
						start = o.LastEvaluatedKey
					}
				}, 3},
			}
			for _, r := range reads {
				items, err := r.run()
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if len(items) != r.want {
					t.Fatalf("%s: %d items, want %d", r.name, len(items), r.want)
				}
			}
			if n := cl.s.Metrics().CorruptItems; n == 0 {
				t.Fatal("Metrics.CorruptItems: 0 after skipping a corrupt item")
			}

			// DeleteItem removes it, and its index entry, found by key.
			if _, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: tn, Key: bad, ReturnValues: types.ReturnValueAllOld}); err != nil {
				t.Fatalf("DeleteItem of the corrupt item: %v", err)
			}
			if it := getItem(t, c, tab, bad); it != nil {
				t.Fatalf("after DeleteItem: %s", renderItem(it))
			}
			if after := cl.s.IndexKeyCountForTest(); after != before-1 {
				t.Fatalf("index entries: %d after deleting, want %d", after, before-1)
			}
			o, err := c.Query(tctx(t), &dynamodb.QueryInput{TableName: tn, IndexName: aws.String("by-g"), KeyConditionExpression: aws.String("g = :g"),
				ExpressionAttributeValues: attrs{":g": avS("G")}})
			if err != nil || len(o.Items) != 3 {
				t.Fatalf("index Query after deleting: %v, %d items", err, len(o.Items))
			}

			// An unconditional PutItem replaces a corrupt item too.
			if err := cl.s.CorruptItemForTest(tab, attr.Item{"pk": attr.Str("p"), "sk": attr.Str("c")}, []byte{0xff}); err != nil {
				t.Fatal(err)
			}
			putItems(t, c, tab, attrs{"pk": avS("p"), "sk": avS("c"), "v": avS("new")})
			requireItem(t, getItem(t, c, tab, attrs{"pk": avS("p"), "sk": avS("c")}), attrs{"pk": avS("p"), "sk": avS("c"), "v": avS("new")})
		})
	}
}

// TestGetItemProjectionMatchesNothing: a projection that matches no
// attribute of an existing item answers "Item": {}, a missing item no Item.
func TestGetItemProjectionMatchesNothing(t *testing.T) {
	for _, cl := range storeClients(t) {
		t.Run(cl.name, func(t *testing.T) {
			c := cl.c
			tab := createTable(t, c, tableSpec{Hash: "pk:S"})
			putItems(t, c, tab, attrs{"pk": avS("here"), "a": avS("1")})
			tests := []struct {
				name string
				in   dynamodb.GetItemInput
				want attrs // nil: no Item
			}{
				{"ProjectionExpression, existing item", dynamodb.GetItemInput{Key: attrs{"pk": avS("here")}, ProjectionExpression: aws.String("nope, x.y")}, attrs{}},
				{"AttributesToGet, existing item", dynamodb.GetItemInput{Key: attrs{"pk": avS("here")}, AttributesToGet: []string{"nope"}}, attrs{}},
				{"ProjectionExpression, missing item", dynamodb.GetItemInput{Key: attrs{"pk": avS("gone")}, ProjectionExpression: aws.String("nope")}, nil},
				{"AttributesToGet, missing item", dynamodb.GetItemInput{Key: attrs{"pk": avS("gone")}, AttributesToGet: []string{"nope"}}, nil},
				{"ProjectionExpression, a match", dynamodb.GetItemInput{Key: attrs{"pk": avS("here")}, ProjectionExpression: aws.String("a, nope")}, attrs{"a": avS("1")}},
			}
			for _, tt := range tests {
				in := tt.in
				in.TableName = aws.String(tab)
				out, err := c.GetItem(tctx(t), &in)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if (out.Item == nil) != (tt.want == nil) {
					t.Fatalf("%s: Item %v, want %v", tt.name, out.Item, tt.want)
				}
				requireItem(t, out.Item, tt.want)
			}
		})
	}
}

// TestUpdateMissingItemOnlyRemoves: an update of a missing item that only
// removes (REMOVE, DELETE from a set, AttributeUpdates DELETE) creates no
// item and returns no Attributes, whatever ReturnValues asks.
func TestUpdateMissingItemOnlyRemoves(t *testing.T) {
	for _, cl := range storeClients(t) {
		t.Run(cl.name, func(t *testing.T) {
			c := cl.c
			tab := createTable(t, c, tableSpec{Hash: "pk:S"})
			updates := []struct {
				name   string
				in     dynamodb.UpdateItemInput
				create bool
			}{
				{"REMOVE", dynamodb.UpdateItemInput{UpdateExpression: aws.String("REMOVE a, b.c")}, false},
				{"DELETE from a set", dynamodb.UpdateItemInput{UpdateExpression: aws.String("DELETE s :s"), ExpressionAttributeValues: attrs{":s": avSS("x")}}, false},
				{"REMOVE and DELETE", dynamodb.UpdateItemInput{UpdateExpression: aws.String("REMOVE a DELETE s :s"), ExpressionAttributeValues: attrs{":s": avSS("x")}}, false},
				{"AttributeUpdates DELETE", dynamodb.UpdateItemInput{AttributeUpdates: map[string]types.AttributeValueUpdate{
					"a": {Action: types.AttributeActionDelete}, "s": {Action: types.AttributeActionDelete, Value: avSS("x")}}}, false},
				{"SET creates", dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :a REMOVE b"), ExpressionAttributeValues: attrs{":a": avS("1")}}, true},
				{"AttributeUpdates PUT creates", dynamodb.UpdateItemInput{AttributeUpdates: map[string]types.AttributeValueUpdate{
					"a": {Action: types.AttributeActionPut, Value: avS("1")}, "b": {Action: types.AttributeActionDelete}}}, true},
			}
			for i, u := range updates {
				for _, rv := range []types.ReturnValue{types.ReturnValueAllNew, types.ReturnValueUpdatedNew, types.ReturnValueAllOld, types.ReturnValueUpdatedOld, types.ReturnValueNone} {
					key := attrs{"pk": avS(u.name + string(rv))}
					in := u.in
					in.TableName, in.Key, in.ReturnValues = aws.String(tab), key, rv
					out, err := c.UpdateItem(tctx(t), &in)
					if err != nil {
						t.Fatalf("%d %s %s: %v", i, u.name, rv, err)
					}
					got := getItem(t, c, tab, key)
					if (got != nil) != u.create {
						t.Fatalf("%s %s: item after the update: %v, want created: %v", u.name, rv, got, u.create)
					}
					if !u.create && len(out.Attributes) != 0 {
						t.Fatalf("%s %s: Attributes %s, want none", u.name, rv, renderItem(out.Attributes))
					}
				}
			}
		})
	}
}

// TestAttributeNameLengths: a key attribute's name over 255 bytes is a
// ValidationException wherever a schema names it, before the other schema
// checks; any attribute name over 65,535 bytes in an item likewise.
func TestAttributeNameLengths(t *testing.T) {
	for _, cl := range storeClients(t) {
		t.Run(cl.name, func(t *testing.T) {
			c := cl.c
			long := strings.Repeat("k", 256)
			ok255 := strings.Repeat("k", 255)
			const msg255 = "failed to satisfy constraint: Member must have length less than or equal to 255"
			def := func(n string) types.AttributeDefinition {
				return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
			}
			ks := func(n string) []types.KeySchemaElement {
				return []types.KeySchemaElement{{AttributeName: aws.String(n), KeyType: types.KeyTypeHash}}
			}
			all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
			tests := []struct {
				name  string
				in    dynamodb.CreateTableInput
				field string
			}{
				// The definition of the long name is missing too: the
				// length is reported first.
				{"table key schema", dynamodb.CreateTableInput{KeySchema: ks(long), AttributeDefinitions: []types.AttributeDefinition{def("pk")}}, "keySchema.1.member.attributeName"},
				{"attribute definition", dynamodb.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: []types.AttributeDefinition{def("pk"), def(long)}}, "attributeDefinitions.2.member.attributeName"},
				{"GSI key schema", dynamodb.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: []types.AttributeDefinition{def("pk")},
					GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks(long), Projection: all}}}, "globalSecondaryIndexes.1.member.keySchema.1.member.attributeName"},
				{"GSI projection", dynamodb.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: []types.AttributeDefinition{def("pk"), def("g")},
					GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks("g"),
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"a", long}}}}}, "globalSecondaryIndexes.1.member.projection.nonKeyAttributes"},
				{"LSI key schema", dynamodb.CreateTableInput{KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
					AttributeDefinitions: []types.AttributeDefinition{def("pk"), def("sk")},
					LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"), Projection: all,
						KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(long), KeyType: types.KeyTypeRange}}}}},
					"localSecondaryIndexes.1.member.keySchema.2.member.attributeName"},
				{"LSI projection", dynamodb.CreateTableInput{KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
					AttributeDefinitions: []types.AttributeDefinition{def("pk"), def("sk"), def("l")},
					LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"),
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{long}},
						KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("l"), KeyType: types.KeyTypeRange}}}}},
					"localSecondaryIndexes.1.member.projection.nonKeyAttributes"},
			}
			for _, tt := range tests {
				in := tt.in
				in.TableName = aws.String(uniqueName(t))
				in.BillingMode = types.BillingModePayPerRequest
				_, err := c.CreateTable(tctx(t), &in)
				requireAPIError(t, err, "ValidationException", "at '"+tt.field+"' "+strings.SplitN(msg255, ":", 2)[0])
				if !strings.Contains(err.Error(), "less than or equal to 255") {
					t.Fatalf("%s: %v", tt.name, err)
				}
			}

			// 255 bytes is fine, and an item can use it.
			tab := uniqueName(t)
			createTableInput(t, c, &dynamodb.CreateTableInput{TableName: aws.String(tab), BillingMode: types.BillingModePayPerRequest,
				KeySchema: ks(ok255), AttributeDefinitions: []types.AttributeDefinition{def(ok255)}})
			putItems(t, c, tab, attrs{ok255: avS("x")})

			// UpdateTable's new GSI.
			_, err := c.UpdateTable(tctx(t), &dynamodb.UpdateTableInput{TableName: aws.String(tab),
				AttributeDefinitions: []types.AttributeDefinition{def(long)},
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: aws.String("gsi"), KeySchema: ks(long), Projection: all}}}})
			requireAPIError(t, err, "ValidationException", "at 'globalSecondaryIndexUpdates.1.member.create.keySchema.1.member.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255")

			// Item attribute names: 65,535 bytes at most.
			_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tab), Item: attrs{ok255: avS("y"), strings.Repeat("a", 65536): avS("v")}})
			requireAPIError(t, err, "ValidationException", "Attribute name is too large, must be less than 65536 bytes")
			_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tab), Key: attrs{ok255: avS("y")},
				UpdateExpression: aws.String("SET #a = :v"), ExpressionAttributeNames: map[string]string{"#a": strings.Repeat("a", 65536)},
				ExpressionAttributeValues: attrs{":v": avS("v")}})
			requireAPIError(t, err, "ValidationException", "Attribute name is too large")
			name65535 := strings.Repeat("a", 65535)
			putItems(t, c, tab, attrs{ok255: avS("y"), name65535: avS("v")})

			// Every other place a request names an attribute refuses a
			// name of 65,536 bytes, and accepts one of 65,535 (ScyllaDB
			// Alternator's test_limit_attribute_length_nonkey_*).
			key := attrs{ok255: avS("y")}
			for _, tt := range []struct {
				path string
				call func(name string) error
			}{
				{"GetItem ProjectionExpression", func(name string) error {
					_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tab), Key: key,
						ProjectionExpression: aws.String("#n"), ExpressionAttributeNames: map[string]string{"#n": name}})
					return err
				}},
				{"GetItem AttributesToGet", func(name string) error {
					_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tab), Key: key, AttributesToGet: []string{name}})
					return err
				}},
				{"Scan ProjectionExpression", func(name string) error {
					_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tab),
						ProjectionExpression: aws.String("#n"), ExpressionAttributeNames: map[string]string{"#n": name}})
					return err
				}},
				{"UpdateItem AttributeUpdates", func(name string) error {
					_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tab), Key: key,
						AttributeUpdates: map[string]types.AttributeValueUpdate{name: {Value: avS("v"), Action: types.AttributeActionPut}}})
					return err
				}},
				{"UpdateItem ConditionExpression", func(name string) error {
					_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tab), Key: key,
						UpdateExpression: aws.String("SET b = :v"), ConditionExpression: aws.String("#n = :v"),
						ExpressionAttributeNames: map[string]string{"#n": name}, ExpressionAttributeValues: attrs{":v": avS("v")}})
					return err
				}},
				{"TransactWriteItems Put item", func(name string) error {
					_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
						TableName: aws.String(tab), Item: attrs{ok255: avS("t"), name: avS("v")}}}}})
					return err
				}},
				{"TransactWriteItems Update UpdateExpression", func(name string) error {
					_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
						TableName: aws.String(tab), Key: key, UpdateExpression: aws.String("SET #n = :v"),
						ExpressionAttributeNames: map[string]string{"#n": name}, ExpressionAttributeValues: attrs{":v": avS("v")}}}}})
					return err
				}},
				{"TransactWriteItems ConditionCheck", func(name string) error {
					_, err := c.TransactWriteItems(tctx(t), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
						TableName: aws.String(tab), Key: key, ConditionExpression: aws.String("attribute_exists(#n)"),
						ExpressionAttributeNames: map[string]string{"#n": name}}}}})
					return err
				}},
				{"PutItem Expected", func(name string) error {
					_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tab), Item: key,
						Expected: map[string]types.ExpectedAttributeValue{name: {Exists: aws.Bool(false)}}})
					return err
				}},
				{"Scan ScanFilter", func(name string) error {
					_, err := c.Scan(tctx(t), &dynamodb.ScanInput{TableName: aws.String(tab),
						ScanFilter: map[string]types.Condition{name: {ComparisonOperator: types.ComparisonOperatorNotNull}}})
					return err
				}},
			} {
				var ae smithy.APIError
				if err := tt.call(strings.Repeat("a", 65536)); !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" ||
					ae.ErrorMessage() != "Attribute name is too large, must be less than 65536 bytes" {
					t.Errorf("%s with a name of 65,536 bytes: got %v, want ValidationException: Attribute name is too large, must be less than 65536 bytes", tt.path, err)
				}
				if err := tt.call(name65535); err != nil {
					var ccf *types.ConditionalCheckFailedException
					if !errors.As(err, &ccf) {
						t.Errorf("%s with a name of 65,535 bytes: %v", tt.path, err)
					}
				}
			}
		})
	}
}
