package expr

import (
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
)

// String renders the parsed condition as a canonical S-expression, with
// placeholders resolved: (AND (= status {"S":"x"}) (attribute_exists a.b[1])).
func (c *Condition) String() string {
	if c == nil || c.root == nil {
		return "<nil>"
	}
	var b strings.Builder
	dumpCond(&b, c.root)
	return b.String()
}

func dumpCond(b *strings.Builder, c *cond) {
	switch c.op {
	case cAnd, cOr, cNot:
		b.WriteByte('(')
		b.WriteString(condOpNames[c.op])
		for _, k := range c.kids {
			b.WriteByte(' ')
			dumpCond(b, k)
		}
		b.WriteByte(')')
	case cFunc:
		dumpOperand(b, c.call)
	default:
		b.WriteByte('(')
		b.WriteString(condOpNames[c.op])
		for _, a := range c.args {
			b.WriteByte(' ')
			dumpOperand(b, a)
		}
		b.WriteByte(')')
	}
}

func dumpOperand(b *strings.Builder, o *operand) {
	switch o.kind {
	case opdPath:
		b.WriteString(o.path.dumpString())
	case opdValue:
		dumpValue(b, o.val)
	case opdFunc:
		b.WriteByte('(')
		b.WriteString(o.fn)
		for _, a := range o.args {
			b.WriteByte(' ')
			dumpOperand(b, a)
		}
		b.WriteByte(')')
	}
}

func dumpValue(b *strings.Builder, v attr.Value) {
	j, _ := v.MarshalJSON()
	b.Write(j)
}

// String renders the parsed update, one action per line, with placeholders
// resolved and + and - written as (+ a b).
func (u *Update) String() string {
	if u == nil {
		return "<nil>"
	}
	var b strings.Builder
	for i, a := range u.actions {
		if i > 0 {
			b.WriteByte('\n')
		}
		name := actNames[a.kind]
		if a.kind == aSet && a.val == nil {
			name = "PUT"
		}
		if u.legacy && a.kind == aDelete && !a.hasLit {
			name = "REMOVE"
		}
		b.WriteString(name)
		b.WriteByte(' ')
		b.WriteString(a.path.dumpString())
		switch {
		case a.val != nil:
			b.WriteString(" = ")
			dumpUOperand(&b, a.val)
		case a.kind == aSet || a.kind == aAdd || a.kind == aDelete && (a.hasLit || !u.legacy):
			b.WriteByte(' ')
			dumpValue(&b, a.lit)
		}
	}
	return b.String()
}

func dumpUOperand(b *strings.Builder, o *uoperand) {
	switch o.kind {
	case uPath:
		b.WriteString(o.path.dumpString())
	case uValue:
		dumpValue(b, o.val)
	default:
		b.WriteByte('(')
		switch o.kind {
		case uPlus:
			b.WriteByte('+')
		case uMinus:
			b.WriteByte('-')
		default:
			b.WriteString(o.fn)
		}
		for _, a := range o.args {
			b.WriteByte(' ')
			dumpUOperand(b, a)
		}
		b.WriteByte(')')
	}
}

// String renders the key condition, one term per line: pk = {"S":"a"}.
func (kc *KeyCondition) String() string {
	if kc == nil {
		return "<nil>"
	}
	var b strings.Builder
	for i, t := range kc.Terms {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(Path{{Name: t.Name}}.dumpString())
		b.WriteByte(' ')
		b.WriteString(t.Op)
		for _, v := range t.Values {
			b.WriteByte(' ')
			dumpValue(&b, v)
		}
	}
	return b.String()
}

// String renders the projection as a comma-separated list of paths.
func (pr Projection) String() string {
	parts := make([]string, len(pr))
	for i, p := range pr {
		parts[i] = p.dumpString()
	}
	return strings.Join(parts, ", ")
}

// Names returns the top-level attribute names the condition refers to, in
// sorted order, for checks such as "Filter Expression can only contain
// non-primary key attributes".
func (c *Condition) Names() []string {
	if c == nil || c.root == nil {
		return nil
	}
	set := map[string]struct{}{}
	walkCond(c.root, func(o *operand) string {
		if o.kind == opdPath && len(o.path) > 0 {
			set[o.path[0].Name] = struct{}{}
		}
		return ""
	})
	return sortedKeys(set)
}

// Paths returns the document paths the condition refers to, in the order
// written (a path written twice appears twice).
func (c *Condition) Paths() []Path {
	if c == nil || c.root == nil {
		return nil
	}
	var out []Path
	walkCond(c.root, func(o *operand) string {
		if o.kind == opdPath {
			out = append(out, o.path)
		}
		return ""
	})
	return out
}
