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
