// Package eecarload is the EECAR search workload the benchmarks share
// (bench/eecarbench, bench/peers/chromem): the catalogue's vectors made in
// parallel, the labelled queries' filters, query sets for latency runs and
// the quality score of a ranking.
package eecarload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/fixture"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// Embed returns the vectors of texts, made on GOMAXPROCS goroutines.
func Embed(ctx context.Context, local *embed.Local, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(texts) + workers - 1) / workers
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(texts))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := local.Embed(ctx, texts[lo:hi])
			if err != nil {
				errs[w] = fmt.Errorf("embed texts %d-%d: %w", lo, hi, err)
				return
			}
			copy(out[lo:hi], v)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Filters converts a labelled query's filters (fixture.Query.Filters) to
// the index's.
func Filters(m map[string]any) search.Filters {
	var f search.Filters
	if c, ok := m["category"].(string); ok {
		f.Category = c
	}
	if x, ok := m["manufacturer"].(string); ok {
		f.Manufacturer = x
	}
	if x, ok := m["maxPrice"].(float64); ok {
		f.MaxPrice = &x
	}
	if x, ok := m["minQuantity"].(int); ok {
		f.MinQuantity = &x
	}
	return f
}

// Queries returns n queries for a latency run: the labelled ones cycled
// (with their filters, each passed through keep), alternating with random
// queries made from a catalogue part's name words, model, maker or a spec
// value (a fifth of them with a category filter). The same parts give the
// same queries.
func Queries(parts []fixture.Part, n int, keep func(search.Filters) search.Filters) []search.Query {
	r := rand.New(rand.NewPCG(2026, 11))
	labelled := fixture.Queries()
	out := make([]search.Query, 0, n)
	for i := 0; len(out) < n; i++ {
		if i%2 == 0 {
			q := labelled[(i/2)%len(labelled)]
			out = append(out, search.Query{Text: q.Text, Filters: keep(Filters(q.Filters))})
			continue
		}
		p := parts[r.IntN(len(parts))]
		words := strings.Fields(p.Name)
		r.Shuffle(len(words), func(a, b int) { words[a], words[b] = words[b], words[a] })
		words = words[:min(len(words), 2+r.IntN(3))]
		switch r.IntN(3) {
		case 0:
			words = append(words, p.Manufacturer)
		case 1:
			words = append(words, p.Model)
		default:
			flat := p.FlatSpecs()
			keys := make([]string, 0, len(flat))
			for k := range flat {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			words = append(words, flat[keys[r.IntN(len(keys))]])
		}
		q := search.Query{Text: strings.Join(words, " ")}
		if r.IntN(5) == 0 {
			q.Filters.Category = p.Category
		}
		out = append(out, q)
	}
	return out
}

// Score is one query's quality: recall@5 and the reciprocal rank of the
// first relevant result in the top 5 (0 when none).
type Score struct{ Recall, RR float64 }

// ScoreTop5 scores a ranking (ids, best first) against the relevant ids.
func ScoreTop5(ids, relevant []string) Score {
	var s Score
	found := 0
	for i, id := range ids {
		if i >= 5 {
			break
		}
		if slices.Contains(relevant, id) {
			found++
			if s.RR == 0 {
				s.RR = 1 / float64(i+1)
			}
		}
	}
	s.Recall = float64(found) / float64(min(len(relevant), 5))
	return s
}
