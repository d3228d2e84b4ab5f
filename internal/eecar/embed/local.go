package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"unicode/utf8"
)

// DefaultLocalDimension is the dimension NewLocal uses when given dim <= 0.
const DefaultLocalDimension = 256

// Per-kind feature weights: whole words count most, word bigrams less,
// character n-grams least.
const (
	wordWeight   = 1.0
	bigramWeight = 0.5
	charWeight   = 0.25
)

// Local is a deterministic embedder that needs no model download: hashed
// features (word unigrams and bigrams, and character 3-grams within words
// — for Hangul, syllable bigrams/trigrams; Korean particles stripped from
// word ends before word features), sublinear TF weights (1+ln tf) with
// per-kind weights (words > bigrams > char n-grams), signed feature
// hashing (FNV-1a; sign from another hash bit) into Dimension() buckets,
// L2-normalised. Same input → same vector on every machine.
//
// Before hashing, every word goes through the bilingual glossary of
// EV-part terms (glossary.tsv, embedded; see Tokens and Canonical), so
// Korean and English queries meet. A Local is immutable after construction and safe for
// concurrent use.
type Local struct {
	dim      int
	glossary *glossary
	scratch  sync.Pool // of *tokenScratch
}

// NewLocal returns a Local embedder producing vectors of length dim
// (dim <= 0 → 256).
func NewLocal(dim int) *Local {
	if dim <= 0 {
		dim = DefaultLocalDimension
	}
	return &Local{dim: dim, glossary: loadGlossary()}
}

// Model returns the model name, e.g. "quarry-local-hash-v3-256".
func (l *Local) Model() string { return fmt.Sprintf("quarry-local-hash-v3-%d", l.dim) }

// Dimension returns the vector length.
func (l *Local) Dimension() int { return l.dim }

// Canonical maps a token through the glossary (identity when unknown).
func (l *Local) Canonical(tok string) string { return l.glossary.canonical(tok) }

// Tokens returns Tokenize(text) mapped through the glossary: a glossary
// phrase ("heat pump", "온보드 충전기") becomes its canonical token followed
// by its words, and every other token goes through Canonical. It is the
// tokenizer to give the search index so that BM25 and the vectors agree
// on words.
func (l *Local) Tokens(text string) []string {
	return l.AppendTokens(nil, text)
}

// AppendTokens appends Tokens(text) to dst and returns the extended
// slice: a caller tokenizing many texts reuses one slice. The tokens may
// share memory with text.
func (l *Local) AppendTokens(dst []string, text string) []string {
	s, _ := l.scratch.Get().(*tokenScratch)
	if s == nil {
		s = new(tokenScratch)
	}
	s.raw = appendTokens(s.raw[:0], text)
	s.mapped = l.glossary.appendApplied(s.mapped[:0], s.raw)
	dst = slices.Grow(dst, len(s.mapped))
	for _, t := range s.mapped {
		dst = append(dst, t.text)
	}
	// The tokens alias text: cleared so that a pooled scratch keeps no
	// text alive.
	clear(s.raw)
	clear(s.mapped)
	l.scratch.Put(s)
	return dst
}

// tokenScratch is AppendTokens' reusable memory: the text's tokens, and
// them mapped through the glossary.
type tokenScratch struct {
	raw, mapped []token
}

// Embed returns one L2-normalised vector per text. An empty text (or
// one without any word) yields the zero vector.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("local embed: %w", err)
			}
		}
		out[i] = l.vector(t)
	}
	return out, nil
}

// features accumulates weighted features in first-seen order so that
// the float sums are performed in the same order on every run.
type features struct {
	index map[string]int
	keys  []string
	kinds []float64
	tf    []int
}

func (f *features) add(key string, kindWeight float64) {
	if i, ok := f.index[key]; ok {
		f.tf[i]++
		return
	}
	f.index[key] = len(f.keys)
	f.keys = append(f.keys, key)
	f.kinds = append(f.kinds, kindWeight)
	f.tf = append(f.tf, 1)
}

// vector embeds one text.
func (l *Local) vector(text string) []float32 {
	f := features{index: make(map[string]int)}
	prev := ""
	for _, t := range l.glossary.apply(tokenize(text)) {
		c := t.text
		f.add("w\x00"+c, wordWeight)
		if !t.derived {
			if prev != "" {
				f.add("b\x00"+prev+"\x00"+c, bigramWeight)
			}
			prev = c
		}
		addCharGrams(&f, c)
	}
	acc := make([]float64, l.dim)
	for i, key := range f.keys {
		// Round the weight so that an ulp of difference in math.Log
		// between platforms cannot change the vector.
		w := math.Round(f.kinds[i]*(1+math.Log(float64(f.tf[i])))*1e6) / 1e6
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		sum := h.Sum64()
		bucket := int(sum % uint64(l.dim))
		if sum>>63 == 1 {
			w = -w
		}
		acc[bucket] += w
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	v := make([]float32, l.dim)
	if norm == 0 {
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// addCharGrams adds character 3-grams of a non-Hangul word (with '<' and
// '>' as boundary marks) or syllable bigrams and trigrams of a Hangul
// word.
func addCharGrams(f *features, w string) {
	r, _ := utf8.DecodeRuneInString(w)
	if isHangul(r) {
		rs := []rune(w)
		for n := 2; n <= 3; n++ {
			for i := 0; i+n <= len(rs); i++ {
				f.add("h\x00"+string(rs[i:i+n]), charWeight)
			}
		}
		return
	}
	rs := []rune("<" + w + ">")
	for i := 0; i+3 <= len(rs); i++ {
		f.add("c\x00"+string(rs[i:i+3]), charWeight)
	}
}
