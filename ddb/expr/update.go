package expr

import (
	"github.com/quarrydb/quarry/ddb/attr"
)

// updateKeywords are the identifiers the update grammar reserves.
var updateKeywords = []string{"SET", "REMOVE", "ADD", "DELETE"}

type uopKind uint8

const (
	uPath uopKind = iota
	uValue
	uFunc
	uPlus
	uMinus
)

// uoperand is a node of a SET value: a path, a :value, a function call, or
// a + or - of two operands.
type uoperand struct {
	kind uopKind
	raw  []rawElem
	path Path
	ph   string
	val  attr.Value
	fn   string
	args []*uoperand
	// grouped marks a + or - written inside parentheses.
	grouped bool
}

type actKind uint8

const (
	aSet actKind = iota
	aRemove
	aAdd
	aDelete
)

var actNames = [...]string{aSet: "SET", aRemove: "REMOVE", aAdd: "ADD", aDelete: "DELETE"}

// action is one action of an update: SET path = value, REMOVE path,
// ADD path :v, DELETE path :v.
type action struct {
	kind actKind
	raw  []rawElem
	path Path
	val  *uoperand // SET
	ph   string    // ADD, DELETE
	lit  attr.Value
	// hasLit marks a legacy DELETE that names values to remove.
	hasLit bool
}

// Update is a parsed UpdateExpression (or legacy AttributeUpdates).
type Update struct {
	actions []action
	legacy  bool
}

// ParseUpdate parses an UpdateExpression.
func ParseUpdate(s string, params *Params) (*Update, error) {
	if err := checkSource(UpdateExpression, s); err != nil {
		return nil, err
	}
	p := newParser(UpdateExpression, s, updateKeywords)
	u, dup := p.parseUpdate()
	if p.err != nil {
		return nil, p.err
	}
	if msg := u.validate(dup, params); msg != "" {
		return nil, Errorf("Invalid %s: %s", UpdateExpression, msg)
	}
	return u, nil
}

// parseUpdate parses the sections of an update. dup is the first section
// keyword that appears twice.
func (p *parser) parseUpdate() (u *Update, dup string) {
	u = &Update{}
	var seen [4]bool
	for p.err == nil {
		t := p.peek()
		kind := -1
		for k, kw := range actNames {
			if t.isKeyword(p.src, kw) {
				kind = k
			}
		}
		if kind < 0 {
			p.syntaxError()
			return nil, ""
		}
		p.advance()
		if seen[kind] && dup == "" {
			dup = actNames[kind]
		}
		seen[kind] = true
		for {
			a := p.parseAction(actKind(kind))
			if p.err != nil {
				return nil, ""
			}
			u.actions = append(u.actions, a)
			if p.peek().kind != tComma {
				break
			}
			p.advance()
		}
		if p.peek().kind == tEOF {
			break
		}
	}
	return u, dup
}

func (p *parser) parseAction(kind actKind) action {
	a := action{kind: kind}
	if !p.pathStart() {
		p.syntaxError()
		return a
	}
	a.raw = p.parsePath()
	if p.err != nil {
		return a
	}
	switch kind {
	case aSet:
		if !p.expect(tEq) {
			return a
		}
		a.val = p.parseSum()
	case aAdd, aDelete:
		t := p.peek()
		if t.kind != tValue {
			p.syntaxError()
			return a
		}
		p.advance()
		a.ph = p.text(t)
	}
	return a
}

// parseSum parses a SET value: an operand, or two operands joined by + or -.
func (p *parser) parseSum() *uoperand {
	left := p.parseTerm()
	if p.err != nil {
		return nil
	}
	t := p.peek()
	if t.kind != tPlus && t.kind != tMinus {
		return left
	}
	if left.grouped {
		p.syntaxError()
		return nil
	}
	p.advance()
	right := p.parseTerm()
	if p.err != nil {
		return nil
	}
	if right.grouped {
		p.syntaxError()
		return nil
	}
	kind := uPlus
	if t.kind == tMinus {
		kind = uMinus
	}
	return &uoperand{kind: kind, args: []*uoperand{left, right}}
}

// parseTerm parses an operand of a SET value, possibly parenthesised.
func (p *parser) parseTerm() *uoperand {
	if p.peek().kind != tLParen {
		return p.parseUOperand()
	}
	p.advance()
	if !p.enter() {
		return nil
	}
	inner := p.parseSum()
	p.leave()
	if p.err != nil || !p.expect(tRParen) {
		return nil
	}
	if inner.kind == uPlus || inner.kind == uMinus {
		inner.grouped = true
	}
	return inner
}

func (p *parser) parseUOperand() *uoperand {
	t := p.peek()
	switch {
	case t.kind == tValue:
		p.advance()
		return &uoperand{kind: uValue, ph: p.text(t)}
	case t.kind == tIdent && !p.isKeyword(t) && p.peekAt(1).kind == tLParen:
		p.advance()
		p.advance()
		if !p.enter() {
			return nil
		}
		defer p.leave()
		o := &uoperand{kind: uFunc, fn: p.text(t)}
		for {
			a := p.parseTerm()
			if p.err != nil {
				return nil
			}
			if a.grouped {
				p.syntaxError()
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
		return &uoperand{kind: uPath, raw: raw}
	}
	p.syntaxError()
	return nil
}

// walk calls f on o and its operands in the order written, stopping at the
// first message.
func (o *uoperand) walk(f func(*uoperand) string) string {
	if msg := f(o); msg != "" {
		return msg
	}
	for _, a := range o.args {
		if msg := a.walk(f); msg != "" {
			return msg
		}
	}
	return ""
}

// walkActions calls f on the SET operands of every action in order.
func (u *Update) walkOperands(f func(*uoperand) string) string {
	for i := range u.actions {
		if v := u.actions[i].val; v != nil {
			if msg := v.walk(f); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// validate runs DynamoDB's checks on a parsed update, in DynamoDB's order,
// and resolves its placeholders.
func (u *Update) validate(dup string, params *Params) string {
	// Reserved words, in paths and operands, in the order written.
	for i := range u.actions {
		a := &u.actions[i]
		if w := firstReserved(a.raw); w != "" {
			return errReserved(w)
		}
		if a.val != nil {
			msg := a.val.walk(func(o *uoperand) string {
				if o.kind == uPath {
					if w := firstReserved(o.raw); w != "" {
						return errReserved(w)
					}
				}
				return ""
			})
			if msg != "" {
				return msg
			}
		}
	}
	// Unknown functions.
	msg := u.walkOperands(func(o *uoperand) string {
		if o.kind != uFunc {
			return ""
		}
		if _, ok := updateFuncArity[o.fn]; ok {
			return ""
		}
		if _, ok := condFuncArity[o.fn]; ok {
			return "The function is not allowed in an update expression; function: " + o.fn
		}
		return "Invalid function name; function: " + o.fn
	})
	if msg != "" {
		return msg
	}
	if dup != "" {
		return "The \"" + dup + "\" section can only be used once in an update expression;"
	}
	// Names, then values.
	for i := range u.actions {
		a := &u.actions[i]
		if a.path, msg = resolvePath(a.raw, params); msg != "" {
			return msg
		}
		if a.val != nil {
			msg = a.val.walk(func(o *uoperand) string {
				var m string
				if o.kind == uPath {
					o.path, m = resolvePath(o.raw, params)
				}
				return m
			})
			if msg != "" {
				return msg
			}
		}
	}
	for i := range u.actions {
		a := &u.actions[i]
		if a.ph != "" {
			v, ok := params.value(a.ph)
			if !ok {
				return errUndefinedValue(a.ph)
			}
			a.lit = v
		}
		if a.val != nil {
			msg = a.val.walk(func(o *uoperand) string {
				if o.kind == uValue {
					v, ok := params.value(o.ph)
					if !ok {
						return errUndefinedValue(o.ph)
					}
					o.val = v
				}
				return ""
			})
			if msg != "" {
				return msg
			}
		}
	}
	// Overlapping and conflicting paths.
	var pc pathChecker
	for i := range u.actions {
		pc.add(u.actions[i].path)
	}
	if msg := pc.err(); msg != "" {
		return msg
	}
	// ADD and DELETE operands.
	for i := range u.actions {
		a := &u.actions[i]
		if a.kind != aAdd && a.kind != aDelete {
			continue
		}
		switch a.lit.Kind {
		case attr.KindSS, attr.KindNS, attr.KindBS:
		case attr.KindN:
			if a.kind == aDelete {
				return errActionOperand(a.kind, a.lit.Kind)
			}
		default:
			return errActionOperand(a.kind, a.lit.Kind)
		}
	}
	// Functions and arithmetic, operands first.
	ops := 0
	for i := range u.actions {
		if a := u.actions[i].val; a != nil {
			if msg := checkUOperand(a, &ops); msg != "" {
				return msg
			}
		}
	}
	if ops > MaxOperators {
		return "The expression contains too many operators; operator count: " + itoa(ops)
	}
	return ""
}

// typeWords are the type names DynamoDB uses in ADD and DELETE operand
// errors.
var typeWords = map[attr.Kind]string{
	attr.KindS: "STRING", attr.KindN: "NUMBER", attr.KindB: "BINARY", attr.KindNULL: "NULL",
	attr.KindBOOL: "BOOLEAN", attr.KindL: "LIST", attr.KindM: "MAP",
}

func errActionOperand(kind actKind, t attr.Kind) string {
	return "Incorrect operand type for operator or function; operator: " + actNames[kind] + ", operand type: " + typeWords[t]
}

// checkUOperand checks the functions and arithmetic of a SET value.
func checkUOperand(o *uoperand, ops *int) string {
	for _, a := range o.args {
		if msg := checkUOperand(a, ops); msg != "" {
			return msg
		}
	}
	var name, want string
	switch o.kind {
	case uPlus:
		name, want = "+", "N"
	case uMinus:
		name, want = "-", "N"
	case uFunc:
		name = o.fn
		if n := updateFuncArity[o.fn]; n != len(o.args) {
			return "Incorrect number of operands for operator or function; operator or function: " + o.fn +
				", number of operands: " + itoa(len(o.args))
		}
		switch o.fn {
		case "if_not_exists":
			if o.args[0].kind != uPath {
				return "Operator or function requires a document path; operator or function: " + o.fn
			}
		case "list_append":
			// DynamoDB accepts list_append's operands as paths, values
			// and if_not_exists, but not another list_append.
			for _, a := range o.args {
				if a.kind == uFunc && a.fn == "list_append" {
					return errMisused(o.fn)
				}
			}
			want = "L"
		}
	default:
		return ""
	}
	*ops++
	if want != "" {
		for _, a := range o.args {
			if a.kind == uValue && a.val.Kind.String() != want {
				return errOperandType(name, a.val.Kind.String())
			}
		}
	}
	return ""
}

// Paths returns the document paths the update sets, removes, adds or
// deletes, in the order written.
func (u *Update) Paths() []Path {
	out := make([]Path, len(u.actions))
	for i, a := range u.actions {
		out[i] = a.path
	}
	return out
}
