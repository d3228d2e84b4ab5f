package expr

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

func TestExpressionSize(t *testing.T) {
	values := map[string]attr.Value{":v": attr.Str("x")}
	ok := "a" + strings.Repeat("x", 4000) + " = :v"
	ok += strings.Repeat(" ", MaxExpressionSize-len(ok))
	if _, err := ParseCondition(FilterExpression, ok, NewParams(nil, values)); err != nil {
		t.Fatalf("%d bytes: %v", len(ok), err)
	}
	long := ok + " "
	_, err := ParseCondition(FilterExpression, long, NewParams(nil, values))
	want := fmt.Sprintf("Invalid FilterExpression: Expression size has exceeded the maximum allowed size; expression size: %d", MaxExpressionSize+1)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	for _, parse := range []func(string) error{
		func(s string) error { _, err := ParseUpdate(s, nil); return err },
		func(s string) error { _, err := ParseProjection(s, nil); return err },
		func(s string) error { _, err := ParseKeyCondition(s, nil); return err },
	} {
		if err := parse(long); err == nil || !strings.Contains(err.Error(), "Expression size has exceeded the maximum allowed size") {
			t.Errorf("got %v", err)
		}
	}
}

func TestNesting(t *testing.T) {
	values := map[string]attr.Value{":v": attr.Str("x")}
	for _, tc := range []struct {
		depth int
		build func(n int) string
	}{
		{MaxNesting, func(n int) string { return strings.Repeat("NOT ", n) + "a = :v" }},
		{MaxNesting, func(n int) string {
			return strings.Repeat("(a = :v AND ", n) + "a = :v" + strings.Repeat(")", n)
		}},
		{MaxNesting, func(n int) string { return "a = " + strings.Repeat("(", n) + ":v" + strings.Repeat(")", n) }},
		{MaxNesting, func(n int) string { return strings.Repeat("size(", n) + "a" + strings.Repeat(")", n) + " = :v" }},
	} {
		ok := tc.build(tc.depth)
		_, err := ParseCondition(ConditionExpression, ok, NewParams(nil, values))
		if err != nil && strings.Contains(err.Error(), "nesting") {
			t.Errorf("depth %d rejected: %v", tc.depth, err)
		}
		deep := tc.build(tc.depth + 1)
		_, err = ParseCondition(ConditionExpression, deep, NewParams(nil, values))
		if err == nil || !strings.Contains(err.Error(), "too many nesting levels") {
			t.Errorf("depth %d: got %v", tc.depth+1, err)
		}
	}
	// Far deeper than the limit, within the size limit: an error, not a
	// stack overflow.
	s := strings.Repeat("(", 4000) + "a"
	if _, err := ParseCondition(ConditionExpression, s, nil); err == nil {
		t.Error("no error")
	}
	if _, err := ParseUpdate("SET a = "+strings.Repeat("(", 4000)+"b", nil); err == nil {
		t.Error("no error")
	}
	if _, err := ParseUpdate("SET a = "+strings.Repeat("if_not_exists(a, ", 300)+":v"+strings.Repeat(")", 300), NewParams(nil, values)); err == nil {
		t.Error("no error")
	}
}

func TestOperatorCount(t *testing.T) {
	values := map[string]attr.Value{":v": attr.Str("x")}
	build := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = "a=:v"
		}
		return strings.Join(parts, " OR ")
	}
	// n comparisons joined by n-1 ORs: 2n-1 operators.
	if _, err := ParseCondition(FilterExpression, build(150), NewParams(nil, values)); err != nil {
		t.Fatal(err)
	}
	_, err := ParseCondition(FilterExpression, build(151), NewParams(nil, values))
	want := "Invalid FilterExpression: The expression contains too many operators; operator count: 301"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestInOperands(t *testing.T) {
	values := map[string]attr.Value{}
	var list []string
	for i := 0; i < 101; i++ {
		k := fmt.Sprintf(":v%d", i)
		values[k] = attr.Num(fmt.Sprint(i))
		list = append(list, k)
	}
	_, err := ParseCondition(ConditionExpression, "a IN ("+strings.Join(list[:100], ",")+")", NewParams(nil, values))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseCondition(ConditionExpression, "a IN ("+strings.Join(list, ",")+")", NewParams(nil, values))
	want := "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

func TestPathDepth(t *testing.T) {
	values := map[string]attr.Value{":v": attr.Str("x")}
	path := func(n int) string { return "a" + strings.Repeat(".b", n-1) }
	if _, err := ParseCondition(ConditionExpression, path(32)+" = :v", NewParams(nil, values)); err != nil {
		t.Fatal(err)
	}
	_, err := ParseCondition(ConditionExpression, path(33)+" = :v", NewParams(nil, values))
	want := "Invalid ConditionExpression: The document path has too many nesting levels; nesting levels: 33"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseUpdate("SET "+path(33)+" = :v", NewParams(nil, values)); err == nil {
		t.Fatal("no error")
	}
	if _, err := ParseProjection(path(33), nil); err == nil {
		t.Fatal("no error")
	}
}

// TestConcurrentEval evaluates and applies parsed expressions from many
// goroutines (run with -race).
func TestConcurrentEval(t *testing.T) {
	values := map[string]attr.Value{":v": attr.Str("x"), ":n": attr.Num("1"), ":ss": {Kind: attr.KindSS, SS: []string{"q"}}}
	p := NewParams(nil, values)
	c, err := ParseCondition(FilterExpression, "a = :v AND size(l) > :n OR contains(ss, :v)", p)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseUpdate("SET l[0] = :v, n = n + :n ADD ss :ss REMOVE l[1]", p)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := ParseProjection("a, l[0], ss", p)
	if err != nil {
		t.Fatal(err)
	}
	item := fuzzItem()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				c.Eval(item)
				out, err := u.Apply(item)
				if err != nil {
					t.Error(err)
					return
				}
				pr.Apply(out)
			}
		}()
	}
	wg.Wait()
}

func TestApplyDoesNotAlias(t *testing.T) {
	values := map[string]attr.Value{":l": {Kind: attr.KindL, L: []attr.Value{attr.Str("z")}}}
	u, err := ParseUpdate("SET dup = m, lst = list_append(l, :l)", NewParams(nil, values))
	if err != nil {
		t.Fatal(err)
	}
	item := attr.Item{
		"m": {Kind: attr.KindM, M: map[string]attr.Value{"x": attr.Str("1")}},
		"l": {Kind: attr.KindL, L: []attr.Value{attr.Str("a")}},
	}
	out, err := u.Apply(item)
	if err != nil {
		t.Fatal(err)
	}
	out["dup"].M["x"] = attr.Str("changed")
	out["m"].M["x"] = attr.Str("changed")
	out["lst"].L[0] = attr.Str("changed")
	out["lst"].L[1] = attr.Str("changed")
	if item["m"].M["x"].S != "1" || item["l"].L[0].S != "a" {
		t.Fatalf("input changed: %v", item)
	}
	out2, _ := u.Apply(item)
	if out2["lst"].L[1].S != "z" {
		t.Fatalf("update shares its values with a result: %v", out2["lst"])
	}
	pr := Projection{{{Name: "m"}}}
	p := pr.Apply(item)
	p["m"].M["x"] = attr.Str("changed")
	if item["m"].M["x"].S != "1" {
		t.Fatal("projection shares memory with its input")
	}
}

func TestPathMethods(t *testing.T) {
	p := Path{{Name: "a"}, {Name: "b"}, {Index: 2, IsIndex: true}, {Name: "c"}}
	if s := p.String(); s != "a.b[2].c" {
		t.Fatalf("String: %s", s)
	}
	item := attr.Item{"a": {Kind: attr.KindM, M: map[string]attr.Value{"b": {Kind: attr.KindL, L: []attr.Value{
		attr.Null(), attr.Null(), {Kind: attr.KindM, M: map[string]attr.Value{"c": attr.Str("found")}},
	}}}}}
	if v, ok := p.Get(item); !ok || v.S != "found" {
		t.Fatalf("Get: %v %v", v, ok)
	}
	for _, q := range []Path{nil, {{Index: 0, IsIndex: true}}, {{Name: "a"}, {Name: "x"}}, {{Name: "a"}, {Name: "b"}, {Index: 3, IsIndex: true}}} {
		if _, ok := q.Get(item); ok {
			t.Errorf("Get(%v) found something", q)
		}
	}
	if _, ok := p.Get(nil); ok {
		t.Error("Get on a nil item")
	}
}
