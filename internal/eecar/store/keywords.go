package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Keywords are a watch's keywords: every one must appear among a part's
// words. JSON accepts a list of strings (["heat pump", "LFP"]) or one
// string ("heat pump LFP"); either way they are answered as a list. The
// table holds a list of strings; a single string written by an older
// version is read as a one-element list.
type Keywords []string

// UnmarshalJSON accepts a string, a list of strings or null.
func (k *Keywords) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*k = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("keywords: %w", err)
		}
		*k = Keywords(nil).add(s)
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("keywords must be a string or a list of strings: %w", err)
	}
	var out Keywords
	for _, s := range l {
		out = out.add(s)
	}
	*k = out
	return nil
}

// add appends s trimmed, skipping empty strings.
func (k Keywords) add(s string) Keywords {
	if s = strings.TrimSpace(s); s != "" {
		k = append(k, s)
	}
	return k
}

// UnmarshalDynamoDBAttributeValue reads a list of strings or, from items
// written before keywords were a list, a string.
func (k *Keywords) UnmarshalDynamoDBAttributeValue(v types.AttributeValue) error {
	var out Keywords
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		out = out.add(x.Value)
	case *types.AttributeValueMemberSS:
		for _, s := range x.Value {
			out = out.add(s)
		}
	case *types.AttributeValueMemberL:
		for _, e := range x.Value {
			s, ok := e.(*types.AttributeValueMemberS)
			if !ok {
				return fmt.Errorf("keywords: list element of type %T", e)
			}
			out = out.add(s.Value)
		}
	case *types.AttributeValueMemberNULL:
	default:
		return fmt.Errorf("keywords: attribute of type %T", v)
	}
	*k = out
	return nil
}

// Text is the keywords joined by spaces (for tokenizing).
func (k Keywords) Text() string { return strings.Join(k, " ") }
