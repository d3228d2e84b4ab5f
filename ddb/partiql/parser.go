package partiql

import (
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

const malformed = "Statement wasn't well formed, can't be processed: "

// keywords cannot be used as bare attribute names (quote them instead).
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"BETWEEN": true, "IN": true, "IS": true, "INSERT": true, "INTO": true, "VALUE": true,
	"UPDATE": true, "SET": true, "REMOVE": true, "DELETE": true, "MISSING": true,
	"TRUE": true, "FALSE": true, "NULL": true, "RETURNING": true, "EXISTS": true, "ORDER": true, "BY": true, "ASC": true, "DESC": true,
}

// boolFuncs are the functions usable as conditions, with their arity.
var boolFuncs = map[string]int{
	"begins_with": 2, "contains": 2, "attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2,
}

// valueFuncs are the functions usable as values, with their arity.
var valueFuncs = map[string]int{
	"size": 1, "list_append": 2, "if_not_exists": 2, "set_add": 2, "set_delete": 2,
}

type parser struct {
	toks   []token
	i      int
	params []attr.Value
	used   int
}

// Parse parses one statement, binding its ? placeholders to params in
// order. The number of placeholders must match len(params).
func Parse(src string, params []attr.Value) (st Statement, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, params: params}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			st, err = nil, e
		}
	}()
	st = p.statement()
	if p.peek().kind == tPunct && p.peek().text == ";" {
		p.i++
	}
	if p.peek().kind != tEOF {
		p.fail("unexpected %s", p.peek().describe())
	}
	if p.used != len(params) {
		return nil, errorf("Number of parameters in request and statement don't match.")
	}
	return st, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(format string, args ...any) {
	t := p.peek()
	panic(errorf(malformed+format+" at line %d, column %d", append(args, t.line, t.col)...))
}

func (p *parser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) {
	if !p.acceptKw(kw) {
		p.fail("expected %s but found %s", kw, p.peek().describe())
	}
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) {
	if !p.acceptPunct(s) {
		p.fail("expected '%s' but found %s", s, p.peek().describe())
	}
}

func (p *parser) statement() Statement {
	switch {
	case p.acceptKw("SELECT"):
		return p.selectStmt()
	case p.acceptKw("INSERT"):
		p.expectKw("INTO")
		tbl, ix := p.tableRef()
		if ix != "" {
			p.fail("INSERT into an index is not supported")
		}
		p.expectKw("VALUE")
		if !p.isPunct("{") {
			p.fail("expected a map literal after VALUE but found %s", p.peek().describe())
		}
		v := p.value()
		return &Insert{Table: tbl, Item: attr.Item(v.M)}
	case p.acceptKw("UPDATE"):
		return p.updateStmt()
	case p.acceptKw("EXISTS"):
		p.expectPunct("(")
		p.expectKw("SELECT")
		sel := p.selectStmt()
		p.expectPunct(")")
		return &Exists{Select: sel}
	case p.acceptKw("DELETE"):
		p.expectKw("FROM")
		tbl, ix := p.tableRef()
		if ix != "" {
			p.fail("DELETE from an index is not supported")
		}
		p.expectKw("WHERE")
		d := &Delete{Table: tbl, Where: p.cond()}
		if d.Returning = p.returning(); d.Returning != "" && d.Returning != "ALL_OLD" {
			panic(errorf("%sDELETE supports only RETURNING ALL OLD *", malformed))
		}
		return d
	}
	p.fail("expected SELECT, INSERT, UPDATE, DELETE or EXISTS but found %s", p.peek().describe())
	return nil
}

func (p *parser) selectStmt() *Select {
	s := &Select{}
	if !p.acceptPunct("*") {
		for {
			s.Paths = append(s.Paths, p.path())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.expectKw("FROM")
	s.Table, s.Index = p.tableRef()
	if p.acceptKw("WHERE") {
		s.Where = p.cond()
	}
	if p.acceptKw("ORDER") {
		p.expectKw("BY")
		s.OrderBy = p.name("an attribute name")
		if !p.acceptKw("ASC") {
			s.Desc = p.acceptKw("DESC")
		}
	}
	return s
}

func (p *parser) updateStmt() *Update {
	u := &Update{}
	u.Table, _ = p.tableRef()
	for {
		switch {
		case p.acceptKw("SET"):
			for {
				path := p.path()
				p.expectPunct("=")
				u.Actions = append(u.Actions, Action{Path: path, Value: p.operand()})
				if !p.acceptPunct(",") {
					break
				}
			}
			continue
		case p.acceptKw("REMOVE"):
			for {
				u.Actions = append(u.Actions, Action{Remove: true, Path: p.path()})
				if !p.acceptPunct(",") {
					break
				}
			}
			continue
		}
		break
	}
	if len(u.Actions) == 0 {
		p.fail("expected SET or REMOVE but found %s", p.peek().describe())
	}
	p.expectKw("WHERE")
	u.Where = p.cond()
	u.Returning = p.returning()
	return u
}

// returning reads an optional RETURNING (ALL|MODIFIED) (OLD|NEW) * clause.
func (p *parser) returning() string {
	if !p.acceptKw("RETURNING") {
		return ""
	}
	var which, when string
	switch {
	case p.acceptKw("ALL"):
		which = "ALL_"
	case p.acceptKw("MODIFIED"):
		which = "UPDATED_"
	default:
		p.fail("expected ALL or MODIFIED but found %s", p.peek().describe())
	}
	switch {
	case p.acceptKw("OLD"):
		when = "OLD"
	case p.acceptKw("NEW"):
		when = "NEW"
	default:
		p.fail("expected OLD or NEW but found %s", p.peek().describe())
	}
	p.expectPunct("*")
	return which + when
}

// name reads an identifier: bare (not a keyword) or "quoted".
func (p *parser) name(what string) string {
	t := p.peek()
	switch {
	case t.kind == tQuoted:
		p.i++
		return t.text
	case t.kind == tIdent && !keywords[strings.ToUpper(t.text)]:
		p.i++
		return t.text
	}
	p.fail("expected %s but found %s", what, t.describe())
	return ""
}

func (p *parser) tableRef() (table, index string) {
	table = p.name("a table name")
	if p.acceptPunct(".") {
		index = p.name("an index name")
	}
	return table, index
}

func (p *parser) path() expr.Path {
	path := expr.Path{{Name: p.name("an attribute name")}}
	for {
		switch {
		case p.acceptPunct("."):
			// After a dot, keywords are names too (m.in).
			if t := p.peek(); t.kind == tIdent {
				p.i++
				path = append(path, expr.PathElem{Name: t.text})
				continue
			}
			path = append(path, expr.PathElem{Name: p.name("an attribute name")})
		case p.acceptPunct("["):
			t := p.peek()
			n, err := strconv.Atoi(t.text)
			if t.kind != tNumber || err != nil || n < 0 {
				p.fail("expected a list index but found %s", t.describe())
			}
			p.i++
			p.expectPunct("]")
			path = append(path, expr.PathElem{Index: n, IsIndex: true})
		default:
			return path
		}
	}
}

func (p *parser) cond() Cond {
	l := p.andCond()
	for p.acceptKw("OR") {
		l = &Logic{Op: "OR", L: l, R: p.andCond()}
	}
	return l
}

func (p *parser) andCond() Cond {
	l := p.notCond()
	for p.acceptKw("AND") {
		l = &Logic{Op: "AND", L: l, R: p.notCond()}
	}
	return l
}

func (p *parser) notCond() Cond {
	if p.acceptKw("NOT") {
		return &Not{X: p.notCond()}
	}
	return p.predicate()
}

func (p *parser) funcName() (string, bool) {
	t := p.peek()
	if t.kind != tIdent || p.toks[p.i+1].kind != tPunct || p.toks[p.i+1].text != "(" {
		return "", false
	}
	return strings.ToLower(t.text), true
}

func (p *parser) args(name string, n int) []Operand {
	p.expectPunct("(")
	var args []Operand
	if !p.isPunct(")") {
		for {
			args = append(args, p.operand())
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.expectPunct(")")
	if len(args) != n {
		panic(errorf("%sfunction %s takes %d argument(s), got %d", malformed, name, n, len(args)))
	}
	return args
}

func (p *parser) predicate() Cond {
	if p.acceptPunct("(") {
		c := p.cond()
		p.expectPunct(")")
		return c
	}
	if name, ok := p.funcName(); ok {
		if n, isBool := boolFuncs[name]; isBool {
			p.i++
			args := p.args(name, n)
			if _, ok := args[0].(*PathOp); !ok {
				panic(errorf("%sthe first argument of %s must be an attribute path", malformed, name))
			}
			return &Func{Name: name, Args: args}
		}
	}
	l := p.operand()
	switch {
	case p.acceptKw("IS"):
		neg := p.acceptKw("NOT")
		po, ok := l.(*PathOp)
		if !ok {
			p.fail("IS requires an attribute path")
		}
		switch {
		case p.acceptKw("MISSING"):
			return &Missing{Path: po.Path, Not: neg}
		case p.acceptKw("NULL"):
			c := Cond(&Func{Name: "attribute_type", Args: []Operand{l, &Literal{Value: attr.Str("NULL")}}})
			if neg {
				c = &Not{X: c}
			}
			return c
		}
		p.fail("expected MISSING or NULL but found %s", p.peek().describe())
	case p.acceptKw("BETWEEN"):
		lo := p.operand()
		p.expectKw("AND")
		return &Between{X: l, Lo: lo, Hi: p.operand()}
	case p.acceptKw("IN"):
		closer := "]"
		if p.acceptPunct("(") {
			closer = ")"
		} else {
			p.expectPunct("[")
		}
		in := &In{X: l}
		for {
			in.List = append(in.List, p.operand())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(closer)
		return in
	}
	t := p.peek()
	if t.kind == tPunct {
		switch t.text {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
			p.i++
			op := t.text
			if op == "!=" {
				op = "<>"
			}
			return &Compare{Op: op, L: l, R: p.operand()}
		}
	}
	p.fail("expected a comparison but found %s", t.describe())
	return nil
}

func (p *parser) operand() Operand {
	l := p.primary()
	for p.isPunct("+") || p.isPunct("-") {
		op := p.next().text
		l = &Arith{Op: op, L: l, R: p.primary()}
	}
	return l
}

func (p *parser) primary() Operand {
	if name, ok := p.funcName(); ok {
		if n, isVal := valueFuncs[name]; isVal {
			p.i++
			return &Call{Name: name, Args: p.args(name, n)}
		}
		if _, isBool := boolFuncs[name]; !isBool {
			p.fail("unknown function %s", name)
		}
	}
	t := p.peek()
	switch {
	case t.kind == tQuoted, t.kind == tIdent && !keywords[strings.ToUpper(t.text)]:
		return &PathOp{Path: p.path()}
	}
	return &Literal{Value: p.value()}
}

// value reads a literal or a ? parameter.
func (p *parser) value() attr.Value {
	t := p.peek()
	switch t.kind {
	case tParam:
		p.i++
		if p.used >= len(p.params) {
			panic(errorf("Number of parameters in request and statement don't match."))
		}
		v := p.params[p.used]
		p.used++
		return v
	case tString:
		p.i++
		return attr.Str(t.text)
	case tNumber:
		p.i++
		return p.number(t, "")
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			p.i++
			return attr.Boolean(true)
		case "FALSE":
			p.i++
			return attr.Boolean(false)
		case "NULL":
			p.i++
			return attr.Null()
		}
	case tPunct:
		switch t.text {
		case "-":
			p.i++
			n := p.peek()
			if n.kind != tNumber {
				p.fail("expected a number after '-'")
			}
			p.i++
			return p.number(n, "-")
		case "{":
			p.i++
			m := map[string]attr.Value{}
			if !p.isPunct("}") {
				for {
					k := p.peek()
					if k.kind != tString && k.kind != tQuoted {
						p.fail("expected a string map key but found %s", k.describe())
					}
					p.i++
					p.expectPunct(":")
					if _, dup := m[k.text]; dup {
						panic(errorf("%sduplicate map key '%s' at line %d, column %d", malformed, k.text, k.line, k.col))
					}
					m[k.text] = p.value()
					if !p.acceptPunct(",") {
						break
					}
				}
			}
			p.expectPunct("}")
			return attr.Value{Kind: attr.KindM, M: m}
		case "[":
			p.i++
			l := []attr.Value{}
			if !p.isPunct("]") {
				for {
					l = append(l, p.value())
					if !p.acceptPunct(",") {
						break
					}
				}
			}
			p.expectPunct("]")
			return attr.Value{Kind: attr.KindL, L: l}
		case "<<":
			return p.set()
		}
	}
	p.fail("expected a value but found %s", t.describe())
	return attr.Value{}
}

func (p *parser) number(t token, sign string) attr.Value {
	c, err := attr.CanonicalNumber(sign + t.text)
	if err != nil {
		panic(errorf("%sinvalid number %s at line %d, column %d", malformed, sign+t.text, t.line, t.col))
	}
	return attr.Value{Kind: attr.KindN, S: c}
}

func (p *parser) set() attr.Value {
	start := p.next()
	var members []attr.Value
	for {
		members = append(members, p.value())
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(">>")
	k := members[0].Kind
	out := attr.Value{}
	seen := map[string]bool{}
	for _, m := range members {
		if m.Kind != k || k != attr.KindS && k != attr.KindN && k != attr.KindB {
			panic(errorf("%sset members must all be strings, all numbers or all binaries at line %d, column %d", malformed, start.line, start.col))
		}
		key := m.S + string(m.B)
		if seen[key] {
			continue
		}
		seen[key] = true
		switch k {
		case attr.KindS, attr.KindN:
			out.SS = append(out.SS, m.S)
		case attr.KindB:
			out.BS = append(out.BS, m.B)
		}
	}
	out.Kind = map[attr.Kind]attr.Kind{attr.KindS: attr.KindSS, attr.KindN: attr.KindNS, attr.KindB: attr.KindBS}[k]
	return out
}
