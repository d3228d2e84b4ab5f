package explorer

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// exportPage is how many items an export reads a call; the store also
// stops a page at 1 MB, so an export holds about one page at a time.
const exportPage = 500

// otherColumn is the CSV column of the attributes the header lacks: the
// header is written before the second page is read.
const otherColumn = "(other attributes)"

// export streams every page of the table page's Scan or Query as JSON
// lines (one item in DynamoDB JSON a line) or CSV, page by page.
func (a *Area) export(w http.ResponseWriter, r *http.Request) {
	_, ti, ok := a.operatorTable(w, r, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format != "jsonl" && format != "csv" {
		a.k.Error(w, r, http.StatusBadRequest, "Export refused", "Choose the export's format: format=jsonl (JSON lines) or format=csv.")
		return
	}
	spec, err := parseQuery(ti, q)
	if err != nil {
		a.k.Error(w, r, http.StatusBadRequest, "Export refused", inputMessage(err))
		return
	}
	// The first page is read before the answer starts, so a refused
	// expression is an error page, not a broken file.
	items, last, _, err := spec.page(r.Context(), a.db, nil, exportPage)
	if err != nil {
		a.k.Error(w, r, http.StatusBadRequest, "Export refused", inputMessage(err))
		return
	}
	ext, ctype := ".jsonl", "application/x-ndjson"
	if format == "csv" {
		ext, ctype = ".csv", "text/csv; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", `attachment; filename="`+safeFileName(ti.Name)+ext+`"`)
	bw := bufio.NewWriterSize(w, 64<<10)
	rc := http.NewResponseController(w)
	var write func([]Item) error
	if format == "jsonl" {
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		write = func(items []Item) error {
			for _, it := range items {
				if err := enc.Encode(itemDDBJSON(it)); err != nil {
					return err
				}
			}
			return nil
		}
	} else {
		cw := csv.NewWriter(bw)
		cols := csvHeader(ti, spec.index, items)
		if err := cw.Write(append(cols, otherColumn)); err != nil {
			return
		}
		write = func(items []Item) error {
			for _, it := range items {
				if err := cw.Write(csvRow(cols, it)); err != nil {
					return err
				}
			}
			cw.Flush()
			return cw.Error()
		}
	}
	for {
		if err := write(items); err != nil {
			return // the client went away
		}
		if len(last) == 0 {
			break
		}
		if err := bw.Flush(); err != nil {
			return
		}
		_ = rc.Flush()
		items, last, _, err = spec.page(r.Context(), a.db, last, exportPage)
		if err != nil {
			// The status is sent: abort the answer so the client sees a
			// broken download rather than a short file that looks whole.
			a.k.Logger().Error("explorer export", "table", ti.Name, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	_ = bw.Flush()
}

// safeFileName keeps a table name's characters that are safe in a
// Content-Disposition filename (DynamoDB's table names use no others).
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if isAlnum(r) || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// csvHeader is the key attributes, then the other attributes of items
// (the first page) by name.
func csvHeader(ti tableInfo, ix index, items []Item) []string {
	cols := keyColumns(ti, ix)
	seen := map[string]bool{}
	for _, c := range cols {
		seen[c] = true
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
	return append(cols, rest...)
}

// csvRow is it under cols, then its attributes outside cols as one
// DynamoDB JSON map ("" when none).
func csvRow(cols []string, it Item) []string {
	row := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		v, ok := it[c]
		if !ok {
			row = append(row, "")
			continue
		}
		row = append(row, csvCell(v))
	}
	other := Item{}
	for n, v := range it {
		if !slices.Contains(cols, n) {
			other[n] = v
		}
	}
	if len(other) == 0 {
		return append(row, "")
	}
	return append(row, defuse(compact(itemDDBJSON(other))))
}

// csvCell is a value in a CSV cell: strings, numbers, binaries (base64)
// and booleans as text, every other type in DynamoDB JSON.
func csvCell(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberN:
		return v.Value // a number never starts a formula
	case *types.AttributeValueMemberS, *types.AttributeValueMemberB:
		return defuse(scalarText(av))
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return "true"
		}
		return "false"
	}
	return defuse(compact(toDDBJSON(av)))
}

// defuse quotes a cell a spreadsheet would run as a formula: one that
// starts with =, +, -, @, a tab or a carriage return gets a leading '.
func defuse(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
