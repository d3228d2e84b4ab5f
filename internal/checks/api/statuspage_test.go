package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestStatusPageAPI: GET before any setting, PUT enabling (a token and
// its URL), PUT again keeps the token (the address goes on working), the
// store finds the user from it, newToken replaces it, disabling kills it;
// another user's settings are their own.
func TestStatusPageAPI(t *testing.T) {
	e := newEnv(t)
	u, token := e.user(t, "a@example.com", store.TierPro)
	_, other := e.user(t, "b@example.com", store.TierPro)
	ck := e.createCheck(t, token, 60000, nil)["id"].(string)
	ctx := context.Background()

	g := call(t, e.srv.URL, "GET", "/v1/me/statuspage", token, nil).obj(t)
	if g["enabled"] != false || g["token"] != "" || fmt.Sprint(g["groups"]) != "[]" {
		t.Fatalf("unset page %v", g)
	}
	body := map[string]any{"enabled": true, "title": " Shop status ", "description": "Our shop.\nAnd its API.",
		"groups": []any{map[string]any{"name": "Web", "tags": []string{"web"}}, map[string]any{"name": "Main", "checkIds": []string{ck, ck}}}}
	r := call(t, e.srv.URL, "PUT", "/v1/me/statuspage", token, body)
	if r.code != 200 {
		t.Fatalf("put = %d %s", r.code, r.raw)
	}
	p := r.obj(t)
	tok, _ := p["token"].(string)
	if p["enabled"] != true || tok == "" || !strings.HasSuffix(p["url"].(string), "/console/status/"+tok) || p["title"] != "Shop status" {
		t.Fatalf("put answer %s", r.raw)
	}
	if got, err := e.st.StatusPageUser(ctx, tok); err != nil || got.ID != u.ID {
		t.Fatalf("StatusPageUser = %v, %v", got.ID, err)
	}
	body["title"] = "Shop"
	p = call(t, e.srv.URL, "PUT", "/v1/me/statuspage", token, body).obj(t)
	if p["token"] != tok || p["title"] != "Shop" {
		t.Fatalf("second put changed the token or kept the title: %v", p)
	}
	g = call(t, e.srv.URL, "GET", "/v1/me/statuspage", token, nil).obj(t)
	groups, _ := g["groups"].([]any)
	if g["token"] != tok || len(groups) != 2 || fmt.Sprint(groups[1]) != fmt.Sprintf("map[checkIds:[%s] name:Main tags:[]]", ck) {
		t.Fatalf("get %v", g)
	}
	if g := call(t, e.srv.URL, "GET", "/v1/me/statuspage", other, nil).obj(t); g["enabled"] != false || g["title"] != "" {
		t.Fatalf("another user's page %v", g)
	}
	body["newToken"] = true
	p = call(t, e.srv.URL, "PUT", "/v1/me/statuspage", token, body).obj(t)
	if p["token"] == tok || p["token"] == "" {
		t.Fatalf("newToken kept %v", p)
	}
	if _, err := e.st.StatusPageUser(ctx, tok); err == nil {
		t.Fatal("the replaced token still answers")
	}
	tok = p["token"].(string)
	p = call(t, e.srv.URL, "PUT", "/v1/me/statuspage", token, map[string]any{"enabled": false, "title": "Shop"}).obj(t)
	if p["enabled"] != false || p["token"] != "" || p["url"] != "" {
		t.Fatalf("disable %v", p)
	}
	if _, err := e.st.StatusPageUser(ctx, tok); err == nil {
		t.Fatal("a disabled page's token still answers")
	}
}

// TestStatusPageValidation: each invalid body is a 400 naming the field.
func TestStatusPageValidation(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	_, other := e.user(t, "b@example.com", store.TierPro)
	othersCheck := e.createCheck(t, other, 60000, nil)["id"].(string)
	group := func(g map[string]any) map[string]any {
		return map[string]any{"enabled": true, "groups": []any{g}}
	}
	many := make([]any, 21)
	for i := range many {
		many[i] = map[string]any{"name": "g", "tags": []string{"t"}}
	}
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"no enabled", map[string]any{"title": "x"}, "enabled: required"},
		{"long title", map[string]any{"enabled": true, "title": strings.Repeat("t", 101)}, "title must be at most 100 characters"},
		{"control title", map[string]any{"enabled": true, "title": "a\nb"}, "title must not contain control characters"},
		{"long description", map[string]any{"enabled": true, "description": strings.Repeat("d", 2001)}, "description must be at most 2000"},
		{"too many groups", map[string]any{"enabled": true, "groups": many}, "groups: at most 20 (got 21)"},
		{"group without name", group(map[string]any{"tags": []string{"a"}}), "groups[0].name: required"},
		{"group without checks", group(map[string]any{"name": "g"}), "groups[0]: give tags or checkIds"},
		{"group bad tag", group(map[string]any{"name": "g", "tags": []string{""}}), "groups[0].tags[0] is empty"},
		{"group other's check", group(map[string]any{"name": "g", "checkIds": []string{othersCheck}}), `groups[0].checkIds[0]: "` + othersCheck + `" is not one of your checks`},
		{"unknown field", map[string]any{"enabled": true, "colour": "red"}, "unknown field"},
	} {
		r := call(t, e.srv.URL, "PUT", "/v1/me/statuspage", token, tc.body)
		if r.code != 400 || !strings.Contains(r.errMsg(t), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, r.code, r.raw, tc.want)
		}
	}
	if g := call(t, e.srv.URL, "GET", "/v1/me/statuspage", token, nil).obj(t); g["enabled"] != false {
		t.Fatalf("a refused put enabled the page: %v", g)
	}
}

// TestIncidentsAPI: create, update, list and get; validation is a 400
// naming the field; another user's incident is a 404 and not listed.
func TestIncidentsAPI(t *testing.T) {
	e := newEnv(t)
	_, token := e.user(t, "a@example.com", store.TierPro)
	_, other := e.user(t, "b@example.com", store.TierPro)
	r := call(t, e.srv.URL, "POST", "/v1/me/incidents", token, map[string]any{"title": "Checkout errors", "status": "Investigating", "message": "Payments fail."})
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	inc := r.obj(t)
	id, _ := inc["id"].(string)
	if !strings.HasPrefix(id, "inc_") || inc["status"] != "investigating" {
		t.Fatalf("created %s", r.raw)
	}
	r = call(t, e.srv.URL, "POST", "/v1/me/incidents/"+id+"/updates", token, map[string]any{"status": "resolved", "message": "Fixed."})
	if r.code != 201 || r.obj(t)["status"] != "resolved" || r.obj(t)["resolvedAt"] == nil {
		t.Fatalf("update = %d %s", r.code, r.raw)
	}
	if g := call(t, e.srv.URL, "GET", "/v1/me/incidents/"+id, token, nil).obj(t); len(g["updates"].([]any)) != 2 {
		t.Fatalf("get %v", g)
	}
	if l := call(t, e.srv.URL, "GET", "/v1/me/incidents", token, nil).list(t); len(l) != 1 || l[0]["id"] != id {
		t.Fatalf("list %v", l)
	}
	if l := call(t, e.srv.URL, "GET", "/v1/me/incidents", other, nil).list(t); len(l) != 0 {
		t.Fatalf("another user lists %v", l)
	}
	if r := call(t, e.srv.URL, "GET", "/v1/me/incidents/"+id, other, nil); r.code != 404 {
		t.Fatalf("another user's get = %d", r.code)
	}
	if r := call(t, e.srv.URL, "POST", "/v1/me/incidents/"+id+"/updates", other, map[string]any{"status": "resolved", "message": "x"}); r.code != 404 {
		t.Fatalf("another user's update = %d %s", r.code, r.raw)
	}
	for _, tc := range []struct {
		name, path string
		body       any
		want       string
	}{
		{"no title", "/v1/me/incidents", map[string]any{"status": "identified", "message": "m"}, "title: required"},
		{"long title", "/v1/me/incidents", map[string]any{"title": strings.Repeat("t", 101), "status": "identified", "message": "m"}, "title must be at most 100"},
		{"no status", "/v1/me/incidents", map[string]any{"title": "t", "message": "m"}, "status: required"},
		{"bad status", "/v1/me/incidents", map[string]any{"title": "t", "status": "fine", "message": "m"}, `status: "fine" is not one of investigating, identified, monitoring, resolved`},
		{"no message", "/v1/me/incidents", map[string]any{"title": "t", "status": "identified"}, "message: required"},
		{"long message", "/v1/me/incidents", map[string]any{"title": "t", "status": "identified", "message": strings.Repeat("m", 2001)}, "message must be at most 2000"},
		{"update bad status", "/v1/me/incidents/" + id + "/updates", map[string]any{"status": "x", "message": "m"}, `status: "x" is not one of`},
		{"update no message", "/v1/me/incidents/" + id + "/updates", map[string]any{"status": "monitoring"}, "message: required"},
	} {
		r := call(t, e.srv.URL, "POST", tc.path, token, tc.body)
		if r.code != 400 || !strings.Contains(r.errMsg(t), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, r.code, r.raw, tc.want)
		}
	}
	for len(inc["updates"].([]any)) < store.MaxIncidentUpdates {
		inc = call(t, e.srv.URL, "POST", "/v1/me/incidents/"+id+"/updates", token, map[string]any{"status": "monitoring", "message": "m"}).obj(t)
	}
	r = call(t, e.srv.URL, "POST", "/v1/me/incidents/"+id+"/updates", token, map[string]any{"status": "resolved", "message": "m"})
	if r.code != 400 || !strings.Contains(r.errMsg(t), "20 updates per incident at most") {
		t.Fatalf("update beyond the limit = %d %s", r.code, r.raw)
	}
}
