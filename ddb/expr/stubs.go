package expr

// This file holds the package's API with placeholder bodies. The
// implementation replaces it.

import "github.com/quarrydb/quarry/ddb/attr"

// Params holds one request's ExpressionAttributeNames and
// ExpressionAttributeValues and records which of them its expressions used.
type Params struct {
	names  map[string]string
	values map[string]attr.Value
}

// NewParams returns Params for a request. Either map may be nil.
func NewParams(names map[string]string, values map[string]attr.Value) *Params {
	return &Params{names: names, values: values}
}

// CheckUnused returns DynamoDB's error for names or values that none of the
// request's expressions used. Call it after parsing all of them.
func (p *Params) CheckUnused() error { return nil }

// String renders the path in expression syntax, e.g. a.b[2].c.
func (p Path) String() string { return "" }

// Get returns the value at the path in item.
func (p Path) Get(item attr.Item) (attr.Value, bool) { return attr.Value{}, false }

// Condition is a parsed condition or filter expression.
type Condition struct{}

// ParseCondition parses a ConditionExpression or FilterExpression.
func ParseCondition(kind Kind, s string, p *Params) (*Condition, error) {
	return nil, Errorf("not implemented")
}

// Eval evaluates the condition against item (nil when there is no item).
func (c *Condition) Eval(item attr.Item) bool { return false }

// Projection is a parsed ProjectionExpression.
type Projection []Path

// ParseProjection parses a ProjectionExpression.
func ParseProjection(s string, p *Params) (Projection, error) {
	return nil, Errorf("not implemented")
}

// Apply returns a new item holding only the projected paths of item.
func (pr Projection) Apply(item attr.Item) attr.Item { return nil }

// Update is a parsed UpdateExpression.
type Update struct{}

// ParseUpdate parses an UpdateExpression.
func ParseUpdate(s string, p *Params) (*Update, error) { return nil, Errorf("not implemented") }

// Apply returns a copy of item (nil for a new item) with the update applied.
// item is not modified.
func (u *Update) Apply(item attr.Item) (attr.Item, error) { return nil, Errorf("not implemented") }

// Paths returns the document paths the update sets, removes, adds or deletes.
func (u *Update) Paths() []Path { return nil }

// ParseKeyCondition parses a KeyConditionExpression.
func ParseKeyCondition(s string, p *Params) (*KeyCondition, error) {
	return nil, Errorf("not implemented")
}

// ExpectedAttr is one entry of the legacy Expected parameter.
type ExpectedAttr struct {
	Value              *attr.Value  `json:"Value"`
	Exists             *bool        `json:"Exists"`
	ComparisonOperator string       `json:"ComparisonOperator"`
	AttributeValueList []attr.Value `json:"AttributeValueList"`
}

// LegacyCondition is one entry of KeyConditions, QueryFilter or ScanFilter.
type LegacyCondition struct {
	ComparisonOperator string       `json:"ComparisonOperator"`
	AttributeValueList []attr.Value `json:"AttributeValueList"`
}

// AttributeUpdate is one entry of the legacy AttributeUpdates parameter.
type AttributeUpdate struct {
	Action string      `json:"Action"`
	Value  *attr.Value `json:"Value"`
}

// FromExpected converts the legacy Expected parameter into a Condition.
func FromExpected(expected map[string]ExpectedAttr, conditionalOperator string) (*Condition, error) {
	return nil, Errorf("not implemented")
}

// FromFilter converts QueryFilter or ScanFilter into a Condition.
func FromFilter(kind Kind, conds map[string]LegacyCondition, conditionalOperator string) (*Condition, error) {
	return nil, Errorf("not implemented")
}

// FromKeyConditions converts the legacy KeyConditions parameter.
func FromKeyConditions(conds map[string]LegacyCondition) (*KeyCondition, error) {
	return nil, Errorf("not implemented")
}

// FromAttributeUpdates converts the legacy AttributeUpdates parameter.
func FromAttributeUpdates(updates map[string]AttributeUpdate) (*Update, error) {
	return nil, Errorf("not implemented")
}

// FromAttributesToGet converts the legacy AttributesToGet parameter.
func FromAttributesToGet(names []string) Projection { return nil }
