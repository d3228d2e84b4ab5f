package expr

import (
	"strconv"
)

// Limits DynamoDB applies to every expression.
const (
	// MaxExpressionSize is the largest expression string, in bytes.
	MaxExpressionSize = 4096
	// MaxOperators is the number of operators and functions an
	// expression may hold.
	MaxOperators = 300
	// MaxInOperands is the number of operands the right side of IN may hold.
	MaxInOperands = 100
	// MaxNesting bounds how deeply parentheses, NOT and function calls may
	// nest. DynamoDB's own bound is not documented; this one only keeps the
	// parser's recursion bounded.
	MaxNesting = 200
)

// rawElem is one element of a document path as written, before #name
// placeholders are resolved.
type rawElem struct {
	text  string // the name as written, or the #placeholder
	idx   int
	isIdx bool
	ph    bool // text is a #placeholder
}

// parser holds the state shared by the expression grammars: the token
// stream, the first error, and the nesting depth.
type parser struct {
	kind     Kind
	src      string
	toks     []token
	i        int
	depth    int
	err      *Error
	keywords []string // identifiers that are keywords, not names
	// redundant records a doubly parenthesised expression.
	redundant bool
}

func newParser(kind Kind, src string, keywords []string) *parser {
	return &parser{kind: kind, src: src, toks: lex(src, make([]token, 0, len(src)/2+2)), keywords: keywords}
}

// checkSource returns the error for an empty or oversized expression.
func checkSource(kind Kind, s string) error {
	if s == "" {
		return Errorf("Invalid %s: The expression can not be empty;", kind)
	}
	if len(s) > MaxExpressionSize {
		return Errorf("Invalid %s: Expression size has exceeded the maximum allowed size; expression size: %d", kind, len(s))
	}
	return nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) text(t token) string { return p.src[t.pos:t.end] }

func (p *parser) isKeyword(t token) bool {
	if t.kind != tIdent {
		return false
	}
	for _, kw := range p.keywords {
		if t.isKeyword(p.src, kw) {
			return true
		}
	}
	return false
}

// fail records a non-syntax error found while parsing.
func (p *parser) fail(msg string) {
	if p.err == nil {
		p.err = &Error{Message: "Invalid " + p.kind.String() + ": " + msg}
	}
}

// syntaxError records DynamoDB's syntax error for the current token: the
// token, and the text from the token before it to the token after it.
func (p *parser) syntaxError() {
	if p.err != nil {
		return
	}
	j := p.i
	t := p.toks[j]
	tokText := "<EOF>"
	if t.kind != tEOF {
		tokText = p.text(t)
	}
	start, end := t.pos, t.end
	if j > 0 {
		start = p.toks[j-1].pos
		if t.kind == tEOF {
			end = p.toks[j-1].end
		}
	}
	if t.kind != tEOF && j+1 < len(p.toks) && p.toks[j+1].kind != tEOF {
		end = p.toks[j+1].end
	}
	p.fail("Syntax error; token: \"" + tokText + "\", near: \"" + p.src[start:end] + "\"")
}

// expect consumes a token of kind k or records a syntax error.
func (p *parser) expect(k tokKind) bool {
	if p.peek().kind != k {
		p.syntaxError()
		return false
	}
	p.advance()
	return true
}

// enter counts one level of nesting; it records an error past MaxNesting.
func (p *parser) enter() bool {
	p.depth++
	if p.depth > MaxNesting {
		p.fail("The expression has too many nesting levels; maximum nesting level: " + strconv.Itoa(MaxNesting))
		return false
	}
	return true
}

func (p *parser) leave() { p.depth-- }

// pathStart reports whether the current token can start a document path.
func (p *parser) pathStart() bool {
	t := p.peek()
	return t.kind == tName || t.kind == tIdent && !p.isKeyword(t)
}

// parsePath parses a document path starting at the current token, which
// must satisfy pathStart.
func (p *parser) parsePath() []rawElem {
	t := p.advance()
	elems := make([]rawElem, 1, 2)
	elems[0] = rawElem{text: p.text(t), ph: t.kind == tName}
	return p.parsePathTail(elems)
}

// parsePathTail parses the .name and [index] elements that may follow a
// path.
func (p *parser) parsePathTail(elems []rawElem) []rawElem {
	for p.err == nil {
		switch p.peek().kind {
		case tDot:
			p.advance()
			if !p.pathStart() {
				p.syntaxError()
				return nil
			}
			t := p.advance()
			elems = append(elems, rawElem{text: p.text(t), ph: t.kind == tName})
		case tLBrack:
			p.advance()
			t := p.peek()
			if t.kind != tNumber {
				p.syntaxError()
				return nil
			}
			digits := p.text(t)
			n, err := strconv.Atoi(digits)
			if err != nil || len(digits) > 10 || n > maxListIndex {
				p.fail("List index is not within the allowable range; index: [" + digits + "]")
				return nil
			}
			p.advance()
			if !p.expect(tRBrack) {
				return nil
			}
			elems = append(elems, rawElem{idx: n, isIdx: true})
		default:
			return elems
		}
	}
	return nil
}

// resolvePath resolves the #name placeholders of a path. It returns the
// error message for a path that is too deep or names an undefined
// placeholder.
func resolvePath(raw []rawElem, params *Params) (Path, string) {
	if len(raw) > maxPathDepth {
		return nil, "The document path has too many nesting levels; nesting levels: " + strconv.Itoa(len(raw))
	}
	path := make(Path, len(raw))
	for i, e := range raw {
		switch {
		case e.isIdx:
			path[i] = PathElem{Index: e.idx, IsIndex: true}
		case e.ph:
			n, ok := params.name(e.text)
			if !ok {
				return nil, errUndefinedName(e.text)
			}
			path[i] = PathElem{Name: n}
		default:
			path[i] = PathElem{Name: e.text}
		}
	}
	return path, ""
}

// firstReserved returns the first bare name of the path that is a reserved
// word, as written.
func firstReserved(raw []rawElem) string {
	for _, e := range raw {
		if !e.isIdx && !e.ph && isReserved(e.text) {
			return e.text
		}
	}
	return ""
}

func errReserved(word string) string {
	return "Attribute name is a reserved keyword; reserved keyword: " + word
}
