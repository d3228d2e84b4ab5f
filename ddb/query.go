package ddb

import (
	"bytes"
	"encoding/binary"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// maxPageBytes is the 1 MB of data a Query or Scan reads at most per page.
const maxPageBytes = 1 << 20

// QueryOutput is the response of Query and Scan.
type QueryOutput struct {
	Items            *[]attr.Item      `json:"Items,omitempty"` // absent for Select COUNT
	Count            int64             `json:"Count"`
	ScannedCount     int64             `json:"ScannedCount"`
	LastEvaluatedKey attr.Item         `json:"LastEvaluatedKey,omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`

	// itemsJSON, when not nil, holds the JSON of the items (comma
	// separated) in place of Items: see readPlan.wire.
	itemsJSON *bytes.Buffer
}

// readPlan is a validated Query or Scan.
type readPlan struct {
	t       *table
	ix      *index // nil for the table
	lower   []byte
	upper   []byte
	reverse bool
	limit   int64
	filter  *expr.Condition
	proj    expr.Projection
	sel     string
	// fetchBase is set when an LSI read needs attributes the index lacks.
	fetchBase bool
	// bytesRead and fetchedBytes are what run read from the table or index
	// and fetched from the table for an LSI, for ConsumedCapacity.
	bytesRead, fetchedBytes int
	// wire is set for requests of the wire protocol: run may then encode
	// the items it returns unchanged straight from storage to JSON.
	wire bool
}

func checkSelect(in *QueryInput, isQuery bool) *Error {
	switch in.Select {
	case "", "ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "COUNT", "SPECIFIC_ATTRIBUTES":
	default:
		return validationf("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", in.Select)
	}
	hasProj := in.ProjectionExpression != nil || in.AttributesToGet != nil
	switch in.Select {
	case "ALL_PROJECTED_ATTRIBUTES":
		if in.IndexName == nil {
			return validationf("One or more parameter values were invalid: Select type ALL_PROJECTED_ATTRIBUTES is not supported for table")
		}
		fallthrough
	case "ALL_ATTRIBUTES", "COUNT":
		if hasProj {
			if in.ProjectionExpression != nil {
				return validationf("One or more parameter values were invalid: Cannot specify the ProjectionExpression when choosing to get %s", in.Select)
			}
			return validationf("One or more parameter values were invalid: Cannot specify the AttributesToGet when choosing to get %s", in.Select)
		}
	case "SPECIFIC_ATTRIBUTES":
		if !hasProj {
			return validationf("One or more parameter values were invalid: Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
		}
	}
	return nil
}

// plan validates the parts of Query and Scan they share.
func (s *Store) plan(in *QueryInput, isQuery bool) (*readPlan, *expr.Params, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if in.IndexName != nil {
		checkName(&c, "indexName", *in.IndexName)
	}
	if in.Limit != nil && *in.Limit < 1 {
		if isQuery { // DynamoDB words the two differently
			c.add("Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1")
		} else {
			c.add("Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		}
	}
	if !isQuery {
		if in.Segment != nil && *in.Segment < 0 {
			c.add("Value '%d' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0", *in.Segment)
		}
		if in.Segment != nil && *in.Segment > 999999 {
			c.add("Value '%d' at 'segment' failed to satisfy constraint: Member must have value less than or equal to 999999", *in.Segment)
		}
		if in.TotalSegments != nil && *in.TotalSegments < 1 {
			c.add("Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.TotalSegments)
		}
		if in.TotalSegments != nil && *in.TotalSegments > 1000000 {
			c.add("Value '%d' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000", *in.TotalSegments)
		}
	}
	checkReturnConsumedCapacity(&c, in.ReturnConsumedCapacity)
	if err := c.err(); err != nil {
		return nil, nil, err
	}
	if err := checkSelect(in, isQuery); err != nil {
		return nil, nil, err
	}
	if !isQuery {
		if in.Segment != nil && in.TotalSegments == nil {
			return nil, nil, validationf("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
		}
		if in.TotalSegments != nil && in.Segment == nil {
			return nil, nil, validationf("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
		}
		if in.Segment != nil && *in.Segment >= *in.TotalSegments {
			return nil, nil, validationf("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", *in.Segment, *in.TotalSegments)
		}
	}
	legacyFilter := in.QueryFilter
	legacyName, legacyKind := "QueryFilter", expr.QueryFilter
	if !isQuery {
		legacyFilter, legacyName, legacyKind = in.ScanFilter, "ScanFilter", expr.ScanFilter
	}
	// KeyConditions conflicts only with KeyConditionExpression: it may be
	// combined with FilterExpression and ProjectionExpression.
	legacy := present("KeyConditions", in.KeyConditions != nil && in.KeyConditionExpression != nil, legacyName, legacyFilter != nil, "AttributesToGet", in.AttributesToGet != nil)
	exprs := present("KeyConditionExpression", in.KeyConditionExpression != nil, "FilterExpression", in.FilterExpression != nil, "ProjectionExpression", in.ProjectionExpression != nil)
	if len(legacy) > 0 && len(exprs) > 0 {
		return nil, nil, mixErr(legacy, exprs)
	}
	valueExprs := []string{"FilterExpression"}
	if isQuery {
		valueExprs = []string{"KeyConditionExpression", "FilterExpression"}
	}
	p, perr := params(in.exprInput, len(exprs) > 0, valueExprs...)
	if perr != nil {
		return nil, nil, perr
	}
	pl := &readPlan{sel: in.Select}
	var err error
	if in.FilterExpression != nil {
		pl.filter, err = expr.ParseCondition(expr.FilterExpression, *in.FilterExpression, p)
	} else if legacyFilter != nil {
		pl.filter, err = expr.FromFilter(legacyKind, legacyFilter, in.ConditionalOperator)
	} else if in.ConditionalOperator != "" && in.KeyConditions == nil {
		return nil, nil, validationf("ConditionalOperator can only be used when Expected or KeyConditions or QueryFilter or ScanFilter is present")
	}
	if err != nil {
		return nil, nil, err
	}
	pl.proj, err = readProjection(in.ProjectionExpression, in.AttributesToGet, p)
	if err != nil {
		return nil, nil, err
	}
	t, terr := s.table(*in.TableName)
	if terr != nil {
		return nil, nil, terr
	}
	pl.t = t
	if in.IndexName != nil {
		pl.ix = t.index(*in.IndexName)
		if pl.ix == nil {
			return nil, nil, validationf("The table does not have the specified index: %s", *in.IndexName)
		}
		if pl.ix.meta.Backfilling {
			return nil, nil, validationf("Cannot read from backfilling global secondary index: %s", pl.ix.meta.Name)
		}
		if pl.ix.meta.Global && in.ConsistentRead != nil && *in.ConsistentRead {
			return nil, nil, validationf("Consistent reads are not supported on global secondary indexes")
		}
		full := pl.ix.meta.Projection.ProjectionType == "ALL"
		if in.Select == "ALL_ATTRIBUTES" && !full {
			if pl.ix.meta.Global {
				return nil, nil, validationf("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", pl.ix.meta.Name)
			}
			pl.fetchBase = true
		}
		if !full && !pl.ix.meta.Global && pl.proj != nil {
			for _, path := range pl.proj {
				if !pl.ix.projects(t, path[0].Name) {
					pl.fetchBase = true
				}
			}
		}
	}
	if in.Limit != nil {
		pl.limit = *in.Limit
	}
	pl.reverse = in.ScanIndexForward != nil && !*in.ScanIndexForward
	return pl, p, nil
}

// Query reads the items of one partition of a table or index.
func (s *Store) Query(in *QueryInput) (*QueryOutput, error) {
	if in.KeyConditionExpression == nil && in.KeyConditions == nil && in.TableName != nil {
		if in.KeyConditionExpression == nil {
			return nil, validationf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
		}
	}
	pl, p, err := s.plan(in, true)
	if err != nil {
		return nil, err
	}
	pl.wire = in.wire
	var kc *expr.KeyCondition
	if in.KeyConditionExpression != nil {
		kc, err = expr.ParseKeyCondition(*in.KeyConditionExpression, p)
	} else {
		kc, err = expr.FromKeyConditions(in.KeyConditions)
	}
	if err != nil {
		return nil, err
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	hash, rng := pl.t.hash, pl.t.rng
	if pl.ix != nil {
		hash, rng = pl.ix.hash, pl.ix.rng
	}
	var hterm, rterm *expr.KeyTerm
	for i := range kc.Terms {
		term := &kc.Terms[i]
		switch {
		case term.Name == hash.Name:
			hterm = term
		case rng != nil && term.Name == rng.Name:
			rterm = term
		default:
			return nil, validationf("Query condition missed key schema element: %s", hash.Name)
		}
	}
	if hterm == nil {
		return nil, validationf("Query condition missed key schema element: %s", hash.Name)
	}
	for _, n := range pl.filter.Names() {
		if n == hash.Name || (rng != nil && n == rng.Name) {
			return nil, validationf("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", n)
		}
	}
	if hterm.Op != "=" {
		return nil, validationf("Query key condition not supported")
	}
	for _, v := range hterm.Values {
		if v.Kind != hash.Kind {
			return nil, invalidParam("Condition parameter type does not match schema type")
		}
	}
	var prefix []byte
	if pl.ix != nil {
		prefix = pl.ix.partitionPrefix(hterm.Values[0])
	} else {
		prefix = pl.t.partitionPrefix(hterm.Values[0])
	}
	pl.lower, pl.upper = prefix, prefixSuccessor(prefix)
	if rterm != nil {
		for _, v := range rterm.Values {
			if v.Kind != rng.Kind {
				return nil, invalidParam("Condition parameter type does not match schema type")
			}
		}
		enc := func(v attr.Value) []byte { return attr.AppendKey(append([]byte(nil), prefix...), v) }
		switch rterm.Op {
		case "=":
			pl.lower = enc(rterm.Values[0])
			pl.upper = prefixSuccessor(pl.lower)
		case "<":
			pl.upper = enc(rterm.Values[0])
		case "<=":
			pl.upper = prefixSuccessor(enc(rterm.Values[0]))
		case ">":
			pl.lower = prefixSuccessor(enc(rterm.Values[0]))
		case ">=":
			pl.lower = enc(rterm.Values[0])
		case "BETWEEN":
			if c, _ := attr.Compare(rterm.Values[0], rterm.Values[1]); c > 0 {
				return nil, validationf("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {%s:%s}, upper bound operand: AttributeValue: {%s:%s}",
					rterm.Values[0].Kind, scalarText(rterm.Values[0]), rterm.Values[1].Kind, scalarText(rterm.Values[1]))
			}
			pl.lower = enc(rterm.Values[0])
			pl.upper = prefixSuccessor(enc(rterm.Values[1]))
		case "begins_with":
			v := rterm.Values[0]
			if v.Kind == attr.KindN {
				return nil, validationf("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N")
			}
			full := enc(v)
			pl.lower = full[:len(full)-2] // drop the terminator
			pl.upper = prefixSuccessor(pl.lower)
		default:
			return nil, validationf("Query key condition not supported")
		}
	}
	if err := s.applyStartKey(pl, in.ExclusiveStartKey, true, hterm.Values[0]); err != nil {
		return nil, err
	}
	out, err := s.run(pl)
	if err == nil {
		out.ConsumedCapacity = pl.consumed(in.ReturnConsumedCapacity, in.ConsistentRead)
	}
	return out, err
}

func scalarText(v attr.Value) string {
	if v.Kind == attr.KindB {
		return string(v.B)
	}
	return v.S
}

// queryWire and scanWire are Query and Scan as the wire protocol serves
// them (readPlan.wire).
func (s *Store) queryWire(in *QueryInput) (*QueryOutput, error) {
	in.wire = true
	return s.Query(in)
}

func (s *Store) scanWire(in *QueryInput) (*QueryOutput, error) {
	in.wire = true
	return s.Scan(in)
}

// Scan reads every item of a table or index, or one segment of them.
func (s *Store) Scan(in *QueryInput) (*QueryOutput, error) {
	if in.ScanIndexForward != nil || in.KeyConditionExpression != nil || in.KeyConditions != nil {
		// Scan has no such parameters; DynamoDB ignores unknown members.
		in.ScanIndexForward, in.KeyConditionExpression, in.KeyConditions = nil, nil, nil
	}
	pl, p, err := s.plan(in, false)
	if err != nil {
		return nil, err
	}
	pl.wire = in.wire
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	base := pl.t.prefix
	if pl.ix != nil {
		base = pl.ix.prefix
	}
	pl.lower, pl.upper = base, prefixSuccessor(base)
	if in.TotalSegments != nil {
		total, seg := uint64(*in.TotalSegments), uint64(*in.Segment)
		lo := (seg << 32) / total
		hi := ((seg + 1) << 32) / total
		pl.lower = binary.BigEndian.AppendUint32(append([]byte(nil), base...), uint32(lo))
		if hi < 1<<32 {
			pl.upper = binary.BigEndian.AppendUint32(append([]byte(nil), base...), uint32(hi))
		}
	}
	segLower, segUpper := pl.lower, pl.upper
	if err := s.applyStartKey(pl, in.ExclusiveStartKey, false, attr.Value{}); err != nil {
		return nil, err
	}
	if in.ExclusiveStartKey != nil && in.TotalSegments != nil && *in.TotalSegments > 1 {
		// The start key must lie in the segment the request scans.
		k := pl.startKey(in.ExclusiveStartKey)
		if bytes.Compare(k, segLower) < 0 || segUpper != nil && bytes.Compare(k, segUpper) >= 0 {
			return nil, validationf("The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: %d Segment: %d", *in.TotalSegments, *in.Segment)
		}
	}
	out, err := s.run(pl)
	if err == nil {
		out.ConsumedCapacity = pl.consumed(in.ReturnConsumedCapacity, in.ConsistentRead)
	}
	return out, err
}

// applyStartKey narrows the plan's range to start after ExclusiveStartKey.
func (s *Store) applyStartKey(pl *readPlan, esk attr.Item, isQuery bool, hv attr.Value) *Error {
	if esk == nil {
		return nil
	}
	bad := func() *Error {
		return validationf("The provided starting key is invalid: The provided key element does not match the schema")
	}
	t := pl.t
	want := t.keyDefs()
	if pl.ix != nil {
		want = append(want, pl.ix.hash)
		if pl.ix.rng != nil {
			want = append(want, *pl.ix.rng)
		}
	}
	names := map[string]bool{}
	for _, kd := range want {
		v, ok := esk[kd.Name]
		if !ok || v.Kind != kd.Kind {
			return bad()
		}
		if emptyKeyValue(v) != "" {
			return validationf("The provided starting key is invalid: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: %s", kd.Name)
		}
		names[kd.Name] = true
	}
	if len(esk) != len(names) {
		return bad()
	}
	if isQuery {
		h := t.hash.Name
		if pl.ix != nil {
			h = pl.ix.hash.Name
		}
		if !attr.Equal(esk[h], hv) {
			return validationf("The provided starting key is invalid: The query can return at most one row and cannot be restarted")
		}
	}
	k := pl.startKey(esk)
	if pl.reverse {
		if bytes.Compare(k, pl.upper) < 0 || pl.upper == nil {
			pl.upper = k
		}
	} else {
		next := append(append([]byte(nil), k...), 0)
		if bytes.Compare(next, pl.lower) > 0 {
			pl.lower = next
		}
	}
	return nil
}

// startKey is the storage key of a validated ExclusiveStartKey: its
// index entry's key when the plan reads an index.
func (pl *readPlan) startKey(esk attr.Item) []byte {
	if pl.ix != nil {
		return pl.ix.entryKey(pl.t, esk)
	}
	return pl.t.itemKey(esk)
}

// run executes a plan and builds one page of results.
func (s *Store) run(pl *readPlan) (*QueryOutput, error) {
	out := &QueryOutput{}
	items := []attr.Item{}
	if pl.sel != "COUNT" {
		out.Items = &items
	}
	if pl.upper != nil && bytes.Compare(pl.lower, pl.upper) >= 0 {
		return out, nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pl.lower, UpperBound: pl.upper})
	if err != nil {
		return nil, internal(err)
	}
	defer it.Close()
	var ok bool
	if pl.reverse {
		ok = it.Last()
	} else {
		ok = it.First()
	}
	bytesRead := 0
	var last attr.Item
	// Items returned as stored are transcoded to JSON without being
	// decoded; only the last one is, for LastEvaluatedKey.
	raw := pl.wire && pl.filter == nil && !pl.fetchBase && pl.proj == nil && pl.sel != "COUNT"
	if raw {
		out.itemsJSON = getBuffer() // back to the pool once the response is written
	}
	for ; ok; ok = advance(it, pl.reverse) {
		if raw {
			mark := out.itemsJSON.Len()
			if out.Count > 0 {
				out.itemsJSON.WriteByte(',')
			}
			size, err := appendItemJSON(out.itemsJSON, it.Value())
			if err != nil {
				out.itemsJSON.Truncate(mark)
				s.skipCorrupt(pl, it.Key(), err)
				continue
			}
			out.ScannedCount++
			out.Count++
			bytesRead += size
		} else {
			item, err := decodeItem(it.Value())
			if err != nil {
				s.skipCorrupt(pl, it.Key(), err)
				continue
			}
			out.ScannedCount++
			last = item
			bytesRead += item.Size()
			keep := pl.filter == nil || pl.filter.Eval(item)
			if keep && pl.fetchBase {
				full, err := s.getItem(pl.t.itemKey(item))
				switch {
				case isCorrupt(err):
					s.skipCorrupt(&readPlan{t: pl.t}, pl.t.itemKey(item), err)
					keep = false
				case err != nil:
					return nil, internal(err)
				case full != nil:
					item = full
					pl.fetchedBytes += full.Size()
				}
			}
			if keep {
				out.Count++
				if pl.sel != "COUNT" {
					if pl.proj != nil {
						item = pl.proj.Apply(item)
						if item == nil {
							item = attr.Item{}
						}
					}
					items = append(items, item)
				}
			}
		}
		if (pl.limit > 0 && out.ScannedCount >= pl.limit) || bytesRead >= maxPageBytes {
			if raw { // the iterator is still on the page's last item
				var err error
				if last, err = decodeItem(it.Value()); err != nil {
					return nil, internal(err)
				}
			}
			if advance(it, pl.reverse) {
				out.LastEvaluatedKey = pl.lastKey(last)
			} else if pl.limit > 0 && out.ScannedCount >= pl.limit {
				// DynamoDB returns a LastEvaluatedKey whenever Limit stops
				// the read, even when nothing follows.
				out.LastEvaluatedKey = pl.lastKey(last)
			}
			break
		}
	}
	if err := it.Error(); err != nil {
		return nil, internal(err)
	}
	pl.bytesRead = bytesRead
	return out, nil
}

func advance(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// lastKey returns the LastEvaluatedKey for the item a page ended on.
func (pl *readPlan) lastKey(item attr.Item) attr.Item {
	k := pl.t.keyOf(item)
	if pl.ix != nil {
		k[pl.ix.hash.Name] = item[pl.ix.hash.Name]
		if pl.ix.rng != nil {
			k[pl.ix.rng.Name] = item[pl.ix.rng.Name]
		}
	}
	return k
}
