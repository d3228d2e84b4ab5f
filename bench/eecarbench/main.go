// Command eecarbench measures EECAR's part search: quality (recall@5 and
// MRR@5 of the labelled queries of internal/eecar/fixture over
// Catalogue(200), per ranking mode) and latency (Search calls over
// catalogues of several sizes, nearest-rank percentiles). Results are
// appended to a Markdown file.
//
//	go run ./bench/eecarbench -quality -latency -sizes 5000,100000 -queries 1000 -out bench/RESULTS.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/quarrydb/quarry/bench/internal/eecarload"
	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/eecar/embed"
	"github.com/quarrydb/quarry/internal/eecar/fixture"
	"github.com/quarrydb/quarry/internal/eecar/search"
)

var modes = []search.Mode{search.VectorOnly, search.BM25Only, search.Hybrid}

func main() {
	quality := flag.Bool("quality", false, "measure recall@5 and MRR@5 of the labelled queries")
	latency := flag.Bool("latency", false, "measure Search latency per catalogue size")
	sizesFlag := flag.String("sizes", "5000,100000", "catalogue sizes for -latency")
	dimsFlag := flag.String("dims", "256,1024", "embedding dimensions (embed.NewLocal); 256 is the EECAR default, 1024 the original's")
	nq := flag.Int("queries", 1000, "Search calls per size and mode for -latency")
	out := flag.String("out", "", "Markdown file to append the results to")
	verbose := flag.Bool("v", false, "print every labelled query's top 5 per mode")
	flag.Parse()
	if !*quality && !*latency {
		*quality, *latency = true, true
	}
	sizes, err := ints(*sizesFlag)
	if err != nil {
		fail(err)
	}
	dims, err := ints(*dimsFlag)
	if err != nil {
		fail(err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — EECAR part search: quality and latency (eecarbench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average (1/5/15 min) before: %s\n", report.Machine(), report.LoadAvg())
	fmt.Fprintf(&b, "- Command: `go run ./bench/eecarbench %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&b, "- Index: internal/eecar/search (in-memory; brute-force cosine over a contiguous slab, split across CPUs from %d docs; BM25 k1 = %.1f, b = %.2f; hybrid = %.1f·vector + %.1f·bm25, min-max normalised over max(10·TopK, %d) candidates from each ranking, + %.1f × the share of the query's numbers with units a part meets; filters, and range words with a number (over 80 kWh, 7kW 미만), before candidate selection). Embedder: embed.NewLocal(dim) (hashed features + the Korean/English glossary internal/eecar/embed/glossary.tsv; no model download); BM25 tokenizer: Local.Tokens (embed.Tokenize mapped through the glossary).\n",
		16384, search.K1, search.B, search.VectorWeight, search.BM25Weight, search.MinCandidates, search.QuantityWeight)
	fmt.Fprintf(&b, "- Data: internal/eecar/fixture.Catalogue(n) (deterministic; 11 categories, ~90 SKUs × year/condition/SOH/price variants; Korean, English and mixed descriptions); Doc.Text = Part.Text(), Doc.Specs = Part.FlatSpecs().\n")

	if *quality {
		for _, dim := range dims {
			runQuality(&b, dim, *verbose)
		}
	}
	if *latency {
		for _, dim := range dims {
			runLatency(&b, dim, sizes, *nq)
		}
	}
	fmt.Fprintf(&b, "\n- Load average after: %s\n", report.LoadAvg())
	fmt.Print(b.String())
	if *out != "" {
		if err := report.Append(*out, b.String()); err != nil {
			fail(err)
		}
	}
}

// build indexes parts with vectors from local and returns the index and
// the time spent embedding (in parallel over GOMAXPROCS goroutines) and
// putting.
func build(local *embed.Local, parts []fixture.Part) (*search.Index, time.Duration, time.Duration) {
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.Text()
	}
	t0 := time.Now()
	vecs := embedAll(local, texts)
	embedDur := time.Since(t0)

	idx := search.NewIndex(local.AppendTokens)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := time.Now()
	for i, p := range parts {
		idx.Put(doc(p, texts[i], vecs[i], base.Add(time.Duration(i)*time.Minute)))
		vecs[i] = nil
	}
	return idx, embedDur, time.Since(t1)
}

func doc(p fixture.Part, text string, vec []float32, created time.Time) search.Doc {
	return search.Doc{
		ID: p.ID, Category: p.Category, Manufacturer: p.Manufacturer,
		Price: p.Price, Quantity: p.Quantity, Text: text, Specs: p.FlatSpecs(),
		Vector: vec, CreatedAt: created,
	}
}

// unitNumberRE finds a number with a unit (11kW, 72.6 kWh, 800V, 94Ah,
// 80%).
var unitNumberRE = regexp.MustCompile(`(?i)(^|[^a-z0-9])\d+(\.\d+)?\s?(kwh|kw|v|ah|a|%)($|[^a-z0-9])`)

// hasUnitNumber reports whether a query has a number with a unit.
func hasUnitNumber(s string) bool { return unitNumberRE.MatchString(s) }

func hasHangul(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Hangul, r) }) >= 0
}

func runQuality(b *strings.Builder, dim int, verbose bool) {
	local := embed.NewLocal(dim)
	parts := fixture.Catalogue(fixture.QueryCatalogueSize)
	idx, _, _ := build(local, parts)
	qs := fixture.Queries()
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	qvecs := embedAll(local, texts)

	type agg struct{ recall, rr, koRecall, enRecall, fRecall, uRecall, uRR float64 }
	res := map[search.Mode]*agg{}
	per := map[search.Mode][]eecarload.Score{}
	nKo, nEn, nF, nU := 0, 0, 0, 0
	for _, q := range qs {
		if hasUnitNumber(q.Text) {
			nU++
		}
		if hasHangul(q.Text) {
			nKo++
		} else {
			nEn++
		}
		if len(q.Filters) > 0 {
			nF++
		}
	}
	for _, mode := range modes {
		a := &agg{}
		res[mode] = a
		for i, q := range qs {
			hits := idx.Search(search.Query{Text: q.Text, Vector: qvecs[i], Filters: eecarload.Filters(q.Filters), TopK: 5, Mode: mode})
			s := eecarload.ScoreTop5(hitIDs(hits), q.Relevant)
			per[mode] = append(per[mode], s)
			a.recall += s.Recall
			a.rr += s.RR
			if hasHangul(q.Text) {
				a.koRecall += s.Recall
			} else {
				a.enRecall += s.Recall
			}
			if len(q.Filters) > 0 {
				a.fRecall += s.Recall
			}
			if hasUnitNumber(q.Text) {
				a.uRecall += s.Recall
				a.uRR += s.RR
			}
			if verbose {
				ids := make([]string, len(hits))
				for j, h := range hits {
					ids[j] = strings.TrimPrefix(h.ID, "fx-")
				}
				fmt.Fprintf(os.Stderr, "dim %d %-6s R=%.2f RR=%.2f %q want %v got %v\n", dim, mode, s.Recall, s.RR, q.Text, q.Relevant, ids)
			}
		}
	}
	n := float64(len(qs))
	fmt.Fprintf(b, "\n### Quality, dim %d: %d labelled queries over Catalogue(%d), TopK 5\n\n", dim, len(qs), len(parts))
	fmt.Fprintf(b, "| mode | recall@5 | MRR@5 | recall@5 Korean (%d) | recall@5 English (%d) | recall@5 with filters (%d) | recall@5 / MRR@5 with a number and unit (%d) |\n|---|--:|--:|--:|--:|--:|--:|\n", nKo, nEn, nF, nU)
	for _, mode := range modes {
		a := res[mode]
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f / %.3f |\n", mode, a.recall/n, a.rr/n, a.koRecall/float64(nKo), a.enRecall/float64(nEn), a.fRecall/float64(max(nF, 1)), a.uRecall/float64(max(nU, 1)), a.uRR/float64(max(nU, 1)))
	}
	var losses []string
	for i, q := range qs {
		h, bm, v := per[search.Hybrid][i], per[search.BM25Only][i], per[search.VectorOnly][i]
		if h.Recall < bm.Recall || (h.Recall == bm.Recall && h.RR < bm.RR) || h.Recall < v.Recall {
			losses = append(losses, fmt.Sprintf("%q (hybrid R %.2f RR %.2f; bm25 R %.2f RR %.2f; vector R %.2f RR %.2f)", q.Text, h.Recall, h.RR, bm.Recall, bm.RR, v.Recall, v.RR))
		}
	}
	if len(losses) > 0 {
		fmt.Fprintf(b, "\nQueries where hybrid ranks worse than BM25 or vector alone (R = recall@5, RR = reciprocal rank): %s.\n", strings.Join(losses, "; "))
	} else {
		fmt.Fprintf(b, "\nHybrid is at least as good as BM25 and vector alone on every query.\n")
	}
}

func runLatency(b *strings.Builder, dim int, sizes []int, n int) {
	local := embed.NewLocal(dim)
	fmt.Fprintf(b, "\n### Latency, dim %d: %d Search calls per size and mode, TopK 10\n\n", dim, n)
	fmt.Fprintf(b, "Queries: the labelled queries cycled, alternating with random part-derived queries (2–4 name words plus the maker, model or a spec value; a fifth with a category filter). Each Search call is timed alone, one at a time (the three modes interleaved query by query, in rotating order) after 50 warm-up rounds (no cache at this layer: every call is a miss); query embedding is done beforehand and reported separately. Generation = fixture.Catalogue(n) + Part.Text(); embedding = Local.Embed over %d goroutines; put = Index.Put one by one. CPU per call = the process's user+system CPU time (getrusage) across the call, all threads: what a call costs regardless of contention from other processes (from 16,384 docs the vector scan is split over GOMAXPROCS goroutines, so on an idle machine wall time can be below it).\n\n", runtime.GOMAXPROCS(0))
	fmt.Fprintf(b, "| docs | mode | p50 | p95 | p99 | max | mean | CPU per call (mean) | generation | embedding | put | query embedding (mean) |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var targets []string
	for _, size := range sizes {
		t0 := time.Now()
		parts := fixture.Catalogue(size)
		for i := range parts {
			_ = parts[i].Text()
		}
		gen := time.Since(t0)
		idx, embedDur, putDur := build(local, parts)
		qs := eecarload.Queries(parts, n, func(f search.Filters) search.Filters { return f })
		t1 := time.Now()
		for i := range qs {
			v, err := local.Embed(context.Background(), []string{qs[i].Text})
			if err != nil {
				fail(err)
			}
			qs[i].Vector = v[0]
			qs[i].TopK = 10
		}
		qEmbed := time.Since(t1) / time.Duration(len(qs))
		parts = nil
		runtime.GC()
		// The modes are interleaved query by query (in rotating order) so
		// that a change of machine load affects them alike.
		lmodes := []search.Mode{search.Hybrid, search.VectorOnly, search.BM25Only}
		lats := make([][]time.Duration, len(lmodes))
		sums := make([]time.Duration, len(lmodes))
		cpus := make([]time.Duration, len(lmodes))
		for i := range 50 {
			for _, mode := range lmodes {
				q := qs[i%len(qs)]
				q.Mode = mode
				idx.Search(q)
			}
		}
		for i, q := range qs {
			for j := range lmodes {
				m := (i + j) % len(lmodes)
				q.Mode = lmodes[m]
				c0 := report.SelfCPU()
				s := time.Now()
				hits := idx.Search(q)
				d := time.Since(s)
				cpus[m] += report.SelfCPU() - c0
				lats[m] = append(lats[m], d)
				sums[m] += d
				if len(hits) == 0 && q.Mode != search.BM25Only {
					fmt.Fprintf(os.Stderr, "no hits: %q\n", q.Text)
				}
			}
		}
		for m, mode := range lmodes {
			lat, sum := lats[m], sums[m]
			p50, p95, p99 := report.Percentile(lat, 50), report.Percentile(lat, 95), report.Percentile(lat, 99)
			mx := lat[len(lat)-1] // sorted by Percentile
			extra := "| | | | |"
			if mode == search.Hybrid {
				extra = fmt.Sprintf("| %s | %s | %s | %s |", secs(gen), secs(embedDur), secs(putDur), us(qEmbed))
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %s %s\n", size, mode, ms(p50), ms(p95), ms(p99), ms(mx), ms(sum/time.Duration(len(lat))), ms(cpus[m]/time.Duration(len(lat))), extra)
			if mode == search.Hybrid {
				if t, ok := target(size); ok {
					verdict := "met"
					if p99 >= t {
						verdict = "missed"
					}
					targets = append(targets, fmt.Sprintf("%d docs hybrid p99 %s (< %s, %s)", size, ms(p99), ms(t), verdict))
				}
			}
		}
		fmt.Fprintf(os.Stderr, "dim %d size %d done\n", dim, size)
	}
	if len(targets) > 0 {
		fmt.Fprintf(b, "\nTargets (hybrid p99 < 10 ms at 5,000 docs — the original published \"5,000 vectors searched within 50 ms\" — and < 50 ms at 100,000): %s.\n", strings.Join(targets, "; "))
	}
}

// embedAll returns the vectors of texts, made in parallel.
func embedAll(local *embed.Local, texts []string) [][]float32 {
	v, err := eecarload.Embed(context.Background(), local, texts)
	if err != nil {
		fail(err)
	}
	return v
}

// hitIDs returns the ids of hits, best first.
func hitIDs(hits []search.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

func target(size int) (time.Duration, bool) {
	switch size {
	case 5000:
		return 10 * time.Millisecond, true
	case 100000:
		return 50 * time.Millisecond, true
	}
	return 0, false
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

func secs(d time.Duration) string {
	if d < time.Second {
		return ms(d)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "eecarbench:", err)
	os.Exit(1)
}
