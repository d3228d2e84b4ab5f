package ddb

import (
	"bytes"

	"github.com/quarrydb/quarry/ddb/attr"
)

// ReturnConsumedCapacity: the capacity units an operation used, computed the
// way DynamoDB bills them (the store enforces no throughput limits; the
// numbers only report what DynamoDB would have charged).
//
//   - Writes: one unit per started 1 KB of the larger of the item before and
//     after the write (a delete of an absent item still costs one unit).
//     Each secondary index whose stored view changes costs one unit per
//     started 1 KB of its entry; an index key change costs the removal of
//     the old entry plus the write of the new one.
//   - Reads: one unit per started 4 KB, halved for eventually consistent
//     reads. GetItem and BatchGetItem size each item (an absent item costs
//     the minimum); Query and Scan size the sum of the items (or index
//     entries) they read before filtering, rounded up once.
//   - Transactions: the table side costs twice as much (two units per 1 KB
//     written, two per 4 KB read); index writes cost as usual. Only
//     transactions report the ReadCapacityUnits/WriteCapacityUnits split.
//
// TOTAL returns TableName and CapacityUnits; INDEXES adds Table and the
// secondary indexes the operation touched.

const (
	readUnitBytes  = 4 << 10
	writeUnitBytes = 1 << 10
)

// checkReturnConsumedCapacity records the constraint error of a bad
// ReturnConsumedCapacity value.
func checkReturnConsumedCapacity(c *constraintErrors, v string) {
	switch v {
	case "", "NONE", "TOTAL", "INDEXES":
		return
	}
	c.add("Value '%s' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]", v)
}

// wantCapacity reports whether the response carries ConsumedCapacity.
func wantCapacity(mode string) bool { return mode == "TOTAL" || mode == "INDEXES" }

// blocks returns the number of started blocks of unit bytes in n, at least 1.
func blocks(n, unit int) float64 {
	b := (n + unit - 1) / unit
	if b < 1 {
		b = 1
	}
	return float64(b)
}

func itemSize(it attr.Item) int {
	if it == nil {
		return 0
	}
	return it.Size()
}

// itemWriteUnits is the cost of changing one item from old to new (either
// may be nil) in its table.
func itemWriteUnits(old, new attr.Item) float64 {
	return blocks(max(itemSize(old), itemSize(new)), writeUnitBytes)
}

// itemReadUnits is the cost of reading n bytes.
func itemReadUnits(n int, consistent bool) float64 {
	u := blocks(n, readUnitBytes)
	if !consistent {
		u /= 2
	}
	return u
}

func itemsEqual(a, b attr.Item) bool {
	return bytes.Equal(encodeItem(a), encodeItem(b))
}

// writeUnits is the cost in ix of changing one item of t from old to new.
func (ix *index) writeUnits(t *table, old, new attr.Item) float64 {
	var ok, nk []byte
	if old != nil {
		ok = ix.entryKey(t, old)
	}
	if new != nil {
		nk = ix.entryKey(t, new)
	}
	switch {
	case ok == nil && nk == nil:
		return 0
	case ok == nil:
		return blocks(ix.project(t, new).Size(), writeUnitBytes)
	case nk == nil:
		return blocks(ix.project(t, old).Size(), writeUnitBytes)
	case !bytes.Equal(ok, nk):
		return blocks(ix.project(t, old).Size(), writeUnitBytes) + blocks(ix.project(t, new).Size(), writeUnitBytes)
	}
	op, np := ix.project(t, old), ix.project(t, new)
	if itemsEqual(op, np) {
		return 0
	}
	return blocks(np.Size(), writeUnitBytes)
}

// capSplit says which of ReadCapacityUnits/WriteCapacityUnits a
// ConsumedCapacity reports (transactions only).
type capSplit int

const (
	splitNone capSplit = iota
	splitRead
	splitWrite
)

// capacity accumulates the units one operation consumed in one table.
type capacity struct {
	table string
	units float64            // the table's own
	gsi   map[string]float64 // by index name
	lsi   map[string]float64
}

func newCapacity(t *table) *capacity { return &capacity{table: t.meta.Name} }

// addIndex charges u units to index ix.
func (c *capacity) addIndex(ix *index, u float64) {
	if u == 0 {
		return
	}
	m := &c.lsi
	if ix.meta.Global {
		m = &c.gsi
	}
	if *m == nil {
		*m = map[string]float64{}
	}
	(*m)[ix.meta.Name] += u
}

// addWrite charges the change of one item of t from old to new; the table's
// side is multiplied by factor (2 in a transaction).
func (c *capacity) addWrite(t *table, old, new attr.Item, factor float64) {
	c.units += factor * itemWriteUnits(old, new)
	for _, ix := range t.indexes {
		c.addIndex(ix, ix.writeUnits(t, old, new))
	}
}

func (c *capacity) total() float64 {
	n := c.units
	for _, u := range c.gsi {
		n += u
	}
	for _, u := range c.lsi {
		n += u
	}
	return n
}

func splitCap(u float64, split capSplit) *Capacity {
	c := &Capacity{CapacityUnits: u}
	switch split {
	case splitRead:
		c.ReadCapacityUnits = u
	case splitWrite:
		c.WriteCapacityUnits = u
	}
	return c
}

func splitMap(m map[string]float64, split capSplit) map[string]*Capacity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*Capacity, len(m))
	for k, u := range m {
		out[k] = splitCap(u, split)
	}
	return out
}

// consumed returns the ConsumedCapacity to report for mode (nil unless
// TOTAL or INDEXES).
func (c *capacity) consumed(mode string, split capSplit) *ConsumedCapacity {
	if !wantCapacity(mode) {
		return nil
	}
	tot := splitCap(c.total(), split)
	out := &ConsumedCapacity{
		TableName:          c.table,
		CapacityUnits:      tot.CapacityUnits,
		ReadCapacityUnits:  tot.ReadCapacityUnits,
		WriteCapacityUnits: tot.WriteCapacityUnits,
	}
	if mode == "INDEXES" {
		out.Table = splitCap(c.units, split)
		out.GlobalSecondaryIndexes = splitMap(c.gsi, split)
		out.LocalSecondaryIndexes = splitMap(c.lsi, split)
	}
	return out
}

// writeCapacity is the ConsumedCapacity of a single-item write of t.
func writeCapacity(t *table, mode string, old, new attr.Item) *ConsumedCapacity {
	if !wantCapacity(mode) {
		return nil
	}
	c := newCapacity(t)
	c.addWrite(t, old, new, 1)
	return c.consumed(mode, splitNone)
}

// readCapacity is the ConsumedCapacity of reading one item of n bytes.
func readCapacity(t *table, mode string, n int, consistent *bool) *ConsumedCapacity {
	if !wantCapacity(mode) {
		return nil
	}
	c := newCapacity(t)
	c.units = itemReadUnits(n, consistent != nil && *consistent)
	return c.consumed(mode, splitNone)
}

// tableCapacities collects per-table capacities in the order tables are
// first charged, for the operations that report a list.
type tableCapacities struct {
	order  []*capacity
	byName map[string]*capacity
}

func (tc *tableCapacities) of(t *table) *capacity {
	if c, ok := tc.byName[t.meta.Name]; ok {
		return c
	}
	if tc.byName == nil {
		tc.byName = map[string]*capacity{}
	}
	c := newCapacity(t)
	tc.byName[t.meta.Name] = c
	tc.order = append(tc.order, c)
	return c
}

// consumed returns the list to report for mode (nil unless TOTAL or INDEXES).
func (tc *tableCapacities) consumed(mode string, split capSplit) []*ConsumedCapacity {
	if !wantCapacity(mode) {
		return nil
	}
	out := make([]*ConsumedCapacity, 0, len(tc.order))
	for _, c := range tc.order {
		out = append(out, c.consumed(mode, split))
	}
	return out
}

// consumed returns the ConsumedCapacity of a Query or Scan run with pl.
func (pl *readPlan) consumed(mode string, consistent *bool) *ConsumedCapacity {
	if !wantCapacity(mode) {
		return nil
	}
	strong := consistent != nil && *consistent
	c := newCapacity(pl.t)
	u := itemReadUnits(pl.bytesRead, strong)
	if pl.ix != nil {
		c.addIndex(pl.ix, u)
		if pl.fetchedBytes > 0 {
			c.units = itemReadUnits(pl.fetchedBytes, strong)
		}
	} else {
		c.units = u
	}
	return c.consumed(mode, splitNone)
}
