// Package expr parses and evaluates DynamoDB expressions: condition and
// filter expressions, key condition expressions, update expressions and
// projection expressions, with ExpressionAttributeNames and
// ExpressionAttributeValues checked the way DynamoDB checks them.
//
// Parsing resolves every #name and :value placeholder against Params, so an
// evaluated expression never looks placeholders up again. All errors
// returned by this package are *Error, reported by the store as a
// ValidationException carrying Error.Message verbatim.
package expr

import (
	"fmt"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Kind names the request parameter an expression came from; it prefixes
// error messages ("Invalid ConditionExpression: ...").
type Kind int

// The kinds of expression.
const (
	ConditionExpression Kind = iota
	FilterExpression
	KeyConditionExpression
	UpdateExpression
	ProjectionExpression
)

// String returns the parameter name, e.g. "ConditionExpression".
func (k Kind) String() string {
	switch k {
	case ConditionExpression:
		return "ConditionExpression"
	case FilterExpression:
		return "FilterExpression"
	case KeyConditionExpression:
		return "KeyConditionExpression"
	case UpdateExpression:
		return "UpdateExpression"
	case ProjectionExpression:
		return "ProjectionExpression"
	case QueryFilter:
		return "QueryFilter"
	case ScanFilter:
		return "ScanFilter"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a validation error; Message is DynamoDB's message text.
type Error struct{ Message string }

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

// PathElem is one step of a document path: a map key / attribute name, or a
// list index.
type PathElem struct {
	Name    string
	Index   int
	IsIndex bool
}

// Path is a document path such as a.b[2].c. Path[0] is always a name (the
// top-level attribute).
type Path []PathElem

// KeyTerm is one comparison of a key condition: Name Op Values. Op is one of
// "=", "<", "<=", ">", ">=", "BETWEEN" (two Values) or "begins_with".
type KeyTerm struct {
	Name   string
	Op     string
	Values []attr.Value
}

// KeyCondition is a parsed KeyConditionExpression: one or two terms joined
// by AND, in the order written. The store checks them against the key
// schema (which term is the partition key, which the sort key).
type KeyCondition struct {
	Terms []KeyTerm
}
