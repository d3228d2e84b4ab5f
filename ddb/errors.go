package ddb

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/expr"
)

// Error is an error of the DynamoDB API: Type is the exception name
// ("ValidationException", "ConditionalCheckFailedException", ...) that
// clients see in the response's __type.
type Error struct {
	Type    string
	Message string
	// Item is the item returned with a ConditionalCheckFailedException when
	// ReturnValuesOnConditionCheckFailure is ALL_OLD.
	Item attr.Item
	// CancellationReasons accompany a TransactionCanceledException.
	CancellationReasons []CancellationReason
}

// CancellationReason is one entry of a TransactionCanceledException.
type CancellationReason struct {
	Code    string    `json:"Code"`
	Message string    `json:"Message,omitempty"`
	Item    attr.Item `json:"Item,omitempty"`
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Is reports whether target is an *Error of the same Type, so that
// errors.Is(err, ddb.ErrConditionalCheckFailed) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Type == e.Type && t.Message == ""
}

// Sentinels for errors.Is. They carry no message.
var (
	ErrValidation             = &Error{Type: "ValidationException"}
	ErrConditionalCheckFailed = &Error{Type: "ConditionalCheckFailedException"}
	ErrResourceNotFound       = &Error{Type: "ResourceNotFoundException"}
	ErrResourceInUse          = &Error{Type: "ResourceInUseException"}
	ErrSerialization          = &Error{Type: "SerializationException"}
	ErrUnknownOperation       = &Error{Type: "UnknownOperationException"}
	ErrInternal               = &Error{Type: "InternalServerError"}
)

// status returns the HTTP status DynamoDB uses for the error.
func (e *Error) status() int {
	switch e.Type {
	case "InternalServerError":
		return http.StatusInternalServerError
	case "ServiceUnavailable":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// prefix returns the __type namespace of the exception.
func (e *Error) prefix() string {
	switch e.Type {
	case "SerializationException", "UnknownOperationException", "MissingAuthenticationTokenException",
		"UnrecognizedClientException", "InvalidSignatureException", "IncompleteSignatureException", "AccessDeniedException":
		return "com.amazon.coral.service#"
	case "ValidationException":
		return "com.amazon.coral.validate#"
	}
	return "com.amazonaws.dynamodb.v20120810#"
}

func validationf(format string, args ...any) *Error {
	return &Error{Type: "ValidationException", Message: fmt.Sprintf(format, args...)}
}

func invalidParam(format string, args ...any) *Error {
	return &Error{Type: "ValidationException", Message: "One or more parameter values were invalid: " + fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error {
	return &Error{Type: "ResourceNotFoundException", Message: fmt.Sprintf(format, args...)}
}

func tableNotFound() *Error {
	return notFound("Requested resource not found")
}

func inUse(format string, args ...any) *Error {
	return &Error{Type: "ResourceInUseException", Message: fmt.Sprintf(format, args...)}
}

func conditionFailed(item attr.Item) *Error {
	return &Error{Type: "ConditionalCheckFailedException", Message: "The conditional request failed", Item: item}
}

func internal(err error) *Error {
	return &Error{Type: "InternalServerError", Message: "Internal server error: " + err.Error()}
}

// asAPIError converts any error into an *Error; errors of the expression and
// attribute packages become ValidationExceptions.
func asAPIError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ae *attr.Error
	if errors.As(err, &ae) {
		return validationf("%s", ae.Message)
	}
	if m, ok := exprMessage(err); ok {
		return validationf("%s", m)
	}
	return internal(err)
}

// constraintErrors collects "1 validation error detected: ..." messages the
// way DynamoDB's request validator reports them.
type constraintErrors struct {
	msgs []string
	// required is set when a required top-level parameter is missing:
	// DynamoDB reports that alone, before any constraint.
	required string
}

func (c *constraintErrors) add(format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf(format, args...))
}

// missing records a required parameter that is absent.
func (c *constraintErrors) missing(param string) {
	if c.required == "" {
		c.required = fmt.Sprintf("The parameter '%s' is required but was not present in the request", param)
	}
}

func (c *constraintErrors) err() *Error {
	if c.required != "" {
		return validationf("%s", c.required)
	}
	msgs := c.msgs
	if len(msgs) == 0 {
		return nil
	}
	n := len(msgs)
	if n > 10 {
		msgs = msgs[:10]
	}
	word := "error"
	if n > 1 {
		word = "errors"
	}
	return validationf("%d validation %s detected: %s", n, word, strings.Join(msgs, "; "))
}

func exprMessage(err error) (string, bool) {
	var ee *expr.Error
	if errors.As(err, &ee) {
		return ee.Message, true
	}
	return "", false
}
