package partiql

import (
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

// FuzzParse checks that no statement makes the parser panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM "t" WHERE pk = ? AND sk BETWEEN 1 AND 2`,
		`SELECT a.b[1], "c" FROM t."ix" WHERE begins_with(x, 'p') OR NOT y IS MISSING`,
		`INSERT INTO "t" VALUE {'pk': 'a', 'l': [1, -2.5e3, <<'x'>>, {'m': null}]}`,
		`UPDATE "t" SET a = a + ?, b = list_append(b, [1]) REMOVE c WHERE pk = 'k'`,
		`DELETE FROM "t" WHERE pk = 'k' AND v IN [1, 2]`,
		`SELECT * FROM "t" WHERE a = 'it''s' -- comment`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		params := []attr.Value{attr.Str("p"), attr.Num("1")}
		for n := 0; n <= len(params); n++ {
			Parse(s, params[:n])
		}
	})
}
