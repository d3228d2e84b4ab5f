// Command chromembench compares EECAR's part search (internal/eecar/search)
// with chromem-go (github.com/philippgille/chromem-go, a pure-Go embedded
// vector database) on the same vectors: query latency and index memory at
// several catalogue sizes, and search quality on EECAR's labelled queries
// (quarry hybrid and vector-only beside chromem-go, which ranks by vector
// alone). Vectors come from embed.NewLocal(dim) for both; data and labels
// are those of bench/eecarbench (internal/eecar/fixture). Results are
// appended to a Markdown file.
//
// It is its own Go module (bench/peers/chromem/go.mod, with a replace of
// quarry to the repository root) so that chromem-go never enters quarry's
// go.mod:
//
//	cd bench/peers/chromem && go run . -sizes 5000,100000 -queries 1000 -out ../../RESULTS.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/philippgille/chromem-go"

	"github.com/quarrydb/quarry/bench/internal/eecarload"
	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/fixture"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

// chromemVersion is the chromem-go release this module requires (go.mod):
// the newest the module proxy serves.
const chromemVersion = "v0.7.0"

func main() {
	sizesFlag := flag.String("sizes", "5000,100000", "catalogue sizes for the latency and memory measurement")
	dim := flag.Int("dim", 256, "embedding dimension (embed.NewLocal); 256 is EECAR's default")
	nq := flag.Int("queries", 1000, "queries per size and system")
	quality := flag.Bool("quality", true, "measure recall@5 and MRR@5 on the labelled queries")
	out := flag.String("out", "", "Markdown file to append the results to")
	buildProfile := flag.String("build-cpuprofile", "", "write a CPU profile (pprof) of quarry's index builds to this file")
	command := flag.String("command", "", "the command to report (run.sh passes its own); default: this one")
	baseRev := flag.String("base-rev", "", "the revision basesearch/ was copied from (run.sh BASE=rev; needs -tags base): quarry's index at that revision is measured beside")
	flag.Parse()
	var sizes []int
	for _, f := range strings.Split(*sizesFlag, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fail(fmt.Errorf("bad size %q", f))
		}
		sizes = append(sizes, n)
	}
	if before != nil {
		if *baseRev == "" {
			fail(fmt.Errorf("built with -tags base: -base-rev must name the revision of basesearch/"))
		}
		before.rev = *baseRev
	}
	cmd := *command
	if cmd == "" {
		cmd = "cd bench/peers/chromem && go run . " + strings.Join(os.Args[1:], " ")
	}
	local := embed.NewLocal(*dim)
	// profileBuild, with -build-cpuprofile, runs the largest size's quarry
	// build under the CPU profiler.
	var profileBuild func(build func())
	if *buildProfile != "" {
		f, err := os.Create(*buildProfile)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		profileBuild = func(build func()) {
			if err := pprof.StartCPUProfile(f); err != nil {
				fail(err)
			}
			build()
			pprof.StopCPUProfile()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — EECAR search vs chromem-go (chromembench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average before: %s\n- Command: `%s`\n", report.Machine(), report.LoadAvg(), cmd)
	fmt.Fprintf(&b, "- Peer: chromem-go %s, in-memory DB (`chromem.NewDB`), one collection, documents added with their precomputed embedding, metadata category and manufacturer, content = the part's text; queried with `QueryEmbedding` (exhaustive cosine over all documents, split over runtime.NumCPU goroutines, `where` equality filter on category). quarry: internal/eecar/search.Index, the index behind EECAR's search.\n", chromemVersion)
	if before != nil {
		fmt.Fprintf(&b, "- quarry before: internal/eecar/search and internal/eecar/embed at %s (copied by run.sh into bench/peers/chromem/basesearch and baseembed; the index given that revision's tokenizer), built as that revision's EECAR loads its catalogue (Index.PutAll in blocks of %d parts where it has PutAll, else Index.Put one by one), in the same process on the same corpus and queries, interleaved with the others.\n", before.rev, loadBlock)
	}
	fmt.Fprintf(&b, "- Vectors: embed.NewLocal(%d) for both, the same []float32 per part and per query (L2-normalised); data: fixture.Catalogue(n), queries as in bench/eecarbench.\n", *dim)
	if *quality {
		runQuality(&b, local)
	}
	runLatency(&b, local, sizes, *nq, profileBuild)
	fmt.Fprintf(&b, "\n- Load average after: %s\n", report.LoadAvg())
	fmt.Print(b.String())
	if *out != "" {
		if err := report.Append(*out, b.String()); err != nil {
			fail(err)
		}
	}
}

type corpus struct {
	parts []fixture.Part
	texts []string
	specs []map[string]string // flattened, as EECAR's market gives the index
	vecs  [][]float32
}

func makeCorpus(local *embed.Local, n int) corpus {
	parts := fixture.Catalogue(n)
	texts := make([]string, len(parts))
	specs := make([]map[string]string, len(parts))
	for i, p := range parts {
		texts[i], specs[i] = p.Text(), p.FlatSpecs()
	}
	return corpus{parts: parts, texts: texts, specs: specs, vecs: embedAll(local, texts)}
}

// embedAll returns the vectors of texts, made in parallel.
func embedAll(local *embed.Local, texts []string) [][]float32 {
	v, err := eecarload.Embed(context.Background(), local, texts)
	if err != nil {
		fail(err)
	}
	return v
}

// loadBlock is the block of parts EECAR's market hands to Index.PutAll
// when it loads the catalogue (internal/eecar/market.loadBlock).
const loadBlock = 1024

// buildQuarry indexes the corpus as EECAR loads its catalogue: blocks of
// loadBlock parts through Index.PutAll.
func buildQuarry(local *embed.Local, c corpus) *search.Index {
	idx := search.NewIndex(local.AppendTokens)
	docs := make([]search.Doc, 0, loadBlock)
	for i := range c.parts {
		docs = append(docs, quarryDoc(c, i))
		if len(docs) == loadBlock || i == len(c.parts)-1 {
			idx.PutAll(docs)
			docs = docs[:0]
		}
	}
	return idx
}

// buildQuarryOneByOne indexes the corpus with Index.Put one part at a
// time, as a part registered through the API is.
func buildQuarryOneByOne(local *embed.Local, c corpus) *search.Index {
	idx := search.NewIndex(local.AppendTokens)
	for i := range c.parts {
		idx.Put(quarryDoc(c, i))
	}
	return idx
}

var created0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// quarryDoc is part i of the corpus as the index takes it.
func quarryDoc(c corpus, i int) search.Doc {
	p := c.parts[i]
	return search.Doc{
		ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer,
		Price: p.Price, Quantity: p.Quantity, Text: c.texts[i], Specs: c.specs[i],
		Vector: c.vecs[i], CreatedAt: created0.Add(time.Duration(i) * time.Minute),
	}
}

// beforeSystem is quarry's index at an earlier revision (main_base.go,
// built with -tags base): built from the same corpus, searched with the
// same queries.
type beforeSystem struct {
	rev    string
	build  func(local *embed.Local, c corpus) any
	search func(idx any, q search.Query) []string
}

// before is set by main_base.go; nil without -tags base.
var before *beforeSystem

// buildChromem adds the corpus to a fresh in-memory chromem-go collection,
// each embedding copied so that the collection owns it (as quarry's index
// owns the copy in its slab).
func buildChromem(c corpus) *chromem.Collection {
	db := chromem.NewDB()
	noEmbed := func(context.Context, string) ([]float32, error) {
		return nil, fmt.Errorf("chromembench: every document and query comes with its embedding")
	}
	col, err := db.CreateCollection("parts", nil, noEmbed)
	if err != nil {
		fail(err)
	}
	docs := make([]chromem.Document, len(c.parts))
	for i, p := range c.parts {
		docs[i] = chromem.Document{
			ID:        p.ID,
			Metadata:  map[string]string{"category": p.Category, "manufacturer": p.Manufacturer},
			Embedding: slices.Clone(c.vecs[i]),
			Content:   c.texts[i],
		}
	}
	if err := col.AddDocuments(context.Background(), docs, runtime.GOMAXPROCS(0)); err != nil {
		fail(err)
	}
	return col
}

// heap returns the live heap after a full collection.
func heap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ---- quality ----

// chromemTop5 queries chromem-go with the query's category and manufacturer
// as its `where` filter; price and quantity filters, which chromem-go's
// string-equality metadata filter cannot express, are applied by the
// harness to chromem-go's full ranking before the top 5 are taken (the
// same filters quarry applies inside its index).
func chromemTop5(col *chromem.Collection, byID map[string]fixture.Part, vec []float32, f search.Filters) []string {
	where := map[string]string{}
	if f.Category != "" {
		where["category"] = f.Category
	}
	if f.Manufacturer != "" {
		where["manufacturer"] = f.Manufacturer
	}
	n := 5
	if f.MaxPrice != nil || f.MinQuantity != nil {
		n = col.Count()
	}
	res, err := col.QueryEmbedding(context.Background(), vec, n, where, nil)
	if err != nil {
		fail(err)
	}
	var ids []string
	for _, r := range res {
		p := byID[r.ID]
		if f.MaxPrice != nil && p.Price > *f.MaxPrice {
			continue
		}
		if f.MinQuantity != nil && p.Quantity < *f.MinQuantity {
			continue
		}
		ids = append(ids, r.ID)
		if len(ids) == 5 {
			break
		}
	}
	return ids
}

func runQuality(b *strings.Builder, local *embed.Local) {
	c := makeCorpus(local, fixture.QueryCatalogueSize)
	idx := buildQuarry(local, c)
	col := buildChromem(c)
	byID := make(map[string]fixture.Part, len(c.parts))
	for _, p := range c.parts {
		byID[p.ID] = p
	}
	qs := fixture.Queries()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	qvecs := embedAll(local, texts)
	systems := []string{"quarry hybrid", "quarry vector", "chromem-go (vector)"}
	var baseIdx any
	if before != nil {
		systems = append(systems, "quarry hybrid (before)", "quarry vector (before)")
		baseIdx = before.build(local, c)
	}
	sum := make([]eecarload.Score, len(systems))
	var agreeTop5, sameSet int
	for i, q := range qs {
		f := eecarload.Filters(q.Filters)
		got := make([][]string, len(systems))
		for m, mode := range []search.Mode{search.Hybrid, search.VectorOnly} {
			sq := search.Query{Text: q.Text, Vector: qvecs[i], Filters: f, TopK: 5, Mode: mode}
			for _, h := range idx.Search(sq) {
				got[m] = append(got[m], h.ID)
			}
			if before != nil {
				got[3+m] = before.search(baseIdx, sq)
			}
		}
		got[2] = chromemTop5(col, byID, qvecs[i], f)
		for s := range systems {
			sc := eecarload.ScoreTop5(got[s], q.Relevant)
			sum[s].Recall += sc.Recall
			sum[s].RR += sc.RR
		}
		if slices.Equal(got[1], got[2]) {
			agreeTop5++
		}
		a, bb := slices.Clone(got[1]), slices.Clone(got[2])
		slices.Sort(a)
		slices.Sort(bb)
		if slices.Equal(a, bb) {
			sameSet++
		}
	}
	n := float64(len(qs))
	fmt.Fprintf(b, "\n### Quality: %d labelled queries over Catalogue(%d), top 5\n\n", len(qs), len(c.parts))
	fmt.Fprintf(b, "| system | recall@5 | MRR@5 |\n|---|--:|--:|\n")
	for s, name := range systems {
		fmt.Fprintf(b, "| %s | %.3f | %.3f |\n", name, sum[s].Recall/n, sum[s].RR/n)
	}
	fmt.Fprintf(b, "| **quarry hybrid / chromem-go** | %.2f× | %.2f× |\n", sum[0].Recall/sum[2].Recall, sum[0].RR/sum[2].RR)
	fmt.Fprintf(b, "\nquarry's vector-only and chromem-go return the same top 5 in the same order on %d of %d queries (the same set on %d): both rank by exact cosine over the same vectors; quarry's vector mode also applies the range words of the query (\"over 80 kWh\") as filters before ranking, which chromem-go cannot.\n", agreeTop5, len(qs), sameSet)
}

// ---- latency and memory ----

type series struct {
	name string
	lat  []time.Duration
	cpu  time.Duration
}

func runLatency(b *strings.Builder, local *embed.Local, sizes []int, n int, profileBuild func(build func())) {
	fmt.Fprintf(b, "\n### Latency and index memory: %d queries per size and system, top 10\n\n", n)
	fmt.Fprintf(b, "Each call timed alone, one at a time, the systems interleaved query by query in rotating order, after 50 warm-up rounds; query vectors computed beforehand. CPU per call = the process's user+system CPU (getrusage) across the call, all threads. Index memory = live heap (after GC) with the index built minus before, the part texts, flattened specs and the harness's vectors excluded for both (each index keeps its own copy of the vectors).\n\n")
	fmt.Fprintf(b, "| docs | system | p50 | p99 | max | CPU per call | index memory | build | build CPU |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|\n")
	var ratios []string
	for _, size := range sizes {
		c := makeCorpus(local, size)
		// The labelled queries keep only their category: chromem-go cannot
		// apply price and quantity filters.
		qs := eecarload.Queries(c.parts, n, func(f search.Filters) search.Filters { return search.Filters{Category: f.Category} })
		qtexts := make([]string, len(qs))
		for i := range qs {
			qtexts[i] = qs[i].Text
		}
		for i, v := range embedAll(local, qtexts) {
			qs[i].Vector = v
			qs[i].TopK = 10
		}
		h0 := heap()
		var idx *search.Index
		qBuild := measure(func() {
			if profileBuild != nil && size == sizes[len(sizes)-1] {
				profileBuild(func() { idx = buildQuarry(local, c) })
			} else {
				idx = buildQuarry(local, c)
			}
		})
		h1 := heap()
		var col *chromem.Collection
		cBuild := measure(func() { col = buildChromem(c) })
		h2 := heap()
		qMem, cMem := int64(h1)-int64(h0), int64(h2)-int64(h1)
		var baseIdx any
		var bMem int64
		var bBuild cost
		if before != nil {
			bBuild = measure(func() { baseIdx = before.build(local, c) })
			bMem = int64(heap()) - int64(h2)
		}
		// Put one by one, timed only: the index is dropped.
		qBuildOne := measure(func() { runtime.KeepAlive(buildQuarryOneByOne(local, c)) })

		ss := []*series{{name: "quarry hybrid"}, {name: "quarry vector"}, {name: "chromem-go (vector)"}}
		if before != nil {
			ss = append(ss, &series{name: "quarry hybrid (before)"}, &series{name: "quarry vector (before)"})
		}
		call := func(s int, q search.Query) {
			switch s {
			case 0, 1, 3, 4:
				q.Mode = search.Hybrid
				if s == 1 || s == 4 {
					q.Mode = search.VectorOnly
				}
				if s >= 3 {
					before.search(baseIdx, q)
					return
				}
				idx.Search(q)
			case 2:
				var where map[string]string
				if q.Filters.Category != "" {
					where = map[string]string{"category": q.Filters.Category}
				}
				if _, err := col.QueryEmbedding(context.Background(), q.Vector, q.TopK, where, nil); err != nil {
					fail(err)
				}
			}
		}
		for i := range 50 {
			for s := range ss {
				call(s, qs[i%len(qs)])
			}
		}
		for i, q := range qs {
			for j := range ss {
				s := (i + j) % len(ss)
				c0 := report.SelfCPU()
				st := time.Now()
				call(s, q)
				d := time.Since(st)
				ss[s].cpu += report.SelfCPU() - c0
				ss[s].lat = append(ss[s].lat, d)
			}
		}
		p99 := make([]time.Duration, len(ss))
		p50 := make([]time.Duration, len(ss))
		for s, sr := range ss {
			p50[s], p99[s] = report.Percentile(sr.lat, 50), report.Percentile(sr.lat, 99)
			mem, build, buildCPU := "", "", ""
			switch s {
			case 0:
				mem, build, buildCPU = mib(qMem), secs(qBuild.wall), secs(qBuild.cpu)
			case 2:
				mem, build, buildCPU = mib(cMem), secs(cBuild.wall), secs(cBuild.cpu)
			case 3:
				mem, build, buildCPU = mib(bMem), secs(bBuild.wall), secs(bBuild.cpu)
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", size, sr.name, ms(p50[s]), ms(p99[s]), ms(sr.lat[len(sr.lat)-1]), ms(sr.cpu/time.Duration(len(sr.lat))), mem, build, buildCPU)
		}
		fmt.Fprintf(b, "| %d | **quarry vector / chromem-go** | %.2f× | %.2f× | | %.2f× | %.2f× | %.2f× | %.2f× |\n", size,
			float64(p50[1])/float64(p50[2]), float64(p99[1])/float64(p99[2]), float64(ss[1].cpu)/float64(ss[2].cpu), float64(qMem)/float64(cMem), qBuild.ratio(cBuild), qBuild.cpuRatio(cBuild))
		fmt.Fprintf(b, "| %d | **quarry hybrid / chromem-go** | %.2f× | %.2f× | | %.2f× | | | |\n", size,
			float64(p50[0])/float64(p50[2]), float64(p99[0])/float64(p99[2]), float64(ss[0].cpu)/float64(ss[2].cpu))
		fmt.Fprintf(b, "| %d | quarry, Index.Put one by one | | | | | | %s | %s |\n", size, secs(qBuildOne.wall), secs(qBuildOne.cpu))
		fmt.Fprintf(b, "| %d | **quarry Put one by one / chromem-go** | | | | | | %.2f× | %.2f× |\n", size, qBuildOne.ratio(cBuild), qBuildOne.cpuRatio(cBuild))
		if before != nil {
			fmt.Fprintf(b, "| %d | **quarry before / chromem-go** | %.2f× | %.2f× | | %.2f× | %.2f× | %.2f× | %.2f× |\n", size,
				float64(p50[4])/float64(p50[2]), float64(p99[4])/float64(p99[2]), float64(ss[4].cpu)/float64(ss[2].cpu), float64(bMem)/float64(cMem), bBuild.ratio(cBuild), bBuild.cpuRatio(cBuild))
			fmt.Fprintf(b, "| %d | **quarry hybrid before / chromem-go** | %.2f× | %.2f× | | %.2f× | | | |\n", size,
				float64(p50[3])/float64(p50[2]), float64(p99[3])/float64(p99[2]), float64(ss[3].cpu)/float64(ss[2].cpu))
			fmt.Fprintf(b, "| %d | **quarry after / before** | %.2f× | %.2f× | | %.2f× | %.2f× | %.2f× | %.2f× |\n", size,
				float64(p50[1])/float64(p50[4]), float64(p99[1])/float64(p99[4]), float64(ss[1].cpu)/float64(ss[4].cpu), float64(qMem)/float64(bMem), qBuild.ratio(bBuild), qBuild.cpuRatio(bBuild))
		}
		ratios = append(ratios, fmt.Sprintf("%d docs: vector p50 %.2f×, hybrid p50 %.2f×", size, float64(p50[1])/float64(p50[2]), float64(p50[0])/float64(p50[2])))
		runtime.KeepAlive(idx)
		runtime.KeepAlive(baseIdx)
		runtime.KeepAlive(col)
		runtime.KeepAlive(c)
		fmt.Fprintf(os.Stderr, "chromembench: %d docs done\n", size)
	}
	fmt.Fprintf(b, "\nRatios below 1 favour quarry (latency, CPU, memory). quarry/chromem-go: %s. The index memory of quarry includes its BM25 postings and parsed quantities, which chromem-go does not have; the build column is Index.PutAll in blocks of %d parts for quarry (as EECAR loads its catalogue; it tokenizes over GOMAXPROCS goroutines), AddDocuments over GOMAXPROCS goroutines for chromem-go, Index.Put one by one where it says so. Build CPU is the process's user+system CPU across the build (all threads, GC included), steadier than wall time on a shared machine. The vector ratio row compares quarry's vector mode; the (before) rows are in the same process, interleaved.\n", strings.Join(ratios, "; "), loadBlock)
}

// cost is what a build took: wall time and the process's CPU time
// (user+system, all threads, GC included).
type cost struct{ wall, cpu time.Duration }

func measure(f func()) cost {
	c0, t0 := report.SelfCPU(), time.Now()
	f()
	return cost{wall: time.Since(t0), cpu: report.SelfCPU() - c0}
}

func (c cost) ratio(o cost) float64    { return float64(c.wall) / float64(o.wall) }
func (c cost) cpuRatio(o cost) float64 { return float64(c.cpu) / float64(o.cpu) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chromembench:", err)
	os.Exit(1)
}
