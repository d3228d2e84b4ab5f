package console

import (
	"html/template"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// testArea is an area with one page, header links and a home card.
type testArea struct{ name string }

func (a testArea) Name() string { return a.name }

func (a testArea) Mount(m *http.ServeMux, k *Kit) error {
	fsys := fstest.MapFS{
		"templates/hello.html":   {Data: []byte(`{{define "title"}}Hello{{end}}{{define "content"}}<p id="hello">{{shout .Data}} {{template "who" .}}</p>{{end}}`)},
		"templates/_shared.html": {Data: []byte(`{{define "who"}}{{.Realm}}{{end}}`)},
	}
	if err := k.Pages(fsys, template.FuncMap{"shout": strings.ToUpper}); err != nil {
		return err
	}
	m.HandleFunc("GET /console/"+a.name+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := k.Require(w, r, "operator"); ok {
			k.Render(w, r, http.StatusOK, "hello", "hi")
		}
	})
	return nil
}

func (a testArea) Nav(_ *http.Request, s Session) template.HTML {
	return template.HTML(`<a id="nav-` + a.name + `">` + template.HTMLEscapeString(s.Name) + `</a>`)
}

func (a testArea) PublicNav() template.HTML {
	return `<nav id="public-` + template.HTML(a.name) + `"></nav>`
}

func (a testArea) Card(Session) template.HTML {
	return `<li id="card-` + template.HTML(a.name) + `"></li>`
}

// TestAreas: areas mount their pages and routes, and their header links
// and home cards show in their order; two areas may not share a name.
func TestAreas(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	opts := Options{Key: []byte(strings.Repeat("k", 32)), Now: func() time.Time { return now },
		Realms: []Realm{{Kind: "operator", Label: "Operator token", Operator: true, Auth: &fakeAuth{}}},
		Areas:  []Area{testArea{"one"}, testArea{"two"}}}
	srv, hc := newTestConsoleOpts(t, opts)
	rd := reader{t}
	if b := rd.body(hc.Get(srv.URL + "/console/one/")); !strings.Contains(b, "Sign in") || !strings.Contains(b, `<nav id="public-one"></nav><nav id="public-two"></nav>`) {
		t.Errorf("signed out: %s", b)
	}
	home := signIn(t, srv, hc, "good")
	if !strings.Contains(home, "    <a id=\"nav-one\">Ursula</a>\n    <a id=\"nav-two\">Ursula</a>\n  </nav>") ||
		!strings.Contains(home, "<li id=\"card-one\"></li>\n<li id=\"card-two\"></li>\n") || strings.Contains(home, "not built yet") {
		t.Errorf("home: %s", home)
	}
	if b := rd.body(hc.Get(srv.URL + "/console/two/")); !strings.Contains(b, `<p id="hello">HI operator</p>`) {
		t.Errorf("area page: %s", b)
	}
	opts.Areas = append(opts.Areas, testArea{"one"})
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "two areas named one") {
		t.Errorf("two areas named one: %v", err)
	}
}
