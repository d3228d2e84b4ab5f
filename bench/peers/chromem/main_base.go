//go:build base

package main

import (
	baseembed "github.com/quarrydb/quarry/bench/peers/chromem/baseembed"
	basesearch "github.com/quarrydb/quarry/bench/peers/chromem/basesearch"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// With -tags base, basesearch/ and baseembed/ hold internal/eecar/search
// and internal/eecar/embed as they were at an earlier revision (run.sh
// BASE=rev copies them there): that index, tokenizing with that
// revision's tokenizer, is measured beside the current one in the same
// run, on the same vectors.
func init() {
	before = &beforeSystem{
		build: func(local *embed.Local, c corpus) any {
			idx := basesearch.NewIndex(baseembed.NewLocal(local.Dimension()).Tokens)
			// A revision with PutAll loads as EECAR did then, loadBlock
			// parts a call; an older one put parts one by one.
			putAll, bulk := any(idx).(interface{ PutAll([]basesearch.Doc) })
			docs := make([]basesearch.Doc, 0, loadBlock)
			for i := range c.parts {
				d := quarryDoc(c, i)
				// Specs flattened afresh for each part, as the harness did
				// when an index keeping a clone of the map was current.
				bd := basesearch.Doc{
					ID: d.ID, Category: d.Category, Manufacturer: d.Manufacturer, Price: d.Price, Quantity: d.Quantity,
					Text: d.Text, Specs: c.parts[i].FlatSpecs(), Vector: d.Vector, CreatedAt: d.CreatedAt,
				}
				if !bulk {
					idx.Put(bd)
					continue
				}
				docs = append(docs, bd)
				if len(docs) == loadBlock || i == len(c.parts)-1 {
					putAll.PutAll(docs)
					docs = docs[:0]
				}
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
