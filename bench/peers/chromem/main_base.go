//go:build base

package main

import (
	basesearch "github.com/quarrydb/quarry/bench/peers/chromem/basesearch"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// With -tags base, basesearch/ holds internal/eecar/search as it was at
// an earlier revision (run.sh BASE=rev copies it there), measured beside
// the current index in the same run.
func init() {
	before = &beforeSystem{
		build: func(local *embed.Local, c corpus) any {
			idx := basesearch.NewIndex(local.Tokens)
			for i := range c.parts {
				d := quarryDoc(c, i)
				// Specs flattened afresh for each part, as the harness did
				// when this index was current: the index keeps a clone of the
				// map, whose keys are then its own, as in EECAR.
				idx.Put(basesearch.Doc{
					ID: d.ID, Category: d.Category, Manufacturer: d.Manufacturer, Price: d.Price, Quantity: d.Quantity,
					Text: d.Text, Specs: c.parts[i].FlatSpecs(), Vector: d.Vector, CreatedAt: d.CreatedAt,
				})
			}
			return idx
		},
		search: func(idx any, q search.Query) []string {
			f := q.Filters
			var ids []string
			for _, h := range idx.(*basesearch.Index).Search(basesearch.Query{
				Text: q.Text, Vector: q.Vector, TopK: q.TopK, Mode: basesearch.Mode(q.Mode),
				Filters: basesearch.Filters{Category: f.Category, MaxPrice: f.MaxPrice, MinQuantity: f.MinQuantity, Manufacturer: f.Manufacturer},
			}) {
				ids = append(ids, h.ID)
			}
			return ids
		},
	}
}
