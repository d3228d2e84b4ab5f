// Package search is EECAR's in-memory hybrid part index: brute-force
// cosine similarity over a contiguous vector slab fused with BM25 over
// an inverted index, with the original system's weights (0.7 vector,
// 0.3 BM25, both min-max normalised over the candidates).
package search

import (
	"math"
	"runtime"
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
	// Specs are flattened specs, e.g. "electricalProps.voltage": "800",
	// "materialComposition.primary": "NCM811". Put reads the quantities
	// in them (voltage 800 V) and does not keep them; Index.MatchedSpecs
	// matches a query against the specs a caller reads with the part.
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
	// among the query tokens, or whose key's last segment does. Search
	// leaves it nil (the index does not keep specs): Index.MatchedSpecs
	// gives it from the specs of the hit's part.
	MatchedSpecs []string
	// MatchedConstraints are the query's numbers with units (and range
	// words) the doc meets, in query order.
	MatchedConstraints []Constraint
}

// entry is the index's record of one doc; its slot is its position in
// Index.entries and its row in the vector slab. The doc's terms are not
// kept per doc: they are its text tokenized again when its postings have
// to be found (replace, delete), tokenize being a function of the text.
type entry struct {
	id, text, seller    string
	category, condition string
	manufacturer, manuf string // manuf: lower-cased, trimmed manufacturer
	cathode             string
	price, soh          float64
	created             int64
	quantity            int
	hasVec, hasSOH      bool
	qty                 []quantity // numbers with units, from the text and the specs
}

// postingList is a term's postings, at the term's id in Index.lists: the
// slots of the docs holding the term, ascending, and the term's frequency
// in each (tfs[i] for slots[i]; tfOverflow means the frequency is in
// Index.bigTF). 5 bytes a posting, where a (slot, tf) pair and the doc's
// own record of the posting took 20.
type postingList struct {
	term  string
	slots []int32
	tfs   []uint8
}

// tfOverflow marks a term frequency of 255 or more, kept in Index.bigTF.
const tfOverflow = math.MaxUint8

// chunkRows is the number of vector rows in one chunk of the slab: the
// slab grows a chunk at a time, so it never holds more than one chunk of
// spare capacity and is never copied to grow.
const chunkRows = 1024

// Index is an in-memory hybrid (vector + BM25) part index. It is safe for
// concurrent use. Put of a new doc costs O(doc size); replacing a doc's
// text also moves its postings within the lists of the terms only one of
// the two texts has, and deleting a doc within each of its terms' lists
// (a memmove of up to 5 bytes a doc holding the term).
type Index struct {
	appendTokens func(dst []string, text string) []string

	mu      sync.RWMutex
	dim     int         // vector dimension, fixed by the first vector put
	chunks  [][]float32 // the slab: row s is chunks[s/chunkRows][(s%chunkRows)*dim:]
	entries []entry
	lens    []int32 // lens[i] = number of tokens of entries[i], dense for BM25
	slots   map[string]int
	// The vocabulary: every term in some doc has an id, its postings at
	// lists[id]; the ids of terms no doc has any more are reused.
	termIDs  map[string]int32
	lists    []postingList
	freeIDs  []int32
	bigTF    map[tfKey]int32 // frequencies of tfOverflow postings
	totalLen int

	scratches sync.Pool // of *scratch
	arenas    sync.Pool // of *[]termCount, PutAll's arenas of term counts
}

// tfKey names one posting: a term id and a slot.
type tfKey struct{ id, slot int32 }

// NewIndex returns an empty index that tokenizes text with appendTokens,
// which appends the tokens of text to dst and returns the extended slice
// (e.g. embed.Tokenize composed with Local.Canonical, as
// Local.AppendTokens does); nil means a simple lower-case
// letters-and-digits word splitter. appendTokens must give the same
// tokens for the same text every time (the index tokenizes a doc's text
// again to find its postings), and may be called concurrently.
func NewIndex(appendTokens func(dst []string, text string) []string) *Index {
	if appendTokens == nil {
		appendTokens = simpleTokenize
	}
	return &Index{
		appendTokens: appendTokens,
		slots:        make(map[string]int),
		termIDs:      make(map[string]int32),
		bigTF:        make(map[tfKey]int32),
	}
}

// simpleTokenize appends to dst the words of s, split on anything that
// is not a letter or digit, lower-cased.
func simpleTokenize(dst []string, s string) []string {
	return append(dst, strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})...)
}

// tokenize returns the tokens of text.
func (x *Index) tokenize(text string) []string { return x.appendTokens(nil, text) }

// scratch is the memory one goroutine reuses from doc to doc to analyse
// texts: no doc's analysis keeps any of it.
type scratch struct {
	toks []string
	seen map[string]int32 // a term's index in the doc's counts
	// specDims caches specDim by spec key: catalogues repeat their keys.
	specDims map[string]int8
}

// getScratch takes a scratch from the pool; putScratch returns it.
func (x *Index) getScratch() *scratch {
	if s, ok := x.scratches.Get().(*scratch); ok {
		return s
	}
	return newScratch()
}

func (x *Index) putScratch(s *scratch) {
	clear(s.toks) // they may alias a doc's text
	s.toks = s.toks[:0]
	x.scratches.Put(s)
}

func newScratch() *scratch {
	return &scratch{seen: make(map[string]int32), specDims: make(map[string]int8)}
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

// Get returns a copy of the doc stored under id, without Specs: the
// index parses quantities from them and does not keep them.
func (x *Index) Get(id string) (Doc, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.slots[id]
	if !ok {
		return Doc{}, false
	}
	e := &x.entries[s]
	d := Doc{
		ID: e.id, Category: e.category, Manufacturer: e.manufacturer, Price: e.price, Quantity: e.quantity,
		Text: e.text, SellerID: e.seller, Condition: e.condition, SOH: e.soh, HasSOH: e.hasSOH, Cathode: e.cathode,
	}
	if e.created != zeroCreated {
		d.CreatedAt = time.Unix(0, e.created).UTC()
	}
	if e.hasVec {
		d.Vector = append([]float32(nil), x.row(s)...)
	}
	return d, true
}

// zeroCreated is the created of a doc without CreatedAt: the zero
// time's UnixNano, outside int64's range, comes out as this constant.
var zeroCreated = time.Time{}.UnixNano()

// row returns slot s's vector. Callers hold mu.
func (x *Index) row(s int) []float32 {
	c := x.chunks[s/chunkRows]
	i := (s % chunkRows) * x.dim
	return c[i : i+x.dim : i+x.dim]
}

// addRow makes room for row n, the next slot. Callers hold mu.
func (x *Index) addRow(n int) {
	if n%chunkRows == 0 {
		x.chunks = append(x.chunks, make([]float32, chunkRows*x.dim))
	}
}

// Put adds d, or replaces the doc with the same ID. The vector is copied;
// a vector whose length differs from the index's dimension (fixed by the
// first non-empty vector put) is ignored, the doc then scoring 0 on
// vector similarity. Specs are read for quantities and not kept.
func (x *Index) Put(d Doc) {
	sc := x.getScratch()
	defer x.putScratch(sc)
	p, _ := x.prepare(d, sc, nil)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.putLocked(&p, d.Vector, sc)
}

// putAllBlock is the number of docs PutAll prepares before taking the
// lock to insert them: it bounds both the memory of prepared docs and
// how long a search waits for the lock.
const putAllBlock = 256

// PutAll puts docs as Put would one after another, in order (a later doc
// with an ID replaces an earlier one): the way to load a catalogue. Blocks
// of putAllBlock docs are tokenized and parsed over GOMAXPROCS goroutines
// while the previous block is inserted under the lock.
func (x *Index) PutAll(docs []Doc) {
	if len(docs) == 0 {
		return
	}
	workers := runtime.GOMAXPROCS(0)
	// A block's prepared docs, and each worker's arena their term counts
	// are in: two of them, one filled while the other is inserted.
	type block struct {
		docs   []Doc
		prep   []prepared
		arenas [][]termCount
	}
	ready := make(chan *block, 1)
	free := make(chan *block, 2)
	blocks := make([]*block, cap(free))
	for i := range blocks {
		blocks[i] = &block{prep: make([]prepared, putAllBlock), arenas: make([][]termCount, workers)}
		for w := range workers {
			if a, ok := x.arenas.Get().(*[]termCount); ok {
				blocks[i].arenas[w] = *a
			}
		}
		free <- blocks[i]
	}
	scratches := make([]*scratch, workers)
	for w := range scratches {
		scratches[w] = x.getScratch()
	}
	// The arenas and scratches serve the next PutAll: EECAR loads its
	// catalogue in many calls.
	defer func() {
		for _, b := range blocks {
			for _, a := range b.arenas {
				a = a[:0]
				x.arenas.Put(&a)
			}
		}
		for _, sc := range scratches {
			x.putScratch(sc)
		}
	}()
	go func() {
		defer close(ready)
		for lo := 0; lo < len(docs); lo += putAllBlock {
			b := <-free
			b.docs = docs[lo:min(lo+putAllBlock, len(docs))]
			b.prep = b.prep[:len(b.docs)]
			var wg sync.WaitGroup
			for w := range min(workers, len(b.docs)) {
				wg.Go(func() {
					sc, arena := scratches[w], b.arenas[w][:0]
					for i := w; i < len(b.docs); i += workers {
						b.prep[i], arena = x.prepare(b.docs[i], sc, arena)
					}
					b.arenas[w] = arena
				})
			}
			wg.Wait()
			ready <- b
		}
	}()
	sc := x.getScratch()
	defer x.putScratch(sc)
	for b := range ready {
		x.mu.Lock()
		for i := range b.prep {
			x.putLocked(&b.prep[i], b.docs[i].Vector, sc)
		}
		x.mu.Unlock()
		clear(b.prep)
		for _, a := range b.arenas {
			clear(a) // the terms may alias the docs' texts
		}
		b.docs, b.prep = nil, b.prep[:putAllBlock]
		free <- b
	}
}

// prepared is a doc ready to insert: its entry, token count and terms.
type prepared struct {
	e      entry
	length int
	counts []termCount
}

// prepare does the work of Put that needs no lock: tokenizing the text,
// counting its terms and parsing the quantities. The counts are appended
// to arena, returned extended, where they stay until inserted.
func (x *Index) prepare(d Doc, sc *scratch, arena []termCount) (prepared, []termCount) {
	sc.toks = x.appendTokens(sc.toks[:0], d.Text)
	start := len(arena)
	arena = appendTermCounts(arena, sc.toks, sc.seen)
	return prepared{
		e: entry{
			id: d.ID, text: d.Text, seller: d.SellerID, category: d.Category, condition: d.Condition,
			manufacturer: d.Manufacturer, manuf: strings.ToLower(strings.TrimSpace(d.Manufacturer)), cathode: d.Cathode,
			price: d.Price, soh: d.SOH, created: d.CreatedAt.UnixNano(), quantity: d.Quantity, hasSOH: d.HasSOH,
			qty: docQuantities(d.Text, d.Specs, sc.specDims),
		},
		length: len(sc.toks),
		counts: arena[start:len(arena):len(arena)],
	}, arena
}

// putLocked inserts p with vector vec; sc is scratch to find the
// postings of a text p replaces. Callers hold mu.
func (x *Index) putLocked(p *prepared, vec []float32, sc *scratch) {
	e := p.e
	if x.dim == 0 && len(vec) > 0 {
		x.dim = len(vec)
		for n := range len(x.entries) {
			x.addRow(n)
		}
	}
	e.hasVec = len(vec) > 0 && len(vec) == x.dim

	s, exists := x.slots[e.id]
	sameText := exists && x.entries[s].text == e.text
	if exists && !sameText {
		x.removeReplacedPostings(s, x.entries[s].text, p.counts, sc)
		x.totalLen -= int(x.lens[s])
	}
	if !exists {
		s = len(x.entries)
		if x.dim > 0 {
			x.addRow(s)
		}
		x.entries = append(x.entries, entry{})
		x.lens = append(x.lens, 0)
		x.slots[e.id] = s
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
	if !sameText {
		x.lens[s] = int32(p.length)
		x.totalLen += p.length
		x.addPostings(int32(s), p.counts)
	}
}

// termCount is a term of a doc and its frequency in the doc.
type termCount struct {
	term string
	tf   int32
}

// termCounts returns the distinct tokens of toks, in the order they first
// occur, with their frequencies.
func termCounts(toks []string) []termCount {
	return appendTermCounts(nil, toks, make(map[string]int32))
}

// appendTermCounts appends to counts the distinct tokens of toks, in the
// order they first occur, with their frequencies; seen is an empty map to
// use, left empty.
func appendTermCounts(counts []termCount, toks []string, seen map[string]int32) []termCount {
	for _, t := range toks {
		if i, ok := seen[t]; ok {
			counts[i].tf++
			continue
		}
		seen[t] = int32(len(counts))
		counts = append(counts, termCount{t, 1})
	}
	clear(seen)
	return counts
}

// addPostings records slot s's terms (counts) in the vocabulary and
// inserts s into their postings lists. Callers hold mu.
func (x *Index) addPostings(s int32, counts []termCount) {
	for _, c := range counts {
		id, ok := x.termIDs[c.term]
		if !ok {
			// A token may be a slice of the doc's text: the vocabulary
			// keeps its own copy, not the text.
			term := strings.Clone(c.term)
			if n := len(x.freeIDs); n > 0 {
				id = x.freeIDs[n-1]
				x.freeIDs = x.freeIDs[:n-1]
				x.lists[id] = postingList{term: term}
			} else {
				id = int32(len(x.lists))
				x.lists = append(x.lists, postingList{term: term})
			}
			x.termIDs[term] = id
		}
		x.insertPosting(id, s, c.tf)
	}
}

// insertPosting inserts (s, tf) into term id's list, keeping it sorted,
// or sets the frequency of s's posting when the list has one. Callers
// hold mu.
func (x *Index) insertPosting(id, s, tf int32) {
	pl := &x.lists[id]
	small := uint8(min(tf, tfOverflow))
	if found, was := pl.insert(s, small); found && was == tfOverflow && small != tfOverflow {
		delete(x.bigTF, tfKey{id, s})
	}
	if tf >= tfOverflow {
		x.bigTF[tfKey{id, s}] = tf
	}
}

// insert inserts slot s with stored frequency small, keeping the list
// sorted; a slot past the last (a new doc) is appended. A slot the list
// holds has its frequency set: found, and was the one it had.
func (pl *postingList) insert(s int32, small uint8) (found bool, was uint8) {
	if n := len(pl.slots); n == 0 || pl.slots[n-1] < s {
		pl.slots = append(pl.slots, s)
		pl.tfs = append(pl.tfs, small)
		return false, 0
	}
	i, found := slices.BinarySearch(pl.slots, s)
	if found {
		was, pl.tfs[i] = pl.tfs[i], small
		return true, was
	}
	pl.slots = slices.Insert(pl.slots, i, s)
	pl.tfs = slices.Insert(pl.tfs, i, small)
	return false, 0
}

// tf returns the frequency of posting i of term id's list.
func (x *Index) tf(id int32, pl *postingList, i int) int32 {
	if t := pl.tfs[i]; t != tfOverflow {
		return int32(t)
	}
	return x.bigTF[tfKey{id, pl.slots[i]}]
}

// removePosting removes slot s from term id's list; a term left in no
// doc leaves the vocabulary. Callers hold mu.
func (x *Index) removePosting(id, s int32) {
	pl := &x.lists[id]
	i, ok := slices.BinarySearch(pl.slots, s)
	if !ok {
		return
	}
	if pl.tfs[i] == tfOverflow {
		delete(x.bigTF, tfKey{id, s})
	}
	pl.slots = slices.Delete(pl.slots, i, i+1)
	pl.tfs = slices.Delete(pl.tfs, i, i+1)
	if len(pl.slots) == 0 {
		delete(x.termIDs, pl.term)
		*pl = postingList{}
		x.freeIDs = append(x.freeIDs, id)
	}
}

// movePosting moves term id's posting of slot from, the largest slot in
// the index and so the list's last, to slot to. Callers hold mu.
func (x *Index) movePosting(id, from, to int32) {
	pl := &x.lists[id]
	n := len(pl.slots) - 1
	if n < 0 || pl.slots[n] != from {
		return
	}
	small := pl.tfs[n]
	pl.slots, pl.tfs = pl.slots[:n], pl.tfs[:n]
	pl.insert(to, small)
	if small == tfOverflow {
		k := tfKey{id, from}
		x.bigTF[tfKey{id, to}] = x.bigTF[k]
		delete(x.bigTF, k)
	}
}

// removeReplacedPostings removes slot s from the lists of the terms of
// its old text that its new text's terms (counts) lack: the postings of
// the terms in both stay where they are, for addPostings to set their
// frequencies, rather than being moved out of their lists and back (a
// memmove of up to 5 bytes a doc for each, the common terms' lists being
// the longest). Callers hold mu.
func (x *Index) removeReplacedPostings(s int, oldText string, counts []termCount, sc *scratch) {
	for _, c := range counts {
		sc.seen[c.term] = 0
	}
	sc.toks = x.appendTokens(sc.toks[:0], oldText)
	for _, t := range sc.toks {
		if _, kept := sc.seen[t]; kept {
			continue
		}
		if id, ok := x.termIDs[t]; ok {
			x.removePosting(id, int32(s))
		}
	}
	clear(sc.seen)
}

// removeTextPostings removes slot s, whose text is text, from the lists
// of the text's terms, with sc as scratch. Callers hold mu.
func (x *Index) removeTextPostings(s int, text string, sc *scratch) {
	sc.toks = x.appendTokens(sc.toks[:0], text)
	for _, t := range sc.toks {
		if id, ok := x.termIDs[t]; ok {
			x.removePosting(id, int32(s))
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
	sc := x.getScratch()
	defer x.putScratch(sc)
	x.removeTextPostings(s, x.entries[s].text, sc)
	x.totalLen -= int(x.lens[s])
	delete(x.slots, id)
	last := len(x.entries) - 1
	if s != last {
		moved := &x.entries[last]
		sc.toks = x.appendTokens(sc.toks[:0], moved.text)
		for _, t := range sc.toks {
			if tid, ok := x.termIDs[t]; ok {
				x.movePosting(tid, int32(last), int32(s))
			}
		}
		x.entries[s] = *moved
		x.lens[s] = x.lens[last]
		x.slots[moved.id] = s
		if x.dim > 0 {
			copy(x.row(s), x.row(last))
		}
	}
	x.entries[last] = entry{}
	x.entries = x.entries[:last]
	x.lens = x.lens[:last]
	if x.dim > 0 && last%chunkRows == 0 {
		x.chunks[len(x.chunks)-1] = nil
		x.chunks = x.chunks[:len(x.chunks)-1]
	}
	if len(x.entries) == 0 {
		x.dim = 0
		x.chunks = nil
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
		if e.seller != seller {
			continue
		}
		r := row{e.created, e.id}
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
