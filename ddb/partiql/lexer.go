// Package partiql parses the subset of PartiQL that DynamoDB supports:
// SELECT, INSERT, UPDATE and DELETE statements over one table, with
// DynamoDB's literals (strings, numbers, booleans, null, maps, lists and
// <<sets>>) and ? parameters. Parameters are bound while parsing, so the
// AST holds attribute values only.
package partiql

import (
	"fmt"
	"strings"
)

// Error is a syntax or binding error; the store reports it as a
// ValidationException carrying Message.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func errorf(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

type tokKind int

const (
	tEOF    tokKind = iota
	tIdent          // bare identifier or keyword
	tQuoted         // "quoted identifier"
	tString         // 'string'
	tNumber         // 123, -1.5e3
	tParam          // ?
	tPunct          // operators and punctuation
)

type token struct {
	kind tokKind
	text string // identifier/string contents, number text, punctuation
	pos  int    // byte offset
	line int
	col  int
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of statement"
	case tQuoted:
		return `"` + t.text + `"`
	case tString:
		return "'" + t.text + "'"
	}
	return t.text
}

func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n && i < len(src); k++ {
			if src[i] == '\n' {
				line++
				col = 1
			} else {
				col++
			}
			i++
		}
	}
	for {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			adv(1)
		}
		if i+1 < len(src) && src[i] == '-' && src[i+1] == '-' {
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
			continue
		}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: i, line: line, col: col})
			return toks, nil
		}
		start, sl, sc := i, line, col
		c := src[i]
		switch {
		case isIdentStart(c):
			for i < len(src) && isIdentPart(src[i]) {
				adv(1)
			}
			toks = append(toks, token{kind: tIdent, text: src[start:i], pos: start, line: sl, col: sc})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				adv(1)
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && src[j] >= '0' && src[j] <= '9' {
					adv(j - i)
					for i < len(src) && src[i] >= '0' && src[i] <= '9' {
						adv(1)
					}
				}
			}
			toks = append(toks, token{kind: tNumber, text: src[start:i], pos: start, line: sl, col: sc})
		case c == '\'' || c == '"':
			q := c
			adv(1)
			var b strings.Builder
			closed := false
			for i < len(src) {
				if src[i] == q {
					if i+1 < len(src) && src[i+1] == q {
						b.WriteByte(q)
						adv(2)
						continue
					}
					adv(1)
					closed = true
					break
				}
				b.WriteByte(src[i])
				adv(1)
			}
			if !closed {
				return nil, errorf("Statement wasn't well formed, can't be processed: unterminated %s at line %d, column %d", map[byte]string{'\'': "string literal", '"': "quoted identifier"}[q], sl, sc)
			}
			k := tString
			if q == '"' {
				k = tQuoted
			}
			toks = append(toks, token{kind: k, text: b.String(), pos: start, line: sl, col: sc})
		case c == '?':
			adv(1)
			toks = append(toks, token{kind: tParam, text: "?", pos: start, line: sl, col: sc})
		default:
			for _, p := range []string{"<<", ">>", "<>", "!=", "<=", ">=", "=", "<", ">", "(", ")", "[", "]", "{", "}", ",", ".", ":", "+", "-", "*", ";"} {
				if strings.HasPrefix(src[i:], p) {
					adv(len(p))
					toks = append(toks, token{kind: tPunct, text: p, pos: start, line: sl, col: sc})
					goto next
				}
			}
			return nil, errorf("Statement wasn't well formed, can't be processed: unexpected character %q at line %d, column %d", c, sl, sc)
		next:
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }
