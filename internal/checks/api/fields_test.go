package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestCreateNameAndTags: name defaults to the URL's host, tags to [];
// both are validated with clear 400s; tags are trimmed, deduplicated and
// sorted.
func TestCreateNameAndTags(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "names@example.com", store.TierPro)
	host := strings.TrimPrefix(e.site.URL, "http://")
	host = host[:strings.LastIndex(host, ":")]
	base := func(extra map[string]any) map[string]any {
		b := map[string]any{"url": e.site.URL + "/health", "checkType": "AVAILABILITY", "delayMs": 60000}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name     string
		extra    map[string]any
		code     int
		wantName string
		wantTags []string
		errHas   string
	}{
		{"defaults", nil, 201, host, []string{}, ""},
		{"name and tags", map[string]any{"name": "  Shop health ", "tags": []any{"prod", " eu ", "Prod", "api"}}, 201, "Shop health", []string{"api", "eu", "prod"}, ""},
		{"empty name is the host", map[string]any{"name": "  "}, 201, host, []string{}, ""},
		{"no tags", map[string]any{"tags": []any{}}, 201, host, []string{}, ""},
		{"null tags", map[string]any{"tags": nil}, 201, host, []string{}, ""},
		{"name too long", map[string]any{"name": strings.Repeat("n", 101)}, 400, "", nil, "name must be at most 100 characters (it has 101)"},
		{"name with a newline", map[string]any{"name": "a\nb"}, 400, "", nil, "name must not contain control characters"},
		{"name not a string", map[string]any{"name": 5}, 400, "", nil, "invalid JSON body"},
		{"too many tags", map[string]any{"tags": []any{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}}, 400, "", nil, "tags: at most 10 tags (got 11)"},
		{"tag too long", map[string]any{"tags": []any{"ok", strings.Repeat("t", 33)}}, 400, "", nil, "tags[1] must be at most 32 characters"},
		{"empty tag", map[string]any{"tags": []any{" "}}, 400, "", nil, "tags[0] is empty"},
		{"tag with a comma", map[string]any{"tags": []any{"a,b"}}, 400, "", nil, `tags[0] "a,b" must not contain a comma`},
		{"tag not a string", map[string]any{"tags": []any{"a", 3}}, 400, "", nil, "tags[1] must be a string, not a number"},
		{"tags not a list", map[string]any{"tags": "prod"}, 400, "", nil, "tags must be a list of strings"},
		{"delay in ms, with its meaning", map[string]any{"delayMs": 5000}, 400, "", nil, "delayMs must be between 10000 and 2592000000 (10 s to 30 days)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, e.srv.URL, "POST", "/v1/checks", token, base(tc.extra))
			if r.code != tc.code {
				t.Fatalf("create = %d %s, want %d", r.code, r.raw, tc.code)
			}
			if tc.code != 201 {
				if msg := r.errMsg(t); !strings.Contains(msg, tc.errHas) {
					t.Fatalf("error %q, want %q", msg, tc.errHas)
				}
				return
			}
			c := r.obj(t)
			got := call(t, e.srv.URL, "GET", "/v1/checks/"+c["id"].(string), token, nil).obj(t)
			for _, m := range []map[string]any{c, got} {
				if m["name"] != tc.wantName || fmt.Sprint(m["tags"]) != fmt.Sprint(tc.wantTags) {
					t.Fatalf("name %v tags %v, want %q %v", m["name"], m["tags"], tc.wantName, tc.wantTags)
				}
			}
		})
	}
}

// TestPatchEveryField: PATCH changes each field the user set, validates
// the result as a create does, and a request with one invalid field
// changes nothing.
func TestPatchEveryField(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "patch@example.com", store.TierPro)
	c := e.createCheck(t, token, 60000, map[string]any{"keyword": "In stock"})
	id := c["id"].(string)
	path := "/v1/checks/" + id
	get := func() map[string]any { return call(t, e.srv.URL, "GET", path, token, nil).obj(t) }
	steps := []struct {
		name   string
		body   map[string]any
		code   int
		check  map[string]any // fields after the step (fmt.Sprint compared)
		errHas string
	}{
		{"name", map[string]any{"name": "Shop"}, 200, map[string]any{"name": "Shop"}, ""},
		{"tags", map[string]any{"tags": []any{"b", "a"}}, 200, map[string]any{"tags": []string{"a", "b"}}, ""},
		{"several at once", map[string]any{"name": "Shop EU", "tags": []any{"eu"}, "delayMs": 30000}, 200,
			map[string]any{"name": "Shop EU", "tags": []string{"eu"}, "delayMs": 30000}, ""},
		{"valid name, invalid tags: nothing changes", map[string]any{"name": "Other", "tags": []any{strings.Repeat("x", 40)}}, 400,
			map[string]any{"name": "Shop EU", "tags": []string{"eu"}}, "tags[0] must be at most 32"},
		{"valid name, invalid delay: nothing changes", map[string]any{"name": "Other", "delayMs": 1}, 400,
			map[string]any{"name": "Shop EU", "delayMs": 30000}, "delayMs must be between"},
		{"valid tags, refused url: nothing changes", map[string]any{"tags": []any{"x"}, "url": "ftp://example.com/"}, 400,
			map[string]any{"tags": []string{"eu"}}, "ftp"},
		{"checkType to EBAY without threshold", map[string]any{"checkType": "EBAY"}, 400,
			map[string]any{"checkType": "AVAILABILITY"}, "threshold"},
		{"checkType to EBAY with its attributes", map[string]any{"checkType": "ebay", "attributes": map[string]any{"threshold": 50}}, 200,
			map[string]any{"checkType": "EBAY", "attributes": map[string]any{"threshold": 50}}, ""},
		{"back to AVAILABILITY", map[string]any{"checkType": "AVAILABILITY", "attributes": map[string]any{"keyword": "stock"}, "url": e.site.URL + "/x"}, 200,
			map[string]any{"checkType": "AVAILABILITY", "url": e.site.URL + "/x"}, ""},
		{"name cleared: the host", map[string]any{"name": ""}, 200, map[string]any{"name": "127.0.0.1"}, ""},
		{"tags cleared", map[string]any{"tags": []any{}}, 200, map[string]any{"tags": []string{}}, ""},
	}
	for _, st := range steps {
		r := call(t, e.srv.URL, "PATCH", path, token, st.body)
		if r.code != st.code {
			t.Fatalf("%s: PATCH = %d %s, want %d", st.name, r.code, r.raw, st.code)
		}
		if st.code != 200 && !strings.Contains(r.errMsg(t), st.errHas) {
			t.Fatalf("%s: error %q, want %q", st.name, r.errMsg(t), st.errHas)
		}
		got := get()
		for k, want := range st.check {
			if fmt.Sprint(got[k]) != fmt.Sprint(want) {
				t.Fatalf("%s: %s = %v, want %v", st.name, k, got[k], want)
			}
		}
	}
	// A change of type is a new target: due at once, alert state cleared.
	stored, err := e.st.GetCheck(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	if time.Until(stored.NextRunAt) > time.Second || stored.AlertState != "" || stored.FailCount != 0 {
		t.Fatalf("after the type change: nextRunAt in %s, alertState %q, failCount %d", time.Until(stored.NextRunAt), stored.AlertState, stored.FailCount)
	}
}

// TestListFilters: ?tag= (every one given, any case), ?status= (the
// check's status, or UP/DOWN/PENDING of the last run) and ?q= (in the
// name or the URL, any case), combined; an unknown status is a 400.
func TestListFilters(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "filters@example.com", store.TierPro)
	mk := func(name, path string, tags []any, attrs map[string]any) string {
		body := map[string]any{"url": e.site.URL + path, "checkType": "AVAILABILITY", "delayMs": 60000, "name": name, "tags": tags}
		if attrs != nil {
			body["attributes"] = attrs
		}
		r := call(t, e.srv.URL, "POST", "/v1/checks", token, body)
		if r.code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.code, r.raw)
		}
		return r.obj(t)["id"].(string)
	}
	up := mk("Shop front", "/front", []any{"prod", "eu"}, nil)
	down := mk("Shop stock", "/stock", []any{"prod"}, map[string]any{"keyword": "sold out"})
	paused := mk("Blog", "/blog", []any{"staging"}, nil)
	pending := mk("", "/api/status", nil, nil)
	if r := call(t, e.srv.URL, "POST", "/v1/checks/"+paused+"/pause", token, nil); r.code != 200 {
		t.Fatal(r.code)
	}
	ctx := context.Background()
	// Run the first two now; the last stays PENDING (its first run is
	// jittered up to a minute away: taken off this scheduler).
	e.sched.Remove(pending)
	for _, id := range []string{up, down} {
		if r := call(t, e.srv.URL, "POST", "/v1/checks/"+id+"/run", token, nil); r.code != http.StatusAccepted {
			t.Fatalf("run: %d %s", r.code, r.raw)
		}
	}
	if n := e.sched.RunDue(ctx, time.Now()); n != 2 {
		t.Fatalf("ran %d, want the two checks", n)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{up, down, paused, pending}},
		{"?tag=prod", []string{up, down}},
		{"?tag=PROD&tag=eu", []string{up}},
		{"?tag=nope", nil},
		{"?status=up", []string{up}},
		{"?status=DOWN", []string{down}},
		{"?status=PAUSED", []string{paused}},
		{"?status=PENDING", []string{pending}},
		{"?status=ACTIVE", []string{up, down, pending}},
		{"?status=FAILED", nil},
		{"?q=shop", []string{up, down}},
		{"?q=STOCK", []string{down}},
		{"?q=/api/", []string{pending}},
		{"?q=127.0.0.1", []string{up, down, paused, pending}},
		{"?q=shop&tag=prod&status=up", []string{up}},
	}
	for _, tc := range tests {
		r := call(t, e.srv.URL, "GET", "/v1/checks"+tc.query, token, nil)
		if r.code != 200 {
			t.Fatalf("%s: %d %s", tc.query, r.code, r.raw)
		}
		var ids []string
		for _, c := range r.list(t) {
			ids = append(ids, c["id"].(string))
		}
		slices.Sort(ids)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("%s: %v, want %v", tc.query, ids, want)
		}
	}
	r := call(t, e.srv.URL, "GET", "/v1/checks?status=green", token, nil)
	if r.code != 400 || !strings.Contains(r.errMsg(t), "status must be one of UP, DOWN, PENDING, ACTIVE, PAUSED, FAILED") {
		t.Fatalf("unknown status: %d %s", r.code, r.raw)
	}
}
