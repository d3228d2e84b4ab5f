package expr

import (
	"github.com/quarrydb/quarry/ddb/attr"
)

// Kinds of the legacy (pre-expression) parameters, for FromFilter and for
// error prefixes.
const (
	// QueryFilter is Query's legacy QueryFilter parameter.
	QueryFilter Kind = iota + 100
	// ScanFilter is Scan's legacy ScanFilter parameter.
	ScanFilter
)

// ExpectedAttr is one entry of the legacy Expected parameter
// (ExpectedAttributeValue). A nil AttributeValueList is absent; an empty
// one is present.
type ExpectedAttr struct {
	Value              *attr.Value  `json:"Value,omitempty"`
	Exists             *bool        `json:"Exists,omitempty"`
	ComparisonOperator string       `json:"ComparisonOperator,omitempty"`
	AttributeValueList []attr.Value `json:"AttributeValueList,omitempty"`
}

// LegacyCondition is one entry of the legacy QueryFilter, ScanFilter and
// KeyConditions parameters (Condition).
type LegacyCondition struct {
	ComparisonOperator string       `json:"ComparisonOperator"`
	AttributeValueList []attr.Value `json:"AttributeValueList,omitempty"`
}

// AttributeUpdate is one entry of the legacy AttributeUpdates parameter
// (AttributeValueUpdate). An empty Action means PUT.
type AttributeUpdate struct {
	Action string      `json:"Action,omitempty"`
	Value  *attr.Value `json:"Value,omitempty"`
}

const invalidParams = "One or more parameter values were invalid: "

var comparisonOperators = "[IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"

// operandCounts gives the number of values each comparison operator takes;
// -1 means one or more.
var operandCounts = map[string]int{
	"EQ": 1, "NE": 1, "LE": 1, "LT": 1, "GE": 1, "GT": 1,
	"NOT_NULL": 0, "NULL": 0,
	"CONTAINS": 1, "NOT_CONTAINS": 1, "BEGINS_WITH": 1,
	"IN": -1, "BETWEEN": 2,
}

// enumError is the message of a value outside an enumeration.
func enumError(value, where, set string) error {
	return Errorf("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: %s",
		value, where, set)
}

// combine joins conditions with the ConditionalOperator.
func combine(conds []*cond, conditionalOperator string) (*Condition, error) {
	op := cAnd
	switch conditionalOperator {
	case "", "AND":
	case "OR":
		op = cOr
	default:
		return nil, enumError(conditionalOperator, "conditionalOperator", "[OR, AND]")
	}
	switch len(conds) {
	case 0:
		return nil, nil
	case 1:
		return &Condition{root: conds[0]}, nil
	}
	return &Condition{root: &cond{op: op, kids: conds}}, nil
}

// checkValues checks the values given to a comparison operator: their
// number, their common type, the types the operator takes, and BETWEEN's
// order.
func checkValues(op string, vals []attr.Value) error {
	n := operandCounts[op]
	if n >= 0 && len(vals) != n || n < 0 && len(vals) == 0 {
		return Errorf(invalidParams+"Invalid number of argument(s) for the %s ComparisonOperator", op)
	}
	for i := 1; i < len(vals); i++ {
		if vals[i].Kind != vals[0].Kind {
			return Errorf(invalidParams + "AttributeValues inside AttributeValueList must be of same type")
		}
	}
	for _, v := range vals {
		ok := true
		switch op {
		case "LE", "LT", "GE", "GT", "IN", "BETWEEN", "CONTAINS", "NOT_CONTAINS":
			ok = v.Kind == attr.KindS || v.Kind == attr.KindN || v.Kind == attr.KindB
		case "BEGINS_WITH":
			ok = v.Kind == attr.KindS || v.Kind == attr.KindB
		}
		if !ok {
			return Errorf(invalidParams+"ComparisonOperator %s is not valid for %s AttributeValue type", op, v.Kind)
		}
	}
	if op == "BETWEEN" {
		if c, ok := compareValues(vals[0], vals[1]); ok && c > 0 {
			return Errorf("The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
		}
	}
	return nil
}

// legacyCond builds the condition "name op vals".
func legacyCond(name, op string, vals []attr.Value) *cond {
	path := &operand{kind: opdPath, path: Path{{Name: name}}}
	args := []*operand{path}
	for _, v := range vals {
		args = append(args, &operand{kind: opdValue, val: v})
	}
	fn := func(f string) *cond { return &cond{op: cFunc, call: &operand{kind: opdFunc, fn: f, args: args}} }
	switch op {
	case "EQ":
		return &cond{op: cEq, args: args}
	case "NE":
		return &cond{op: cNe, args: args}
	case "LE":
		return &cond{op: cLe, args: args}
	case "LT":
		return &cond{op: cLt, args: args}
	case "GE":
		return &cond{op: cGe, args: args}
	case "GT":
		return &cond{op: cGt, args: args}
	case "NULL":
		return fn("attribute_not_exists")
	case "NOT_NULL":
		return fn("attribute_exists")
	case "CONTAINS":
		return fn("contains")
	case "NOT_CONTAINS":
		return &cond{op: cNot, kids: []*cond{fn("contains")}}
	case "BEGINS_WITH":
		return fn("begins_with")
	case "IN":
		return &cond{op: cIn, args: args}
	}
	return &cond{op: cBetween, args: args}
}

// FromExpected converts the legacy Expected parameter, with its
// ConditionalOperator ("", AND or OR), into a Condition. It returns nil for
// an empty map; a nil *Condition evaluates to true. Attributes are checked
// in sorted order.
func FromExpected(expected map[string]ExpectedAttr, conditionalOperator string) (*Condition, error) {
	if err := checkNameLens(expected); err != nil {
		return nil, err
	}
	var conds []*cond
	for _, name := range sortedKeys(expected) {
		e := expected[name]
		if e.AttributeValueList != nil && e.Value != nil {
			return nil, Errorf(invalidParams+"Value and AttributeValueList cannot be used together for Attribute: %s", name)
		}
		if e.ComparisonOperator != "" {
			op := e.ComparisonOperator
			if _, ok := operandCounts[op]; !ok {
				return nil, enumError(op, "expected."+name+".member.comparisonOperator", comparisonOperators)
			}
			if e.Exists != nil {
				return nil, Errorf(invalidParams+"Exists and ComparisonOperator cannot be used together for Attribute: %s", name)
			}
			if op != "NULL" && op != "NOT_NULL" && e.AttributeValueList == nil && e.Value == nil {
				return nil, Errorf(invalidParams+"Value or AttributeValueList must be used with ComparisonOperator: %s for Attribute: %s", op, name)
			}
			vals := e.AttributeValueList
			if e.Value != nil {
				vals = []attr.Value{*e.Value}
			}
			if err := checkValues(op, vals); err != nil {
				return nil, err
			}
			c := legacyCond(name, op, vals)
			if op == "NOT_CONTAINS" {
				// In Expected, a missing attribute does not satisfy
				// NOT_CONTAINS (in QueryFilter and ScanFilter it does).
				exists := legacyCond(name, "NOT_NULL", nil)
				c = &cond{op: cAnd, kids: []*cond{exists, c}}
			}
			conds = append(conds, c)
			continue
		}
		if e.AttributeValueList != nil {
			return nil, Errorf(invalidParams+"AttributeValueList can only be used with a ComparisonOperator for Attribute: %s", name)
		}
		exists := e.Exists == nil || *e.Exists
		if exists && e.Value == nil {
			state := "null"
			if e.Exists != nil {
				state = "true"
			}
			return nil, Errorf(invalidParams+"Value must be provided when Exists is %s for Attribute: %s", state, name)
		}
		if !exists && e.Value != nil {
			return nil, Errorf(invalidParams+"Value cannot be used when Exists is false for Attribute: %s", name)
		}
		if exists {
			conds = append(conds, legacyCond(name, "EQ", []attr.Value{*e.Value}))
		} else {
			conds = append(conds, legacyCond(name, "NULL", nil))
		}
	}
	return combine(conds, conditionalOperator)
}

// legacyField names a legacy parameter in enumeration errors.
func legacyField(kind Kind) string {
	switch kind {
	case QueryFilter:
		return "queryFilter."
	case ScanFilter:
		return "scanFilter."
	case KeyConditionExpression:
		return "keyConditions."
	}
	return ""
}

// FromFilter converts a legacy QueryFilter or ScanFilter (kind QueryFilter
// or ScanFilter; any other kind is accepted) with its ConditionalOperator
// into a Condition. It returns nil for an empty map; a nil *Condition
// evaluates to true. Attributes are checked in sorted order.
func FromFilter(kind Kind, filter map[string]LegacyCondition, conditionalOperator string) (*Condition, error) {
	if err := checkNameLens(filter); err != nil {
		return nil, err
	}
	var conds []*cond
	for _, name := range sortedKeys(filter) {
		c := filter[name]
		if _, ok := operandCounts[c.ComparisonOperator]; !ok {
			where := "comparisonOperator"
			if f := legacyField(kind); f != "" {
				where = f + name + ".member.comparisonOperator"
			}
			return nil, enumError(c.ComparisonOperator, where, comparisonOperators)
		}
		if err := checkValues(c.ComparisonOperator, c.AttributeValueList); err != nil {
			return nil, err
		}
		conds = append(conds, legacyCond(name, c.ComparisonOperator, c.AttributeValueList))
	}
	return combine(conds, conditionalOperator)
}

// keyOps maps the comparison operators a key condition may use to KeyTerm
// operators.
var keyOps = map[string]string{
	"EQ": "=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "BETWEEN": "BETWEEN", "BEGINS_WITH": "begins_with",
}

// FromKeyConditions converts the legacy KeyConditions parameter into a
// KeyCondition whose terms are in attribute name order.
func FromKeyConditions(conds map[string]LegacyCondition) (*KeyCondition, error) {
	names := sortedKeys(conds)
	for _, name := range names {
		c := conds[name]
		if _, ok := operandCounts[c.ComparisonOperator]; !ok {
			return nil, enumError(c.ComparisonOperator, "keyConditions."+name+".member.comparisonOperator", comparisonOperators)
		}
		if err := checkValues(c.ComparisonOperator, c.AttributeValueList); err != nil {
			return nil, err
		}
	}
	if len(names) < 1 || len(names) > 2 {
		return nil, Errorf("Conditions can be of length 1 or 2 only")
	}
	kc := &KeyCondition{}
	for _, name := range names {
		c := conds[name]
		op, ok := keyOps[c.ComparisonOperator]
		if !ok {
			return nil, Errorf("Attempted conditional constraint is not an indexable operation")
		}
		kc.Terms = append(kc.Terms, KeyTerm{Name: name, Op: op, Values: append([]attr.Value(nil), c.AttributeValueList...)})
	}
	return kc, nil
}

// FromAttributeUpdates converts the legacy AttributeUpdates parameter into
// an Update. Apply then follows the legacy rules: PUT replaces, DELETE
// without a value removes the attribute, DELETE with a set removes its
// elements, ADD adds numbers and sets and appends lists, and a type
// mismatch is "Type mismatch for attribute to update".
func FromAttributeUpdates(updates map[string]AttributeUpdate) (*Update, error) {
	if err := checkNameLens(updates); err != nil {
		return nil, err
	}
	u := &Update{legacy: true}
	for _, name := range sortedKeys(updates) {
		up := updates[name]
		a := action{path: Path{{Name: name}}}
		switch up.Action {
		case "", "PUT":
			a.kind = aSet
		case "ADD":
			a.kind = aAdd
		case "DELETE":
			a.kind = aDelete
		default:
			return nil, enumError(up.Action, "attributeUpdates."+name+".member.action", "[ADD, PUT, DELETE]")
		}
		if up.Value == nil {
			if a.kind != aDelete {
				return nil, Errorf(invalidParams + "Only DELETE action is allowed when no attribute value is specified")
			}
		} else {
			v := *up.Value
			switch a.kind {
			case aDelete:
				if !v.Kind.IsSet() {
					return nil, Errorf(invalidParams+"DELETE action with value is not supported for the type %s", v.Kind)
				}
			case aAdd:
				if !v.Kind.IsSet() && v.Kind != attr.KindN && v.Kind != attr.KindL {
					return nil, Errorf(invalidParams+"ADD action is not supported for the type %s", v.Kind)
				}
			}
			a.lit = v
			a.hasLit = true
		}
		u.actions = append(u.actions, a)
	}
	return u, nil
}

// MaxAttrNameLen is the length limit, in bytes, of an attribute name that
// is not a key attribute's: DynamoDB accepts 65,535 bytes and refuses
// 65,536, in items and wherever a request names an attribute.
const MaxAttrNameLen = 65535

// MsgAttrNameTooLarge is DynamoDB's message for a name over MaxAttrNameLen.
const MsgAttrNameTooLarge = "Attribute name is too large, must be less than 65536 bytes"

// CheckNameLen returns the ValidationException for an attribute name
// longer than MaxAttrNameLen, or nil.
func CheckNameLen(name string) error {
	if len(name) > MaxAttrNameLen {
		return Errorf("%s", MsgAttrNameTooLarge)
	}
	return nil
}

// checkNameLens applies CheckNameLen to the attribute names keying m.
func checkNameLens[V any](m map[string]V) error {
	for name := range m {
		if err := CheckNameLen(name); err != nil {
			return err
		}
	}
	return nil
}

// FromAttributesToGet converts the legacy AttributesToGet parameter into a
// Projection of top-level attributes.
func FromAttributesToGet(names []string) Projection {
	pr := make(Projection, len(names))
	for i, n := range names {
		pr[i] = Path{{Name: n}}
	}
	return pr
}
