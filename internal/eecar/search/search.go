// Package search is EECAR's in-memory hybrid part index: brute-force
// cosine similarity over a contiguous vector slab fused with BM25 over
// an inverted index, with the original system's weights (0.7 vector,
// 0.3 BM25, both min-max normalised over the candidates).
package search

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// BM25 parameters and hybrid weights of the original system.
const (
	K1           = 1.5
	B            = 0.75
	VectorWeight = 0.7
	BM25Weight   = 0.3
	// QuantityWeight is added to a hybrid score, times the share of the
	// query's numbers with units (ParseConstraints) the doc meets.
	QuantityWeight = 0.3
)

// Result-size limits for Query.TopK.
const (
	DefaultTopK = 10
	MaxTopK     = 100
	// MinCandidates is the smallest number of candidates taken from each
	// ranking; the candidate count is max(10×TopK, MinCandidates).
	MinCandidates = 100
)

// Doc is one part as the index sees it.
type Doc struct {
	// ID is the part ID.
	ID string
	// Category is one of: battery, motor, inverter, charger, electronics,
	// body-chassis-frame, body-panel, body-door, body-window, interior,
	// other.
	Category string
	// Manufacturer is the maker, e.g. "Hyundai".
	Manufacturer string
	// Price is the asking price.
	Price float64
	// Quantity is the number of units available.
	Quantity int
	// Text is everything searchable: name, description, model, year,
	// condition, materials, use cases…
	Text string
	// Specs are flattened specs for reasons, e.g.
	// "electricalProps.voltage": "800",
	// "materialComposition.primary": "NCM811".
	Specs map[string]string
	// Vector is the L2-normalised embedding.
	Vector []float32
	// CreatedAt breaks score ties (newer first).
	CreatedAt time.Time
	// SellerID is the selling company (BySeller lists its parts).
	SellerID string
	// Condition is new, used or refurbished.
	Condition string
	// SOH is a battery's stated state of health in percent (HasSOH);
	// Cathode its cathode chemistry ("NCM811"), "" when unknown.
	SOH     float64
	HasSOH  bool
	Cathode string
}

// Filters restrict a search; zero values mean "any".
type Filters struct {
	// Category must equal the doc's category (case-insensitive).
	Category string
	// MaxPrice, when set, excludes docs priced above it.
	MaxPrice *float64
	// MinQuantity, when set, excludes docs with fewer units.
	MinQuantity *int
	// Manufacturer must equal the doc's manufacturer (case-insensitive).
	Manufacturer string
	// MinPrice, when set, excludes docs priced below it.
	MinPrice *float64
	// Condition must equal the doc's condition (new, used, refurbished).
	Condition string
	// MinSOH, when set, keeps only docs with a stated SOH of at least it.
	MinSOH *float64
	// Cathode must prefix the doc's cathode, ignoring case and spaces
	// ("NCM" matches "NCM811").
	Cathode string
}

// Mode selects how hits are ranked.
type Mode int

const (
	// Hybrid ranks by 0.7·vector + 0.3·bm25 over min-max normalised
	// candidate scores.
	Hybrid Mode = iota
	// VectorOnly ranks by cosine similarity alone.
	VectorOnly
	// BM25Only ranks by BM25 alone (docs without any query word are not
	// returned).
	BM25Only
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Hybrid:
		return "hybrid"
	case VectorOnly:
		return "vector"
	case BM25Only:
		return "bm25"
	}
	return "unknown"
}

// Query is one search request.
type Query struct {
	// Text is tokenized for BM25 and for matched terms/specs.
	Text string
	// Vector is the L2-normalised query embedding; nil (or a dimension
	// other than the index's) gives every doc a vector score of 0.
	Vector []float32
	// Filters are applied before candidates are selected.
	Filters Filters
	// TopK is the number of hits wanted: default 10, max 100.
	TopK int
	// Mode selects the ranking.
	Mode Mode
}

// Scores are the per-hit component scores. Vector is the raw cosine
// similarity and BM25 the raw BM25 score; Hybrid is the fused score
// 0.7·norm(Vector) + 0.3·norm(BM25), with the min-max normalisation
// taken over the candidate set (set only in Hybrid mode).
type Scores struct {
	Hybrid, Vector, BM25 float64
}

// Hit is one search result.
type Hit struct {
	// ID is the doc's ID.
	ID string
	// Score is the ranking score: Scores.Hybrid, Scores.Vector or
	// Scores.BM25 depending on the mode.
	Score float64
	// Scores holds the component scores.
	Scores Scores
	// MatchedTerms are the query tokens present in the doc's text, in
	// query order.
	MatchedTerms []string
	// MatchedSpecs are the doc's spec keys (sorted) whose value appears
	// among the query tokens, or whose key's last segment does.
	MatchedSpecs []string
	// MatchedConstraints are the query's numbers with units (and range
	// words) the doc meets, in query order.
	MatchedConstraints []Constraint
}

// entry is the index's record of one doc; its slot is its position in
// Index.entries and in the vector slab.
type entry struct {
	doc     Doc // Vector is nil; the vector lives in the slab
	hasVec  bool
	created int64
	manuf   string     // lower-cased, trimmed Manufacturer
	length  int        // number of tokens
	terms   []docTerm  // the doc's distinct terms, sorted by id
	qty     []quantity // numbers with units, from the text and the specs
}

// docTerm is one of a doc's distinct terms (by its id in the index's
// vocabulary), its frequency in the doc and the position of its posting
// in that term's postings list: 12 bytes, where a map per doc took 3.6 KB
// of a part's 7.5 KB (BenchmarkIndexMemory).
type docTerm struct {
	id  int32
	tf  int32
	pos int32
}

// findTerm returns the index of term id in terms (sorted by id), or -1.
func findTerm(terms []docTerm, id int32) int {
	i, ok := slices.BinarySearchFunc(terms, id, func(d docTerm, id int32) int { return cmp.Compare(d.id, id) })
	if !ok {
		return -1
	}
	return i
}

// postingList is a term's postings, at the term's id in Index.lists.
type postingList struct {
	term string
	list []posting
}

// posting is one (doc slot, term frequency) pair.
type posting struct {
	slot int32
	tf   int32
}

// Index is an in-memory hybrid (vector + BM25) part index. It is safe for
// concurrent use; Put and Delete cost O(doc size).
type Index struct {
	tokenize func(string) []string

	mu      sync.RWMutex
	dim     int       // vector dimension, fixed by the first vector put
	slab    []float32 // dim × len(entries), row i is entries[i]'s vector
	entries []entry
	lens    []int32 // lens[i] = entries[i].length, dense for BM25
	slots   map[string]int
	// The vocabulary: every term in some doc has an id, its postings at
	// lists[id]; the ids of terms no doc has any more are reused.
	termIDs  map[string]int32
	lists    []postingList
	freeIDs  []int32
	totalLen int
}

// NewIndex returns an empty index that tokenizes text with tokenize (e.g.
// embed.Tokenize composed with Local.Canonical, as Local.Tokens does); nil
// means a simple lower-case letters-and-digits word splitter.
func NewIndex(tokenize func(string) []string) *Index {
	if tokenize == nil {
		tokenize = simpleTokenize
	}
	return &Index{
		tokenize: tokenize,
		slots:    make(map[string]int),
		termIDs:  make(map[string]int32),
	}
}

// simpleTokenize splits on anything that is not a letter or digit and
// lower-cases.
func simpleTokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// IDs returns the ids of the docs, in no order.
func (x *Index) IDs() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ids := make([]string, 0, len(x.slots))
	for id := range x.slots {
		ids = append(ids, id)
	}
	return ids
}

// Len returns the number of docs.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries)
}

// Dimension returns the vector dimension fixed by the first vector put
// (0 while no doc has a vector).
func (x *Index) Dimension() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// Get returns a copy of the doc stored under id.
func (x *Index) Get(id string) (Doc, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.slots[id]
	if !ok {
		return Doc{}, false
	}
	return x.docAt(s), true
}

// docAt copies the doc in slot s, vector included. Callers hold mu.
func (x *Index) docAt(s int) Doc {
	e := &x.entries[s]
	d := e.doc
	d.Specs = maps.Clone(e.doc.Specs)
	if e.hasVec {
		d.Vector = append([]float32(nil), x.row(s)...)
	}
	return d
}

// row returns slot s's vector. Callers hold mu.
func (x *Index) row(s int) []float32 {
	return x.slab[s*x.dim : (s+1)*x.dim : (s+1)*x.dim]
}

// Put adds d, or replaces the doc with the same ID. The vector is copied;
// a vector whose length differs from the index's dimension (fixed by the
// first non-empty vector put) is ignored, the doc then scoring 0 on
// vector similarity.
func (x *Index) Put(d Doc) {
	toks := x.tokenize(d.Text)
	sorted := slices.Clone(toks)
	slices.Sort(sorted)
	var counts []termCount
	for i, t := range sorted {
		if i > 0 && t == sorted[i-1] {
			counts[len(counts)-1].tf++
			continue
		}
		counts = append(counts, termCount{t, 1})
	}
	vec := d.Vector
	d.Vector = nil
	d.Specs = maps.Clone(d.Specs)
	e := entry{
		doc:     d,
		created: d.CreatedAt.UnixNano(),
		manuf:   strings.ToLower(strings.TrimSpace(d.Manufacturer)),
		length:  len(toks),
		qty:     docQuantities(d.Text, d.Specs),
	}

	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dim == 0 && len(vec) > 0 {
		x.dim = len(vec)
		x.slab = make([]float32, x.dim*len(x.entries), x.dim*(len(x.entries)+1))
	}
	e.hasVec = len(vec) > 0 && len(vec) == x.dim

	s, exists := x.slots[d.ID]
	if exists {
		x.removePostings(s)
		x.totalLen -= x.entries[s].length
	} else {
		s = len(x.entries)
		x.entries = append(x.entries, entry{})
		x.lens = append(x.lens, 0)
		x.slots[d.ID] = s
		if x.dim > 0 {
			x.slab = append(x.slab, make([]float32, x.dim)...)
		}
	}
	if x.dim > 0 {
		r := x.row(s)
		if e.hasVec {
			copy(r, vec)
		} else {
			clear(r)
		}
	}
	x.entries[s] = e
	x.lens[s] = int32(e.length)
	x.totalLen += e.length
	x.addPostings(s, counts)
}

// termCount is a term of a doc being put and its frequency in the doc.
type termCount struct {
	term string
	tf   int32
}

// addPostings records slot s's terms (counts) in the vocabulary and
// appends them to the postings lists. Callers hold mu.
func (x *Index) addPostings(s int, counts []termCount) {
	e := &x.entries[s]
	e.terms = make([]docTerm, len(counts))
	for i, c := range counts {
		id, ok := x.termIDs[c.term]
		if !ok {
			if n := len(x.freeIDs); n > 0 {
				id = x.freeIDs[n-1]
				x.freeIDs = x.freeIDs[:n-1]
				x.lists[id] = postingList{term: c.term}
			} else {
				id = int32(len(x.lists))
				x.lists = append(x.lists, postingList{term: c.term})
			}
			x.termIDs[c.term] = id
		}
		pl := &x.lists[id]
		e.terms[i] = docTerm{id: id, tf: c.tf, pos: int32(len(pl.list))}
		pl.list = append(pl.list, posting{slot: int32(s), tf: c.tf})
	}
	slices.SortFunc(e.terms, func(a, b docTerm) int { return cmp.Compare(a.id, b.id) })
}

// removePostings removes slot s's terms from the postings lists by
// swap-delete; a term left in no doc leaves the vocabulary. Callers hold
// mu.
func (x *Index) removePostings(s int) {
	for _, r := range x.entries[s].terms {
		pl := &x.lists[r.id]
		last := len(pl.list) - 1
		if int(r.pos) != last {
			moved := pl.list[last]
			pl.list[r.pos] = moved
			me := &x.entries[moved.slot]
			me.terms[findTerm(me.terms, r.id)].pos = r.pos
		}
		if last == 0 {
			delete(x.termIDs, pl.term)
			*pl = postingList{}
			x.freeIDs = append(x.freeIDs, r.id)
		} else {
			pl.list = pl.list[:last]
		}
	}
}

// Delete removes the doc with the given ID (no-op when absent). The last
// doc moves into the freed slot so the vector slab stays contiguous.
func (x *Index) Delete(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.slots[id]
	if !ok {
		return
	}
	x.removePostings(s)
	x.totalLen -= x.entries[s].length
	delete(x.slots, id)
	last := len(x.entries) - 1
	if s != last {
		x.entries[s] = x.entries[last]
		x.lens[s] = x.lens[last]
		x.slots[x.entries[s].doc.ID] = s
		if x.dim > 0 {
			copy(x.row(s), x.row(last))
		}
		for _, r := range x.entries[s].terms {
			x.lists[r.id].list[r.pos].slot = int32(s)
		}
	}
	x.entries[last] = entry{}
	x.entries = x.entries[:last]
	x.lens = x.lens[:last]
	if x.dim > 0 {
		x.slab = x.slab[:last*x.dim]
	}
	if len(x.entries) == 0 {
		x.dim = 0
		x.slab = nil
	}
}

// BySeller returns the ids of a seller's docs, newest first, limit of
// them after the cursor after ("" the first page), and the cursor of the
// next page ("" on the last). It walks the whole index: microseconds for
// ten thousand docs.
func (x *Index) BySeller(seller, after string, limit int) ([]string, string) {
	type row struct {
		created int64
		id      string
	}
	var afterRow *row
	if c, id, ok := strings.Cut(after, "_"); ok {
		if n, err := strconv.ParseInt(c, 10, 64); err == nil {
			afterRow = &row{n, id}
		}
	}
	newer := func(a, b row) bool { return a.created > b.created || a.created == b.created && a.id < b.id }
	x.mu.RLock()
	var rows []row
	for i := range x.entries {
		e := &x.entries[i]
		if e.doc.SellerID != seller {
			continue
		}
		r := row{e.created, e.doc.ID}
		if afterRow != nil && !newer(*afterRow, r) {
			continue
		}
		rows = append(rows, r)
	}
	x.mu.RUnlock()
	slices.SortFunc(rows, func(a, b row) int {
		if newer(a, b) {
			return -1
		}
		if newer(b, a) {
			return 1
		}
		return 0
	})
	next := ""
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		next = strconv.FormatInt(last.created, 10) + "_" + last.id
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids, next
}
