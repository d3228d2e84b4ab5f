package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/ddb/attr"
)

// TestDataDriven runs the test files under testdata/. Commands:
//
//	params names=... values=...          set the file's default names and values
//	parse-condition [kind=filter|key|condition] [names=] [values=] [unused]
//	parse-update, parse-projection, parse-key-condition
//	                                     input: the expression; prints the
//	                                     canonical dump or the error
//	eval, update, project                input: the expression, then one item
//	                                     (JSON, or "null") per line
//	names                                 input: a condition; prints Names()
//	paths                                 input: an update; prints Paths()
//	unused                                input: "kind: expression" lines
//	                                     sharing one Params; then CheckUnused
//	validate-params                       prints Params.Validate()
//	legacy-expected [op=], legacy-filter [kind=query|scan] [op=],
//	legacy-key-conditions, legacy-updates, legacy-attributes-to-get
//	                                     input: the legacy parameter as JSON,
//	                                     then items as above
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var defNames, defValues string
			runTestFile(t, file, func(t *testing.T, tc *testCase) string {
				if tc.cmd == "params" {
					defNames, _ = tc.arg("names")
					defValues, _ = tc.arg("values")
					return ""
				}
				return runCommand(t, tc, defNames, defValues)
			})
		})
	}
}

func runCommand(t *testing.T, tc *testCase, defNames, defValues string) string {
	params, err := testParams(tc, defNames, defValues)
	if err != nil {
		return "bad params: " + err.Error()
	}
	lines := strings.Split(tc.input, "\n")
	first, rest := lines[0], lines[1:]
	switch tc.cmd {
	case "parse-condition":
		kind := ConditionExpression
		switch k, _ := tc.arg("kind"); k {
		case "filter":
			kind = FilterExpression
		case "key":
			kind = KeyConditionExpression
		}
		c, err := ParseCondition(kind, tc.input, params)
		return withUnused(tc, params, c, err)
	case "parse-key-condition":
		kc, err := ParseKeyCondition(tc.input, params)
		return withUnused(tc, params, kc, err)
	case "parse-update":
		u, err := ParseUpdate(tc.input, params)
		return withUnused(tc, params, u, err)
	case "parse-projection":
		pr, err := ParseProjection(tc.input, params)
		return withUnused(tc, params, pr, err)
	case "names":
		c, err := ParseCondition(FilterExpression, tc.input, params)
		if err != nil {
			return errString(err)
		}
		return fmt.Sprint(c.Names())
	case "paths":
		u, err := ParseUpdate(tc.input, params)
		if err != nil {
			return errString(err)
		}
		var out []string
		for _, p := range u.Paths() {
			out = append(out, p.String())
		}
		return strings.Join(out, "\n")
	case "eval":
		c, err := ParseCondition(ConditionExpression, first, params)
		if err != nil {
			return errString(err)
		}
		return evalItems(t, tc, rest, c.Eval)
	case "update":
		u, err := ParseUpdate(first, params)
		if err != nil {
			return errString(err)
		}
		return updateItems(t, tc, rest, u)
	case "project":
		pr, err := ParseProjection(first, params)
		if err != nil {
			return errString(err)
		}
		return projectItems(t, tc, rest, pr)
	case "unused":
		var out []string
		for _, l := range lines {
			kind, e, _ := strings.Cut(l, ": ")
			var err error
			switch kind {
			case "condition":
				_, err = ParseCondition(ConditionExpression, e, params)
			case "filter":
				_, err = ParseCondition(FilterExpression, e, params)
			case "key":
				_, err = ParseKeyCondition(e, params)
			case "update":
				_, err = ParseUpdate(e, params)
			case "projection":
				_, err = ParseProjection(e, params)
			default:
				t.Fatalf("%s: unknown kind %q", tc.pos, kind)
			}
			if err != nil {
				out = append(out, errString(err))
			}
		}
		if err := params.CheckUnused(); err != nil {
			out = append(out, errString(err))
		} else {
			out = append(out, "ok")
		}
		return strings.Join(out, "\n")
	case "validate-params":
		if err := params.Validate(); err != nil {
			return errString(err)
		}
		return "ok"
	case "legacy-expected":
		var m map[string]ExpectedAttr
		if err := json.Unmarshal([]byte(first), &m); err != nil {
			return "bad input: " + err.Error()
		}
		op, _ := tc.arg("op")
		c, err := FromExpected(m, op)
		if err != nil {
			return errString(err)
		}
		return c.String() + "\n" + evalItems(t, tc, rest, c.Eval)
	case "legacy-filter":
		var m map[string]LegacyCondition
		if err := json.Unmarshal([]byte(first), &m); err != nil {
			return "bad input: " + err.Error()
		}
		kind := ScanFilter
		if k, _ := tc.arg("kind"); k == "query" {
			kind = QueryFilter
		}
		op, _ := tc.arg("op")
		c, err := FromFilter(kind, m, op)
		if err != nil {
			return errString(err)
		}
		return c.String() + "\n" + evalItems(t, tc, rest, c.Eval)
	case "legacy-key-conditions":
		var m map[string]LegacyCondition
		if err := json.Unmarshal([]byte(first), &m); err != nil {
			return "bad input: " + err.Error()
		}
		kc, err := FromKeyConditions(m)
		if err != nil {
			return errString(err)
		}
		return kc.String()
	case "legacy-updates":
		var m map[string]AttributeUpdate
		if err := json.Unmarshal([]byte(first), &m); err != nil {
			return "bad input: " + err.Error()
		}
		u, err := FromAttributeUpdates(m)
		if err != nil {
			return errString(err)
		}
		return u.String() + "\n" + updateItems(t, tc, rest, u)
	case "legacy-attributes-to-get":
		var names []string
		if err := json.Unmarshal([]byte(first), &names); err != nil {
			return "bad input: " + err.Error()
		}
		pr := FromAttributesToGet(names)
		return pr.String() + "\n" + projectItems(t, tc, rest, pr)
	}
	t.Fatalf("%s: unknown command %q", tc.pos, tc.cmd)
	return ""
}

func testParams(tc *testCase, defNames, defValues string) (*Params, error) {
	namesJSON, ok := tc.arg("names")
	if !ok {
		namesJSON = defNames
	}
	valuesJSON, ok := tc.arg("values")
	if !ok {
		valuesJSON = defValues
	}
	var names map[string]string
	var values map[string]attr.Value
	if namesJSON != "" {
		if err := json.Unmarshal([]byte(namesJSON), &names); err != nil {
			return nil, err
		}
	}
	if valuesJSON != "" {
		if err := json.Unmarshal([]byte(valuesJSON), &values); err != nil {
			return nil, err
		}
	}
	return NewParams(names, values), nil
}

// withUnused prints a parse result, and with the "unused" argument the
// result of CheckUnused.
func withUnused(tc *testCase, params *Params, v fmt.Stringer, err error) string {
	if err != nil {
		return errString(err)
	}
	out := v.String()
	if _, ok := tc.arg("unused"); ok {
		if err := params.CheckUnused(); err != nil {
			out += "\n" + errString(err)
		}
	}
	return out
}

// errString prints an error, marking any that is not an *Error.
func errString(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "NOT AN *Error: " + err.Error()
}

func parseItem(t *testing.T, tc *testCase, line string) (attr.Item, bool) {
	if strings.TrimSpace(line) == "null" {
		return nil, true
	}
	var item attr.Item
	if err := json.Unmarshal([]byte(line), &item); err != nil {
		t.Errorf("%s: bad item %q: %v", tc.pos, line, err)
		return nil, false
	}
	return item, true
}

func itemJSON(item attr.Item) string {
	if item == nil {
		return "null"
	}
	b, _ := json.Marshal(item)
	return string(b)
}

func evalItems(t *testing.T, tc *testCase, lines []string, eval func(attr.Item) bool) string {
	var out []string
	for _, l := range lines {
		item, ok := parseItem(t, tc, l)
		if !ok {
			continue
		}
		out = append(out, fmt.Sprint(eval(item)))
	}
	return strings.Join(out, "\n")
}

func updateItems(t *testing.T, tc *testCase, lines []string, u *Update) string {
	var out []string
	for _, l := range lines {
		item, ok := parseItem(t, tc, l)
		if !ok {
			continue
		}
		before := itemJSON(item)
		res, err := u.Apply(item)
		if after := itemJSON(item); after != before {
			t.Errorf("%s: Apply modified its input: %s -> %s", tc.pos, before, after)
		}
		if err != nil {
			if res != nil {
				t.Errorf("%s: Apply returned an item and an error", tc.pos)
			}
			out = append(out, "error: "+errString(err))
			continue
		}
		out = append(out, itemJSON(res))
	}
	return strings.Join(out, "\n")
}

func projectItems(t *testing.T, tc *testCase, lines []string, pr Projection) string {
	var out []string
	for _, l := range lines {
		item, ok := parseItem(t, tc, l)
		if !ok {
			continue
		}
		out = append(out, itemJSON(pr.Apply(item)))
	}
	return strings.Join(out, "\n")
}
