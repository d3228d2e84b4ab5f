package attr

// MaxNestingLevels is the number of document levels DynamoDB allows in an
// attribute value.
//
// DynamoDB counts the attribute's own value as level 1 and each map or list
// adds a level for its members, the scalar at the bottom included: a value
// of 31 nested maps or lists holding a scalar (the scalar at level 32) is the
// deepest accepted, and a map or list at level 32 (even an empty one) is
// refused, since anything in it would be at level 33. Sets are scalars here:
// their members do not nest. An item's attribute map is not a level.
const MaxNestingLevels = 32

// NestingMessage is DynamoDB's message for a value nested deeper than
// MaxNestingLevels (a ValidationException).
const NestingMessage = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"

// TooDeep reports whether v, as an attribute's value (level 1), nests
// deeper than MaxNestingLevels. It looks at most MaxNestingLevels levels
// down, however deep v is.
func (v Value) TooDeep() bool { return v.tooDeep(1) }

func (v Value) tooDeep(level int) bool {
	switch v.Kind {
	case KindM:
		if level >= MaxNestingLevels {
			return true
		}
		for _, e := range v.M {
			if e.tooDeep(level + 1) {
				return true
			}
		}
	case KindL:
		if level >= MaxNestingLevels {
			return true
		}
		for _, e := range v.L {
			if e.tooDeep(level + 1) {
				return true
			}
		}
	}
	return false
}

// TooDeep reports whether any attribute of the item nests deeper than
// MaxNestingLevels (Value.TooDeep).
func (it Item) TooDeep() bool {
	for _, v := range it {
		if v.tooDeep(1) {
			return true
		}
	}
	return false
}
