package explorer

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/console"
)

// pageSizes are the page sizes the table page offers; limit= is rounded
// to the nearest one at most (100 at most, 25 when missing or malformed).
var pageSizes = []int{10, 25, 50, 100}

// pageSize reads the limit parameter.
func pageSize(s string) int32 {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 25
	}
	for _, p := range pageSizes {
		if n <= p {
			return int32(p)
		}
	}
	return int32(pageSizes[len(pageSizes)-1])
}

// querySpec is a checked Scan or Query of the table page's form: what
// runs it for one page, and for an export page after page.
type querySpec struct {
	table   string
	op      string // scan or query
	index   index
	filter  string
	names   map[string]string
	values  Item
	cond    string // Query's key condition
	forward bool
}

// errInput is an input the user must fix; its message says what.
var errInput = errors.New("explorer: input")

// inputf returns an errInput error with the message format.
func inputf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInput, fmt.Sprintf(format, args...))
}

// inputMessage is the message of an errInput error, else the store's.
func inputMessage(err error) string {
	if errors.Is(err, errInput) {
		return strings.TrimPrefix(err.Error(), errInput.Error()+": ")
	}
	return console.StoreMessage(err)
}

// parseQuery checks the form q of table ti's Scan or Query.
func parseQuery(ti tableInfo, q url.Values) (querySpec, error) {
	s := querySpec{table: ti.Name, op: q.Get("op"), names: map[string]string{}, values: Item{}, forward: q.Get("order") != "desc"}
	if s.op != "query" {
		s.op = "scan"
	}
	ix, ok := ti.index(q.Get("index"))
	if !ok {
		return s, inputf("The table has no index %q.", q.Get("index"))
	}
	s.index = ix
	if v := strings.TrimSpace(q.Get("values")); v != "" {
		vals, err := parseDDBItem(v)
		if err != nil {
			return s, inputf("Expression values: %s", err)
		}
		s.values = vals
	}
	s.filter = strings.TrimSpace(q.Get("filter"))
	if s.filter != "" {
		// #name placeholders the expression uses name themselves.
		for _, f := range strings.FieldsFunc(s.filter, func(r rune) bool { return !(r == '#' || r == '_' || r == '-' || r == '.' || isAlnum(r)) }) {
			if strings.HasPrefix(f, "#") && len(f) > 1 {
				s.names[f] = strings.TrimPrefix(f, "#")
			}
		}
	} else if len(s.values) > 0 {
		return s, inputf("Expression values are given without a filter expression: write the filter that uses them, or clear the values.")
	}
	if s.op == "scan" {
		return s, nil
	}
	on := "the table"
	if ix.Name != "" {
		on = "the index " + ix.Name
	}
	if q.Get("pk") == "" {
		return s, inputf("A Query needs the partition key value: enter the value of %s (the partition key of %s), or choose Scan.", ix.PK.Name, on)
	}
	pv, err := scalar(ix.PK.Type, q.Get("pk"))
	if err != nil {
		return s, inputf("%s: %s", ix.PK.Name, err)
	}
	s.names["#qpk"] = ix.PK.Name
	s.values[":qpk"] = pv
	s.cond = "#qpk = :qpk"
	op := q.Get("skop")
	if op == "" {
		return s, nil
	}
	if !slices.Contains(sortOps, op) {
		return s, inputf("Unknown sort key condition %q.", op)
	}
	if ix.SK.Name == "" {
		return s, inputf("%s has no sort key: choose \"none\" as the sort key condition.", strings.ToUpper(on[:1])+on[1:])
	}
	if q.Get("sk") == "" {
		return s, inputf("The sort key condition %s needs a value of %s.", op, ix.SK.Name)
	}
	sv, err := scalar(ix.SK.Type, q.Get("sk"))
	if err != nil {
		return s, inputf("%s: %s", ix.SK.Name, err)
	}
	s.names["#qsk"] = ix.SK.Name
	s.values[":qsk"] = sv
	switch op {
	case "begins_with":
		s.cond += " AND begins_with(#qsk, :qsk)"
	case "between":
		if q.Get("sk2") == "" {
			return s, inputf("between needs a second value of %s (the upper bound).", ix.SK.Name)
		}
		sv2, err := scalar(ix.SK.Type, q.Get("sk2"))
		if err != nil {
			return s, inputf("%s: %s", ix.SK.Name, err)
		}
		s.values[":qsk2"] = sv2
		s.cond += " AND #qsk BETWEEN :qsk AND :qsk2"
	default:
		s.cond += " AND #qsk " + op + " :qsk"
	}
	return s, nil
}

// page runs one page of s from start (nil: the first), of at most limit
// items read.
func (s querySpec) page(ctx context.Context, db *dynamodb.Client, start Item, limit int32) (items []Item, last Item, scanned int32, err error) {
	var indexName *string
	if s.index.Name != "" {
		indexName = aws.String(s.index.Name)
	}
	var filter *string
	if s.filter != "" {
		filter = aws.String(s.filter)
	}
	names, values := s.names, s.values
	if len(names) == 0 {
		names = nil
	}
	if len(values) == 0 {
		values = nil
	}
	if s.op == "scan" {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.table), IndexName: indexName, Limit: aws.Int32(limit), ExclusiveStartKey: start,
			FilterExpression: filter, ExpressionAttributeNames: names, ExpressionAttributeValues: values})
		if err != nil {
			return nil, nil, 0, err
		}
		return out.Items, out.LastEvaluatedKey, out.ScannedCount, nil
	}
	out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(s.table), IndexName: indexName, Limit: aws.Int32(limit), ExclusiveStartKey: start,
		KeyConditionExpression: aws.String(s.cond), FilterExpression: filter, ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ScanIndexForward: aws.Bool(s.forward)})
	if err != nil {
		return nil, nil, 0, err
	}
	return out.Items, out.LastEvaluatedKey, out.ScannedCount, nil
}

// cursor is the way back and forth through a Scan or Query: the
// ExclusiveStartKey of every page from the second to the shown one. It
// travels in the URL signed with the area's key and names its table and
// index, so a cursor edited by hand or carried to another table or index
// is refused.
type cursor struct {
	Table string   `json:"t"`
	Index string   `json:"i"`
	Keys  []string `json:"k"` // encodeKey of each page's start
}

// sign returns the cursor's token.
func (a *Area) sign(c cursor) string {
	if len(c.Keys) == 0 {
		return ""
	}
	b, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + a.mac(payload)
}

func (a *Area) mac(payload string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("explorer cursor\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// errCursor refuses a cursor that is not this table's and index's.
var errCursor = inputf("This page link is not valid for this table and index (edited, or from before a restart of quarry): start again from the first page.")

// openCursor returns the cursor of token for table and index ("" is the
// first page's).
func (a *Area) openCursor(token, table, index string) (cursor, error) {
	c := cursor{Table: table, Index: index}
	if token == "" {
		return c, nil
	}
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.mac(payload))) {
		return c, errCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var got cursor
	if err != nil || json.Unmarshal(b, &got) != nil || got.Table != table || got.Index != index || len(got.Keys) == 0 {
		return c, errCursor
	}
	return got, nil
}

// start returns the shown page's ExclusiveStartKey (nil: the first page).
func (c cursor) start() (Item, error) {
	if len(c.Keys) == 0 {
		return nil, nil
	}
	return decodeKey(c.Keys[len(c.Keys)-1])
}

// next is the cursor of the page after, which starts after last.
func (c cursor) next(last Item) cursor {
	return cursor{Table: c.Table, Index: c.Index, Keys: append(slices.Clip(c.Keys), encodeKey(last))}
}

// prev is the cursor of the page before.
func (c cursor) prev() cursor {
	return cursor{Table: c.Table, Index: c.Index, Keys: c.Keys[:len(c.Keys)-1]}
}
