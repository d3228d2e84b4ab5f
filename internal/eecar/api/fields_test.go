package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/eecar/store"
)

// docField is one row of a field table in docs/eecar.md.
type docField struct {
	name     string // dotted path, e.g. "filters.category"
	typ      string // string, number, integer, boolean, object, array of strings, array of objects, string or array of strings
	required bool
	example  any
}

// docEndpoint is one "#### `METHOD path`" section of docs/eecar.md.
type docEndpoint struct {
	routes []string // "POST /parts", "PUT /parts/{id}"
	fields []docField
}

// docEndpoints reads the write endpoints' field tables from docs/eecar.md.
func docEndpoints(t *testing.T) []docEndpoint {
	t.Helper()
	data, err := os.ReadFile("../../../docs/eecar.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "### Request fields of the write endpoints")
	if start < 0 {
		t.Fatal("docs/eecar.md has no \"Request fields of the write endpoints\" section")
	}
	text = text[start:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	var out []docEndpoint
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "#### "):
			var ep docEndpoint
			for _, r := range strings.Split(strings.TrimPrefix(line, "#### "), "·") {
				ep.routes = append(ep.routes, strings.Trim(strings.TrimSpace(r), "`"))
			}
			out = append(out, ep)
		case strings.HasPrefix(line, "| `") && len(out) > 0:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 4 {
				t.Fatalf("docs/eecar.md: short field row %q", line)
			}
			f := docField{
				name:     strings.Trim(strings.TrimSpace(cells[0]), "`"),
				typ:      strings.TrimSpace(cells[1]),
				required: strings.TrimSpace(cells[2]) == "yes",
			}
			if err := json.Unmarshal([]byte(strings.Trim(strings.TrimSpace(cells[3]), "`")), &f.example); err != nil {
				t.Fatalf("docs/eecar.md: field %s: example %q is not JSON: %v", f.name, cells[3], err)
			}
			ep := &out[len(out)-1]
			ep.fields = append(ep.fields, f)
		}
	}
	return out
}

// setPath sets a dotted path in a JSON object.
func setPath(m map[string]any, path string, v any) {
	head, rest, nested := strings.Cut(path, ".")
	if !nested {
		m[head] = v
		return
	}
	sub, ok := m[head].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[head] = sub
	}
	setPath(sub, rest, v)
}

// getPath reads a dotted path of a JSON object.
func getPath(m map[string]any, path string) (any, bool) {
	head, rest, nested := strings.Cut(path, ".")
	v, ok := m[head]
	if !ok || !nested {
		return v, ok
	}
	sub, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	return getPath(sub, rest)
}

// wrongType is a JSON value that is not of the documented type.
func wrongType(typ string) any {
	switch typ {
	case "string":
		return 12345
	case "string or array of strings":
		return 5
	case "array of strings":
		return []any{1, 2}
	case "array of objects":
		return []any{"x"}
	case "integer":
		return 1.5
	}
	return "not-a-" + strings.ReplaceAll(typ, " ", "-")
}

// TestDocumentedFields walks the field tables of docs/eecar.md and checks
// each against the API: a body of the required fields alone is accepted;
// each optional field is accepted and, where the endpoint answers with
// the resource, shown in the answer; leaving out a required field and
// sending a value of the wrong type are refused with 400.
func TestDocumentedFields(t *testing.T) {
	e := newEnv(t)
	eps := docEndpoints(t)
	want := []string{"PUT /me/webhook", "POST /parts", "PUT /parts/{id}", "POST /search", "POST /needs", "PUT /needs/{id}",
		"POST /watches", "POST /proposals", "POST /proposals/{id}/respond", "POST /battery-health"}
	documented := map[string]docEndpoint{}
	for _, ep := range eps {
		for _, r := range ep.routes {
			documented[r] = ep
		}
	}
	for _, r := range want {
		if len(documented[r].fields) == 0 {
			t.Errorf("docs/eecar.md documents no fields for %s", r)
		}
	}

	part := e.register(e.ka, battery("doc walk pack", 8000000, 90))
	var need store.Need
	if code, text := e.do(e.ka, http.MethodPost, "/eecar/needs", map[string]any{}, &need); code != http.StatusCreated {
		t.Fatalf("POST /needs {} = %d %s", code, text)
	}
	// newProposal makes a fresh proposal from A to B (B answers).
	newProposal := func(e *env) string {
		var p store.Proposal
		if code, text := e.do(e.ka, http.MethodPost, "/eecar/proposals", map[string]any{"toCompanyId": e.b.ID, "partIds": []string{part.ID}, "proposalType": "sell"}, &p); code != http.StatusCreated {
			e.t.Fatalf("POST /proposals = %d %s", code, text)
		}
		return p.ID
	}
	// request resolves a route into a method, a path and the key to use.
	request := func(e *env, route string) (method, path, key string) {
		method, path, _ = strings.Cut(route, " ")
		key = e.ka
		switch {
		case strings.HasPrefix(path, "/parts/{id}"):
			path = strings.Replace(path, "{id}", part.ID, 1)
		case strings.HasPrefix(path, "/needs/{id}"):
			path = strings.Replace(path, "{id}", need.ID, 1)
		case strings.HasPrefix(path, "/proposals/{id}"):
			path, key = strings.Replace(path, "{id}", newProposal(e), 1), e.kb
		}
		return method, "/eecar" + path, key
	}
	example := func(e *env, f docField) any {
		switch f.name {
		case "toCompanyId":
			return e.b.ID
		case "partIds":
			return []string{part.ID}
		}
		return f.example
	}
	// echoes reports whether a route answers with the resource it wrote.
	echoes := func(route string) bool {
		return !strings.Contains(route, "/search") && !strings.Contains(route, "/battery-health")
	}
	base := func(e *env, ep docEndpoint) map[string]any {
		body := map[string]any{}
		for _, f := range ep.fields {
			if f.required {
				setPath(body, f.name, example(e, f))
			}
		}
		return body
	}
	send := func(e *env, route string, body map[string]any) (int, map[string]any, string) {
		method, path, key := request(e, route)
		resp, data := e.raw(key, method, path, body)
		var out map[string]any
		_ = json.Unmarshal(data, &out)
		return resp.StatusCode, out, string(data)
	}

	for _, route := range want {
		ep := documented[route]
		t.Run(route+" required fields alone", func(t *testing.T) {
			e := e.on(t)
			if code, _, text := send(e, route, base(e, ep)); code/100 != 2 {
				t.Fatalf("%s with the required fields = %d %s", route, code, text)
			}
		})
		for _, f := range ep.fields {
			t.Run(route+" "+f.name, func(t *testing.T) {
				e := e.on(t)
				body := base(e, ep)
				setPath(body, f.name, example(e, f))
				code, out, text := send(e, route, body)
				if code/100 != 2 {
					t.Fatalf("documented %s %s = %v: %d %s", f.typ, f.name, f.example, code, text)
				}
				if echoes(route) {
					shown := out
					if h, ok := out["history"].([]any); ok && strings.HasSuffix(route, "/respond") && len(h) > 0 {
						shown, _ = h[len(h)-1].(map[string]any) // a response is shown as the last step of the history
					}
					if v, ok := getPath(shown, f.name); !ok || v == nil || v == "" {
						t.Errorf("%s: the answer does not show %s: %s", route, f.name, text)
					}
				}

				body = base(e, ep)
				setPath(body, f.name, wrongType(f.typ))
				method, path, key := request(e, route)
				e.wantError(key, method, path, body, http.StatusBadRequest)

				if f.required {
					body = base(e, ep)
					head, rest, nested := strings.Cut(f.name, ".")
					if nested {
						delete(body[head].(map[string]any), rest)
					} else {
						delete(body, head)
					}
					e.wantError(key, method, path, body, http.StatusBadRequest, head)
				}
			})
		}
	}
}
