package expr

import (
	"sort"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Projection is a parsed ProjectionExpression.
type Projection []Path

// ParseProjection parses a ProjectionExpression.
func ParseProjection(s string, params *Params) (Projection, error) {
	if err := checkSource(ProjectionExpression, s); err != nil {
		return nil, err
	}
	p := newParser(ProjectionExpression, s, nil)
	var raws [][]rawElem
	for {
		if !p.pathStart() {
			p.syntaxError()
			return nil, p.err
		}
		raw := p.parsePath()
		if p.err != nil {
			return nil, p.err
		}
		raws = append(raws, raw)
		if p.peek().kind != tComma {
			break
		}
		p.advance()
	}
	if p.peek().kind != tEOF {
		p.syntaxError()
		return nil, p.err
	}
	for _, raw := range raws {
		if w := firstReserved(raw); w != "" {
			return nil, Errorf("Invalid %s: %s", ProjectionExpression, errReserved(w))
		}
	}
	pr := make(Projection, len(raws))
	var pc pathChecker
	for i, raw := range raws {
		path, msg := resolvePath(raw, params)
		if msg != "" {
			return nil, Errorf("Invalid %s: %s", ProjectionExpression, msg)
		}
		pr[i] = path
	}
	for _, path := range pr {
		pc.add(path)
	}
	if msg := pc.err(); msg != "" {
		return nil, Errorf("Invalid %s: %s", ProjectionExpression, msg)
	}
	return pr, nil
}

// Apply returns a new item holding only the projected paths of item. A
// nested path yields the maps and lists leading to it, holding only the
// projected elements; elements projected from one list keep their list
// order. Paths missing from item are left out. The result shares no memory
// with item; a nil item gives nil.
func (pr Projection) Apply(item attr.Item) attr.Item {
	if item == nil {
		return nil
	}
	out := make(attr.Item, len(pr))
	var root *projNode
	for _, p := range pr {
		if len(p) == 0 || p[0].IsIndex {
			continue
		}
		v, ok := p.Get(item)
		if !ok {
			continue
		}
		if len(p) == 1 && root == nil {
			out[p[0].Name] = v.Clone()
			continue
		}
		if root == nil {
			root = &projNode{}
			for name, v := range out {
				root.child(PathElem{Name: name}).setFull(v)
			}
		}
		n := root
		for _, e := range p {
			n = n.child(e)
		}
		n.setFull(v)
	}
	if root == nil {
		return out
	}
	for name, n := range root.names {
		out[name] = n.build()
	}
	return out
}

// projNode is a node of the tree of projected paths.
type projNode struct {
	full  bool
	val   attr.Value
	names map[string]*projNode
	idx   map[int]*projNode
}

func (n *projNode) child(e PathElem) *projNode {
	if e.IsIndex {
		if n.idx == nil {
			n.idx = make(map[int]*projNode)
		}
		c := n.idx[e.Index]
		if c == nil {
			c = &projNode{}
			n.idx[e.Index] = c
		}
		return c
	}
	if n.names == nil {
		n.names = make(map[string]*projNode)
	}
	c := n.names[e.Name]
	if c == nil {
		c = &projNode{}
		n.names[e.Name] = c
	}
	return c
}

func (n *projNode) setFull(v attr.Value) {
	n.full = true
	n.val = v
}

func (n *projNode) build() attr.Value {
	if n.full {
		return n.val.Clone()
	}
	if n.idx != nil {
		keys := make([]int, 0, len(n.idx))
		for k := range n.idx {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		l := make([]attr.Value, len(keys))
		for i, k := range keys {
			l[i] = n.idx[k].build()
		}
		return attr.Value{Kind: attr.KindL, L: l}
	}
	m := make(map[string]attr.Value, len(n.names))
	for k, c := range n.names {
		m[k] = c.build()
	}
	return attr.Value{Kind: attr.KindM, M: m}
}
