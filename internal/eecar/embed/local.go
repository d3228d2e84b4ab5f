package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
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
// Before hashing, every word goes through a small built-in bilingual
// glossary of EV-part terms (see Canonical), so Korean and English
// queries meet. A Local is immutable after construction and safe for
// concurrent use.
type Local struct {
	dim      int
	glossary map[string]string
}

// NewLocal returns a Local embedder producing vectors of length dim
// (dim <= 0 → 256).
func NewLocal(dim int) *Local {
	if dim <= 0 {
		dim = DefaultLocalDimension
	}
	return &Local{dim: dim, glossary: buildGlossary()}
}

// Model returns the model name, e.g. "quarry-local-hash-v2-256".
func (l *Local) Model() string { return fmt.Sprintf("quarry-local-hash-v2-%d", l.dim) }

// Dimension returns the vector length.
func (l *Local) Dimension() int { return l.dim }

// Canonical maps a token through the glossary (identity when unknown).
func (l *Local) Canonical(tok string) string {
	if c, ok := l.glossary[tok]; ok {
		return c
	}
	return tok
}

// Tokens returns Tokenize(text) with every token mapped through
// Canonical; it is the tokenizer to give the search index so that BM25
// and the vectors agree on words.
func (l *Local) Tokens(text string) []string {
	toks := Tokenize(text)
	for i, t := range toks {
		toks[i] = l.Canonical(t)
	}
	return toks
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
	for _, t := range tokenize(text) {
		c := l.Canonical(t.text)
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

// buildGlossary returns the bilingual EV-part glossary: Korean terms and
// English variants mapped to one canonical English token.
func buildGlossary() map[string]string {
	groups := map[string][]string{
		"battery":      {"배터리", "밧데리", "베터리", "전지", "batteries"},
		"motor":        {"모터", "전동기", "motors"},
		"inverter":     {"인버터", "inverters"},
		"charger":      {"충전기", "chargers"},
		"charging":     {"충전"},
		"electronics":  {"전장부품", "전장", "전자", "전자부품", "electronic"},
		"body":         {"차체", "바디", "bodywork"},
		"frame":        {"프레임", "frames"},
		"chassis":      {"섀시", "샤시"},
		"door":         {"도어", "문", "doors"},
		"window":       {"창문", "유리", "윈도우", "windows", "glass"},
		"panel":        {"패널", "panels"},
		"interior":     {"내장재", "시트", "실내", "seat", "seats", "interiors"},
		"hood":         {"후드", "보닛", "bonnet"},
		"bumper":       {"범퍼", "bumpers"},
		"hyundai":      {"현대", "현대차", "현대자동차"},
		"kia":          {"기아", "기아차"},
		"tesla":        {"테슬라"},
		"nissan":       {"닛산"},
		"ioniq":        {"아이오닉"},
		"leaf":         {"리프"},
		"cell":         {"셀", "cells"},
		"module":       {"모듈", "modules"},
		"pack":         {"팩", "packs"},
		"aluminum":     {"알루미늄", "aluminium"},
		"steel":        {"강철", "스틸"},
		"lithium":      {"리튬"},
		"nickel":       {"니켈"},
		"cobalt":       {"코발트"},
		"manganese":    {"망간"},
		"used":         {"중고", "중고품"},
		"new":          {"신품", "새제품", "새것"},
		"refurbished":  {"재생", "재생품", "리퍼", "refurb", "remanufactured"},
		"recycling":    {"재활용", "recycle", "recycled"},
		"capacity":     {"용량"},
		"voltage":      {"전압", "고전압"},
		"power":        {"출력", "전력"},
		"weight":       {"무게", "중량"},
		"strength":     {"강도"},
		"temperature":  {"온도"},
		"ess":          {"에너지저장", "에너지저장장치", "에너지저장시스템"},
		"forklift":     {"지게차", "forklifts"},
		"ev":           {"전기차", "전기자동차"},
		"solar":        {"태양광"},
		"scooter":      {"스쿠터", "scooters"},
		"boat":         {"보트", "선박", "boats"},
		"cable":        {"케이블", "cables"},
		"connector":    {"커넥터", "connectors"},
		"cooling":      {"냉각"},
		"construction": {"건설"},
		"tool":         {"공구", "tools"},
		"condition":    {"상태"},
		"model":        {"모델"},
		"harness":      {"하네스", "배선", "와이어링", "wiring"},
		"orange":       {"오렌지"},
		"station":      {"충전소", "스테이션"},
		"fast":         {"급속"},
		"conversion":   {"개조", "컨버전"},
		"underbody":    {"언더바디"},
		"casting":      {"캐스팅", "주조"},
		"roof":         {"루프", "지붕"},
		"panoramic":    {"파노라마", "파노라믹"},
		"rear":         {"후면", "리어"},
		"front":        {"전면", "프론트"},
		"copper":       {"구리"},
		"reuse":        {"재사용"},
		"second-life":  {"세컨드라이프"},
	}
	g := make(map[string]string)
	for canon, variants := range groups {
		for _, v := range variants {
			g[v] = canon
		}
	}
	return g
}
