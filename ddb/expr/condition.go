package expr

import (
	"github.com/quarrydb/quarry/ddb/attr"
)

// condKeywords are the identifiers the condition grammar reserves.
var condKeywords = []string{"AND", "OR", "NOT", "BETWEEN", "IN"}

// condFuncArity lists the functions of condition expressions and their
// number of operands.
var condFuncArity = map[string]int{
	"attribute_exists":     1,
	"attribute_not_exists": 1,
	"attribute_type":       2,
	"begins_with":          2,
	"contains":             2,
	"size":                 1,
}

// updateFuncArity lists the functions of update expressions.
var updateFuncArity = map[string]int{
	"if_not_exists": 2,
	"list_append":   2,
}

type operandKind uint8

const (
	opdPath operandKind = iota
	opdValue
	opdFunc
)

// operand is an operand of a condition: a document path, a :value or a
// function call (only size is valid as an operand, but the parser accepts
// any call and validation reports the misuse).
type operand struct {
	kind operandKind
	raw  []rawElem // opdPath, as written
	path Path      // opdPath, resolved
	ph   string    // opdValue placeholder
	val  attr.Value
	fn   string // opdFunc name
	args []*operand
}

type condOp uint8

const (
	cAnd condOp = iota
	cOr
	cNot
	cEq
	cNe
	cLt
	cLe
	cGt
	cGe
	cBetween
	cIn
	cFunc
)

var condOpNames = [...]string{cAnd: "AND", cOr: "OR", cNot: "NOT", cEq: "=", cNe: "<>", cLt: "<", cLe: "<=",
	cGt: ">", cGe: ">=", cBetween: "BETWEEN", cIn: "IN", cFunc: "function"}

// cond is a node of a condition tree. AND and OR nodes hold two or more
// kids, NOT one; comparisons, BETWEEN and IN hold their operands in args;
// a function used as a condition is call.
type cond struct {
	op   condOp
	kids []*cond
	args []*operand
	call *operand
}

// Condition is a parsed condition or filter expression.
type Condition struct {
	kind Kind
	root *cond
}

// ParseCondition parses a ConditionExpression or FilterExpression.
func ParseCondition(kind Kind, s string, p *Params) (*Condition, error) {
	root, err := parseCondTree(kind, s, p)
	if err != nil {
		return nil, err
	}
	return &Condition{kind: kind, root: root}, nil
}

// parseCondTree parses and validates a condition, returning its tree.
func parseCondTree(kind Kind, s string, params *Params) (*cond, error) {
	if err := checkSource(kind, s); err != nil {
		return nil, err
	}
	p := newParser(kind, s, condKeywords)
	root := p.parseConditionExpr()
	if p.err != nil {
		return nil, p.err
	}
	if msg := checkCondStatic(root, p.redundant); msg != "" {
		return nil, Errorf("Invalid %s: %s", kind, msg)
	}
	v := condValidator{params: params}
	v.cond(root)
	if v.err == "" && v.ops > MaxOperators {
		v.err = "The expression contains too many operators; operator count: " + itoa(v.ops)
	}
	if v.err != "" {
		return nil, Errorf("Invalid %s: %s", kind, v.err)
	}
	return root, nil
}

// pexpr is what the condition parser builds below the level where it knows
// whether it has a condition or an operand: "(a)" may be either.
type pexpr struct {
	c *cond
	o *operand
	// ps and pe are the token indexes of the parentheses around the whole
	// expression, or -1.
	ps, pe int
}

func (p *parser) parseConditionExpr() *cond {
	e := p.parseOr()
	if p.err != nil {
		return nil
	}
	c := p.requireCond(e)
	if p.err != nil {
		return nil
	}
	if p.peek().kind != tEOF {
		p.syntaxError()
		return nil
	}
	return c
}

// requireCond turns e into a condition: a function call becomes a function
// condition (checked later), while a path or value is a syntax error at
// the current token.
func (p *parser) requireCond(e pexpr) *cond {
	if e.c != nil {
		return e.c
	}
	if e.o != nil && e.o.kind == opdFunc {
		return &cond{op: cFunc, call: e.o}
	}
	p.syntaxError()
	return nil
}

func (p *parser) parseOr() pexpr { return p.parseJunction("OR", cOr, p.parseAnd) }

func (p *parser) parseAnd() pexpr { return p.parseJunction("AND", cAnd, p.parseNot) }

// parseJunction parses operands of the next tighter level joined by the
// keyword (AND or OR) into one n-ary node of op; a lone operand is returned
// as it is.
func (p *parser) parseJunction(keyword string, op condOp, next func() pexpr) pexpr {
	left := next()
	if p.err != nil || !p.peek().isKeyword(p.src, keyword) {
		return left
	}
	first := p.requireCond(left)
	if p.err != nil {
		return pexpr{}
	}
	n := &cond{op: op, kids: []*cond{first}}
	for p.err == nil && p.peek().isKeyword(p.src, keyword) {
		p.advance()
		right := next()
		if p.err != nil {
			return pexpr{}
		}
		c := p.requireCond(right)
		if p.err != nil {
			return pexpr{}
		}
		n.kids = append(n.kids, c)
	}
	return pexpr{c: n, ps: -1, pe: -1}
}

func (p *parser) parseNot() pexpr {
	if !p.peek().isKeyword(p.src, "NOT") {
		return p.parseComparison()
	}
	p.advance()
	if !p.enter() {
		return pexpr{}
	}
	e := p.parseNot()
	p.leave()
	if p.err != nil {
		return pexpr{}
	}
	c := p.requireCond(e)
	if p.err != nil {
		return pexpr{}
	}
	return pexpr{c: &cond{op: cNot, kids: []*cond{c}}, ps: -1, pe: -1}
}

func (p *parser) parseComparison() pexpr {
	left := p.parsePrimary()
	if p.err != nil || left.o == nil {
		return left
	}
	t := p.peek()
	var op condOp
	switch t.kind {
	case tEq:
		op = cEq
	case tNe:
		op = cNe
	case tLt:
		op = cLt
	case tLe:
		op = cLe
	case tGt:
		op = cGt
	case tGe:
		op = cGe
	case tIdent:
		switch {
		case t.isKeyword(p.src, "BETWEEN"):
			p.advance()
			lo := p.parseOperandExpr()
			if p.err != nil {
				return pexpr{}
			}
			if !p.peek().isKeyword(p.src, "AND") {
				p.syntaxError()
				return pexpr{}
			}
			p.advance()
			hi := p.parseOperandExpr()
			if p.err != nil {
				return pexpr{}
			}
			return pexpr{c: &cond{op: cBetween, args: []*operand{left.o, lo, hi}}, ps: -1, pe: -1}
		case t.isKeyword(p.src, "IN"):
			p.advance()
			if !p.expect(tLParen) {
				return pexpr{}
			}
			args := []*operand{left.o}
			for {
				o := p.parseOperandExpr()
				if p.err != nil {
					return pexpr{}
				}
				args = append(args, o)
				if p.peek().kind != tComma {
					break
				}
				p.advance()
			}
			if !p.expect(tRParen) {
				return pexpr{}
			}
			return pexpr{c: &cond{op: cIn, args: args}, ps: -1, pe: -1}
		}
		return left
	default:
		return left
	}
	p.advance()
	right := p.parseOperandExpr()
	if p.err != nil {
		return pexpr{}
	}
	return pexpr{c: &cond{op: op, args: []*operand{left.o, right}}, ps: -1, pe: -1}
}

// parsePrimary parses a parenthesised condition or operand, or an operand.
func (p *parser) parsePrimary() pexpr {
	if p.peek().kind != tLParen {
		o := p.parseOperand()
		if p.err != nil {
			return pexpr{}
		}
		return pexpr{o: o, ps: -1, pe: -1}
	}
	start := p.i
	p.advance()
	if !p.enter() {
		return pexpr{}
	}
	inner := p.parseOr()
	p.leave()
	if p.err != nil || !p.expect(tRParen) {
		return pexpr{}
	}
	end := p.i - 1
	if inner.ps == start+1 && inner.pe == end-1 {
		p.redundant = true
	}
	e := pexpr{c: inner.c, o: inner.o, ps: start, pe: end}
	if e.o != nil && e.o.kind == opdPath && (p.peek().kind == tDot || p.peek().kind == tLBrack) {
		raw := p.parsePathTail(e.o.raw)
		if p.err != nil {
			return pexpr{}
		}
		e = pexpr{o: &operand{kind: opdPath, raw: raw}, ps: -1, pe: -1}
	}
	return e
}

// parseOperandExpr parses an operand, possibly parenthesised; a
// parenthesised path may be followed by more path elements.
func (p *parser) parseOperandExpr() *operand {
	o, _, _ := p.parseOperandGroup()
	return o
}

func (p *parser) parseOperandGroup() (*operand, int, int) {
	if p.peek().kind != tLParen {
		return p.parseOperand(), -1, -1
	}
	start := p.i
	p.advance()
	if !p.enter() {
		return nil, -1, -1
	}
	inner, ips, ipe := p.parseOperandGroup()
	p.leave()
	if p.err != nil || !p.expect(tRParen) {
		return nil, -1, -1
	}
	end := p.i - 1
	if ips == start+1 && ipe == end-1 {
		p.redundant = true
	}
	if inner.kind == opdPath && (p.peek().kind == tDot || p.peek().kind == tLBrack) {
		raw := p.parsePathTail(inner.raw)
		if p.err != nil {
			return nil, -1, -1
		}
		return &operand{kind: opdPath, raw: raw}, -1, -1
	}
	return inner, start, end
}

// parseOperand parses a path, a :value or a function call.
func (p *parser) parseOperand() *operand {
	t := p.peek()
	switch {
	case t.kind == tValue:
		p.advance()
		return &operand{kind: opdValue, ph: p.text(t)}
	case t.kind == tIdent && !p.isKeyword(t) && p.peekAt(1).kind == tLParen:
		p.advance()
		p.advance()
		if !p.enter() {
			return nil
		}
		defer p.leave()
		o := &operand{kind: opdFunc, fn: p.text(t)}
		for {
			a := p.parseOperandExpr()
			if p.err != nil {
				return nil
			}
			o.args = append(o.args, a)
			if p.peek().kind != tComma {
				break
			}
			p.advance()
		}
		if !p.expect(tRParen) {
			return nil
		}
		return o
	case p.pathStart():
		raw := p.parsePath()
		if p.err != nil {
			return nil
		}
		return &operand{kind: opdPath, raw: raw}
	}
	p.syntaxError()
	return nil
}

// checkCondStatic runs the checks DynamoDB makes on a whole condition before
// it looks at operands: redundant parentheses, unknown functions, functions
// used in the wrong place, then reserved words.
func checkCondStatic(root *cond, redundant bool) string {
	if redundant {
		return "The expression has redundant parentheses;"
	}
	if msg := walkCond(root, unknownCondFunc); msg != "" {
		return msg
	}
	if msg := misusedCond(root); msg != "" {
		return msg
	}
	return walkCond(root, reservedOperand)
}

// walkCond calls f on every operand of the tree, calls included, in the
// order written, and returns the first message f returns.
func walkCond(c *cond, f func(*operand) string) string {
	switch c.op {
	case cAnd, cOr, cNot:
		for _, k := range c.kids {
			if msg := walkCond(k, f); msg != "" {
				return msg
			}
		}
		return ""
	case cFunc:
		return walkOperand(c.call, f)
	}
	for _, a := range c.args {
		if msg := walkOperand(a, f); msg != "" {
			return msg
		}
	}
	return ""
}

func walkOperand(o *operand, f func(*operand) string) string {
	if msg := f(o); msg != "" {
		return msg
	}
	for _, a := range o.args {
		if msg := walkOperand(a, f); msg != "" {
			return msg
		}
	}
	return ""
}

func unknownCondFunc(o *operand) string {
	if o.kind != opdFunc {
		return ""
	}
	if _, ok := condFuncArity[o.fn]; ok {
		return ""
	}
	if _, ok := updateFuncArity[o.fn]; ok {
		return "The function is not allowed in a condition expression; function: " + o.fn
	}
	return "Invalid function name; function: " + o.fn
}

func reservedOperand(o *operand) string {
	if o.kind == opdPath {
		if w := firstReserved(o.raw); w != "" {
			return errReserved(w)
		}
	}
	return ""
}

func errMisused(fn string) string {
	return "The function is not allowed to be used this way in an expression; function: " + fn
}

// misusedCond finds a function used where its result cannot go: size as a
// condition, or a boolean function as an operand.
func misusedCond(c *cond) string {
	switch c.op {
	case cAnd, cOr, cNot:
		for _, k := range c.kids {
			if msg := misusedCond(k); msg != "" {
				return msg
			}
		}
		return ""
	case cFunc:
		if c.call.fn == "size" {
			return errMisused("size")
		}
		for _, a := range c.call.args {
			if msg := misusedOperand(a); msg != "" {
				return msg
			}
		}
		return ""
	}
	for _, a := range c.args {
		if msg := misusedOperand(a); msg != "" {
			return msg
		}
	}
	return ""
}

func misusedOperand(o *operand) string {
	if o.kind != opdFunc {
		return ""
	}
	if o.fn != "size" {
		return errMisused(o.fn)
	}
	for _, a := range o.args {
		if msg := misusedOperand(a); msg != "" {
			return msg
		}
	}
	return ""
}
