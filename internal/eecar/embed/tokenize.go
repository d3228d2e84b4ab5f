package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// token is one word produced by the tokenizer. Derived tokens are the
// number and unit split off a token such as "800v"; they count as words
// but do not take part in word bigrams.
type token struct {
	text    string
	derived bool
}

// Tokenize splits text into lower-cased word tokens (letters/digits,
// Hangul syllables kept together, numbers with units like 800V or 75kWh
// kept as one token and also split into number + unit), with Korean
// particles stripped; exported for BM25.
//
// A change of script between Hangul and anything else ends a token
// ("Tesla배터리" → "tesla", "배터리"); a '.' between digits is kept
// ("3.5kW" → "3.5kw", "3.5", "kw") and a ',' between digits is dropped
// ("1,000" → "1000"). Korean particles (은/는/이/가/을/를/의/에/에서/로/
// 으로/와/과/도) are stripped from the end of Hangul words of two or more
// syllables, except for a few common words that merely end that way
// (유리, 강도, 길이, 회로, …). Tokens may share memory with text.
func Tokenize(text string) []string {
	toks := tokenize(text)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.text
	}
	return out
}

// runeClass classifies runes for tokenization.
type runeClass uint8

const (
	classOther runeClass = iota
	classHangul
	classWord // non-Hangul letter or digit
)

func classify(r rune) runeClass {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case isHangul(r):
		return classHangul
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return classWord
	default:
		return classOther
	}
}

// asciiClass is classify of the ASCII runes: letters and digits are
// words, the rest other.
var asciiClass = func() (c [utf8.RuneSelf]runeClass) {
	for r := range c {
		if unicode.IsLetter(rune(r)) || unicode.IsDigit(rune(r)) {
			c[r] = classWord
		}
	}
	return c
}()

// isHangul reports whether r is a Hangul syllable or jamo.
func isHangul(r rune) bool {
	return (r >= 0xAC00 && r <= 0xD7A3) || // syllables
		(r >= 0x1100 && r <= 0x11FF) || // jamo
		(r >= 0x3130 && r <= 0x318F) || // compatibility jamo
		(r >= 0xA960 && r <= 0xA97F) || (r >= 0xD7B0 && r <= 0xD7FF)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// tokenize is Tokenize keeping the derived flag. A token is a slice of
// the text when lowering leaves it as it is and no ',' was dropped from
// it, else a lowered copy; callers keeping a token copy it.
func tokenize(text string) []token {
	// About one token in six bytes of text: sized once rather than grown.
	return appendTokens(make([]token, 0, len(text)/6+4), text)
}

// appendTokens appends tokenize(text) to out.
func appendTokens(out []token, text string) []token {
	// Tokens are cut from text as it is, and those holding a rune that
	// lowering changes are lowered one by one into lowered: lowering maps
	// rune by rune and keeps every rune's class (letter, digit, Hangul,
	// other), so these are the tokens of the text lowered, without a copy
	// of the text.
	var lowered []byte // lowered tokens back to back, never written over
	// The current token is text[start:i] while it is contiguous; once a
	// ',' between digits is dropped it continues in cur. cased: the token
	// holds a rune that lowering changes.
	start, inBuf, cased := -1, false, false
	var cur strings.Builder
	curClass := classOther
	flush := func(end int) {
		var w string
		switch {
		case inBuf:
			w = cur.String()
			cur.Reset()
			inBuf = false
		case start >= 0:
			w = text[start:end]
		default:
			return
		}
		start = -1
		if cased {
			if lowered == nil {
				lowered = make([]byte, 0, len(text)/8+32)
			}
			n := len(lowered)
			lowered = appendLower(lowered, w)
			w = unsafe.String(&lowered[n], len(lowered)-n)
			cased = false
		}
		if curClass == classHangul {
			if w = stripParticle(w); w != "" {
				out = append(out, token{text: w})
			}
			return
		}
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
					switch {
					case r == ',' && !inBuf:
						cur.WriteString(text[start:i])
						inBuf = true
					case r == '.' && inBuf:
						cur.WriteRune(r)
					}
					prev = r
					continue
				}
			}
			flush(i)
			curClass = classOther
			prev = r
			continue
		}
		if c != curClass {
			flush(i)
			curClass = c
		}
		if r < utf8.RuneSelf {
			cased = cased || 'A' <= r && r <= 'Z'
		} else if !cased && !isHangulSyllable(r) {
			cased = unicode.ToLower(r) != r
		}
		switch {
		case inBuf:
			cur.WriteRune(r)
		case start < 0:
			start = i
		}
		prev = r
	}
	flush(len(text))
	return out
}

// toLower returns strings.ToLower(s) (s itself when that changes
// nothing), without strings.ToLower's call through a mapping function
// for every rune of a text that is not all ASCII: ASCII bytes and Hangul
// syllables, which have no case, are copied as they are.
func toLower(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				return lowerFrom(s, i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 || !isHangulSyllable(r) && unicode.ToLower(r) != r {
			// n == 1: an invalid byte, which strings.ToLower replaces
			// with U+FFFD (a valid U+FFFD is 3 bytes long).
			return lowerFrom(s, i)
		}
		i += n
	}
	return s
}

// lowerFrom is toLower(s) where s[:i] is known to be lower-case.
func lowerFrom(s string, i int) string {
	b := make([]byte, i, len(s)+utf8.UTFMax)
	copy(b, s[:i])
	b = appendLower(b, s[i:])
	// b is not written after this: the string may share its memory, as
	// strings.Builder's does.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendLower appends strings.ToLower(s) to b.
func appendLower(b []byte, s string) []byte {
	// Lowering may lengthen a rune ('Ⱥ' is 2 bytes, 'ⱥ' 3): append grows b.
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			// A run of ASCII is copied at once, its capitals then lowered
			// in place.
			j := i
			for j < len(s) && s[j] < utf8.RuneSelf {
				j++
			}
			k := len(b)
			b = append(b, s[i:j]...)
			for ; k < len(b); k++ {
				if c := b[k]; 'A' <= c && c <= 'Z' {
					b[k] = c + 'a' - 'A'
				}
			}
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isHangulSyllable(r) {
			b = append(b, s[i:i+n]...)
		} else {
			b = utf8.AppendRune(b, unicode.ToLower(r)) // an invalid byte is RuneError
		}
		i += n
	}
	return b
}

// isHangulSyllable reports whether r is a precomposed Hangul syllable.
func isHangulSyllable(r rune) bool { return r >= 0xAC00 && r <= 0xD7A3 }

// splitNumberUnit splits "800v" into "800" and "v", "3.5kw" into "3.5"
// and "kw". It reports false for anything that is not a number followed
// by letters only.
func splitNumberUnit(w string) (num, unit string, ok bool) {
	i := 0
	for i < len(w) && (isDigit(rune(w[i])) || (w[i] == '.' && i > 0)) {
		i++
	}
	if i == 0 || i == len(w) || w[i-1] == '.' {
		return "", "", false
	}
	for _, r := range w[i:] {
		if !unicode.IsLetter(r) {
			return "", "", false
		}
	}
	return w[:i], w[i:], true
}

// stripParticle removes one trailing Korean particle from a Hangul word
// of at least two syllables, leaving at least one syllable.
func stripParticle(w string) string {
	if keepsEnding(w) {
		return w
	}
	n := utf8.RuneCountInString(w)
	if n < 2 {
		return w
	}
	for _, p := range [...]string{"에서", "으로"} {
		if n >= 3 && strings.HasSuffix(w, p) {
			return strings.TrimSuffix(w, p)
		}
	}
	last, size := utf8.DecodeLastRuneInString(w)
	if last == '용' && n >= 3 {
		return w[:len(w)-size] // 지게차용 ("for forklifts") → 지게차
	}
	switch last {
	case '은', '는', '이', '가', '을', '를', '의', '에', '로', '와', '과', '도':
		return w[:len(w)-size]
	}
	return w
}

// keepsEnding lists common words that end in a particle-like syllable
// but must not lose it.
func keepsEnding(w string) bool {
	switch w {
	case "강도", "밀도", "온도", "속도", "습도", "경도", "용도", "정도", "전도", "각도", "순도", "농도", "고도", "철도", "보도",
		"길이", "높이", "넓이", "깊이", "차이", "아이", "하이", "레이", "릴레이", "디스플레이", "트레이", "스프레이", "플레이",
		"회로", "경로", "도로", "선로", "제로", "마이크로", "니로", "프로", "하이드로", "유로",
		"나이", "사이",
		"재사용", "재활용", "미사용", "비사용":
		return true
	}
	return false
}
