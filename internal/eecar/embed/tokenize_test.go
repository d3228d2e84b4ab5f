package embed

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/quarrydb/quarry/internal/eecar/fixture"
)

// TestTokenizeSlicesIsTokenizeCopying checks tokenize, which slices its
// tokens out of the text, against tokenizeCopying, which builds each one
// rune by rune: the same tokens on edge cases, on every text and spec
// value of Catalogue(2000), and on the labelled queries.
func TestTokenizeSlicesIsTokenizeCopying(t *testing.T) {
	texts := []string{
		"", "1,000 V", "1,000.5kw 3.5kW", "1,2,3 a,b 1.2.3", "Tesla배터리 800V", "배터리를 1,000개", "x1,000y", "12,5", ",5", "5,",
		"Model 3 a", "\xff800v\xfe", "ﬁne ǅ İstanbul K", "3.5.kw", "1,000,000.25 kWh, 2,5", "ΣΑΣ Ⅻ Ⓐ ẞ 12KW", "ǅ1,000 Ⅻ1,5",
	}
	for _, p := range fixture.Catalogue(2000) {
		texts = append(texts, p.Text())
		for _, v := range p.FlatSpecs() {
			texts = append(texts, v)
		}
	}
	for _, q := range fixture.Queries() {
		texts = append(texts, q.Text)
	}
	for _, s := range texts {
		checkTokenize(t, s)
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"1,000 V", "3.5kW 배터리를", "a1,2.3b", "Tesla배터리"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkTokenize(t, s)
	})
}

func checkTokenize(t *testing.T, s string) {
	t.Helper()
	if got, want := tokenize(s), tokenizeCopying(s); !slices.Equal(got, want) {
		t.Fatalf("tokenize(%q) = %v, building each token gives %v", s, got, want)
	}
}

// TestToLowerIsStringsToLower checks toLower, which copies ASCII and
// Hangul without mapping them, against strings.ToLower: invalid bytes,
// letters whose lower case is longer or shorter in UTF-8, and texts that
// need no change (returned as they are).
func TestToLowerIsStringsToLower(t *testing.T) {
	for _, s := range []string{
		"", "abc 123", "ABC", "배터리 800V", "배터리", "\xff800v\xfe", "a\xffb", "\xef\xbf\xbd", "İstanbul", "\u212a", "Ⱥ", "ȿ",
		"ΣΑΣ", "ǅ", "ẞ", "Ⅻ Ⓐ", "모듈 NCM811", "ﬁne", "\u1100\u3131",
	} {
		checkToLower(t, s)
	}
	for _, p := range fixture.Catalogue(200) {
		checkToLower(t, p.Text())
	}
}

func FuzzToLower(f *testing.F) {
	for _, s := range []string{"Tesla배터리 800V", "\xffİ", "ΣΑΣ"} {
		f.Add(s)
	}
	f.Fuzz(checkToLower)
}

func checkToLower(t *testing.T, s string) {
	t.Helper()
	got, want := toLower(s), strings.ToLower(s)
	if got != want {
		t.Fatalf("toLower(%q) = %q, strings.ToLower gives %q", s, got, want)
	}
	if want == s && unsafe.StringData(got) != unsafe.StringData(s) && s != "" {
		t.Fatalf("toLower(%q) copied a text that needs no change", s)
	}
}

// TestAppendTokensAppends checks that AppendTokens keeps what dst held
// and appends what Tokens gives, across texts sharing the scratch.
func TestAppendTokensAppends(t *testing.T) {
	l := NewLocal(16)
	dst := []string{"kept"}
	var want []string
	want = append(want, "kept")
	for _, s := range []string{"Heat pump 800V 배터리를", "", "온보드 충전기 11kW", "1,000 V"} {
		dst = l.AppendTokens(dst, s)
		want = append(want, l.Tokens(s)...)
	}
	if !slices.Equal(dst, want) {
		t.Fatalf("AppendTokens gave %q, Tokens one by one %q", dst, want)
	}
}

// tokenizeCopying is tokenize building every token rune by rune: the
// oracle of tokenize, which slices tokens out of the text.
func tokenizeCopying(text string) []token {
	var out []token
	var cur strings.Builder
	curClass := classOther
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		w := cur.String()
		cur.Reset()
		if curClass == classHangul {
			if w = stripParticle(w); w != "" {
				out = append(out, token{text: w})
			}
			return
		}
		w = strings.ToLower(w)
		out = append(out, token{text: w})
		if num, unit, ok := splitNumberUnit(w); ok {
			out = append(out, token{text: num, derived: true}, token{text: unit, derived: true})
		}
	}
	var prev rune
	for i, r := range text {
		c := classify(r)
		if c == classOther {
			// Keep '.' and ',' between digits: "3.5", "1,000".
			if (r == '.' || r == ',') && isDigit(prev) && curClass == classWord {
				next, _ := utf8.DecodeRuneInString(text[i+1:])
				if isDigit(next) {
					if r == '.' {
						cur.WriteRune(r)
					}
					prev = r
					continue
				}
			}
			flush()
			curClass = classOther
			prev = r
			continue
		}
		if c != curClass {
			flush()
			curClass = c
		}
		cur.WriteRune(r)
		prev = r
	}
	flush()
	return out
}

// BenchmarkTokens tokenizes part texts through the glossary, as the
// search index does on every Put.
func BenchmarkTokens(b *testing.B) {
	l := NewLocal(256)
	var texts []string
	for _, p := range fixture.Catalogue(500) {
		texts = append(texts, p.Text())
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Tokens(texts[i%len(texts)])
		i++
	}
}

// TestGlossaryWordIsLookup checks that the glossary's first-byte filter
// skips no token it knows: word gives what the map holds for every
// variant's first token and every token of the catalogue's texts.
func TestGlossaryWordIsLookup(t *testing.T) {
	g := loadGlossary()
	toks := slices.Collect(maps.Keys(g.words))
	for _, p := range fixture.Catalogue(300) {
		for _, tk := range tokenize(p.Text()) {
			toks = append(toks, tk.text)
		}
	}
	for _, tok := range toks {
		got, want := g.word(tok), g.words[tok]
		if got.canon != want.canon || len(got.phrases) != len(want.phrases) {
			t.Fatalf("word(%q) = %+v, the map holds %+v", tok, got, want)
		}
	}
}
