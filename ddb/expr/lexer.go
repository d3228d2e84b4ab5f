package expr

import (
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // [A-Za-z][A-Za-z0-9_]*
	tName           // #[A-Za-z0-9_]+
	tValue          // :[A-Za-z0-9_]+
	tNumber         // [0-9]+
	tLParen         // (
	tRParen         // )
	tLBrack         // [
	tRBrack         // ]
	tComma          // ,
	tDot            // .
	tEq             // =
	tNe             // <>
	tLt             // <
	tLe             // <=
	tGt             // >
	tGe             // >=
	tPlus           // +
	tMinus          // -
	tBad            // a character that starts no token
)

// token is one token of an expression; its text is src[pos:end].
type token struct {
	kind     tokKind
	pos, end int32
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_'
}

// lex splits src into tokens, always ending with a tEOF token. It never
// fails: a character that starts no token becomes a tBad token, which the
// parser reports as a syntax error when it reaches it.
func lex(src string, buf []token) []token {
	toks := buf[:0]
	i := 0
	n := len(src)
	for {
		for i < n && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
		if i >= n {
			toks = append(toks, token{kind: tEOF, pos: int32(n), end: int32(n)})
			return toks
		}
		start := i
		c := src[i]
		var k tokKind
		switch {
		case isLetter(c):
			i++
			for i < n && isWordByte(src[i]) {
				i++
			}
			k = tIdent
		case isDigit(c):
			i++
			for i < n && isDigit(src[i]) {
				i++
			}
			k = tNumber
		case c == '#' || c == ':':
			i++
			for i < n && isWordByte(src[i]) {
				i++
			}
			if i == start+1 {
				k = tBad
			} else if c == '#' {
				k = tName
			} else {
				k = tValue
			}
		default:
			i++
			switch c {
			case '(':
				k = tLParen
			case ')':
				k = tRParen
			case '[':
				k = tLBrack
			case ']':
				k = tRBrack
			case ',':
				k = tComma
			case '.':
				k = tDot
			case '=':
				k = tEq
			case '+':
				k = tPlus
			case '-':
				k = tMinus
			case '<':
				k = tLt
				if i < n && src[i] == '=' {
					i++
					k = tLe
				} else if i < n && src[i] == '>' {
					i++
					k = tNe
				}
			case '>':
				k = tGt
				if i < n && src[i] == '=' {
					i++
					k = tGe
				}
			default:
				k = tBad
				if c >= utf8.RuneSelf {
					_, size := utf8.DecodeRuneInString(src[start:])
					i = start + size
				}
			}
		}
		toks = append(toks, token{kind: k, pos: int32(start), end: int32(i)})
	}
}

// isKeyword reports whether the token is an identifier spelling kw
// (upper case) in any case.
func (t token) isKeyword(src, kw string) bool {
	if t.kind != tIdent || int(t.end-t.pos) != len(kw) {
		return false
	}
	s := src[t.pos:t.end]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != kw[i] {
			return false
		}
	}
	return true
}
