package search

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"unicode"
)

// filter is a compiled Filters.
type filter struct {
	active   bool
	category string
	manuf    string
	hasMax   bool
	maxPrice float64
	hasMin   bool
	minQty   int
	hasLow   bool
	minPrice float64
	cond     string
	hasSOH   bool
	minSOH   float64
	cathode  string
	ranges   []Constraint // the query's range constraints (over 80 kWh, 7kW 미만)
}

func compileFilter(f Filters, cs []Constraint) filter {
	c := filter{
		category: strings.TrimSpace(f.Category),
		manuf:    strings.ToLower(strings.TrimSpace(f.Manufacturer)),
	}
	if f.MaxPrice != nil {
		c.hasMax, c.maxPrice = true, *f.MaxPrice
	}
	if f.MinQuantity != nil {
		c.hasMin, c.minQty = true, *f.MinQuantity
	}
	if f.MinPrice != nil {
		c.hasLow, c.minPrice = true, *f.MinPrice
	}
	if f.MinSOH != nil {
		c.hasSOH, c.minSOH = true, *f.MinSOH
	}
	c.cond = strings.ToLower(strings.TrimSpace(f.Condition))
	c.cathode = CathodeKey(f.Cathode)
	for _, x := range cs {
		if x.Op != "=" {
			c.ranges = append(c.ranges, x)
		}
	}
	c.active = c.category != "" || c.manuf != "" || c.hasMax || c.hasMin || c.hasLow || c.cond != "" ||
		c.hasSOH || c.cathode != "" || len(c.ranges) > 0
	return c
}

// ok reports whether e passes the filter.
func (f *filter) ok(e *entry) bool {
	if !f.active {
		return true
	}
	if f.category != "" && !strings.EqualFold(e.category, f.category) {
		return false
	}
	if f.manuf != "" && e.manuf != f.manuf {
		return false
	}
	if f.hasMax && !(e.price <= f.maxPrice) {
		return false
	}
	if f.hasMin && e.quantity < f.minQty {
		return false
	}
	if f.hasLow && !(e.price >= f.minPrice) {
		return false
	}
	if f.cond != "" && !strings.EqualFold(e.condition, f.cond) {
		return false
	}
	if f.hasSOH && (!e.hasSOH || e.soh < f.minSOH) {
		return false
	}
	if f.cathode != "" && !strings.HasPrefix(CathodeKey(e.cathode), f.cathode) {
		return false
	}
	if len(f.ranges) > 0 {
		if _, excluded := quantityMatch(f.ranges, e.qty); excluded {
			return false
		}
	}
	return true
}

// CathodeKey is a cathode name as filters compare it: upper case, without
// spaces or hyphens ("ncm 811" → "NCM811").
func CathodeKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return unicode.ToUpper(r)
	}, strings.TrimSpace(s))
}

// cand is a scored slot.
type cand struct {
	score float64
	slot  int32
}

// ranker orders slots: higher score, then newer CreatedAt, then smaller
// ID.
type ranker struct{ entries []entry }

// better reports whether a ranks before b.
func (r ranker) better(a, b cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	ea, eb := &r.entries[a.slot], &r.entries[b.slot]
	if ea.created != eb.created {
		return ea.created > eb.created
	}
	return ea.id < eb.id
}

func (r ranker) compare(a, b cand) int {
	switch {
	case r.better(a, b):
		return -1
	case r.better(b, a):
		return 1
	}
	return 0
}

// topN is a bounded min-heap keeping the best n candidates; the worst
// kept candidate is at the root.
type topN struct {
	r    ranker
	n    int
	heap []cand
}

func newTopN(r ranker, n int) *topN {
	return &topN{r: r, n: n, heap: make([]cand, 0, n)}
}

// full reports whether the heap holds n candidates.
func (h *topN) full() bool { return len(h.heap) == h.n }

// worst is the root's score (only meaningful when full).
func (h *topN) worst() float64 { return h.heap[0].score }

// push offers c.
func (h *topN) push(c cand) {
	if h.n <= 0 {
		return
	}
	if len(h.heap) < h.n {
		h.heap = append(h.heap, c)
		// sift up: parent must be worse than (or equal to) child.
		i := len(h.heap) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !h.r.better(h.heap[p], h.heap[i]) {
				break
			}
			h.heap[p], h.heap[i] = h.heap[i], h.heap[p]
			i = p
		}
		return
	}
	if !h.r.better(c, h.heap[0]) {
		return
	}
	h.heap[0] = c
	i, n := 0, len(h.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		w := l // the worse child
		if r := l + 1; r < n && h.r.better(h.heap[l], h.heap[r]) {
			w = r
		}
		if !h.r.better(h.heap[i], h.heap[w]) {
			break
		}
		h.heap[i], h.heap[w] = h.heap[w], h.heap[i]
		i = w
	}
}

// sorted returns the kept candidates best first.
func (h *topN) sorted() []cand {
	out := slices.Clone(h.heap)
	slices.SortFunc(out, h.r.compare)
	return out
}

// dot is the inner product of a and b (len(b) >= len(a)).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		s0 += x[0]*y[0] + x[4]*y[4]
		s1 += x[1]*y[1] + x[5]*y[5]
		s2 += x[2]*y[2] + x[6]*y[6]
		s3 += x[3]*y[3] + x[7]*y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// scanVector returns the best n eligible slots by cosine similarity over
// slots [lo, hi). With no usable query vector every slot scores 0.
// Callers hold mu.
func (x *Index) scanVector(qv []float32, f *filter, n, lo, hi int) *topN {
	h := newTopN(ranker{x.entries}, n)
	for s := lo; s < hi; s++ {
		if f.active && !f.ok(&x.entries[s]) {
			continue
		}
		var score float64
		if qv != nil {
			score = float64(dot(qv, x.row(s)))
		}
		if h.full() && score < h.worst() {
			continue
		}
		h.push(cand{score: score, slot: int32(s)})
	}
	return h
}

// bm25 scores every eligible doc containing a query term. acc is indexed
// by slot (nil when no term occurs); touched lists the slots with a
// non-zero score. IDF uses the whole index as the collection. Callers
// hold mu.
func (x *Index) bm25(terms []string, f *filter) (acc []float64, touched []int32) {
	n := len(x.entries)
	if n == 0 {
		return nil, nil
	}
	N := float64(n)
	avgdl := float64(x.totalLen) / N
	if avgdl == 0 {
		avgdl = 1
	}
	for _, t := range terms {
		id, ok := x.termIDs[t]
		if !ok {
			continue
		}
		pl := &x.lists[id]
		if acc == nil {
			acc = make([]float64, n)
		}
		idf := idf(N, float64(len(pl.slots)))
		lens := x.lens
		for i, s := range pl.slots {
			if f.active && !f.ok(&x.entries[s]) {
				continue
			}
			if acc[s] == 0 {
				touched = append(touched, s)
			}
			tf := float64(pl.tfs[i])
			if pl.tfs[i] == tfOverflow {
				tf = float64(x.bigTF[tfKey{id, s}])
			}
			acc[s] += termScore(idf, tf, float64(lens[s]), avgdl)
		}
	}
	return acc, touched
}

// idf is ln(1 + (N - df + 0.5)/(df + 0.5)).
func idf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// termScore is one term's BM25 contribution.
func termScore(idf, tf, dl, avgdl float64) float64 {
	return idf * tf * (K1 + 1) / (tf + K1*(1-B+B*dl/avgdl))
}

// queryTerms tokenizes the query text and removes duplicate tokens,
// keeping the first occurrence.
func (x *Index) queryTerms(text string) []string {
	toks := x.tokenize(text)
	seen := make(map[string]bool, len(toks))
	out := toks[:0:0]
	for _, t := range toks {
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// Search returns up to TopK hits best first. Filters are applied before
// candidates are selected, so every hit passes them. In Hybrid mode the
// candidates are the union of the best C docs by vector and the best C
// by BM25, C = max(10×TopK, 100); both scores are min-max normalised
// over the candidates (all-equal → 1 if > 0 else 0) and fused as
// 0.7·vector + 0.3·bm25, plus QuantityWeight times the share of the
// query's numbers with units the doc meets. In every mode a range word
// with a number ("over 80 kWh", "7kW 미만") filters: a doc stating that
// dimension with no value in the range is left out (a doc that does not
// state it stays). Repeated query words count once. Ties go to the newer
// CreatedAt, then the smaller ID.
func (x *Index) Search(q Query) []Hit {
	k := q.TopK
	if k <= 0 {
		k = DefaultTopK
	}
	k = min(k, MaxTopK)
	terms := x.queryTerms(q.Text)
	cs := ParseConstraints(q.Text)
	f := compileFilter(q.Filters, cs)

	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.entries)
	if n == 0 {
		return []Hit{}
	}
	var qv []float32
	if len(q.Vector) > 0 && len(q.Vector) == x.dim {
		qv = q.Vector
	}
	acc, touched := x.bm25(terms, &f)
	r := ranker{x.entries}
	bm := func(s int32) float64 {
		if acc == nil {
			return 0
		}
		return acc[s]
	}
	vec := func(s int32) float64 {
		if qv == nil || !x.entries[s].hasVec {
			return 0
		}
		return float64(dot(qv, x.row(int(s))))
	}

	var ranked []cand
	scores := map[int32]Scores{}
	switch q.Mode {
	case VectorOnly:
		ranked = x.topVector(qv, &f, k)
		for _, c := range ranked {
			scores[c.slot] = Scores{Vector: c.score, BM25: bm(c.slot)}
		}
	case BM25Only:
		h := newTopN(r, k)
		for _, s := range touched {
			if h.full() && acc[s] < h.worst() {
				continue
			}
			h.push(cand{score: acc[s], slot: s})
		}
		ranked = h.sorted()
		for _, c := range ranked {
			scores[c.slot] = Scores{Vector: vec(c.slot), BM25: c.score}
		}
	default:
		c := max(10*k, MinCandidates)
		union := make(map[int32]bool, 2*c)
		var cands []int32
		for _, v := range x.topVector(qv, &f, c) {
			union[v.slot] = true
			cands = append(cands, v.slot)
		}
		h := newTopN(r, c)
		for _, s := range touched {
			if h.full() && acc[s] < h.worst() {
				continue
			}
			h.push(cand{score: acc[s], slot: s})
		}
		for _, b := range h.heap {
			if !union[b.slot] {
				union[b.slot] = true
				cands = append(cands, b.slot)
			}
		}
		if len(cands) == 0 {
			return []Hit{}
		}
		vs := make([]float64, len(cands))
		bs := make([]float64, len(cands))
		for i, s := range cands {
			vs[i], bs[i] = vec(s), bm(s)
		}
		vn, bn := minMax(vs), minMax(bs)
		all := make([]cand, len(cands))
		for i, s := range cands {
			hy := VectorWeight*vn(vs[i]) + BM25Weight*bn(bs[i])
			if len(cs) > 0 {
				met, _ := quantityMatch(cs, x.entries[s].qty)
				hy += QuantityWeight * float64(met) / float64(len(cs))
			}
			all[i] = cand{score: hy, slot: s}
			scores[s] = Scores{Hybrid: hy, Vector: vs[i], BM25: bs[i]}
		}
		slices.SortFunc(all, r.compare)
		ranked = all[:min(k, len(all))]
	}

	hits := make([]Hit, 0, len(ranked))
	for _, c := range ranked {
		e := &x.entries[c.slot]
		hits = append(hits, Hit{
			ID:                 e.id,
			Score:              c.score,
			Scores:             scores[c.slot],
			MatchedTerms:       x.matchedTerms(terms, c.slot),
			MatchedConstraints: matchedConstraints(cs, e.qty),
		})
	}
	return hits
}

// parallelScanMin is the doc count from which the vector scan is split
// across CPUs.
const parallelScanMin = 16384

// topVector returns the best n eligible slots by cosine similarity, best
// first. Callers hold mu.
func (x *Index) topVector(qv []float32, f *filter, n int) []cand {
	total := len(x.entries)
	workers := scanWorkers(total)
	if workers <= 1 {
		return x.scanVector(qv, f, n, 0, total).sorted()
	}
	parts := make([]*topN, workers)
	done := make(chan struct{}, workers)
	chunk := (total + workers - 1) / workers
	for w := range workers {
		go func() {
			lo := w * chunk
			hi := min(lo+chunk, total)
			parts[w] = x.scanVector(qv, f, n, lo, hi)
			done <- struct{}{}
		}()
	}
	for range workers {
		<-done
	}
	h := newTopN(ranker{x.entries}, n)
	for _, p := range parts {
		for _, c := range p.heap {
			h.push(c)
		}
	}
	return h.sorted()
}

// minMax returns a function mapping vs's range onto [0, 1]; when all
// values are equal it maps to 1 if they are > 0, else 0.
func minMax(vs []float64) func(float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if len(vs) == 0 || hi == lo {
		flat := 0.0
		if hi > 0 {
			flat = 1
		}
		return func(float64) float64 { return flat }
	}
	return func(v float64) float64 { return (v - lo) / (hi - lo) }
}

// matchedTerms lists the query terms present in slot s's doc, in query
// order. Callers hold mu.
func (x *Index) matchedTerms(terms []string, s int32) []string {
	var out []string
	for _, t := range terms {
		if id, ok := x.termIDs[t]; ok {
			if _, found := slices.BinarySearch(x.lists[id].slots, s); found {
				out = append(out, t)
			}
		}
	}
	return out
}

// MatchedSpecs lists the keys (sorted) of specs whose value is a token of
// the query text (or whose value's tokens all are), or whose key's last
// segment is (e.g. "voltage" for "electricalProps.voltage"): a hit's
// Hit.MatchedSpecs, given the specs of its part. The index does not keep
// specs, so the caller passes those it reads with the part.
func (x *Index) MatchedSpecs(query string, specs map[string]string) []string {
	terms := x.queryTerms(query)
	if len(terms) == 0 || len(specs) == 0 {
		return nil
	}
	qset := make(map[string]bool, len(terms))
	for _, t := range terms {
		qset[t] = true
	}
	var out []string
	for key, val := range specs {
		if x.specMatches(qset, key, val) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

func (x *Index) specMatches(qset map[string]bool, key, val string) bool {
	v := strings.ToLower(strings.TrimSpace(val))
	if v != "" && qset[v] {
		return true
	}
	if allIn(qset, x.tokenize(val)) {
		return true
	}
	last := key[strings.LastIndexByte(key, '.')+1:]
	return allIn(qset, x.tokenize(splitCamel(last)))
}

// allIn reports whether toks is non-empty and every token is in set.
func allIn(set map[string]bool, toks []string) bool {
	if len(toks) == 0 {
		return false
	}
	for _, t := range toks {
		if !set[t] {
			return false
		}
	}
	return true
}

// splitCamel turns "tensileStrength" into "tensile Strength".
func splitCamel(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		if unicode.IsUpper(r) && prevLower {
			b.WriteByte(' ')
		}
		if r == '_' || r == '-' {
			r = ' '
		}
		b.WriteRune(r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	return b.String()
}

// scanWorkers is the number of goroutines scanning total vectors.
func scanWorkers(total int) int {
	if total < parallelScanMin {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), total/(parallelScanMin/2)))
}

// matchedConstraints lists the constraints some quantity of the doc meets.
func matchedConstraints(cs []Constraint, qs []quantity) []Constraint {
	var out []Constraint
	for _, c := range cs {
		if met, _ := quantityMatch([]Constraint{c}, qs); met == 1 {
			out = append(out, c)
		}
	}
	return out
}
