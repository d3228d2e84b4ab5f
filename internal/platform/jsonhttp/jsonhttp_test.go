package jsonhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	type body struct {
		Name string `json:"name"`
	}
	for _, c := range []struct {
		name, in   string
		strict     bool
		ok         bool
		wantStatus int
		wantName   string
	}{
		{"object", `{"name":"a"}`, true, true, 0, "a"},
		{"empty body", "  ", true, true, 0, ""},
		{"malformed", `{"name":`, false, false, 400, ""},
		{"unknown field, strict", `{"name":"a","x":1}`, true, false, 400, ""},
		{"unknown field, lenient", `{"name":"a","x":1}`, false, true, 0, "a"},
		{"too large", `{"name":"` + strings.Repeat("x", 200) + `"}`, false, false, 413, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.in))
			var b body
			if got := Decode(w, r, &b, 100, c.strict); got != c.ok {
				t.Fatalf("Decode = %v, want %v (%s)", got, c.ok, w.Body)
			}
			if !c.ok {
				var e map[string]string
				if w.Code != c.wantStatus || json.Unmarshal(w.Body.Bytes(), &e) != nil || e["error"] == "" {
					t.Fatalf("answer %d %s, want %d with an error", w.Code, w.Body, c.wantStatus)
				}
			} else if b.Name != c.wantName {
				t.Fatalf("name %q", b.Name)
			}
		})
	}
}
