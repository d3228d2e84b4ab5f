package expr

import (
	"sort"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Params holds one request's ExpressionAttributeNames and
// ExpressionAttributeValues and records which of them its expressions used.
// A Params is used by one request at a time; it is not safe for concurrent
// use.
type Params struct {
	names      map[string]string
	values     map[string]attr.Value
	usedNames  map[string]struct{}
	usedValues map[string]struct{}
}

// NewParams returns Params for a request. Either map may be nil.
func NewParams(names map[string]string, values map[string]attr.Value) *Params {
	return &Params{names: names, values: values}
}

// Validate returns DynamoDB's error for malformed ExpressionAttributeNames
// or ExpressionAttributeValues maps: a map that is present but empty, or a
// key that is not # or : followed by letters, digits and underscores. The
// store calls it before parsing, where DynamoDB checks these.
func (p *Params) Validate() error {
	if p == nil {
		return nil
	}
	if p.names != nil {
		if len(p.names) == 0 {
			return Errorf("ExpressionAttributeNames must not be empty")
		}
		for _, k := range sortedKeys(p.names) {
			if !validPlaceholderKey(k, '#') {
				return Errorf("ExpressionAttributeNames contains invalid key: Syntax error; key: %q", k)
			}
		}
	}
	if p.values != nil {
		if len(p.values) == 0 {
			return Errorf("ExpressionAttributeValues must not be empty")
		}
		for _, k := range sortedKeys(p.values) {
			if !validPlaceholderKey(k, ':') {
				return Errorf("ExpressionAttributeValues contains invalid key: Syntax error; key: %q", k)
			}
		}
	}
	return nil
}

func validPlaceholderKey(k string, prefix byte) bool {
	if len(k) < 2 || k[0] != prefix {
		return false
	}
	for i := 1; i < len(k); i++ {
		if !isWordByte(k[i]) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckUnused returns DynamoDB's error for names or values that none of the
// request's expressions used. Call it after parsing all of them. Names are
// checked before values; the keys are listed in sorted order.
func (p *Params) CheckUnused() error {
	if p == nil {
		return nil
	}
	var unused []string
	for k := range p.names {
		if _, ok := p.usedNames[k]; !ok {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return Errorf("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(unused, ", "))
	}
	for k := range p.values {
		if _, ok := p.usedValues[k]; !ok {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return Errorf("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(unused, ", "))
	}
	return nil
}

// name resolves a #name placeholder and records its use.
func (p *Params) name(ph string) (string, bool) {
	if p == nil {
		return "", false
	}
	n, ok := p.names[ph]
	if !ok {
		return "", false
	}
	if p.usedNames == nil {
		p.usedNames = make(map[string]struct{}, len(p.names))
	}
	p.usedNames[ph] = struct{}{}
	return n, true
}

// value resolves a :value placeholder and records its use.
func (p *Params) value(ph string) (attr.Value, bool) {
	if p == nil {
		return attr.Value{}, false
	}
	v, ok := p.values[ph]
	if !ok || v.Kind == 0 {
		return attr.Value{}, false
	}
	if p.usedValues == nil {
		p.usedValues = make(map[string]struct{}, len(p.values))
	}
	p.usedValues[ph] = struct{}{}
	return v, true
}

func errUndefinedName(ph string) string {
	return "An expression attribute name used in the document path is not defined; attribute name: " + ph
}

func errUndefinedValue(ph string) string {
	return "An expression attribute value used in expression is not defined; attribute value: " + ph
}
