package ddb_test

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSDKPutGetDeleteItem(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	key := attrs{"pk": avS("a"), "sk": avN("1")}
	item := attrs{"pk": avS("a"), "sk": avN("1"), "v": avS("one"), "w": avN("2")}

	if it := getItem(t, c, tbl, key); it != nil {
		t.Fatalf("GetItem before any put = %s", renderItem(it))
	}
	out, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item, ReturnValues: types.ReturnValueAllOld})
	requireNoError(t, err, "PutItem")
	if len(out.Attributes) != 0 {
		t.Errorf("PutItem ALL_OLD of a new item = %s", renderItem(out.Attributes))
	}
	requireItem(t, getItem(t, c, tbl, key), item)

	// A put replaces the whole item.
	item2 := attrs{"pk": avS("a"), "sk": avN("1"), "x": avBool(true)}
	out, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item2, ReturnValues: types.ReturnValueAllOld})
	requireNoError(t, err, "PutItem")
	requireItem(t, out.Attributes, item)
	requireItem(t, getItem(t, c, tbl, key), item2)
	// NONE returns nothing.
	out, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item2, ReturnValues: types.ReturnValueNone})
	requireNoError(t, err, "PutItem")
	if out.Attributes != nil {
		t.Errorf("PutItem NONE returned %s", renderItem(out.Attributes))
	}
	// PutItem accepts only NONE and ALL_OLD.
	for _, rv := range []types.ReturnValue{types.ReturnValueAllNew, types.ReturnValueUpdatedOld, types.ReturnValueUpdatedNew} {
		_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item2, ReturnValues: rv})
		requireAPIError(t, err, "ValidationException", "ReturnValues")
	}

	// A number key is matched by value, not by text.
	requireItem(t, getItem(t, c, tbl, attrs{"pk": avS("a"), "sk": avN("1.000")}), item2)

	dout, err := c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key, ReturnValues: types.ReturnValueAllOld})
	requireNoError(t, err, "DeleteItem")
	requireItem(t, dout.Attributes, item2)
	if it := getItem(t, c, tbl, key); it != nil {
		t.Fatalf("GetItem after delete = %s", renderItem(it))
	}
	// Deleting a missing item succeeds and returns nothing.
	dout, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key, ReturnValues: types.ReturnValueAllOld})
	requireNoError(t, err, "DeleteItem of a missing item")
	if len(dout.Attributes) != 0 {
		t.Errorf("DeleteItem ALL_OLD of a missing item = %s", renderItem(dout.Attributes))
	}
	if !isExternal() { // dynalite accepts any ReturnValues on DeleteItem
		_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key, ReturnValues: types.ReturnValueAllNew})
		requireAPIError(t, err, "ValidationException", "ReturnValues")
	}
}

// docItem is an item with nested documents, for projections and paths.
func docItem(pk string) attrs {
	return attrs{
		"pk":   avS(pk),
		"s":    avS("hello"),
		"n":    avN("5"),
		"name": avS("reserved"),
		"l":    avL(avS("l0"), avS("l1"), avM(attrs{"x": avN("1"), "y": avN("2")})),
		"m": avM(attrs{
			"a":   avM(attrs{"b": avL(avM(attrs{"c": avN("0")}), avM(attrs{"c": avN("1")}), avM(attrs{"c": avN("2"), "d": avS("dd")}))}),
			"k":   avS("v"),
			"a.b": avS("dotted"),
		}),
		"ss": avSS("x", "y"),
	}
}

func TestSDKGetItemProjection(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, tbl, docItem("p"))
	cases := []struct {
		proj  string
		names map[string]string
		want  attrs
	}{
		{"s", nil, attrs{"s": avS("hello")}},
		{"s, n, pk", nil, attrs{"s": avS("hello"), "n": avN("5"), "pk": avS("p")}},
		{"#nm", eaNames("#nm", "name"), attrs{"name": avS("reserved")}},
		{"m.k", nil, attrs{"m": avM(attrs{"k": avS("v")})}},
		{"#m.#ab", eaNames("#m", "m", "#ab", "a.b"), attrs{"m": avM(attrs{"a.b": avS("dotted")})}},
		{"m.a.b[2].c", nil, attrs{"m": avM(attrs{"a": avM(attrs{"b": avL(avM(attrs{"c": avN("2")}))})})}},
		{"l[1]", nil, attrs{"l": avL(avS("l1"))}},
		{"l[0], l[2].y", nil, attrs{"l": avL(avS("l0"), avM(attrs{"y": avN("2")}))}},
		{"m.k, m.a.b[0]", nil, attrs{"m": avM(attrs{"k": avS("v"), "a": avM(attrs{"b": avL(avM(attrs{"c": avN("0")}))})})}},
		{"s, nothere, l[9], m.zz", nil, attrs{"s": avS("hello")}},
		{"ss", nil, attrs{"ss": avSS("x", "y")}},
	}
	for _, tc := range cases {
		t.Run(tc.proj, func(t *testing.T) {
			t.Parallel()
			out, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{
				TableName: aws.String(tbl), Key: attrs{"pk": avS("p")},
				ProjectionExpression: aws.String(tc.proj), ExpressionAttributeNames: tc.names,
			})
			requireNoError(t, err, "GetItem")
			requireItem(t, out.Item, tc.want)
		})
	}
	bad := []struct{ proj, msg string }{
		{"s, s", "overlap"},
		{"m, m.k", "overlap"},
		{"s,", "syntax"},
		{"l[x]", "syntax"},
		{"#missing", "#missing"},
	}
	for _, tc := range bad {
		t.Run("invalid "+tc.proj, func(t *testing.T) {
			t.Parallel()
			_, err := c.GetItem(tctx(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: attrs{"pk": avS("p")}, ProjectionExpression: aws.String(tc.proj)})
			requireAPIError(t, err, "ValidationException", tc.msg)
		})
	}
}

func TestSDKUpdateExpressions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	start := func() attrs {
		return attrs{
			"n":  avN("5"),
			"s":  avS("x"),
			"l":  avL(avN("1"), avN("2"), avN("3")),
			"ss": avSS("a", "b"),
			"ns": avNS("1", "2"),
			"bs": avBS([]byte{1}, []byte{2}),
			"m":  avM(attrs{"a": avM(attrs{"b": avL(avM(attrs{"c": avN("0")}), avM(attrs{"c": avN("1")}), avM(attrs{"c": avN("2")}))})}),
		}
	}
	type change = func(it attrs)
	cases := []struct {
		name   string
		update string
		names  map[string]string
		values map[string]types.AttributeValue
		want   change // applied to start()
	}{
		{"SET plus", "SET n = n + :one", nil, eaValues(":one", avN("1")), func(it attrs) { it["n"] = avN("6") }},
		{"SET minus", "SET n = n - :two", nil, eaValues(":two", avN("2")), func(it attrs) { it["n"] = avN("3") }},
		{"SET minus negative", "SET n = :a - n", nil, eaValues(":a", avN("1")), func(it attrs) { it["n"] = avN("-4") }},
		{"SET decimal arithmetic", "SET x = :a + :b", nil, eaValues(":a", avN("1.5"), ":b", avN("2.25")), func(it attrs) { it["x"] = avN("3.75") }},
		{"SET big arithmetic", "SET x = :a + :b", nil, eaValues(":a", avN("99999999999999999999999999999999999999"), ":b", avN("-1")), func(it attrs) { it["x"] = avN("99999999999999999999999999999999999998") }},
		{"SET new attribute", "SET x = :v", nil, eaValues(":v", avS("new")), func(it attrs) { it["x"] = avS("new") }},
		{"SET copy attribute", "SET x = n", nil, nil, func(it attrs) { it["x"] = avN("5") }},
		{"SET several", "SET a = :v, b = :w, n = :w", nil, eaValues(":v", avS("A"), ":w", avN("7")), func(it attrs) { it["a"], it["b"], it["n"] = avS("A"), avN("7"), avN("7") }},
		{"if_not_exists missing", "SET x = if_not_exists(x, :zero)", nil, eaValues(":zero", avN("0")), func(it attrs) { it["x"] = avN("0") }},
		{"if_not_exists present", "SET n = if_not_exists(n, :zero)", nil, eaValues(":zero", avN("0")), func(it attrs) {}},
		{"if_not_exists counter", "SET x = if_not_exists(x, :zero) + :one", nil, eaValues(":zero", avN("0"), ":one", avN("1")), func(it attrs) { it["x"] = avN("1") }},
		{"list_append end", "SET l = list_append(l, :more)", nil, eaValues(":more", avL(avN("4"), avS("five"))), func(it attrs) {
			it["l"] = avL(avN("1"), avN("2"), avN("3"), avN("4"), avS("five"))
		}},
		{"list_append front", "SET l = list_append(:more, l)", nil, eaValues(":more", avL(avN("0"))), func(it attrs) {
			it["l"] = avL(avN("0"), avN("1"), avN("2"), avN("3"))
		}},
		{"list_append if_not_exists", "SET nl = list_append(if_not_exists(nl, :empty), :more)", nil, eaValues(":empty", avL(), ":more", avL(avN("9"))), func(it attrs) {
			it["nl"] = avL(avN("9"))
		}},
		{"SET list element", "SET l[1] = :v", nil, eaValues(":v", avS("two")), func(it attrs) { it["l"] = avL(avN("1"), avS("two"), avN("3")) }},
		{"SET list element past end appends", "SET l[10] = :v", nil, eaValues(":v", avS("ten")), func(it attrs) {
			it["l"] = avL(avN("1"), avN("2"), avN("3"), avS("ten"))
		}},
		{"SET nested path", "SET m.a.b[2].c = :v", nil, eaValues(":v", avS("deep")), func(it attrs) {
			it["m"] = avM(attrs{"a": avM(attrs{"b": avL(avM(attrs{"c": avN("0")}), avM(attrs{"c": avN("1")}), avM(attrs{"c": avS("deep")}))})})
		}},
		{"SET nested new key", "SET m.a.b[1].d = :v, m.z = :v", nil, eaValues(":v", avBool(true)), func(it attrs) {
			it["m"] = avM(attrs{"z": avBool(true), "a": avM(attrs{"b": avL(avM(attrs{"c": avN("0")}), avM(attrs{"c": avN("1"), "d": avBool(true)}), avM(attrs{"c": avN("2")}))})})
		}},
		{"SET nested arithmetic", "SET m.a.b[0].c = m.a.b[0].c + :one", nil, eaValues(":one", avN("1")), func(it attrs) {
			it["m"] = avM(attrs{"a": avM(attrs{"b": avL(avM(attrs{"c": avN("1")}), avM(attrs{"c": avN("1")}), avM(attrs{"c": avN("2")}))})})
		}},
		{"SET with names", "SET #st = :v, #ttl = :w", eaNames("#st", "status", "#ttl", "TTL"), eaValues(":v", avS("on"), ":w", avN("10")), func(it attrs) {
			it["status"], it["TTL"] = avS("on"), avN("10")
		}},
		{"SET dotted name", "SET #d = :v", eaNames("#d", "a.b"), eaValues(":v", avS("dot")), func(it attrs) { it["a.b"] = avS("dot") }},
		{"REMOVE", "REMOVE s, ss", nil, nil, func(it attrs) { delete(it, "s"); delete(it, "ss") }},
		{"REMOVE missing", "REMOVE nothing", nil, nil, func(it attrs) {}},
		{"REMOVE list element", "REMOVE l[0]", nil, nil, func(it attrs) { it["l"] = avL(avN("2"), avN("3")) }},
		// Indexes refer to the list before the update (Developer Guide,
		// "Removing elements from a list").
		{"REMOVE two list elements", "REMOVE l[0], l[2]", nil, nil, func(it attrs) { it["l"] = avL(avN("2")) }},
		{"REMOVE nested", "REMOVE m.a.b[1]", nil, nil, func(it attrs) {
			it["m"] = avM(attrs{"a": avM(attrs{"b": avL(avM(attrs{"c": avN("0")}), avM(attrs{"c": avN("2")}))})})
		}},
		{"ADD number", "ADD n :three", nil, eaValues(":three", avN("3")), func(it attrs) { it["n"] = avN("8") }},
		{"ADD negative decimal", "ADD n :v", nil, eaValues(":v", avN("-5.5")), func(it attrs) { it["n"] = avN("-0.5") }},
		{"ADD new number", "ADD cnt :one", nil, eaValues(":one", avN("1")), func(it attrs) { it["cnt"] = avN("1") }},
		{"ADD string set", "ADD ss :v", nil, eaValues(":v", avSS("b", "c")), func(it attrs) { it["ss"] = avSS("a", "b", "c") }},
		{"ADD number set", "ADD ns :v", nil, eaValues(":v", avNS("3", "1.0")), func(it attrs) { it["ns"] = avNS("1", "2", "3") }},
		{"ADD binary set", "ADD bs :v", nil, eaValues(":v", avBS([]byte{3})), func(it attrs) { it["bs"] = avBS([]byte{1}, []byte{2}, []byte{3}) }},
		{"ADD new set", "ADD nss :v", nil, eaValues(":v", avSS("q")), func(it attrs) { it["nss"] = avSS("q") }},
		{"DELETE from string set", "DELETE ss :v", nil, eaValues(":v", avSS("a", "zz")), func(it attrs) { it["ss"] = avSS("b") }},
		{"DELETE whole set", "DELETE ss :v", nil, eaValues(":v", avSS("a", "b")), func(it attrs) { delete(it, "ss") }},
		{"DELETE from number set", "DELETE ns :v", nil, eaValues(":v", avNS("1.00")), func(it attrs) { it["ns"] = avNS("2") }},
		{"DELETE from binary set", "DELETE bs :v", nil, eaValues(":v", avBS([]byte{2})), func(it attrs) { it["bs"] = avBS([]byte{1}) }},
		{"DELETE from missing set", "DELETE nothing :v", nil, eaValues(":v", avSS("a")), func(it attrs) {}},
		{"all clauses", "SET a = :v REMOVE s ADD n :one DELETE ss :d", nil, eaValues(":v", avS("A"), ":one", avN("1"), ":d", avSS("a")), func(it attrs) {
			it["a"], it["n"], it["ss"] = avS("A"), avN("6"), avSS("b")
			delete(it, "s")
		}},
		{"clauses in any order", "ADD n :one REMOVE s SET a = :v", nil, eaValues(":v", avS("A"), ":one", avN("1")), func(it attrs) {
			it["a"], it["n"] = avS("A"), avN("6")
			delete(it, "s")
		}},
		{"lower-case keywords", "set a = :v remove s", nil, eaValues(":v", avS("A")), func(it attrs) { it["a"] = avS("A"); delete(it, "s") }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "REMOVE two list elements" {
				skipIfExternal(t, "dynalite removes list elements one after the other, shifting the indexes")
			}
			key := attrs{"pk": avS(fmt.Sprintf("u%d", i))}
			it := start()
			maps.Copy(it, key)
			putItems(t, c, tbl, it)
			out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
				TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String(tc.update),
				ExpressionAttributeNames: tc.names, ExpressionAttributeValues: tc.values,
				ReturnValues: types.ReturnValueAllNew,
			})
			requireNoError(t, err, "UpdateItem "+tc.update)
			want := start()
			maps.Copy(want, key)
			tc.want(want)
			requireItem(t, out.Attributes, want)
			requireItem(t, getItem(t, c, tbl, key), want)
		})
	}

	bad := []struct {
		name   string
		update string
		names  map[string]string
		values map[string]types.AttributeValue
		msg    string
	}{
		{"plus on a string", "SET n = s + :one", nil, eaValues(":one", avN("1")), "operand"},
		{"plus with a string value", "SET n = n + :v", nil, eaValues(":v", avS("1")), "operand"},
		{"arithmetic on missing attribute", "SET x = nothing + :one", nil, eaValues(":one", avN("1")), "does not exist"},
		{"parent path missing", "SET nothing.a = :v", nil, eaValues(":v", avN("1")), "document path"},
		{"index into a map", "SET m[0] = :v", nil, eaValues(":v", avN("1")), "document path"},
		{"key into a list", "SET l.a = :v", nil, eaValues(":v", avN("1")), "document path"},
		{"overlapping paths", "SET s = :v REMOVE s", nil, eaValues(":v", avN("1")), "overlap"},
		{"overlapping nested paths", "SET m.a = :v, m.a.b = :v", nil, eaValues(":v", avN("1")), "overlap"},
		{"SET twice", "SET a = :v SET b = :v", nil, eaValues(":v", avN("1")), "SET"},
		{"ADD to a string", "ADD s :one", nil, eaValues(":one", avN("1")), "operand"},
		{"ADD to a list", "ADD l :one", nil, eaValues(":one", avN("1")), "operand"},
		{"ADD string to number set", "ADD ns :v", nil, eaValues(":v", avSS("x")), "operand"},
		{"ADD a string", "ADD x :v", nil, eaValues(":v", avS("x")), "operand"},
		{"DELETE a scalar", "DELETE ss :v", nil, eaValues(":v", avS("a")), "operand"},
		{"DELETE wrong set type", "DELETE ss :v", nil, eaValues(":v", avNS("1")), "operand"},
		{"list_append non-list", "SET l = list_append(l, :v)", nil, eaValues(":v", avN("1")), "operand"},
		{"unknown function", "SET x = nosuch(:v)", nil, eaValues(":v", avN("1")), "function"},
		{"condition function in update", "SET x = size(l)", nil, nil, "function"},
		{"empty SET", "SET", nil, nil, "syntax"},
		{"garbage", "SET a = = :v", nil, eaValues(":v", avN("1")), "syntax"},
		{"set key attribute", "SET pk = :v", nil, eaValues(":v", avS("other")), "key"},
		{"remove key attribute", "REMOVE pk", nil, nil, "key"},
		{"add to key attribute", "ADD pk :v", nil, eaValues(":v", avN("1")), ""},
	}
	for i, tc := range bad {
		t.Run("invalid "+tc.name, func(t *testing.T) {
			t.Parallel()
			key := attrs{"pk": avS(fmt.Sprintf("bad%d", i))}
			it := start()
			maps.Copy(it, key)
			putItems(t, c, tbl, it)
			_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
				TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String(tc.update),
				ExpressionAttributeNames: tc.names, ExpressionAttributeValues: tc.values,
			})
			requireAPIError(t, err, "ValidationException", tc.msg)
			requireItem(t, getItem(t, c, tbl, key), it)
		})
	}
}

func TestSDKUpdateItemUpsert(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:N"})
	key := attrs{"pk": avS("new"), "sk": avN("1")}
	out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl), Key: key,
		UpdateExpression:          aws.String("SET a = :v ADD cnt :one"),
		ExpressionAttributeValues: eaValues(":v", avS("A"), ":one", avN("1")),
		ReturnValues:              types.ReturnValueAllOld,
	})
	requireNoError(t, err, "UpdateItem")
	if len(out.Attributes) != 0 {
		t.Errorf("ALL_OLD of a new item = %s", renderItem(out.Attributes))
	}
	requireItem(t, getItem(t, c, tbl, key), attrs{"pk": avS("new"), "sk": avN("1"), "a": avS("A"), "cnt": avN("1")})

	// An update with only REMOVE on a missing item creates nothing
	// (TestUpdateMissingItemOnlyRemoves).
	key2 := attrs{"pk": avS("new"), "sk": avN("2")}
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key2, UpdateExpression: aws.String("REMOVE a")})
	requireNoError(t, err, "UpdateItem REMOVE")
	if it := getItem(t, c, tbl, key2); it != nil {
		t.Errorf("UpdateItem REMOVE of a missing item created %s", renderItem(it))
	}

	// An update without an expression creates the bare key.
	key3 := attrs{"pk": avS("new"), "sk": avN("3")}
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key3})
	requireNoError(t, err, "UpdateItem without expression")
	requireItem(t, getItem(t, c, tbl, key3), key3)
}

func TestSDKUpdateItemReturnValues(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	old := func(pk string) attrs {
		return attrs{"pk": avS(pk), "a": avN("1"), "b": avS("keep"), "gone": avS("x")}
	}
	newItem := func(pk string) attrs {
		return attrs{"pk": avS(pk), "a": avN("2"), "b": avS("keep"), "c": avS("C")}
	}
	cases := []struct {
		rv   types.ReturnValue
		want func(pk string) attrs
	}{
		{types.ReturnValueNone, func(string) attrs { return nil }},
		{"", func(string) attrs { return nil }},
		{types.ReturnValueAllOld, old},
		{types.ReturnValueAllNew, newItem},
		{types.ReturnValueUpdatedOld, func(string) attrs { return attrs{"a": avN("1"), "gone": avS("x")} }},
		{types.ReturnValueUpdatedNew, func(string) attrs { return attrs{"a": avN("2"), "c": avS("C")} }},
	}
	for _, tc := range cases {
		t.Run(string(tc.rv), func(t *testing.T) {
			t.Parallel()
			pk := "rv" + string(tc.rv)
			putItems(t, c, tbl, old(pk))
			out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
				TableName: aws.String(tbl), Key: attrs{"pk": avS(pk)},
				UpdateExpression:          aws.String("SET a = a + :one, c = :c REMOVE gone"),
				ExpressionAttributeValues: eaValues(":one", avN("1"), ":c", avS("C")),
				ReturnValues:              tc.rv,
			})
			requireNoError(t, err, "UpdateItem")
			requireItem(t, out.Attributes, tc.want(pk))
			requireItem(t, getItem(t, c, tbl, attrs{"pk": avS(pk)}), newItem(pk))
		})
	}
	t.Run("UPDATED_NEW nested", func(t *testing.T) {
		t.Parallel()
		putItems(t, c, tbl, attrs{"pk": avS("nested"), "m": avM(attrs{"x": avN("1"), "y": avN("2")}), "o": avS("other")})
		out, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
			TableName: aws.String(tbl), Key: attrs{"pk": avS("nested")},
			UpdateExpression:          aws.String("SET m.x = :v"),
			ExpressionAttributeValues: eaValues(":v", avN("10")),
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		requireNoError(t, err, "UpdateItem")
		requireItem(t, out.Attributes, attrs{"m": avM(attrs{"x": avN("10")})})
	})
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		_, err := c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
			TableName: aws.String(tbl), Key: attrs{"pk": avS("x")},
			UpdateExpression: aws.String("REMOVE a"), ReturnValues: "EVERYTHING",
		})
		requireAPIError(t, err, "ValidationException", "")
	})
}

// condItem is the item the condition cases are evaluated against.
func condItem(pk string) attrs {
	return attrs{
		"pk":  avS(pk),
		"n":   avN("5"),
		"s":   avS("hello"),
		"ss":  avSS("a", "b"),
		"ns":  avNS("1", "2"),
		"bs":  avBS([]byte("q")),
		"l":   avL(avN("1"), avN("2"), avN("3")),
		"m":   avM(attrs{"a": avN("1"), "b": avM(attrs{"c": avS("deep")})}),
		"bin": avB([]byte("xyz")),
		"t":   avBool(true),
		"nul": avNull(),
	}
}

type condCase struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
	want   bool
}

// dynaliteWrongConds are condition cases dynalite evaluates wrongly (by
// expression), skipped against an external endpoint. DynamoDB's API
// Reference (Condition, ComparisonOperator): "EQ is supported for all data
// types, including lists and maps".
var dynaliteWrongConds = map[string]string{
	"l = :v": "dynalite compares lists by reference",
	"m = :v": "dynalite compares maps by reference",
}

func condCases() []condCase {
	v := eaValues
	return []condCase{
		{"n = :v", nil, v(":v", avN("5")), true},
		{"n = :v", nil, v(":v", avN("5.00")), true},
		{"n = :v", nil, v(":v", avS("5")), false},
		{"n <> :v", nil, v(":v", avN("5")), false},
		{"n <> :v", nil, v(":v", avN("6")), true},
		{"n < :v", nil, v(":v", avN("6")), true},
		{"n < :v", nil, v(":v", avN("5")), false},
		{"n < :v", nil, v(":v", avN("-6")), false},
		{"n <= :v", nil, v(":v", avN("5")), true},
		{"n <= :v", nil, v(":v", avN("4.999")), false},
		{"n > :v", nil, v(":v", avN("4")), true},
		{"n > :v", nil, v(":v", avN("5")), false},
		{"n >= :v", nil, v(":v", avN("5")), true},
		{"n >= :v", nil, v(":v", avN("6")), false},
		{"n > :v", nil, v(":v", avN("10")), false}, // numeric, not lexical
		{"s < :v", nil, v(":v", avS("help")), true},
		{"s > :v", nil, v(":v", avS("Hello")), true},
		{"s >= :v", nil, v(":v", avS("hello")), true},
		{"bin = :v", nil, v(":v", avB([]byte("xyz"))), true},
		{"bin < :v", nil, v(":v", avB([]byte("xz"))), true},
		{"t = :v", nil, v(":v", avBool(true)), true},
		{"nul = :v", nil, v(":v", avNull()), true},
		{"l = :v", nil, v(":v", avL(avN("1"), avN("2"), avN("3"))), true},
		{"m = :v", nil, v(":v", avM(attrs{"a": avN("1"), "b": avM(attrs{"c": avS("deep")})})), true},
		{"l <> :v", nil, v(":v", avL(avN("1"), avN("2"))), true},
		{"ss = :v", nil, v(":v", avSS("b", "a")), true},
		{"n > l[0]", nil, nil, true},
		{"n BETWEEN :lo AND :hi", nil, v(":lo", avN("1"), ":hi", avN("5")), true},
		{"n BETWEEN :lo AND :hi", nil, v(":lo", avN("6"), ":hi", avN("9")), false},
		{"s BETWEEN :lo AND :hi", nil, v(":lo", avS("a"), ":hi", avS("i")), true},
		{"n IN (:a, :b, :c)", nil, v(":a", avN("1"), ":b", avN("2"), ":c", avN("5")), true},
		{"n IN (:a)", nil, v(":a", avN("6")), false},
		{"s IN (:a, :b)", nil, v(":a", avS("x"), ":b", avS("hello")), true},
		{"n = :five AND s = :hello", nil, v(":five", avN("5"), ":hello", avS("hello")), true},
		{"n = :five AND s = :x", nil, v(":five", avN("5"), ":x", avS("x")), false},
		{"n = :x OR s = :hello", nil, v(":x", avN("6"), ":hello", avS("hello")), true},
		{"n = :x OR s = :y", nil, v(":x", avN("6"), ":y", avS("y")), false},
		{"NOT n = :six", nil, v(":six", avN("6")), true},
		{"NOT (n = :five)", nil, v(":five", avN("5")), false},
		{"(n = :six OR s = :hello) AND NOT (t = :f)", nil, v(":six", avN("6"), ":hello", avS("hello"), ":f", avBool(false)), true},
		// AND binds tighter than OR; NOT tighter than AND.
		{"n = :five OR s = :x AND t = :f", nil, v(":five", avN("5"), ":x", avS("x"), ":f", avBool(false)), true},
		{"NOT n = :six AND s = :x", nil, v(":six", avN("6"), ":x", avS("x")), false},
		{"attribute_exists(s)", nil, nil, true},
		{"attribute_exists(zz)", nil, nil, false},
		{"attribute_exists(m.b.c)", nil, nil, true},
		{"attribute_exists(l[2])", nil, nil, true},
		{"attribute_exists(l[3])", nil, nil, false},
		{"attribute_exists(#ln)", eaNames("#ln", "nul"), nil, true},
		{"attribute_not_exists(zz)", nil, nil, true},
		{"attribute_not_exists(n)", nil, nil, false},
		{"attribute_not_exists(m.zz)", nil, nil, true},
		{"attribute_type(n, :t)", nil, v(":t", avS("N")), true},
		{"attribute_type(n, :t)", nil, v(":t", avS("S")), false},
		{"attribute_type(s, :t)", nil, v(":t", avS("S")), true},
		{"attribute_type(ss, :t)", nil, v(":t", avS("SS")), true},
		{"attribute_type(ns, :t)", nil, v(":t", avS("NS")), true},
		{"attribute_type(bs, :t)", nil, v(":t", avS("BS")), true},
		{"attribute_type(l, :t)", nil, v(":t", avS("L")), true},
		{"attribute_type(m, :t)", nil, v(":t", avS("M")), true},
		{"attribute_type(bin, :t)", nil, v(":t", avS("B")), true},
		{"attribute_type(t, :t)", nil, v(":t", avS("BOOL")), true},
		{"attribute_type(nul, :t)", nil, v(":t", avS("NULL")), true},
		{"attribute_type(zz, :t)", nil, v(":t", avS("S")), false},
		{"begins_with(s, :p)", nil, v(":p", avS("he")), true},
		{"begins_with(s, :p)", nil, v(":p", avS("lo")), false},
		{"begins_with(bin, :p)", nil, v(":p", avB([]byte("xy"))), true},
		{"begins_with(zz, :p)", nil, v(":p", avS("a")), false},
		{"contains(s, :v)", nil, v(":v", avS("ell")), true},
		{"contains(s, :v)", nil, v(":v", avS("xyz")), false},
		{"contains(ss, :v)", nil, v(":v", avS("a")), true},
		{"contains(ss, :v)", nil, v(":v", avS("z")), false},
		{"contains(ns, :v)", nil, v(":v", avN("2")), true},
		{"contains(l, :v)", nil, v(":v", avN("2")), true},
		{"contains(l, :v)", nil, v(":v", avS("2")), false},
		{"contains(bs, :v)", nil, v(":v", avB([]byte("q"))), true},
		{"size(s) = :v", nil, v(":v", avN("5")), true},
		{"size(s) > :v", nil, v(":v", avN("5")), false},
		{"size(l) = :v", nil, v(":v", avN("3")), true},
		{"size(ss) = :v", nil, v(":v", avN("2")), true},
		{"size(m) = :v", nil, v(":v", avN("2")), true},
		{"size(bin) = :v", nil, v(":v", avN("3")), true},
		{"size(m.b.c) BETWEEN :lo AND :hi", nil, v(":lo", avN("1"), ":hi", avN("4")), true},
		{"size(zz) = :v", nil, v(":v", avN("0")), false},
		{"m.b.c = :v", nil, v(":v", avS("deep")), true},
		{"l[1] = :v", nil, v(":v", avN("2")), true},
		{"#m.#a = :one", eaNames("#m", "m", "#a", "a"), v(":one", avN("1")), true},
		{"zz = :v", nil, v(":v", avN("1")), false},
		{"zz < :v", nil, v(":v", avN("1")), false},
		{"n < s", nil, nil, false}, // different types never compare
	}
}

// TestSDKConditionExpressions evaluates every condition case on PutItem,
// UpdateItem and DeleteItem.
func TestSDKConditionExpressions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	for i, tc := range condCases() {
		for _, op := range []string{"Put", "Update", "Delete"} {
			name := fmt.Sprintf("%s/%s/%d", op, tc.expr, i)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if why := dynaliteWrongConds[tc.expr]; why != "" {
					skipIfExternal(t, why)
				}
				pk := fmt.Sprintf("%s-%d", op, i)
				it := condItem(pk)
				putItems(t, c, tbl, it)
				key := attrs{"pk": avS(pk)}
				var err error
				var after attrs // the item if the write happens
				switch op {
				case "Put":
					after = attrs{"pk": avS(pk), "replaced": avBool(true)}
					_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{
						TableName: aws.String(tbl), Item: after, ConditionExpression: aws.String(tc.expr),
						ExpressionAttributeNames: tc.names, ExpressionAttributeValues: tc.values,
					})
				case "Update":
					after = condItem(pk)
					after["updated"] = avBool(true)
					vals := map[string]types.AttributeValue{":updated": avBool(true)}
					maps.Copy(vals, tc.values)
					_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
						TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String("SET updated = :updated"),
						ConditionExpression: aws.String(tc.expr), ExpressionAttributeNames: tc.names, ExpressionAttributeValues: vals,
					})
				case "Delete":
					_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{
						TableName: aws.String(tbl), Key: key, ConditionExpression: aws.String(tc.expr),
						ExpressionAttributeNames: tc.names, ExpressionAttributeValues: tc.values,
					})
				}
				if tc.want {
					requireNoError(t, err, op+"Item with a true condition")
					requireItem(t, getItem(t, c, tbl, key), after)
				} else {
					requireAPIError(t, err, "ConditionalCheckFailedException", "")
					requireItem(t, getItem(t, c, tbl, key), it)
				}
			})
		}
	}
}

func TestSDKConditionOnMissingItem(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S", Range: "sk:S"})
	item := attrs{"pk": avS("a"), "sk": avS("b"), "v": avN("1")}
	cond := aws.String("attribute_not_exists(pk)")
	_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item, ConditionExpression: cond})
	requireNoError(t, err, "conditional create")
	_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item, ConditionExpression: cond})
	requireAPIError(t, err, "ConditionalCheckFailedException", "")
	// Conditions on a missing item see no attributes.
	missing := attrs{"pk": avS("a"), "sk": avS("missing")}
	_, err = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl), Key: missing, UpdateExpression: aws.String("SET v = :v"),
		ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: eaValues(":v", avN("1")),
	})
	requireAPIError(t, err, "ConditionalCheckFailedException", "")
	if it := getItem(t, c, tbl, missing); it != nil {
		t.Errorf("failed conditional update created %s", renderItem(it))
	}
	_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: missing, ConditionExpression: aws.String("v = :v"), ExpressionAttributeValues: eaValues(":v", avN("1"))})
	requireAPIError(t, err, "ConditionalCheckFailedException", "")
	_, err = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: missing, ConditionExpression: aws.String("attribute_not_exists(v)")})
	requireNoError(t, err, "conditional delete of a missing item")
}

func TestSDKReturnValuesOnConditionCheckFailure(t *testing.T) {
	t.Parallel()
	skipIfExternal(t, "dynalite 4.0.0 ignores ReturnValuesOnConditionCheckFailure")
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	item := attrs{"pk": avS("a"), "v": avN("1"), "s": avSS("x")}
	putItems(t, c, tbl, item)
	key := attrs{"pk": avS("a")}
	cond := aws.String("v = :two")
	vals := eaValues(":two", avN("2"))
	errs := map[string]error{}
	_, errs["Put"] = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ConditionExpression: cond, ExpressionAttributeValues: vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	_, errs["Update"] = c.UpdateItem(tctx(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String("REMOVE v"), ConditionExpression: cond, ExpressionAttributeValues: vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	_, errs["Delete"] = c.DeleteItem(tctx(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key, ConditionExpression: cond, ExpressionAttributeValues: vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	for op, err := range errs {
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Errorf("%s: err = %v, want ConditionalCheckFailedException", op, err)
			continue
		}
		if renderItem(ccf.Item) != renderItem(item) {
			t.Errorf("%s: exception Item = %s, want %s", op, renderItem(ccf.Item), renderItem(item))
		}
	}
	// NONE (the default) returns no item.
	_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: key, ConditionExpression: cond, ExpressionAttributeValues: vals})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || ccf.Item != nil {
		t.Errorf("without ReturnValuesOnConditionCheckFailure: err=%v", err)
	}
	// On a missing item there is nothing to return.
	_, err = c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: attrs{"pk": avS("b")}, ConditionExpression: aws.String("attribute_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if !errors.As(err, &ccf) || len(ccf.Item) != 0 {
		t.Errorf("missing item: err=%v", err)
	}
}

func TestSDKInvalidConditions(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	tbl := createTable(t, c, tableSpec{Hash: "pk:S"})
	putItems(t, c, tbl, condItem("a"))
	v := eaValues
	cases := []struct {
		expr   string
		values map[string]types.AttributeValue
		msg    string
	}{
		{"n = ", nil, "syntax"},
		{"n == :v", v(":v", avN("1")), "syntax"},
		{"n = :v AND", v(":v", avN("1")), "syntax"},
		{"(n = :v", v(":v", avN("1")), "syntax"},
		{"nosuch(n)", nil, "function"},
		{"attribute_exists(n, s)", nil, "number of operands"},
		{"begins_with(s)", nil, "number of operands"},
		{"attribute_type(n, :v)", v(":v", avS("XYZ")), "type"},
		{"size(s)", nil, ""},
		{"n", nil, "syntax"},
		{"n IN ()", nil, "syntax"},
		{"list_append(l, l) = l", nil, "function"},
		{"if_not_exists(n, n) = n", nil, "function"},
		{"n BETWEEN :a", v(":a", avN("1")), "syntax"},
		{"((n = :v))", v(":v", avN("1")), "redundant parentheses"},
		{"", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := c.PutItem(tctx(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: condItem("a"), ConditionExpression: aws.String(tc.expr), ExpressionAttributeValues: tc.values})
			requireAPIError(t, err, "ValidationException", tc.msg)
		})
	}
}
