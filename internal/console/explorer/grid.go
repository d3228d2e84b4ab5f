package explorer

import (
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// cellRunes is how much of a value a grid cell shows; the rest is on the
// item's page (and in the cell's title, up to titleRunes).
const (
	cellRunes  = 48
	titleRunes = 2000
)

// grid is a page of items as a table: the key attributes first, then
// every other attribute seen on the page, by name.
type grid struct {
	Cols []gridCol
	Rows []gridRow
}

type gridCol struct {
	Name string
	Key  bool // a key attribute of the table or the queried index
}

type gridRow struct {
	Ref   string // encodeKey of the table key; "" when the item lacks it
	Cells []gridCell
}

type gridCell struct {
	Text    string // cut to cellRunes
	Title   string // the whole value when Text is cut
	Missing bool
	Type    string // S, N, B, BOOL, NULL, SS, NS, BS, L, M
}

// avType names av's DynamoDB type.
func avType(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return ""
}

// cellText shows av in one line: scalars as themselves, the rest as
// compact plain JSON.
func cellText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB:
		return scalarText(av)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return "true"
		}
		return "false"
	case *types.AttributeValueMemberNULL:
		return "null"
	}
	return compact(toPlain(av))
}

// cut returns s cut to n runes with an ellipsis, and whether it was cut.
func cut(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…", true
		}
		i++
	}
	return s, false
}

// newGrid lays out items; keys are the key attributes in column order
// (the table's, then the index's), tableKeys the table's own.
func newGrid(items []Item, keys, tableKeys []string) grid {
	var g grid
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			g.Cols = append(g.Cols, gridCol{Name: k, Key: true})
		}
	}
	var rest []string
	for _, it := range items {
		for n := range it {
			if !seen[n] {
				seen[n] = true
				rest = append(rest, n)
			}
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		g.Cols = append(g.Cols, gridCol{Name: n})
	}
	for _, it := range items {
		row := gridRow{Cells: make([]gridCell, 0, len(g.Cols))}
		k := Item{}
		for _, n := range tableKeys {
			if v, ok := it[n]; ok {
				k[n] = v
			}
		}
		if len(k) == len(tableKeys) && len(k) > 0 {
			row.Ref = encodeKey(k)
		}
		for _, c := range g.Cols {
			v, ok := it[c.Name]
			if !ok {
				row.Cells = append(row.Cells, gridCell{Missing: true})
				continue
			}
			full := cellText(v)
			text, was := cut(full, cellRunes)
			cell := gridCell{Text: text, Type: avType(v)}
			if was {
				cell.Title, _ = cut(full, titleRunes)
			}
			row.Cells = append(row.Cells, cell)
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// keyColumns are the key attributes a grid of ix shows first.
func keyColumns(ti tableInfo, ix index) []string {
	cols := slices.Clone(ti.KeyNames())
	for _, n := range []string{ix.PK.Name, ix.SK.Name} {
		if n != "" && !slices.Contains(cols, n) {
			cols = append(cols, n)
		}
	}
	return cols
}
