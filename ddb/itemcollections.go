package ddb

import (
	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Item collection metrics: what writes report when
// ReturnItemCollectionMetrics is SIZE.

// ItemCollectionMetrics estimates the size of an item collection (all items
// with one partition key value) of a table with local secondary indexes.
type ItemCollectionMetrics struct {
	ItemCollectionKey   attr.Item `json:"ItemCollectionKey"`
	SizeEstimateRangeGB []float64 `json:"SizeEstimateRangeGB"`
}

func checkReturnICM(c *constraintErrors, v string) {
	switch v {
	case "", "NONE", "SIZE":
	default:
		c.add("Value '%s' at 'returnItemCollectionMetrics' failed to satisfy constraint: Member must satisfy enum value set: [SIZE, NONE]", v)
	}
}

// itemCollectionMetrics returns the metrics DynamoDB reports for a write
// when ReturnItemCollectionMetrics is SIZE: only for tables with local
// secondary indexes, as an estimate range in GB.
func (s *Store) itemCollectionMetrics(t *table, rv string, item attr.Item) *ItemCollectionMetrics {
	if rv != "SIZE" || item == nil {
		return nil
	}
	hasLSI := false
	for _, ix := range t.indexes {
		if !ix.meta.Global {
			hasLSI = true
		}
	}
	if !hasLSI {
		return nil
	}
	hv := item[t.hash.Name]
	var size int64
	p := t.partitionPrefix(hv)
	if it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixSuccessor(p)}); err == nil {
		for it.First(); it.Valid(); it.Next() {
			size += int64(len(it.Value()))
		}
		it.Close()
	}
	gb := float64(size) / (1 << 30)
	lo := float64(int64(gb))
	return &ItemCollectionMetrics{ItemCollectionKey: attr.Item{t.hash.Name: hv}, SizeEstimateRangeGB: []float64{lo, lo + 1}}
}
