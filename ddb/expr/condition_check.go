package expr

import (
	"encoding/base64"
	"strconv"

	"github.com/quarrydb/quarry/ddb/attr"
)

// allTypesSymbol is how DynamoDB names "any type" in an operand type error.
const allTypesSymbol = "{NS,SS,L,BS,N,M,B,BOOL,NULL,S}"

func itoa(n int) string { return strconv.Itoa(n) }

// condValidator resolves the placeholders of a condition tree and checks
// its operators and functions, in the order DynamoDB does: depth first,
// operands before the operator that takes them, stopping at the first
// error.
type condValidator struct {
	params *Params
	err    string
	ops    int
}

func (v *condValidator) cond(c *cond) {
	switch c.op {
	case cAnd, cOr:
		for _, k := range c.kids {
			if v.cond(k); v.err != "" {
				return
			}
		}
		v.ops += len(c.kids) - 1
		return
	case cNot:
		v.cond(c.kids[0])
		v.ops++
		return
	case cFunc:
		v.function(c.call)
		return
	}
	for _, a := range c.args {
		if v.operand(a); v.err != "" {
			return
		}
	}
	v.ops++
	name := condOpNames[c.op]
	switch c.op {
	case cLt, cLe, cGt, cGe, cBetween:
		for _, a := range c.args {
			if t := staticType(a); t != "" && t != "S" && t != "N" && t != "B" {
				v.err = errOperandType(name, t)
				return
			}
		}
	}
	if v.distinct(name, c.args); v.err != "" {
		return
	}
	switch c.op {
	case cBetween:
		v.between(c.args[1], c.args[2])
	case cIn:
		if n := len(c.args) - 1; n > MaxInOperands {
			v.err = "The IN operator is provided with too many operands; number of operands: " + itoa(n)
		}
	}
}

func (v *condValidator) operand(o *operand) {
	switch o.kind {
	case opdPath:
		o.path, v.err = resolvePath(o.raw, v.params)
	case opdValue:
		val, ok := v.params.value(o.ph)
		if !ok {
			v.err = errUndefinedValue(o.ph)
			return
		}
		o.val = val
	case opdFunc:
		v.function(o)
	}
}

func (v *condValidator) function(o *operand) {
	for _, a := range o.args {
		if v.operand(a); v.err != "" {
			return
		}
	}
	v.ops++
	if n := condFuncArity[o.fn]; n != len(o.args) {
		v.err = "Incorrect number of operands for operator or function; operator or function: " + o.fn +
			", number of operands: " + itoa(len(o.args))
		return
	}
	switch o.fn {
	case "begins_with":
		for _, a := range o.args {
			if t := staticType(a); t != "" && t != "S" && t != "B" {
				v.err = errOperandType(o.fn, t)
				return
			}
		}
	case "size":
		switch t := staticType(o.args[0]); t {
		case "N", "BOOL", "NULL":
			v.err = errOperandType(o.fn, t)
			return
		}
	}
	if v.distinct(o.fn, o.args); v.err != "" {
		return
	}
	switch o.fn {
	case "attribute_exists", "attribute_not_exists":
		if o.args[0].kind != opdPath {
			v.err = "Operator or function requires a document path; operator or function: " + o.fn
		}
	case "attribute_type":
		t := o.args[1]
		if t.kind != opdValue || t.val.Kind != attr.KindS {
			sym := staticType(t)
			if sym == "" {
				sym = allTypesSymbol
			}
			v.err = errOperandType(o.fn, sym)
			return
		}
		if _, ok := attr.KindFromString(t.val.S); !ok {
			v.err = "Invalid attribute type name found; type: " + t.val.S + ", valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"
		}
	}
}

// distinct reports an operator whose first operand is a path repeated
// among its other operands.
func (v *condValidator) distinct(name string, args []*operand) {
	if len(args) < 2 || args[0].kind != opdPath {
		return
	}
	for _, a := range args[1:] {
		if a.kind == opdPath && a.path.Equal(args[0].path) {
			v.err = "The first operand must be distinct from the remaining operands for this operator or function; operator: " +
				name + ", first operand: " + args[0].path.errString()
			return
		}
	}
}

// between checks literal BETWEEN bounds: same type, lower <= upper.
func (v *condValidator) between(lo, hi *operand) {
	if lo.kind != opdValue || hi.kind != opdValue {
		return
	}
	if lo.val.Kind != hi.val.Kind {
		v.err = "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: " +
			boundString(lo.val) + ", upper bound operand: " + boundString(hi.val)
		return
	}
	if c, ok := compareValues(lo.val, hi.val); ok && c > 0 {
		v.err = "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: " +
			boundString(lo.val) + ", upper bound operand: " + boundString(hi.val)
	}
}

// boundString renders a value the way DynamoDB's BETWEEN errors do:
// AttributeValue: {N:5}.
func boundString(v attr.Value) string {
	var s string
	switch v.Kind {
	case attr.KindS, attr.KindN:
		s = v.S
	case attr.KindB:
		s = base64.StdEncoding.EncodeToString(v.B)
	default:
		b, _ := v.MarshalJSON()
		return "AttributeValue: " + string(b)
	}
	return "AttributeValue: {" + v.Kind.String() + ":" + s + "}"
}

func errOperandType(fn, typ string) string {
	return "Incorrect operand type for operator or function; operator or function: " + fn + ", operand type: " + typ
}

// staticType is the type an operand is known to have before evaluation:
// a literal's type, N for size(), or "" when it depends on the item.
func staticType(o *operand) string {
	switch o.kind {
	case opdValue:
		return o.val.Kind.String()
	case opdFunc:
		if o.fn == "size" {
			return "N"
		}
	}
	return ""
}
