package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// guardArea has an operator page, a page of the "tenant" realm and a
// form handler of that realm that counts the posts it runs.
type guardArea struct{ posts *atomic.Int64 }

func (guardArea) Name() string { return "guard" }

func (a guardArea) Mount(m *http.ServeMux, k *Kit) error {
	fsys := fstest.MapFS{"templates/form.html": {Data: []byte(`{{define "title"}}Form{{end}}{{define "content"}}<form method="post"><input name="csrf" value="{{.CSRF}}"></form>{{end}}`)}}
	if err := k.Pages(fsys, nil); err != nil {
		return err
	}
	m.HandleFunc("GET /console/guard/ops", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := k.Require(w, r, "operator"); ok {
			k.Render(w, r, http.StatusOK, "form", nil)
		}
	})
	m.HandleFunc("GET /console/guard/mine", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := k.Require(w, r, "tenant"); ok {
			k.Render(w, r, http.StatusOK, "form", nil)
		}
	})
	m.HandleFunc("POST /console/guard/mine", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := k.Require(w, r, "tenant"); ok {
			a.posts.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	return nil
}

func (guardArea) Nav(*http.Request, Session) template.HTML { return "" }
func (guardArea) PublicNav() template.HTML                 { return "" }
func (guardArea) Card(Session) template.HTML               { return "" }

// realmAuth accepts one credential per realm.
type realmAuth struct{ cred, id string }

func (a realmAuth) Authenticate(_ context.Context, cred string) (Principal, error) {
	if cred != a.cred {
		return Principal{}, errors.New("bad")
	}
	return Principal{ID: a.id, Name: a.id}, nil
}

// TestGuards plays a signed-in user against the console's own guards: a
// form posted without its CSRF token, with another session's, or with a
// forged one is refused before the area's handler runs; an operator page
// answers 404 to a tenant, and a tenant page 404 to an operator (the area
// does not exist for them), while each reaches its own.
func TestGuards(t *testing.T) {
	var posts atomic.Int64
	now := time.Unix(1_700_000_000, 0)
	c, err := New(Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
		Realms: []Realm{
			{Kind: "operator", Label: "Operator token", Operator: true, Auth: realmAuth{"op", "root"}},
			{Kind: "tenant", Label: "Tenant token", Auth: realmAuth{"tn", "alice"}},
		},
		Areas: []Area{guardArea{&posts}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	rd := reader{t}
	client := func(realm, cred string) *http.Client {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		page := rd.body(hc.Get(srv.URL + "/console/signin"))
		nonce := regexp.MustCompile(`name="nonce" value="([^"]+)"`).FindStringSubmatch(page)[1]
		resp, err := hc.PostForm(srv.URL+"/console/signin", url.Values{"nonce": {nonce}, "realm": {realm}, "credential": {cred}})
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign in to %s: %v %v", realm, resp.Status, err)
		}
		resp.Body.Close()
		return hc
	}
	op, tenant, other := client("operator", "op"), client("tenant", "tn"), client("tenant", "tn")
	status := func(hc *http.Client, method, path string, form url.Values) int {
		t.Helper()
		var resp *http.Response
		var err error
		if method == "POST" {
			resp, err = hc.PostForm(srv.URL+path, form)
		} else {
			resp, err = hc.Get(srv.URL + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	csrfOf := func(hc *http.Client) string {
		b := rd.body(hc.Get(srv.URL + "/console/guard/mine"))
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(b)
		if m == nil {
			t.Fatalf("no CSRF token in the form: %s", b)
		}
		return m[1]
	}
	mine, others := csrfOf(tenant), csrfOf(other)
	if mine == others {
		t.Fatal("two sessions share a CSRF token")
	}
	for _, tt := range []struct {
		name string
		csrf []string
	}{
		{"no token", nil},
		{"empty token", []string{""}},
		{"another session's token", []string{others}},
		{"a forged token", []string{strings.Repeat("A", len(mine))}},
	} {
		if got := status(tenant, "POST", "/console/guard/mine", url.Values{"csrf": tt.csrf}); got != http.StatusForbidden {
			t.Errorf("post with %s: %d, want 403", tt.name, got)
		}
	}
	if posts.Load() != 0 {
		t.Fatalf("the handler ran %d times for refused posts", posts.Load())
	}
	if got := status(tenant, "POST", "/console/guard/mine", url.Values{"csrf": {mine}}); got != http.StatusNoContent || posts.Load() != 1 {
		t.Errorf("post with the session's token: %d, %d runs; want 204 and 1", got, posts.Load())
	}

	for _, tt := range []struct {
		name string
		hc   *http.Client
		path string
		want int
	}{
		{"tenant on the operator page", tenant, "/console/guard/ops", http.StatusNotFound},
		{"operator on the tenant page", op, "/console/guard/mine", http.StatusNotFound},
		{"operator on its page", op, "/console/guard/ops", http.StatusOK},
		{"tenant on its page", tenant, "/console/guard/mine", http.StatusOK},
	} {
		if got := status(tt.hc, "GET", tt.path, nil); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
