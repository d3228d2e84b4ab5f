package expr

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Eval evaluates the condition against item (nil when there is no item, in
// which case every path is missing). As in DynamoDB, a comparison with a
// missing operand is false except <>, which is true; NOT negates.
func (c *Condition) Eval(item attr.Item) bool {
	if c == nil || c.root == nil {
		return true
	}
	return evalCond(c.root, item)
}

func evalCond(c *cond, item attr.Item) bool {
	switch c.op {
	case cAnd:
		for _, k := range c.kids {
			if !evalCond(k, item) {
				return false
			}
		}
		return true
	case cOr:
		for _, k := range c.kids {
			if evalCond(k, item) {
				return true
			}
		}
		return false
	case cNot:
		return !evalCond(c.kids[0], item)
	case cFunc:
		return evalFunc(c.call, item)
	case cEq, cNe:
		a, okA := resolveOperand(c.args[0], item)
		b, okB := resolveOperand(c.args[1], item)
		eq := okA && okB && attr.Equal(a, b)
		return eq == (c.op == cEq)
	case cLt, cLe, cGt, cGe:
		a, okA := resolveOperand(c.args[0], item)
		b, okB := resolveOperand(c.args[1], item)
		if !okA || !okB {
			return false
		}
		r, ok := compareValues(a, b)
		if !ok {
			return false
		}
		switch c.op {
		case cLt:
			return r < 0
		case cLe:
			return r <= 0
		case cGt:
			return r > 0
		}
		return r >= 0
	case cBetween:
		v, ok := resolveOperand(c.args[0], item)
		if !ok {
			return false
		}
		lo, ok := resolveOperand(c.args[1], item)
		if !ok {
			return false
		}
		hi, ok := resolveOperand(c.args[2], item)
		if !ok {
			return false
		}
		r1, ok1 := compareValues(lo, v)
		r2, ok2 := compareValues(v, hi)
		return ok1 && ok2 && r1 <= 0 && r2 <= 0
	case cIn:
		v, ok := resolveOperand(c.args[0], item)
		if !ok {
			return false
		}
		for _, a := range c.args[1:] {
			if w, ok := resolveOperand(a, item); ok && attr.Equal(v, w) {
				return true
			}
		}
		return false
	}
	return false
}

func evalFunc(o *operand, item attr.Item) bool {
	switch o.fn {
	case "attribute_exists":
		_, ok := o.args[0].path.Get(item)
		return ok
	case "attribute_not_exists":
		_, ok := o.args[0].path.Get(item)
		return !ok
	case "attribute_type":
		v, ok := resolveOperand(o.args[0], item)
		t, okT := resolveOperand(o.args[1], item)
		return ok && okT && t.Kind == attr.KindS && v.Kind.String() == t.S
	case "begins_with":
		v, ok := resolveOperand(o.args[0], item)
		p, okP := resolveOperand(o.args[1], item)
		if !ok || !okP || v.Kind != p.Kind {
			return false
		}
		switch v.Kind {
		case attr.KindS:
			return strings.HasPrefix(v.S, p.S)
		case attr.KindB:
			return bytes.HasPrefix(v.B, p.B)
		}
		return false
	case "contains":
		v, ok := resolveOperand(o.args[0], item)
		e, okE := resolveOperand(o.args[1], item)
		return ok && okE && contains(v, e)
	}
	return false
}

// contains implements the contains function: a substring of a string or
// binary, a member of a set, or an element of a list.
func contains(v, e attr.Value) bool {
	switch v.Kind {
	case attr.KindS:
		return e.Kind == attr.KindS && strings.Contains(v.S, e.S)
	case attr.KindB:
		return e.Kind == attr.KindB && bytes.Contains(v.B, e.B)
	case attr.KindSS:
		return e.Kind == attr.KindS && containsString(v.SS, e.S)
	case attr.KindNS:
		return e.Kind == attr.KindN && containsString(v.SS, e.S)
	case attr.KindBS:
		if e.Kind != attr.KindB {
			return false
		}
		for _, b := range v.BS {
			if bytes.Equal(b, e.B) {
				return true
			}
		}
		return false
	case attr.KindL:
		for _, x := range v.L {
			if attr.Equal(x, e) {
				return true
			}
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// resolveOperand returns the value of an operand for item.
func resolveOperand(o *operand, item attr.Item) (attr.Value, bool) {
	switch o.kind {
	case opdPath:
		return o.path.Get(item)
	case opdValue:
		return o.val, true
	case opdFunc:
		if o.fn == "size" {
			v, ok := resolveOperand(o.args[0], item)
			if !ok {
				return attr.Value{}, false
			}
			n, ok := sizeOf(v)
			if !ok {
				return attr.Value{}, false
			}
			return attr.Value{Kind: attr.KindN, S: strconv.Itoa(n)}, true
		}
	}
	return attr.Value{}, false
}

// sizeOf implements the size function: the length of a string in UTF-16
// code units (as DynamoDB counts it), of a binary in bytes, and the number
// of elements of a set, list or map. Other types have no size.
func sizeOf(v attr.Value) (int, bool) {
	switch v.Kind {
	case attr.KindS:
		n := 0
		for i := 0; i < len(v.S); {
			r, size := utf8.DecodeRuneInString(v.S[i:])
			i += size
			n++
			if r > 0xFFFF {
				n++
			}
		}
		return n, true
	case attr.KindB:
		return len(v.B), true
	case attr.KindSS, attr.KindNS:
		return len(v.SS), true
	case attr.KindBS:
		return len(v.BS), true
	case attr.KindL:
		return len(v.L), true
	case attr.KindM:
		return len(v.M), true
	}
	return 0, false
}

// compareValues orders two values of the same scalar type (S, N or B);
// ok is false for any other pair.
func compareValues(a, b attr.Value) (int, bool) {
	if a.Kind != b.Kind {
		return 0, false
	}
	switch a.Kind {
	case attr.KindS:
		return strings.Compare(a.S, b.S), true
	case attr.KindB:
		return bytes.Compare(a.B, b.B), true
	case attr.KindN:
		if c, ok := compareCanonical(a.S, b.S); ok {
			return c, true
		}
		return attr.CompareNumbers(a.S, b.S), true
	}
	return 0, false
}

// compareCanonical compares two numbers in canonical form (plain decimal,
// no redundant zeros, "0" for zero) without parsing them; ok is false when
// either is not in that form.
func compareCanonical(a, b string) (int, bool) {
	if a == b {
		return 0, true
	}
	na, ia, fa, ok := splitCanonical(a)
	if !ok {
		return 0, false
	}
	nb, ib, fb, ok := splitCanonical(b)
	if !ok {
		return 0, false
	}
	if na != nb {
		if na {
			return -1, true
		}
		return 1, true
	}
	c := len(ia) - len(ib)
	if c == 0 {
		c = strings.Compare(ia, ib)
	}
	if c == 0 {
		c = strings.Compare(fa, fb)
	}
	if c > 0 {
		c = 1
	} else if c < 0 {
		c = -1
	}
	if na {
		c = -c
	}
	return c, true
}

func splitCanonical(s string) (neg bool, intPart, frac string, ok bool) {
	if strings.HasPrefix(s, "-") {
		neg = true
		s = s[1:]
	}
	intPart = s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
		if frac == "" || frac[len(frac)-1] == '0' {
			return false, "", "", false
		}
	}
	if intPart == "" || len(intPart) > 1 && intPart[0] == '0' {
		return false, "", "", false
	}
	for i := 0; i < len(intPart); i++ {
		if !isDigit(intPart[i]) {
			return false, "", "", false
		}
	}
	for i := 0; i < len(frac); i++ {
		if !isDigit(frac[i]) {
			return false, "", "", false
		}
	}
	if neg && intPart == "0" && frac == "" {
		return false, "", "", false
	}
	return neg, intPart, frac, true
}
