package search

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/eecar/embed"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// unit returns a normalised copy of v.
func unit(v ...float32) []float32 {
	out := slices.Clone(v)
	embed.Normalize(out)
	return out
}

// checkInvariants verifies the index's internal bookkeeping: every doc's
// terms (its text tokenized) have exactly its postings, lists are sorted,
// and the vocabulary, lengths and slab agree.
func checkInvariants(t *testing.T, x *Index) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.slots) != len(x.entries) || len(x.lens) != len(x.entries) {
		t.Fatalf("slots %d, lens %d, entries %d", len(x.slots), len(x.lens), len(x.entries))
	}
	if wantChunks := (len(x.entries) + chunkRows - 1) / chunkRows; x.dim > 0 && len(x.chunks) != wantChunks {
		t.Fatalf("%d slab chunks, want %d", len(x.chunks), wantChunks)
	}
	total, nPost := 0, 0
	for s, e := range x.entries {
		if x.slots[e.id] != s {
			t.Fatalf("slot of %q = %d, want %d", e.id, x.slots[e.id], s)
		}
		toks := x.tokenize(e.text)
		if int(x.lens[s]) != len(toks) {
			t.Fatalf("length of %q = %d, want %d", e.id, x.lens[s], len(toks))
		}
		total += len(toks)
		for _, c := range termCounts(toks) {
			id, ok := x.termIDs[c.term]
			if !ok {
				t.Fatalf("term %q of %q not in the vocabulary", c.term, e.id)
			}
			pl := &x.lists[id]
			i, found := slices.BinarySearch(pl.slots, int32(s))
			if !found || x.tf(id, pl, i) != c.tf {
				t.Fatalf("posting of %q in %q broken", c.term, e.id)
			}
			nPost++
		}
	}
	for term, id := range x.termIDs {
		pl := x.lists[id]
		if pl.term != term || len(pl.slots) == 0 || len(pl.tfs) != len(pl.slots) {
			t.Fatalf("postings of %q: term %q, %d postings, %d frequencies", term, pl.term, len(pl.slots), len(pl.tfs))
		}
		if !slices.IsSorted(pl.slots) || len(slices.Compact(slices.Clone(pl.slots))) != len(pl.slots) {
			t.Fatalf("postings of %q not strictly ascending: %v", term, pl.slots)
		}
		nPost -= len(pl.slots)
	}
	if len(x.termIDs)+len(x.freeIDs) != len(x.lists) {
		t.Fatalf("%d terms and %d free ids for %d lists", len(x.termIDs), len(x.freeIDs), len(x.lists))
	}
	if nPost != 0 {
		t.Fatalf("postings hold %d extra entries", -nPost)
	}
	for k := range x.bigTF {
		pl := &x.lists[k.id]
		if i, found := slices.BinarySearch(pl.slots, k.slot); !found || pl.tfs[i] != tfOverflow {
			t.Fatalf("frequency %v kept for no overflowing posting", k)
		}
	}
	if total != x.totalLen {
		t.Fatalf("totalLen %d, want %d", x.totalLen, total)
	}
}

func TestBM25ExactValue(t *testing.T) {
	x := NewIndex(nil)
	x.Put(Doc{ID: "d1", Text: "Red battery pack", CreatedAt: t0})
	x.Put(Doc{ID: "d2", Text: "blue BATTERY", CreatedAt: t0})
	x.Put(Doc{ID: "d3", Text: "green motor, motor", CreatedAt: t0})
	// N = 3, avgdl = 8/3, k1 = 1.5, b = 0.75.
	// "battery": df = 2, idf = ln(1 + 1.5/2.5) = ln 1.6.
	//   d1: tf 1, dl 3: 1·2.5 / (1 + 1.5·(0.25 + 0.75·3/(8/3))) = 2.5/2.640625
	//   d2: tf 1, dl 2: 2.5 / (1 + 1.5·(0.25 + 0.75·2/(8/3))) = 2.5/2.21875
	// "motor": df = 1, idf = ln(1 + 2.5/1.5) = ln(8/3).
	//   d3: tf 2, dl 3: 2·2.5 / (2 + 1.640625) = 5/3.640625
	tests := []struct {
		query string
		want  map[string]float64
		order []string
	}{
		{"battery", map[string]float64{"d1": math.Log(1.6) * 2.5 / 2.640625, "d2": math.Log(1.6) * 2.5 / 2.21875}, []string{"d2", "d1"}},
		{"motor", map[string]float64{"d3": math.Log(8.0/3) * 5 / 3.640625}, []string{"d3"}},
		{"battery battery motor", map[string]float64{
			"d3": math.Log(8.0/3) * 5 / 3.640625,
			"d2": math.Log(1.6) * 2.5 / 2.21875,
			"d1": math.Log(1.6) * 2.5 / 2.640625,
		}, []string{"d3", "d2", "d1"}},
		{"window", map[string]float64{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := x.Search(Query{Text: tt.query, Mode: BM25Only})
			if got := ids(hits); !slices.Equal(got, tt.order) {
				t.Fatalf("order = %v, want %v", got, tt.order)
			}
			for _, h := range hits {
				if !near(h.Score, tt.want[h.ID]) || !near(h.Scores.BM25, tt.want[h.ID]) {
					t.Errorf("%s: bm25 = %v, want %v", h.ID, h.Score, tt.want[h.ID])
				}
			}
		})
	}
}

func TestHybridNormalisation(t *testing.T) {
	x := NewIndex(nil)
	x.Put(Doc{ID: "a", Text: "battery", Vector: unit(1, 0), CreatedAt: t0})
	x.Put(Doc{ID: "b", Text: "battery battery module pack", Vector: unit(0.6, 0.8), CreatedAt: t0})
	x.Put(Doc{ID: "c", Text: "door", Vector: unit(0, 1), CreatedAt: t0})
	x.Put(Doc{ID: "d", Text: "window", CreatedAt: t0}) // no vector: cosine 0
	hits := x.Search(Query{Text: "battery", Vector: unit(1, 0)})
	if len(hits) != 4 {
		t.Fatalf("got %d hits, want 4", len(hits))
	}
	byID := map[string]Hit{}
	var bmMax float64
	for _, h := range hits {
		byID[h.ID] = h
		bmMax = max(bmMax, h.Scores.BM25)
	}
	wantCos := map[string]float64{"a": 1, "b": 0.6, "c": 0, "d": 0}
	for id, h := range byID {
		if math.Abs(h.Scores.Vector-wantCos[id]) > 1e-6 {
			t.Errorf("%s: vector %v, want %v", id, h.Scores.Vector, wantCos[id])
		}
		// vector min 0, max 1 → vn = cos; bm25 min 0 → bn = bm/bmMax.
		want := 0.7*h.Scores.Vector + 0.3*h.Scores.BM25/bmMax
		if math.Abs(h.Scores.Hybrid-want) > 1e-6 || h.Score != h.Scores.Hybrid {
			t.Errorf("%s: hybrid %v (score %v), want %v", id, h.Scores.Hybrid, h.Score, want)
		}
	}
	if byID["c"].Scores.Hybrid != 0 || byID["d"].Scores.Hybrid != 0 {
		t.Errorf("docs at both minimums should score 0: c=%v d=%v", byID["c"].Scores.Hybrid, byID["d"].Scores.Hybrid)
	}
	// d is the newer of the two zero-score docs only if CreatedAt says so;
	// equal times fall back to ID order.
	if got := ids(hits); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("order = %v", got)
	}

	t.Run("all equal", func(t *testing.T) {
		x := NewIndex(nil)
		x.Put(Doc{ID: "p", Text: "motor", Vector: unit(1, 0), CreatedAt: t0})
		x.Put(Doc{ID: "q", Text: "motor", Vector: unit(1, 0), CreatedAt: t0.Add(time.Hour)})
		hits := x.Search(Query{Text: "motor", Vector: unit(1, 0)})
		// Both components equal and > 0 → each normalises to 1.
		for _, h := range hits {
			if !near(h.Score, 1) {
				t.Errorf("%s: hybrid %v, want 1", h.ID, h.Score)
			}
		}
		if got := ids(hits); !slices.Equal(got, []string{"q", "p"}) {
			t.Errorf("tie order = %v, want newer first", got)
		}
		hits = x.Search(Query{Text: "door", Vector: unit(0, 1)})
		for _, h := range hits {
			if h.Score != 0 {
				t.Errorf("%s: all-zero components should give 0, got %v", h.ID, h.Score)
			}
		}
	})
}

func TestModesAndTopK(t *testing.T) {
	x := NewIndex(nil)
	for i := range 150 {
		x.Put(Doc{
			ID:        fmt.Sprintf("p%03d", i),
			Text:      strings.Repeat("filler ", i%7) + map[bool]string{true: "inverter", false: "motor"}[i%10 == 0],
			Vector:    unit(float32(i), 150-float32(i)),
			CreatedAt: t0.Add(time.Duration(i) * time.Minute),
		})
	}
	tests := []struct {
		name    string
		q       Query
		wantLen int
		first   string
	}{
		{"default topK", Query{Vector: unit(1, 0)}, 10, "p149"},
		{"max topK", Query{Vector: unit(1, 0), TopK: 1000}, 100, "p149"},
		{"vector only", Query{Vector: unit(0, 1), Mode: VectorOnly, TopK: 3}, 3, "p000"},
		{"bm25 only skips non-matching", Query{Text: "inverter", Mode: BM25Only, TopK: 50}, 15, ""},
		{"hybrid text dominates ties", Query{Text: "inverter", TopK: 5}, 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := x.Search(tt.q)
			if len(hits) != tt.wantLen {
				t.Fatalf("len = %d, want %d", len(hits), tt.wantLen)
			}
			if tt.first != "" && hits[0].ID != tt.first {
				t.Errorf("first = %s, want %s", hits[0].ID, tt.first)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Fatalf("not sorted at %d: %v > %v", i, hits[i].Score, hits[i-1].Score)
				}
			}
			if tt.q.Mode == BM25Only || tt.q.Text == "inverter" {
				for _, h := range hits {
					if !slices.Equal(h.MatchedTerms, []string{"inverter"}) {
						t.Errorf("%s: matched %v", h.ID, h.MatchedTerms)
					}
				}
			}
		})
	}
}

func TestFilters(t *testing.T) {
	x := NewIndex(nil)
	docs := []Doc{
		{ID: "bat-cheap", Category: "battery", Manufacturer: "Hyundai", Price: 1000, Quantity: 5, Text: "battery pack"},
		{ID: "bat-dear", Category: "battery", Manufacturer: "Tesla", Price: 9000, Quantity: 50, Text: "battery module"},
		{ID: "inv", Category: "inverter", Manufacturer: "hyundai ", Price: 500, Quantity: 1, Text: "inverter 800v"},
		{ID: "door", Category: "body-door", Manufacturer: "Kia", Price: 200, Quantity: 20, Text: "front door"},
	}
	for i, d := range docs {
		d.Vector = unit(1, float32(i))
		d.CreatedAt = t0.Add(time.Duration(i) * time.Hour)
		x.Put(d)
	}
	price := func(p float64) *float64 { return &p }
	qty := func(q int) *int { return &q }
	tests := []struct {
		name string
		f    Filters
		want []string
	}{
		{"none", Filters{}, []string{"bat-cheap", "bat-dear", "door", "inv"}},
		{"category", Filters{Category: "battery"}, []string{"bat-cheap", "bat-dear"}},
		{"category case", Filters{Category: "Body-Door"}, []string{"door"}},
		{"max price", Filters{MaxPrice: price(1000)}, []string{"bat-cheap", "door", "inv"}},
		{"min quantity", Filters{MinQuantity: qty(20)}, []string{"bat-dear", "door"}},
		{"manufacturer case-insensitive", Filters{Manufacturer: "HYUNDAI"}, []string{"bat-cheap", "inv"}},
		{"combined", Filters{Category: "battery", MaxPrice: price(5000), MinQuantity: qty(2), Manufacturer: "hyundai"}, []string{"bat-cheap"}},
		{"nothing passes", Filters{Category: "motor"}, []string{}},
	}
	for _, tt := range tests {
		for _, mode := range []Mode{Hybrid, VectorOnly, BM25Only} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				text := "battery pack module inverter front door"
				hits := x.Search(Query{Text: text, Vector: unit(1, 1), Filters: tt.f, Mode: mode, TopK: 2})
				got := ids(hits)
				if len(got) != min(2, len(tt.want)) {
					t.Fatalf("got %v, want 2 of %v", got, tt.want)
				}
				for _, id := range got {
					if !slices.Contains(tt.want, id) {
						t.Errorf("hit %s does not pass the filter (want one of %v)", id, tt.want)
					}
				}
			})
		}
	}
}

func TestPutReplaces(t *testing.T) {
	x := NewIndex(nil)
	x.Put(Doc{ID: "x", Text: "battery pack", Vector: unit(1, 0), Specs: map[string]string{"a": "1"}})
	x.Put(Doc{ID: "y", Text: "battery cell", Vector: unit(0, 1)})
	x.Put(Doc{ID: "x", Text: "electric motor", Vector: unit(0, 1), Category: "motor"})
	checkInvariants(t, x)
	if x.Len() != 2 {
		t.Fatalf("Len = %d, want 2", x.Len())
	}
	if _, ok := x.termIDs["pack"]; ok {
		t.Error(`old token "pack" still in postings`)
	}
	if got := len(x.lists[x.termIDs["battery"]].slots); got != 1 {
		t.Errorf(`"battery" postings = %d, want 1`, got)
	}
	if got := ids(x.Search(Query{Text: "battery", Mode: BM25Only})); !slices.Equal(got, []string{"y"}) {
		t.Errorf("battery hits = %v, want [y]", got)
	}
	if got := ids(x.Search(Query{Text: "motor", Mode: BM25Only})); !slices.Equal(got, []string{"x"}) {
		t.Errorf("motor hits = %v, want [x]", got)
	}
	d, ok := x.Get("x")
	if !ok || d.Category != "motor" || d.Specs != nil || !slices.Equal(d.Vector, unit(0, 1)) || !d.CreatedAt.IsZero() {
		t.Errorf("Get(x) = %+v, %v", d, ok)
	}
	x.Put(Doc{ID: "t", Text: "dated", CreatedAt: t0.In(time.FixedZone("KST", 9*3600))})
	if d, _ := x.Get("t"); !d.CreatedAt.Equal(t0) {
		t.Errorf("Get(t).CreatedAt = %v, want %v", d.CreatedAt, t0)
	}
	// The stored vector is a copy; mutating the caller's slice or the
	// returned doc does not change the index.
	v := unit(1, 0)
	x.Put(Doc{ID: "z", Vector: v})
	v[0] = 42
	d, _ = x.Get("z")
	d.Vector[1] = 42
	if d2, _ := x.Get("z"); d2.Vector[0] != 1 || d2.Vector[1] != 0 {
		t.Errorf("stored vector aliased: %v", d2.Vector)
	}
	// Wrong-dimension vectors are ignored.
	x.Put(Doc{ID: "w", Text: "odd", Vector: []float32{1, 0, 0}})
	if d, _ := x.Get("w"); d.Vector != nil {
		t.Errorf("wrong-dimension vector kept: %v", d.Vector)
	}
	checkInvariants(t, x)
}

func TestDelete(t *testing.T) {
	x := NewIndex(nil)
	for i, text := range []string{"alpha battery", "beta motor", "gamma door", "delta battery door"} {
		x.Put(Doc{ID: fmt.Sprint(i), Text: text, Vector: unit(float32(i+1), 1), CreatedAt: t0})
	}
	x.Delete("1")
	x.Delete("nope")
	checkInvariants(t, x)
	if x.Len() != 3 {
		t.Fatalf("Len = %d, want 3", x.Len())
	}
	if _, ok := x.Get("1"); ok {
		t.Error("deleted doc still returned by Get")
	}
	if _, ok := x.termIDs["beta"]; ok {
		t.Error(`"beta" still in postings`)
	}
	// Doc "3" moved into slot 1: its vector and postings must follow.
	d, ok := x.Get("3")
	if !ok || !slices.Equal(d.Vector, unit(4, 1)) {
		t.Fatalf("moved doc = %+v", d)
	}
	hits := x.Search(Query{Text: "door", Vector: unit(4, 1), Mode: VectorOnly, TopK: 1})
	if len(hits) != 1 || hits[0].ID != "3" || math.Abs(hits[0].Score-1) > 1e-6 {
		t.Errorf("hits = %+v", hits)
	}
	if got := ids(x.Search(Query{Text: "battery", Mode: BM25Only})); len(got) != 2 {
		t.Errorf("battery hits after delete = %v", got)
	}
	for _, id := range []string{"0", "2", "3"} {
		x.Delete(id)
	}
	checkInvariants(t, x)
	if x.Len() != 0 || x.Dimension() != 0 || len(x.termIDs) != 0 {
		t.Errorf("empty index keeps state: len %d dim %d postings %d", x.Len(), x.Dimension(), len(x.termIDs))
	}
	if hits := x.Search(Query{Text: "battery"}); hits == nil || len(hits) != 0 {
		t.Errorf("empty search = %#v", hits)
	}
}

func TestRandomOpsKeepInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"battery", "motor", "door", "panel", "800v", "ncm811", "kia", "tesla"}
	x := NewIndex(nil)
	for i := range 2000 {
		id := fmt.Sprint(r.IntN(60))
		if r.IntN(3) == 0 {
			x.Delete(id)
			continue
		}
		var words []string
		for range r.IntN(6) {
			words = append(words, vocab[r.IntN(len(vocab))])
		}
		var vec []float32
		if r.IntN(4) != 0 {
			vec = unit(r.Float32()+0.01, r.Float32(), r.Float32())
		}
		x.Put(Doc{ID: id, Text: strings.Join(words, " "), Vector: vec, CreatedAt: t0.Add(time.Duration(i))})
		if i%100 == 0 {
			checkInvariants(t, x)
		}
	}
	checkInvariants(t, x)
}

func TestMatchedSpecsAndReason(t *testing.T) {
	l := embed.NewLocal(0)
	x := NewIndex(l.AppendTokens)
	d := Doc{
		ID:           "inv-1",
		Category:     "inverter",
		Manufacturer: "Hyundai",
		Text:         "Hyundai Ioniq 5 800V SiC inverter, used",
		Specs: map[string]string{
			"electricalProps.voltage":     "800",
			"electricalProps.power":       "160",
			"materialComposition.primary": "SiC",
			"weight":                      "9.5",
		},
		CreatedAt: t0,
	}
	x.Put(d)
	tests := []struct {
		name      string
		query     string
		wantSpecs []string
		wantTerms []string
		reason    []string
	}{
		{"value and words", "800V SiC inverter", []string{"electricalProps.voltage", "materialComposition.primary"},
			[]string{"800v", "800", "v", "sic", "inverter"},
			[]string{"voltage 800", "primary material SiC", "words: 800v, sic, inverter"}},
		{"key name in korean", "현대 인버터 출력", []string{"electricalProps.power"},
			[]string{"hyundai", "inverter"},
			[]string{"power 160", "words: hyundai, inverter"}},
		{"nothing", "door", nil, nil, []string{"Similar in description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := x.Search(Query{Text: tt.query, TopK: 1})
			if len(hits) != 1 {
				t.Fatalf("hits = %v", hits)
			}
			h := hits[0]
			if h.MatchedSpecs != nil {
				t.Errorf("Search filled MatchedSpecs %v: the index keeps no specs", h.MatchedSpecs)
			}
			h.MatchedSpecs = x.MatchedSpecs(tt.query, d.Specs)
			if !slices.Equal(h.MatchedSpecs, tt.wantSpecs) {
				t.Errorf("MatchedSpecs = %v, want %v", h.MatchedSpecs, tt.wantSpecs)
			}
			if !slices.Equal(h.MatchedTerms, tt.wantTerms) {
				t.Errorf("MatchedTerms = %v, want %v", h.MatchedTerms, tt.wantTerms)
			}
			reason := Reason(h, d)
			for _, want := range tt.reason {
				if !strings.Contains(reason, want) {
					t.Errorf("Reason = %q, want it to mention %q", reason, want)
				}
			}
			if !strings.Contains(reason, fmt.Sprintf("(score %.2f)", h.Score)) {
				t.Errorf("Reason = %q lacks the score", reason)
			}
		})
	}
}

func TestReasonFormat(t *testing.T) {
	d := Doc{Specs: map[string]string{"electricalProps.voltage": "800", "materialComposition.primary": "NCM811", "mechanical.tensileStrength": "310"}}
	tests := []struct {
		h    Hit
		want string
	}{
		{Hit{Score: 0.912, MatchedSpecs: []string{"electricalProps.voltage", "materialComposition.primary"}, MatchedTerms: []string{"inverter", "800v", "800", "v"}},
			"Matches voltage 800, primary material NCM811; words: inverter, 800v (score 0.91)"},
		{Hit{Score: 0.5, MatchedSpecs: []string{"mechanical.tensileStrength"}}, "Matches tensile strength 310 (score 0.50)"},
		{Hit{Score: 0.25, MatchedTerms: []string{"door"}}, "Matches words: door (score 0.25)"},
		{Hit{Score: 0.1}, "Similar in description to the request (score 0.10)"},
	}
	for _, tt := range tests {
		if got := Reason(tt.h, d); got != tt.want {
			t.Errorf("Reason = %q, want %q", got, tt.want)
		}
	}
}

func TestKoreanQueryFindsEnglishPart(t *testing.T) {
	l := embed.NewLocal(0)
	x := NewIndex(l.AppendTokens)
	texts := map[string]string{
		"m3":   "Tesla Model 3 battery module NCA, SOH 75",
		"door": "Hyundai front door panel, aluminum",
		"inv":  "Bosch 800V inverter",
	}
	for id, text := range texts {
		vs, err := l.Embed(t.Context(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		x.Put(Doc{ID: id, Text: text, Vector: vs[0], CreatedAt: t0})
	}
	qv, err := l.Embed(t.Context(), []string{"테슬라 배터리 모듈"})
	if err != nil {
		t.Fatal(err)
	}
	hits := x.Search(Query{Text: "테슬라 배터리 모듈", Vector: qv[0], TopK: 3})
	if len(hits) == 0 || hits[0].ID != "m3" {
		t.Fatalf("hits = %v, want m3 first", ids(hits))
	}
	if !slices.Equal(hits[0].MatchedTerms, []string{"tesla", "battery-module", "battery", "module"}) {
		t.Errorf("MatchedTerms = %v", hits[0].MatchedTerms)
	}
}

func TestConcurrentPutSearch(t *testing.T) {
	x := NewIndex(nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 300 {
				id := fmt.Sprintf("w%d-%d", w, r.IntN(50))
				switch i % 5 {
				case 0:
					x.Delete(id)
				default:
					x.Put(Doc{ID: id, Text: "battery motor " + id, Vector: unit(r.Float32(), r.Float32(), 1), CreatedAt: t0})
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				for _, h := range x.Search(Query{Text: "battery", Vector: unit(1, 1, 1), TopK: 5}) {
					if d, ok := x.Get(h.ID); ok {
						_ = Reason(h, d)
					}
				}
				_ = x.Len()
			}
		})
	}
	wg.Wait()
	checkInvariants(t, x)
}

// benchIndex builds an index of n docs with random dim-256 vectors.
func benchIndex(b *testing.B, n int) *Index {
	b.Helper()
	const dim = 256
	r := rand.New(rand.NewPCG(42, uint64(n)))
	vocab := strings.Fields("battery motor inverter charger door panel window frame interior module pack cell " +
		"tesla hyundai kia bosch lges catl 800v 400v ncm811 nca lfp lmo used refurbished ess forklift agv solar boat")
	categories := []string{"battery", "motor", "inverter", "charger", "electronics", "body-door", "interior"}
	x := NewIndex(nil)
	for i := range n {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		embed.Normalize(v)
		words := make([]string, 12)
		for j := range words {
			words[j] = vocab[r.IntN(len(vocab))]
		}
		x.Put(Doc{
			ID:        fmt.Sprintf("part-%06d", i),
			Category:  categories[i%len(categories)],
			Price:     float64(r.IntN(10000)),
			Quantity:  r.IntN(100),
			Text:      strings.Join(words, " "),
			Vector:    v,
			CreatedAt: t0.Add(time.Duration(i) * time.Second),
		})
	}
	return x
}

func benchQuery(n int) []float32 {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	v := make([]float32, 256)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	embed.Normalize(v)
	return v
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{5_000, 100_000} {
		x := benchIndex(b, n)
		qv := benchQuery(n)
		maxPrice := 5000.0
		cases := []struct {
			name string
			q    Query
		}{
			{"vector", Query{Vector: qv, Mode: VectorOnly}},
			{"hybrid", Query{Text: "tesla battery module 800v", Vector: qv}},
			{"hybrid-filtered", Query{Text: "tesla battery module 800v", Vector: qv, Filters: Filters{Category: "battery", MaxPrice: &maxPrice}}},
			{"bm25", Query{Text: "tesla battery module 800v", Mode: BM25Only}},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if len(x.Search(c.q)) == 0 {
						b.Fatal("no hits")
					}
				}
			})
		}
	}
}

func BenchmarkPut(b *testing.B) {
	x := benchIndex(b, 5_000)
	qv := benchQuery(1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		x.Put(Doc{ID: fmt.Sprintf("part-%06d", i%5000), Text: "used tesla battery module 800v ncm811", Vector: qv})
		i++
	}
}

func TestParseConstraints(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"11kW on-board charger", "power 11 kW"},
		{"LFP over 80% SOH", "soh > 80 %"},
		{"400V inverter", "voltage 400 V"},
		{"60 kWh battery pack", "energy 60 kWh"},
		{"배터리 팩 80kWh 이상", "energy >= 80 kWh"},
		{"배터리 팩 50kWh 이하", "energy <= 50 kWh"},
		{"7kW 미만 충전기", "power < 7 kW"},
		{"100kW 초과", "power > 100 kW"},
		{"motor under 100 kW", "power < 100 kW"},
		{"pack above 60 kWh", "energy > 60 kWh"},
		{"at least 90% SOH", "soh >= 90 %"},
		{"up to 1,000 V", "voltage <= 1000 V"},
		{"800V SiC 인버터 200kW 이상", "voltage 800 V; power >= 200 kW"},
		{"500W heater 10A", "power 0.5 kW; current 10 A"},
		{"NCM811 Ioniq5 Model 3 a pack 18650", ""},
		{"94Ah module", "charge 94 Ah"},
	} {
		var got []string
		for _, c := range ParseConstraints(tt.in) {
			got = append(got, c.String())
		}
		if strings.Join(got, "; ") != tt.want {
			t.Errorf("ParseConstraints(%q) = %q, want %q", tt.in, strings.Join(got, "; "), tt.want)
		}
	}
}

// TestManyDocsKeepPostingsAndRows puts, replaces and deletes docs across
// several slab chunks, some holding a term 300 times (more than a
// posting's frequency byte holds), and checks that the bookkeeping holds,
// that every doc is still found by its own vector, that matched terms
// follow the docs, and that BM25 scores the overflowing frequencies
// exactly.
// TestReplaceTextKeepsSharedTerms replaces a doc's text with texts that
// share terms with it at other frequencies, across the 255 a posting
// stores itself: BM25 scores the new frequencies, and a term the new text
// lacks no longer finds the doc.
func TestReplaceTextKeepsSharedTerms(t *testing.T) {
	many := func(n int) string { return strings.TrimSpace(strings.Repeat("many ", n)) }
	for _, tt := range []struct {
		name     string
		old, new string
		tf       int // of "many" in new
		gone     string
	}{
		{"small to small", "battery " + many(2), "motor " + many(3), 3, "battery"},
		{"small to overflow", "battery " + many(2), "motor " + many(300), 300, "battery"},
		{"overflow to small", "battery " + many(300), "motor " + many(2), 2, "battery"},
		{"overflow to overflow", "battery " + many(300), "motor " + many(301), 301, "battery"},
		{"term added", "battery", "battery motor " + many(4), 4, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := NewIndex(nil)
			x.Put(Doc{ID: "other", Text: "many door"})
			x.Put(Doc{ID: "a", Text: tt.old})
			x.Put(Doc{ID: "b", Text: "many panel " + tt.old})
			x.Put(Doc{ID: "a", Text: tt.new})
			checkInvariants(t, x)
			n, dl := 3.0, float64(len(simpleTokenize(nil, tt.new)))
			total := 0
			for _, text := range []string{"many door", tt.new, "many panel " + tt.old} {
				total += len(simpleTokenize(nil, text))
			}
			want := termScore(idf(n, 3), float64(tt.tf), dl, float64(total)/n)
			var got float64
			for _, h := range x.Search(Query{Text: "many", Mode: BM25Only, TopK: 10}) {
				if h.ID == "a" {
					got = h.Score
				}
			}
			if !near(got, want) {
				t.Errorf("BM25 of the new text = %v, want %v (tf %d)", got, want, tt.tf)
			}
			if tt.gone == "" {
				return
			}
			for _, h := range x.Search(Query{Text: tt.gone, Mode: BM25Only, TopK: 10}) {
				if h.ID == "a" {
					t.Errorf("%q still finds the doc whose new text lacks it", tt.gone)
				}
			}
		})
	}
}

func TestManyDocsKeepPostingsAndRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"battery", "motor", "door", "panel", "800v", "ncm811", "kia", "tesla", "rare"}
	x := NewIndex(nil)
	vecs := map[string][]float32{}
	texts := map[string]string{}
	put := func(id string) {
		words := []string{"w" + id}
		for range r.IntN(8) {
			words = append(words, vocab[r.IntN(len(vocab))])
		}
		if r.IntN(20) == 0 {
			words = append(words, strings.Repeat("many ", 300))
		}
		v := unit(r.Float32()+0.01, r.Float32(), r.Float32(), r.Float32())
		// Half the replacements keep the text, changing only the vector.
		if old, ok := texts[id]; ok && r.IntN(2) == 0 {
			words = []string{old}
		}
		texts[id], vecs[id] = strings.Join(words, " "), v
		x.Put(Doc{ID: id, Text: texts[id], Vector: v, CreatedAt: t0})
	}
	for i := range 3 * chunkRows {
		put(fmt.Sprint(i))
	}
	checkInvariants(t, x)
	for range 3000 {
		id := fmt.Sprint(r.IntN(3 * chunkRows))
		if r.IntN(2) == 0 {
			x.Delete(id)
			delete(vecs, id)
			delete(texts, id)
			continue
		}
		put(id)
	}
	checkInvariants(t, x)
	if x.Len() != len(vecs) {
		t.Fatalf("Len = %d, want %d", x.Len(), len(vecs))
	}
	for id, v := range vecs {
		hits := x.Search(Query{Text: "w" + id, Vector: v, Mode: VectorOnly, TopK: 1})
		if len(hits) != 1 || math.Abs(hits[0].Score-1) > 1e-6 {
			t.Fatalf("own vector of %s: hits %+v", id, hits)
		}
		if !slices.Contains(hits[0].MatchedTerms, "w"+id) {
			t.Fatalf("doc %s does not match its own word: %+v", id, hits[0])
		}
	}
	// "many" occurs 300 times in each doc holding it: the BM25 score is
	// the formula's at tf 300.
	var many []string
	totalLen := 0
	for id, text := range texts {
		toks := simpleTokenize(nil, text)
		totalLen += len(toks)
		if strings.Contains(text, "many") {
			many = append(many, id)
		}
	}
	if len(many) == 0 {
		t.Fatal("no doc holds the repeated term")
	}
	n := float64(len(texts))
	for _, h := range x.Search(Query{Text: "many", Mode: BM25Only, TopK: MaxTopK}) {
		dl := float64(len(simpleTokenize(nil, texts[h.ID])))
		want := termScore(idf(n, float64(len(many))), 300, dl, float64(totalLen)/n)
		if !near(h.Score, want) {
			t.Errorf("BM25 of %s = %v, want %v (tf 300)", h.ID, h.Score, want)
		}
	}
	for _, id := range slices.Collect(maps.Keys(vecs)) {
		x.Delete(id)
	}
	checkInvariants(t, x)
	if x.Len() != 0 || len(x.termIDs) != 0 || len(x.bigTF) != 0 || x.chunks != nil {
		t.Errorf("empty index keeps %d docs, %d terms, %d frequencies, %d chunks", x.Len(), len(x.termIDs), len(x.bigTF), len(x.chunks))
	}
}

// TestPutAllIsPutInOrder loads the same docs, some IDs twice, with PutAll
// (in one call, and in calls of 100 docs, which reuse the memory of the
// calls before) and with Put one by one: the indexes answer alike.
func TestPutAllIsPutInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vocab := []string{"battery", "motor", "door", "800v 11kw", "ncm811", "kia", "tesla", "60 kwh"}
	var docs []Doc
	for i := range 2*putAllBlock + 17 {
		words := []string{}
		for range 1 + r.IntN(6) {
			words = append(words, vocab[r.IntN(len(vocab))])
		}
		docs = append(docs, Doc{
			ID: fmt.Sprint(r.IntN(400)), Text: strings.Join(words, " "), Category: vocab[i%3],
			Vector: unit(r.Float32()+0.01, r.Float32(), r.Float32()), CreatedAt: t0.Add(time.Duration(i)),
		})
	}
	one := NewIndex(nil)
	for _, d := range docs {
		one.Put(d)
	}
	all, pieces := NewIndex(nil), NewIndex(nil)
	all.PutAll(docs)
	for lo := 0; lo < len(docs); lo += 100 {
		pieces.PutAll(docs[lo:min(lo+100, len(docs))])
	}
	for _, tt := range []struct {
		name string
		x    *Index
	}{{"PutAll", all}, {"PutAll by 100", pieces}} {
		checkInvariants(t, tt.x)
		if one.Len() != tt.x.Len() {
			t.Fatalf("%s holds %d docs, Put %d", tt.name, tt.x.Len(), one.Len())
		}
		for _, id := range one.IDs() {
			a, _ := one.Get(id)
			b, ok := tt.x.Get(id)
			if !ok || a.Text != b.Text || !slices.Equal(a.Vector, b.Vector) || !a.CreatedAt.Equal(b.CreatedAt) {
				t.Fatalf("doc %s: Put %+v, %s %+v", id, a, tt.name, b)
			}
		}
		for _, q := range []Query{
			{Text: "tesla battery 800v", Vector: unit(1, 1, 0), TopK: 20},
			{Text: "over 50 kwh", Vector: unit(0, 1, 1), TopK: 20, Mode: VectorOnly},
			{Text: "kia door", TopK: 20, Mode: BM25Only},
		} {
			a, b := one.Search(q), tt.x.Search(q)
			if !slices.Equal(ids(a), ids(b)) {
				t.Errorf("%q: Put gives %v, %s %v", q.Text, ids(a), tt.name, ids(b))
			}
		}
	}
}
