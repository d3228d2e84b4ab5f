package expr

import (
	"bytes"
	"sort"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Messages of the errors DynamoDB reports while applying an update.
const (
	msgMissingAttr  = "The provided expression refers to an attribute that does not exist in the item"
	msgOperandType  = "An operand in the update expression has an incorrect data type"
	msgInvalidPath  = "The document path provided in the update expression is invalid for update"
	msgTypeMismatch = "Type mismatch for attribute to update"
)

// Apply returns a copy of item (nil for a new item) with the update
// applied. item is not modified, and shares no memory with the result. On
// error nothing is returned; errors are *Error with DynamoDB's message
// (without an "Invalid UpdateExpression" prefix).
//
// As in DynamoDB, every operand is read from item as it was before the
// update; SET of a list index past the end appends; list elements removed
// by index are the elements at those indexes before the update.
func (u *Update) Apply(item attr.Item) (attr.Item, error) {
	// Evaluate the SET values against the original item.
	vals := make([]attr.Value, len(u.actions))
	for i := range u.actions {
		a := &u.actions[i]
		if a.kind == aSet && a.val != nil {
			v, msg := evalUOperand(a.val, item)
			if msg != "" {
				return nil, &Error{Message: msg}
			}
			vals[i] = v.Clone()
		}
	}
	ap := applier{item: item.Clone(), legacy: u.legacy}
	if ap.item == nil {
		ap.item = make(attr.Item)
	}
	var removes []int
	for i := range u.actions {
		a := &u.actions[i]
		var msg string
		switch a.kind {
		case aSet:
			if a.val == nil { // legacy PUT
				vals[i] = a.lit.Clone()
			}
			v := vals[i]
			msg = ap.modify(a.path, func(attr.Value, bool) (attr.Value, leafOp, string) {
				return v, leafSet, ""
			})
		case aAdd:
			msg = ap.modify(a.path, ap.add(a.lit))
		case aDelete:
			if u.legacy && !a.hasLit {
				removes = append(removes, i)
				continue
			}
			msg = ap.modify(a.path, ap.del(a.lit))
		case aRemove:
			removes = append(removes, i)
		}
		if msg != "" {
			return nil, &Error{Message: msg}
		}
	}
	if msg := ap.flushAppends(); msg != "" {
		return nil, &Error{Message: msg}
	}
	// Remove list elements from the highest index down, so that every index
	// names an element of the list as it was.
	sort.SliceStable(removes, func(x, y int) bool {
		return comparePaths(u.actions[removes[x]].path, u.actions[removes[y]].path) > 0
	})
	for _, i := range removes {
		msg := ap.modify(u.actions[i].path, func(attr.Value, bool) (attr.Value, leafOp, string) {
			return attr.Value{}, leafRemove, ""
		})
		if msg != "" {
			return nil, &Error{Message: msg}
		}
	}
	return ap.item, nil
}

// evalUOperand computes a SET value from the original item.
func evalUOperand(o *uoperand, item attr.Item) (attr.Value, string) {
	switch o.kind {
	case uPath:
		v, ok := o.path.Get(item)
		if !ok {
			return attr.Value{}, msgMissingAttr
		}
		return v, ""
	case uValue:
		return o.val, ""
	case uPlus, uMinus:
		a, msg := evalUOperand(o.args[0], item)
		if msg != "" {
			return attr.Value{}, msg
		}
		if a.Kind != attr.KindN {
			return attr.Value{}, msgOperandType
		}
		b, msg := evalUOperand(o.args[1], item)
		if msg != "" {
			return attr.Value{}, msg
		}
		if b.Kind != attr.KindN {
			return attr.Value{}, msgOperandType
		}
		s, err := attr.AddNumbers(a.S, b.S, o.kind == uMinus)
		if err != nil {
			return attr.Value{}, err.Error()
		}
		return attr.Value{Kind: attr.KindN, S: s}, ""
	case uFunc:
		switch o.fn {
		case "if_not_exists":
			if v, ok := o.args[0].path.Get(item); ok {
				return v, ""
			}
			return evalUOperand(o.args[1], item)
		case "list_append":
			a, msg := evalUOperand(o.args[0], item)
			if msg != "" {
				return attr.Value{}, msg
			}
			if a.Kind != attr.KindL {
				return attr.Value{}, msgOperandType
			}
			b, msg := evalUOperand(o.args[1], item)
			if msg != "" {
				return attr.Value{}, msg
			}
			if b.Kind != attr.KindL {
				return attr.Value{}, msgOperandType
			}
			l := make([]attr.Value, 0, len(a.L)+len(b.L))
			l = append(l, a.L...)
			l = append(l, b.L...)
			return attr.Value{Kind: attr.KindL, L: l}, ""
		}
	}
	return attr.Value{}, msgOperandType
}

// leafOp says what a leaf function does to the element a path names.
type leafOp uint8

const (
	leafKeep leafOp = iota
	leafSet
	leafRemove
)

// leafFunc computes the new value of the element a path names from its old
// value (exists is false when there is none).
type leafFunc func(old attr.Value, exists bool) (attr.Value, leafOp, string)

// pendingAppend is a value SET or ADDed at a list index past the end of
// the list; such values are appended, in index order, once every action
// has run.
type pendingAppend struct {
	parent Path
	index  int
	val    attr.Value
}

type applier struct {
	item    attr.Item
	legacy  bool
	pending []pendingAppend
}

// modify applies f to the element path names in ap.item.
func (ap *applier) modify(path Path, f leafFunc) string {
	name := path[0].Name
	old, ok := ap.item[name]
	if len(path) == 1 {
		nv, op, msg := f(old, ok)
		if msg != "" {
			return msg
		}
		switch op {
		case leafSet:
			ap.item[name] = nv
		case leafRemove:
			delete(ap.item, name)
		}
		return ""
	}
	if !ok {
		return msgInvalidPath
	}
	nv, msg := ap.modifyValue(old, path, 1, f)
	if msg != "" {
		return msg
	}
	ap.item[name] = nv
	return ""
}

// modifyValue applies f below v, which the first i elements of path name,
// and returns v updated.
func (ap *applier) modifyValue(v attr.Value, path Path, i int, f leafFunc) (attr.Value, string) {
	e := path[i]
	last := i == len(path)-1
	if e.IsIndex {
		if v.Kind != attr.KindL {
			return v, msgInvalidPath
		}
		if e.Index >= len(v.L) {
			if !last {
				return v, msgInvalidPath
			}
			nv, op, msg := f(attr.Value{}, false)
			if msg != "" {
				return v, msg
			}
			if op == leafSet {
				ap.pending = append(ap.pending, pendingAppend{parent: path[:i], index: e.Index, val: nv})
			}
			return v, ""
		}
		if !last {
			nv, msg := ap.modifyValue(v.L[e.Index], path, i+1, f)
			if msg != "" {
				return v, msg
			}
			v.L[e.Index] = nv
			return v, ""
		}
		nv, op, msg := f(v.L[e.Index], true)
		if msg != "" {
			return v, msg
		}
		switch op {
		case leafSet:
			v.L[e.Index] = nv
		case leafRemove:
			v.L = append(v.L[:e.Index], v.L[e.Index+1:]...)
		}
		return v, ""
	}
	if v.Kind != attr.KindM {
		return v, msgInvalidPath
	}
	old, ok := v.M[e.Name]
	if !last {
		if !ok {
			return v, msgInvalidPath
		}
		nv, msg := ap.modifyValue(old, path, i+1, f)
		if msg != "" {
			return v, msg
		}
		v.M[e.Name] = nv
		return v, ""
	}
	nv, op, msg := f(old, ok)
	if msg != "" {
		return v, msg
	}
	switch op {
	case leafSet:
		if v.M == nil {
			v.M = make(map[string]attr.Value)
		}
		v.M[e.Name] = nv
	case leafRemove:
		delete(v.M, e.Name)
	}
	return v, ""
}

// flushAppends appends the values set past the end of lists.
func (ap *applier) flushAppends() string {
	if len(ap.pending) == 0 {
		return ""
	}
	sort.SliceStable(ap.pending, func(x, y int) bool {
		a, b := ap.pending[x], ap.pending[y]
		if c := comparePaths(a.parent, b.parent); c != 0 {
			return c < 0
		}
		return a.index < b.index
	})
	for i := 0; i < len(ap.pending); {
		j := i + 1
		for j < len(ap.pending) && ap.pending[j].parent.Equal(ap.pending[i].parent) {
			j++
		}
		group := ap.pending[i:j]
		msg := ap.modify(group[0].parent, func(old attr.Value, exists bool) (attr.Value, leafOp, string) {
			if !exists || old.Kind != attr.KindL {
				return old, leafKeep, msgInvalidPath
			}
			for _, p := range group {
				old.L = append(old.L, p.val)
			}
			return old, leafSet, ""
		})
		if msg != "" {
			return msg
		}
		i = j
	}
	ap.pending = nil
	return ""
}

// add returns the leaf function of ADD: number addition, set union, and
// (for legacy AttributeUpdates) list append.
func (ap *applier) add(v attr.Value) leafFunc {
	mismatch := msgOperandType
	if ap.legacy {
		mismatch = msgTypeMismatch
	}
	return func(old attr.Value, exists bool) (attr.Value, leafOp, string) {
		if !exists {
			return v.Clone(), leafSet, ""
		}
		if old.Kind != v.Kind {
			return old, leafKeep, mismatch
		}
		switch v.Kind {
		case attr.KindN:
			s, err := attr.AddNumbers(old.S, v.S, false)
			if err != nil {
				return old, leafKeep, err.Error()
			}
			return attr.Value{Kind: attr.KindN, S: s}, leafSet, ""
		case attr.KindSS, attr.KindNS:
			out := old
			out.SS = append([]string(nil), old.SS...)
			for _, s := range v.SS {
				if !containsString(out.SS, s) {
					out.SS = append(out.SS, s)
				}
			}
			return out, leafSet, ""
		case attr.KindBS:
			out := old
			out.BS = append([][]byte(nil), old.BS...)
			for _, b := range v.BS {
				if !containsBytes(out.BS, b) {
					out.BS = append(out.BS, append([]byte(nil), b...))
				}
			}
			return out, leafSet, ""
		case attr.KindL:
			out := old
			out.L = append(append([]attr.Value(nil), old.L...), v.Clone().L...)
			return out, leafSet, ""
		}
		return old, leafKeep, mismatch
	}
}

// del returns the leaf function of DELETE: set difference, removing the
// attribute when the set empties.
func (ap *applier) del(v attr.Value) leafFunc {
	mismatch := msgOperandType
	if ap.legacy {
		mismatch = msgTypeMismatch
	}
	return func(old attr.Value, exists bool) (attr.Value, leafOp, string) {
		if !exists {
			return old, leafKeep, ""
		}
		if old.Kind != v.Kind {
			return old, leafKeep, mismatch
		}
		out := old
		switch v.Kind {
		case attr.KindSS, attr.KindNS:
			out.SS = nil
			for _, s := range old.SS {
				if !containsString(v.SS, s) {
					out.SS = append(out.SS, s)
				}
			}
			if len(out.SS) == 0 {
				return old, leafRemove, ""
			}
		case attr.KindBS:
			out.BS = nil
			for _, b := range old.BS {
				if !containsBytes(v.BS, b) {
					out.BS = append(out.BS, b)
				}
			}
			if len(out.BS) == 0 {
				return old, leafRemove, ""
			}
		default:
			return old, leafKeep, mismatch
		}
		return out, leafSet, ""
	}
}

func containsBytes(bs [][]byte, b []byte) bool {
	for _, x := range bs {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}
