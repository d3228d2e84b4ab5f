package expr

import (
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
)

// maxPathDepth is the number of elements a document path may have.
const maxPathDepth = 32

// maxListIndex is the largest list index an expression may name.
const maxListIndex = 1<<31 - 1

// String renders the path in expression syntax, e.g. a.b[2].c. Names are
// written as they are, so a name holding a dot or a bracket is ambiguous.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		if e.IsIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Name)
	}
	return b.String()
}

// Get returns the value at the path in item.
func (p Path) Get(item attr.Item) (attr.Value, bool) {
	if len(p) == 0 || p[0].IsIndex || item == nil {
		return attr.Value{}, false
	}
	v, ok := item[p[0].Name]
	if !ok {
		return attr.Value{}, false
	}
	for _, e := range p[1:] {
		if e.IsIndex {
			if v.Kind != attr.KindL || e.Index < 0 || e.Index >= len(v.L) {
				return attr.Value{}, false
			}
			v = v.L[e.Index]
			continue
		}
		if v.Kind != attr.KindM {
			return attr.Value{}, false
		}
		if v, ok = v.M[e.Name]; !ok {
			return attr.Value{}, false
		}
	}
	return v, true
}

// Equal reports whether p and q are the same path.
func (p Path) Equal(q Path) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// errString renders the path the way DynamoDB's messages do: [a, b, [2]].
func (p Path) errString() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		if e.IsIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
		} else {
			b.WriteString(e.Name)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// dumpString renders the path for the canonical AST dump: like String, but
// a name that is not a plain identifier is quoted.
func (p Path) dumpString() string {
	var b strings.Builder
	for i, e := range p {
		if e.IsIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		if plainName(e.Name) {
			b.WriteString(e.Name)
		} else {
			b.WriteString(strconv.Quote(e.Name))
		}
	}
	return b.String()
}

func plainName(s string) bool {
	if s == "" || !isLetter(s[0]) && s[0] != '_' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// comparePaths orders paths element by element: names by their bytes,
// indexes numerically, a name before an index, a prefix first.
func comparePaths(p, q Path) int {
	for i := 0; i < len(p) && i < len(q); i++ {
		a, b := p[i], q[i]
		switch {
		case a.IsIndex && b.IsIndex:
			if a.Index != b.Index {
				if a.Index < b.Index {
					return -1
				}
				return 1
			}
		case a.IsIndex:
			return 1
		case b.IsIndex:
			return -1
		default:
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
		}
	}
	return len(p) - len(q)
}

// pathChecker finds overlapping and conflicting document paths the way
// DynamoDB does for update and projection expressions: a path that equals
// or is a prefix of another overlaps it; two paths that reach the same
// element, one by name and one by index, conflict. An overlap is reported
// in preference to a conflict; "path one" is the earlier path.
type pathChecker struct {
	seen     []Path
	overlap  string
	conflict string
}

func (c *pathChecker) add(p Path) {
	if c.overlap != "" {
		return
	}
	for _, q := range c.seen {
		switch pathRelation(q, p) {
		case relOverlap:
			c.overlap = "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: " +
				q.errString() + ", path two: " + p.errString()
			return
		case relConflict:
			if c.conflict == "" {
				c.conflict = "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: " +
					q.errString() + ", path two: " + p.errString()
			}
		}
	}
	c.seen = append(c.seen, p)
}

func (c *pathChecker) err() string {
	if c.overlap != "" {
		return c.overlap
	}
	return c.conflict
}

type pathRel uint8

const (
	relNone pathRel = iota
	relOverlap
	relConflict
)

func pathRelation(p, q Path) pathRel {
	for i := 0; i < len(p) && i < len(q); i++ {
		if p[i].IsIndex != q[i].IsIndex {
			return relConflict
		}
		if p[i] != q[i] {
			return relNone
		}
	}
	return relOverlap
}
