package expr

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Seeds shared by the fuzz targets: valid and invalid expressions of every
// grammar.
var fuzzSeeds = []string{
	"a = :s", "#a = :s AND attribute_exists(b.c[1])", "a <> :n OR NOT b < :n", "a BETWEEN :n AND :n2",
	"a IN (:s, :n, :l)", "size(a) > :n", "begins_with(a, :s)", "contains(l, :s)", "attribute_type(a, :t)",
	"attribute_not_exists(m.x[0].y)", "(a = :s) AND ((b = :s) OR c = :s)", "((a = :s))", "NOT NOT a = :s",
	"a.b[2].c = :s", "(a.b).c = :s", "(a)[1] = :s", "a = a", "a > 4", "a =", "foo", "attribute_exists(",
	"size(a)", "whatever(a)", "if_not_exists(a, :s) = :s", "status = :s", "#zz = :s", ":zz = a",
	"a[99999999999] = :s", "a BETWEEN :n2 AND :n", "a < :l", "begins_with(a, :n)", "size(:n) > a",
	"SET a = :s", "SET a = b + :n, c = d - :n REMOVE e[1] ADD f :n DELETE g :ss",
	"SET a = if_not_exists(a, :n) + :n", "SET l = list_append(l, :l), m.x = :s", "SET l[10] = :s",
	"REMOVE l[0], l[2], m.x", "ADD ss :ss, n :n DELETE ss :ss", "SET a = b + c + d", "SET a = (b + c)",
	"set a = if_not_exists(:s, a)", "SET a = :s SET b = :s", "SET a = :s, a.b = :s", "ADD a :s",
	"a, b.c, l[1], m.x[0].y", "a, a", "#a, #b", "!!", "a,", "pk = :s", "pk = :s AND sk BETWEEN :n AND :n2",
	"pk = :s AND begins_with(sk, :s)", ":s = pk AND :n < sk", "pk = :s OR sk = :s", "a.b = :s",
	"pk = :s AND sk > :n AND x = :n", "", " ", "(", ")", "((((((a = :s))))))", "NOT", "a IN ()",
	"é = :s", "a = :s\x00", "#", ":", "a..b", "a[", "a[1", "a[]", "SET", "REMOVE a b", "SET a = f()",
}

var fuzzNames = map[string]string{"#a": "a", "#b": "b", "#s": "status", "#d": "dotted.name", "#zz": "zz"}

func fuzzValues() map[string]attr.Value {
	return map[string]attr.Value{
		":s": attr.Str("x"), ":n": attr.Num("1"), ":n2": attr.Num("2"), ":t": attr.Str("S"),
		":l":  {Kind: attr.KindL, L: []attr.Value{attr.Str("x"), attr.Num("1")}},
		":ss": {Kind: attr.KindSS, SS: []string{"a", "x"}},
		":m":  {Kind: attr.KindM, M: map[string]attr.Value{"x": attr.Str("y")}},
		":b":  attr.Bin([]byte("ab")), ":bool": attr.Boolean(true), ":null": attr.Null(),
	}
}

func fuzzItem() attr.Item {
	return attr.Item{
		"a":  attr.Str("x"),
		"b":  {Kind: attr.KindM, M: map[string]attr.Value{"c": {Kind: attr.KindL, L: []attr.Value{attr.Num("1"), attr.Num("2")}}}},
		"l":  {Kind: attr.KindL, L: []attr.Value{attr.Str("x"), attr.Num("1"), {Kind: attr.KindM, M: map[string]attr.Value{"y": attr.Num("3")}}}},
		"m":  {Kind: attr.KindM, M: map[string]attr.Value{"x": {Kind: attr.KindL, L: []attr.Value{{Kind: attr.KindM, M: map[string]attr.Value{"y": attr.Str("z")}}}}}},
		"n":  attr.Num("5"),
		"ss": {Kind: attr.KindSS, SS: []string{"a", "b"}},
		"pk": attr.Str("p"),
		"sk": attr.Num("10"),
	}
}

func addSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
}

// checkErr fails unless err is nil or an *Error with a message.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("error %v (%T) is not an *Error with a message", err, err)
	}
}

func FuzzParseCondition(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []Kind{ConditionExpression, FilterExpression} {
			c, err := ParseCondition(kind, s, NewParams(fuzzNames, fuzzValues()))
			checkErr(t, err)
			if err != nil {
				if c != nil {
					t.Fatal("condition and error")
				}
				continue
			}
			_ = c.String()
			_ = c.Names()
			c.Eval(fuzzItem())
			c.Eval(nil)
		}
	})
}

func FuzzParseUpdate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUpdate(s, NewParams(fuzzNames, fuzzValues()))
		checkErr(t, err)
		if err != nil {
			return
		}
		_ = u.String()
		_ = u.Paths()
		item := fuzzItem()
		before, _ := json.Marshal(item)
		_, err = u.Apply(item)
		checkErr(t, err)
		after, _ := json.Marshal(item)
		if string(before) != string(after) {
			t.Fatalf("Apply modified its input")
		}
		_, err = u.Apply(nil)
		checkErr(t, err)
	})
}

func FuzzParseProjection(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		pr, err := ParseProjection(s, NewParams(fuzzNames, fuzzValues()))
		checkErr(t, err)
		if err != nil {
			return
		}
		_ = pr.String()
		pr.Apply(fuzzItem())
		pr.Apply(nil)
	})
}

func FuzzParseKeyCondition(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		kc, err := ParseKeyCondition(s, NewParams(fuzzNames, fuzzValues()))
		checkErr(t, err)
		if err != nil {
			return
		}
		if n := len(kc.Terms); n < 1 || n > 2 {
			t.Fatalf("%d terms", n)
		}
		_ = kc.String()
	})
}

// FuzzEvalApply parses an expression of every kind and runs it on an item
// given as JSON.
func FuzzEvalApply(f *testing.F) {
	items := []string{
		`{}`,
		`{"a":{"S":"x"},"n":{"N":"5"},"l":{"L":[{"S":"x"},{"N":"1"}]},"m":{"M":{"x":{"L":[]}}},"ss":{"SS":["a"]}}`,
		`{"a":{"L":[{"M":{"b":{"NS":["1","2"]}}}]},"b":{"BS":["YQ=="]},"c":{"NULL":true},"d":{"BOOL":false}}`,
	}
	for i, s := range fuzzSeeds {
		f.Add(s, items[i%len(items)])
	}
	f.Fuzz(func(t *testing.T, s, itemJSON string) {
		var item attr.Item
		if json.Unmarshal([]byte(itemJSON), &item) != nil {
			return
		}
		if c, err := ParseCondition(ConditionExpression, s, NewParams(fuzzNames, fuzzValues())); err == nil {
			c.Eval(item)
		} else {
			checkErr(t, err)
		}
		if u, err := ParseUpdate(s, NewParams(fuzzNames, fuzzValues())); err == nil {
			before, _ := json.Marshal(item)
			out, err := u.Apply(item)
			checkErr(t, err)
			if after, _ := json.Marshal(item); string(before) != string(after) {
				t.Fatalf("Apply modified its input")
			}
			if err == nil {
				// The result must be a well-formed item: it encodes and
				// decodes to itself.
				b, _ := json.Marshal(out)
				var back attr.Item
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatalf("Apply produced an invalid item %s: %v", b, err)
				}
			}
		} else {
			checkErr(t, err)
		}
		if pr, err := ParseProjection(s, NewParams(fuzzNames, fuzzValues())); err == nil {
			pr.Apply(item)
		}
	})
}
