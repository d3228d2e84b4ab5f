package expr

import (
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

var benchValues = map[string]attr.Value{
	":s": attr.Str("x"), ":n": attr.Num("4"), ":lo": attr.Num("-1.5"), ":hi": attr.Num("100.25"),
	":p": attr.Str("ba"), ":t": attr.Str("SS"), ":l": {Kind: attr.KindL, L: []attr.Value{attr.Str("x")}},
}

const benchCondition = "a = :s AND n BETWEEN :lo AND :hi AND begins_with(s, :p) AND size(l) < :n AND " +
	"attribute_exists(m.x[0].y) AND attribute_type(ss, :t) AND contains(ss, :s) AND NOT b <> :s"

func benchItem() attr.Item {
	item := fuzzItem()
	item["s"] = attr.Str("banana")
	item["b"] = attr.Str("x")
	item["ss"] = attr.Value{Kind: attr.KindSS, SS: []string{"a", "x"}}
	return item
}

func TestEvalDoesNotAllocate(t *testing.T) {
	c, err := ParseCondition(ConditionExpression, benchCondition, NewParams(nil, benchValues))
	if err != nil {
		t.Fatal(err)
	}
	item := benchItem()
	if !c.Eval(item) {
		t.Fatalf("%s is false", c)
	}
	if n := testing.AllocsPerRun(100, func() { c.Eval(item) }); n != 0 {
		t.Errorf("Eval allocates %v times", n)
	}
}

func BenchmarkParseCondition(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseCondition(ConditionExpression, benchCondition, NewParams(nil, benchValues)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEval(b *testing.B) {
	c, _ := ParseCondition(ConditionExpression, benchCondition, NewParams(nil, benchValues))
	item := benchItem()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Eval(item)
	}
}

func BenchmarkParseUpdate(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseUpdate("SET a = :s, n = n + :n, l = list_append(l, :l) REMOVE b ADD c :n", NewParams(nil, benchValues)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	u, _ := ParseUpdate("SET a = :s, n = n + :n, l = list_append(l, :l) REMOVE b ADD c :n", NewParams(nil, benchValues))
	item := benchItem()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := u.Apply(item); err != nil {
			b.Fatal(err)
		}
	}
}
