package embed

import (
	_ "embed" // the glossary file
	"fmt"
	"slices"
	"strings"
	"sync"
)

// glossaryTSV is EECAR's bilingual glossary of EV-part terms: one family a
// line, the canonical token and then its English and Korean variants,
// tab-separated; '#' starts a comment line.
//
//go:embed glossary.tsv
var glossaryTSV string

// Family is one glossary line: a canonical token and its variants.
type Family struct {
	// Canonical is the token every variant becomes.
	Canonical string
	// Variants are the words and phrases that mean it, English and Korean.
	Variants []string
}

// Glossary returns the families of the embedded glossary file
// (internal/eecar/embed/glossary.tsv), in file order.
func Glossary() []Family {
	fams, err := parseGlossary(glossaryTSV)
	if err != nil {
		panic(err) // the file is embedded: a test catches this
	}
	return fams
}

// parseGlossary parses the glossary's TSV.
func parseGlossary(text string) ([]Family, error) {
	var out []Family
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cells := strings.Split(line, "\t")
		f := Family{Canonical: strings.TrimSpace(cells[0])}
		for _, c := range cells[1:] {
			if c = strings.TrimSpace(c); c != "" {
				f.Variants = append(f.Variants, c)
			}
		}
		if f.Canonical == "" || len(f.Variants) == 0 {
			return nil, fmt.Errorf("glossary line %d: want a canonical token and at least one variant", i+1)
		}
		out = append(out, f)
	}
	return out, nil
}

// phrase is a multi-word glossary variant as tokens.
type phrase struct {
	toks  []string
	canon string
}

// glossary is the compiled glossary: for each token, its canonical token
// when it is a one-token variant, and the phrases starting with it
// (longest first); one map, so that a token costs one lookup.
type glossary struct {
	words map[string]glossWord
	// firsts marks the first bytes of words' keys: a token starting with
	// another byte (a number, for no variant starts with a digit) needs
	// no lookup.
	firsts [256]bool
}

// glossWord is what the glossary knows of one token.
type glossWord struct {
	canon   string // "" when the token alone is no variant
	phrases []phrase
}

var (
	defaultGlossaryOnce sync.Once
	defaultGlossary     *glossary
)

// loadGlossary compiles the embedded glossary once.
func loadGlossary() *glossary {
	defaultGlossaryOnce.Do(func() {
		g, err := compileGlossary(Glossary())
		if err != nil {
			panic(err)
		}
		defaultGlossary = g
	})
	return defaultGlossary
}

// compileGlossary tokenizes every variant; a one-token variant maps that
// token, a longer one becomes a phrase. A token or phrase claimed by two
// families is an error.
func compileGlossary(fams []Family) (*glossary, error) {
	g := &glossary{words: map[string]glossWord{}}
	seen := map[string]string{}
	for _, f := range fams {
		for _, v := range f.Variants {
			var toks []string
			for _, t := range tokenize(v) {
				if !t.derived {
					toks = append(toks, t.text)
				}
			}
			if len(toks) == 0 {
				return nil, fmt.Errorf("glossary: variant %q of %s has no word", v, f.Canonical)
			}
			k := strings.Join(toks, " ")
			if prev, ok := seen[k]; ok {
				if prev != f.Canonical {
					return nil, fmt.Errorf("glossary: %q is in both %s and %s", v, prev, f.Canonical)
				}
				continue
			}
			seen[k] = f.Canonical
			w := g.words[toks[0]]
			if len(toks) == 1 {
				w.canon = f.Canonical
			} else {
				w.phrases = append(w.phrases, phrase{toks: toks, canon: f.Canonical})
			}
			g.words[toks[0]] = w
		}
	}
	for k, w := range g.words {
		slices.SortStableFunc(w.phrases, func(a, b phrase) int { return len(b.toks) - len(a.toks) })
		g.words[k] = w
		g.firsts[k[0]] = true // tokens are never empty
	}
	return g, nil
}

// word returns what the glossary knows of tok.
func (g *glossary) word(tok string) glossWord {
	if tok == "" || !g.firsts[tok[0]] {
		return glossWord{}
	}
	return g.words[tok]
}

// canonical maps one token (identity when unknown).
func (g *glossary) canonical(tok string) string {
	if w := g.word(tok); w.canon != "" {
		return w.canon
	}
	return tok
}

// apply maps tokens through the glossary: the longest phrase starting at a
// token becomes its canonical token followed by its words (each mapped
// alone, marked derived), and any other token is mapped alone.
func (g *glossary) apply(toks []token) []token {
	return g.appendApplied(make([]token, 0, len(toks)), toks)
}

// appendApplied appends apply(toks) to out.
func (g *glossary) appendApplied(out, toks []token) []token {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		w := g.word(t.text)
		if !t.derived {
			if p, n, ok := matchPhrase(w.phrases, toks, i); ok {
				out = append(out, token{text: p.canon})
				for _, w := range toks[i : i+n] {
					out = append(out, token{text: g.canonical(w.text), derived: true})
				}
				i += n - 1
				continue
			}
		}
		text := t.text
		if w.canon != "" {
			text = w.canon
		}
		out = append(out, token{text: text, derived: t.derived})
	}
	return out
}

// matchPhrase finds the longest of phrases (those starting with toks[i]'s
// text, longest first) at toks[i], skipping derived tokens (the number and
// unit split off "800v") inside it; n counts the tokens consumed.
func matchPhrase(phrases []phrase, toks []token, i int) (phrase, int, bool) {
	for _, p := range phrases {
		j, k := i, 0
		for j < len(toks) && k < len(p.toks) {
			if toks[j].derived {
				j++
				continue
			}
			if toks[j].text != p.toks[k] {
				break
			}
			j++
			k++
		}
		if k == len(p.toks) {
			return p, j - i, true
		}
	}
	return phrase{}, 0, false
}
