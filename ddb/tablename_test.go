package ddb_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTableNameConstraints checks the answer to a request naming a table
// DynamoDB's constraints refuse ([a-zA-Z0-9_.-]+, 3 to 255 characters):
// a ValidationException naming the value and the constraint, before any
// lookup; a valid name of a missing table is ResourceNotFoundException.
func TestTableNameConstraints(t *testing.T) {
	h := newStore(t).Handler()
	const pattern = "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
	cases := []struct {
		name     string
		wantType string
		wantMsg  []string // all present in the message
		notMsg   string   // absent from the message
	}{
		{"Valid_name-1.x", "ResourceNotFoundException", []string{"Requested resource not found"}, pattern},
		{"with space", "ValidationException", []string{"Value 'with space' at 'tableName'", pattern}, ""},
		{"slash/name", "ValidationException", []string{pattern}, ""},
		{"tablé", "ValidationException", []string{pattern}, ""},
		{"名前の表", "ValidationException", []string{pattern}, ""},
		{"nul\x00byte", "ValidationException", []string{pattern}, ""},
		{"ab", "ValidationException", []string{"Member must have length greater than or equal to 3"}, pattern},
		{"a!", "ValidationException", []string{pattern, "Member must have length greater than or equal to 3"}, ""},
		{strings.Repeat("n", 256), "ValidationException", []string{"Member must have length less than or equal to 255"}, pattern},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"TableName": tc.name, "Key": map[string]any{"pk": map[string]string{"S": "a"}, "sk": map[string]string{"N": "1"}}})
			code, resp := post(t, h, "GetItem", string(body))
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(resp, &e); err != nil || code != 400 {
				t.Fatalf("status %d, body %s: want 400 and an error", code, resp)
			}
			if !strings.HasSuffix(e.Type, "#"+tc.wantType) {
				t.Fatalf("__type %q, want %s (message %q)", e.Type, tc.wantType, e.Message)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q lacks %q", e.Message, m)
				}
			}
			if tc.notMsg != "" && strings.Contains(e.Message, tc.notMsg) {
				t.Errorf("message %q has %q", e.Message, tc.notMsg)
			}
		})
	}
}
