package expr

// ParseKeyCondition parses a KeyConditionExpression: the condition grammar
// and its checks first (errors prefixed "Invalid KeyConditionExpression: "),
// then DynamoDB's key condition rules, whose errors carry no prefix. A term
// written with the value first (:v < sk) is turned around (sk > :v).
func ParseKeyCondition(s string, p *Params) (*KeyCondition, error) {
	root, err := parseCondTree(KeyConditionExpression, s, p)
	if err != nil {
		return nil, err
	}
	kc := &KeyCondition{}
	if msg := keyTerms(root, kc); msg != "" {
		return nil, Errorf("%s", msg)
	}
	if n := len(kc.Terms); n < 1 || n > 2 {
		return nil, Errorf("Conditions can be of length 1 or 2 only")
	}
	return kc, nil
}

// keyTerms collects the terms of a key condition tree into kc.
func keyTerms(c *cond, kc *KeyCondition) string {
	switch c.op {
	case cOr, cNot, cIn, cNe:
		return "Invalid operator used in KeyConditionExpression: " + condOpNames[c.op]
	case cAnd:
		for _, k := range c.kids {
			if msg := keyTerms(k, kc); msg != "" {
				return msg
			}
		}
		return ""
	}
	op := condOpNames[c.op]
	args := c.args
	if c.op == cFunc {
		switch c.call.fn {
		case "begins_with":
		default:
			return "Invalid operator used in KeyConditionExpression: " + c.call.fn
		}
		op = c.call.fn
		args = c.call.args
	}
	if (c.op == cBetween || c.op == cFunc) && args[0].kind != opdPath {
		return "Invalid condition in KeyConditionExpression: " + op + " operator must have the key attribute as its first operand"
	}
	name, at := "", -1
	for i, a := range args {
		switch a.kind {
		case opdPath:
			if at >= 0 {
				return "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"
			}
			if len(a.path) > 1 {
				return "KeyConditionExpressions cannot have conditions on nested attributes"
			}
			name, at = a.path[0].Name, i
		case opdFunc:
			return "KeyConditionExpressions cannot contain nested operations"
		}
	}
	if at < 0 {
		return "Invalid condition in KeyConditionExpression: No key attribute specified"
	}
	for _, t := range kc.Terms {
		if t.Name == name {
			return "KeyConditionExpressions must only contain one condition per key"
		}
	}
	if at != 0 {
		switch c.op {
		case cLt:
			op = ">"
		case cLe:
			op = ">="
		case cGt:
			op = "<"
		case cGe:
			op = "<="
		}
	}
	term := KeyTerm{Name: name, Op: op}
	for i, a := range args {
		if i != at {
			term.Values = append(term.Values, a.val)
		}
	}
	kc.Terms = append(kc.Terms, term)
	return ""
}
