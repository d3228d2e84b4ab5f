// Package ddbitem builds and reads DynamoDB attribute values and reads the
// errors of conditional writes: the few helpers every DynamoDB system of
// quarry needs around aws-sdk-go-v2's types.
package ddbitem

import (
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// S is a string attribute.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number attribute.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Bool is a boolean attribute.
func Bool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// String reads a string attribute ("" when absent or of another type).
func String(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// Float reads a number attribute (0 when absent or of another type).
func Float(it map[string]types.AttributeValue, k string) float64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		f, _ := strconv.ParseFloat(v.Value, 64)
		return f
	}
	return 0
}

// Int reads a number attribute as an integer (fractions truncated; 0 when
// absent or of another type).
func Int(it map[string]types.AttributeValue, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(v.Value, 64)
		return int64(f)
	}
	return 0
}

// ConditionFailed reports whether err is a ConditionalCheckFailedException.
func ConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// CancelReasons returns the cancellation codes of a cancelled transaction,
// one per item ("None", "ConditionalCheckFailed", …), or nil when err is
// not a TransactionCanceledException.
func CancelReasons(err error) []string {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	out := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		if r.Code != nil {
			out[i] = *r.Code
		}
	}
	return out
}

// TimeLayout is how quarry stores timestamps in items: ISO 8601, UTC,
// fixed-width milliseconds, so that they sort as text (sort keys such as
// createdAt and CREATED_AT#… rely on it).
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t as stored.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a stored timestamp (any RFC 3339 form); the zero time
// when v is empty or malformed.
func ParseTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
