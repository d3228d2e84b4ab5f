package partiql

import (
	"strings"
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

func TestParseOK(t *testing.T) {
	tests := []struct {
		src    string
		params []attr.Value
		check  func(t *testing.T, st Statement)
	}{
		{`SELECT * FROM "t"`, nil, func(t *testing.T, st Statement) {
			s := st.(*Select)
			if s.Table != "t" || s.Index != "" || s.Paths != nil || s.Where != nil {
				t.Fatalf("%+v", s)
			}
		}},
		{`select a, "b c", m.n[2].x from "t"."ix" where pk = 'x' and sk >= 3;`, nil, func(t *testing.T, st Statement) {
			s := st.(*Select)
			if s.Index != "ix" || len(s.Paths) != 3 || s.Paths[1][0].Name != "b c" || s.Paths[2].String() != "m.n[2].x" {
				t.Fatalf("%+v", s)
			}
			if c := Conjuncts(s.Where); len(c) != 2 || c[1].(*Compare).Op != ">=" || c[1].(*Compare).R.(*Literal).Value.S != "3" {
				t.Fatalf("where %+v", c)
			}
		}},
		{`SELECT * FROM t WHERE pk = ? AND (a <> 'it''s' OR NOT b BETWEEN -1 AND 2.50) AND c IN [1, 'x'] AND d IS NOT MISSING AND e IS MISSING AND begins_with("sk", 'p') AND size(f) > 2 AND attribute_type(g, 'S') AND contains(h, ?)`,
			[]attr.Value{attr.Str("k"), attr.Num("7")}, func(t *testing.T, st Statement) {
				c := Conjuncts(st.(*Select).Where)
				if len(c) != 9 {
					t.Fatalf("got %d conjuncts", len(c))
				}
				if c[0].(*Compare).R.(*Literal).Value.S != "k" {
					t.Fatal("param 1")
				}
				or := c[1].(*Logic)
				if or.Op != "OR" || or.L.(*Compare).R.(*Literal).Value.S != "it's" || or.R.(*Not).X.(*Between).Lo.(*Literal).Value.S != "-1" {
					t.Fatalf("or %+v", or)
				}
				if len(c[2].(*In).List) != 2 || !c[3].(*Missing).Not || c[4].(*Missing).Not {
					t.Fatal("in/missing")
				}
				if c[5].(*Func).Name != "begins_with" || c[6].(*Compare).L.(*Call).Name != "size" || c[8].(*Func).Args[1].(*Literal).Value.S != "7" {
					t.Fatal("funcs")
				}
			}},
		{`INSERT INTO "t" VALUE {'pk': 'a', 'n': 1.50, 'b': true, 'z': null, 'l': [1, 'x', {'q': false}], 'ss': <<'a','b','a'>>, 'ns': <<1, 2>>, 'p': ?}`,
			[]attr.Value{attr.Str("param")}, func(t *testing.T, st Statement) {
				it := st.(*Insert).Item
				if it["pk"].S != "a" || it["n"].S != "1.5" || !it["b"].Bool || it["z"].Kind != attr.KindNULL ||
					len(it["l"].L) != 3 || it["l"].L[2].M["q"].Kind != attr.KindBOOL || len(it["ss"].SS) != 2 ||
					it["ns"].Kind != attr.KindNS || it["p"].S != "param" {
					t.Fatalf("%+v", it)
				}
			}},
		{`UPDATE "t" SET a = 'x', b = b + 1 SET c = list_append(c, [1]) REMOVE d, e[1] WHERE pk = 'k' AND sk = 2`, nil, func(t *testing.T, st Statement) {
			u := st.(*Update)
			if len(u.Actions) != 5 || u.Actions[1].Value.(*Arith).Op != "+" || u.Actions[2].Value.(*Call).Name != "list_append" || !u.Actions[4].Remove {
				t.Fatalf("%+v", u.Actions)
			}
			if len(Conjuncts(u.Where)) != 2 {
				t.Fatal("where")
			}
		}},
		{`UPDATE "t" SET a = 1 WHERE pk = 'k' RETURNING MODIFIED NEW *`, nil, func(t *testing.T, st Statement) {
			if u := st.(*Update); u.Returning != "UPDATED_NEW" {
				t.Fatalf("%+v", u)
			}
		}},
		{`DELETE FROM "t" WHERE pk = 'k' returning all old *`, nil, func(t *testing.T, st Statement) {
			if d := st.(*Delete); d.Returning != "ALL_OLD" {
				t.Fatalf("%+v", d)
			}
		}},
		{`SELECT * FROM "t" WHERE pk = 1 ORDER BY "sk" DESC`, nil, func(t *testing.T, st Statement) {
			if s := st.(*Select); s.OrderBy != "sk" || !s.Desc {
				t.Fatalf("%+v", s)
			}
		}},
		{`EXISTS(SELECT * FROM "t" WHERE pk = 'k' AND a IS MISSING)`, nil, func(t *testing.T, st Statement) {
			if e := st.(*Exists); e.Select.Table != "t" || len(Conjuncts(e.Select.Where)) != 2 {
				t.Fatalf("%+v", e)
			}
		}},
		{`DELETE FROM "t" WHERE pk = 'k' AND attribute_exists(x)`, nil, func(t *testing.T, st Statement) {
			if d := st.(*Delete); d.Table != "t" || len(Conjuncts(d.Where)) != 2 {
				t.Fatalf("%+v", d)
			}
		}},
	}
	for _, tc := range tests {
		st, err := Parse(tc.src, tc.params)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		t.Run("", func(t *testing.T) { tc.check(t, st) })
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src    string
		params []attr.Value
		want   string
	}{
		{`SELECTT * FROMM "t"`, nil, "line 1, column 1"},
		{`SELECT * FROMM "t"`, nil, "expected FROM"},
		{`SELECT * FROM`, nil, "expected a table name"},
		{`SELECT * FROM "t" WHERE`, nil, "expected a value"},
		{`SELECT * FROM "t" WHERE a`, nil, "expected a comparison"},
		{`SELECT * FROM "t" WHERE a = 'x`, nil, "unterminated string"},
		{`SELECT * FROM "t" WHERE a = 1 extra`, nil, "unexpected extra"},
		{`SELECT * FROM "t" WHERE a = ?`, nil, "parameters"},
		{`SELECT * FROM "t" WHERE a = 1`, []attr.Value{attr.Str("x")}, "parameters"},
		{`SELECT * FROM "t" WHERE nosuch(a)`, nil, "unknown function"},
		{`SELECT * FROM "t" WHERE begins_with(a)`, nil, "takes 2"},
		{`SELECT * FROM "t" WHERE a IN [1, 2`, nil, "expected ']'"},
		{`INSERT INTO "t" VALUE 'x'`, nil, "map literal"},
		{`INSERT INTO "t" VALUE {'a': 1, 'a': 2}`, nil, "duplicate map key"},
		{`INSERT INTO "t" VALUE {'a': <<1, 'x'>>}`, nil, "set members"},
		{`UPDATE "t" WHERE pk = 1`, nil, "expected SET or REMOVE"},
		{`DELETE FROM "t"`, nil, "expected WHERE"},
		{`SELECT * FROM "t" ORDER sk`, nil, "expected BY"},
		{`EXISTS(SELECT * FROM "t" WHERE pk = 1`, nil, "expected ')'"},
		{`DELETE FROM "t" WHERE pk = 1 RETURNING ALL NEW *`, nil, "only RETURNING ALL OLD"},
		{`UPDATE "t" SET a = 1 WHERE pk = 1 RETURNING SOME OLD *`, nil, "expected ALL or MODIFIED"},
		{`UPDATE "t" SET a = 1 WHERE pk = 1 RETURNING ALL OLD`, nil, "expected '*'"},
		{`SELECT * FROM "t" WHERE a = #`, nil, "unexpected character"},
		{"SELECT *\nFROM \"t\" WHERE a == 1", nil, "line 2, column 19"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src, tc.params)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want error containing %q", tc.src, err, tc.want)
		}
	}
}
