package search_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
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
	docs := catalogueDocs(b, local, n)
	var textBytes int
	for _, d := range docs {
		textBytes += len(d.Text)
	}
	for b.Loop() {
		before := liveHeap()
		idx := search.NewIndex(local.AppendTokens)
		for _, d := range docs {
			idx.Put(d)
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

// BenchmarkPutAll builds the index of the catalogue of bench/peers/chromem
// at 20,000 parts as EECAR loads it (Index.PutAll in blocks of 1,024),
// reporting the time a part (the text analysis and the insert) and the
// process's CPU time a part, all threads, GC included: steadier than the
// time on a shared machine.
func BenchmarkPutAll(b *testing.B) {
	const n, block = 20_000, 1024
	local := embed.NewLocal(256)
	docs := catalogueDocs(b, local, n)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		idx := search.NewIndex(local.AppendTokens)
		for lo := 0; lo < n; lo += block {
			idx.PutAll(docs[lo:min(lo+block, n)])
		}
		runtime.KeepAlive(idx)
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/part")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/part")
}

// processCPU returns the process's user and system CPU time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// catalogueDocs returns the index documents of the first n parts of the
// catalogue of bench/peers/chromem, embedded by local, a minute apart.
func catalogueDocs(b *testing.B, local *embed.Local, n int) []search.Doc {
	parts := fixture.Catalogue(n)
	texts := make([]string, n)
	for i, p := range parts {
		texts[i] = p.Text()
	}
	vecs, err := local.Embed(b.Context(), texts)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	docs := make([]search.Doc, n)
	for i, p := range parts {
		docs[i] = search.Doc{
			ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer,
			Price: p.Price, Quantity: p.Quantity, Text: texts[i], Specs: p.FlatSpecs(),
			Vector: vecs[i], CreatedAt: base.Add(time.Duration(i) * time.Minute),
		}
	}
	return docs
}
