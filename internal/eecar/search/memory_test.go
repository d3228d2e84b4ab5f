package search_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/fixture"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// BenchmarkIndexMemory reports the live heap one part takes in the index
// (bytes/part), and what of it is not the part's text and vector
// (overhead/part): the catalogue of bench/peers/chromem at 20,000 parts.
// INDEX_HEAP_PROFILE=file writes the heap profile with the index alive.
func BenchmarkIndexMemory(b *testing.B) {
	const n = 20_000
	local := embed.NewLocal(256)
	parts := fixture.Catalogue(n)
	texts := make([]string, n)
	for i, p := range parts {
		texts[i] = p.Text()
	}
	vecs, err := local.Embed(b.Context(), texts)
	if err != nil {
		b.Fatal(err)
	}
	var textBytes int
	for _, t := range texts {
		textBytes += len(t)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		before := liveHeap()
		idx := search.NewIndex(local.Tokens)
		for i, p := range parts {
			idx.Put(search.Doc{
				ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer,
				Price: p.Price, Quantity: p.Quantity, Text: texts[i], Specs: p.FlatSpecs(),
				Vector: vecs[i], CreatedAt: base.Add(time.Duration(i) * time.Minute),
			})
		}
		per := float64(liveHeap()-before) / n
		if f := os.Getenv("INDEX_HEAP_PROFILE"); f != "" {
			// The heap with the index alive, for go tool pprof.
			out, err := os.Create(f)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.WriteHeapProfile(out); err != nil {
				b.Fatal(err)
			}
			out.Close()
		}
		runtime.KeepAlive(idx)
		b.ReportMetric(per, "bytes/part")
		// The text is shared with the caller's strings, the vector copied.
		b.ReportMetric(per-256*4, "overhead/part")
		b.ReportMetric(float64(textBytes)/n, "text/part")
	}
}

func liveHeap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
