package console

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Area is one part of the console (a system's pages, the store explorer):
// its routes, under /console/, and its pages.
type Area interface {
	// Name names the area in logs and errors; it is unique in a console.
	Name() string
	// Mount parses the area's pages through k and registers its routes on
	// mux. It is called once, by New.
	Mount(mux *http.ServeMux, k *Kit) error
}

// Navigator is implemented by an Area with links in the header of a
// signed-in session's pages.
type Navigator interface {
	// Nav returns the area's header links for s, "" for none. Every
	// Navigator has a line of the header, empty or not, in the order of
	// Options.Areas.
	Nav(r *http.Request, s Session) template.HTML
}

// PublicNavigator is implemented by an Area with links in the header of
// every page but the public ones (status pages), signed in or not.
type PublicNavigator interface {
	PublicNav() template.HTML
}

// Carder is implemented by an Area with a card on the home page.
type Carder interface {
	// Card returns the area's card for s, "" for none.
	Card(s Session) template.HTML
}

// Session is the signed-in person, as areas see them.
type Session struct {
	// Realm is the Realm.Kind signed in with.
	Realm string
	// Subject is the principal's ID in its realm.
	Subject string
	// Name is shown in the header.
	Name string
	// Operator is set when the realm grants the operator areas.
	Operator bool
}

// Kit is what an area's handlers use of the console: its pages, the
// session, and the shared answers (not found, failure, confirmation).
type Kit struct {
	c     *Console
	area  string
	pages map[string]*template.Template
}

// Pages parses the area's pages: every templates/*.html of fsys but those
// whose name begins with "_", each with the console's layout and every
// templates/_*.html of fsys (the area's shared definitions), with the
// console's template functions and funcs. A page is named after its file
// ("sessions" for templates/sessions.html).
func (k *Kit) Pages(fsys fs.FS, funcs template.FuncMap) error {
	files, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		return fmt.Errorf("console: %s templates: %w", k.area, err)
	}
	var shared []string
	for _, f := range files {
		if strings.HasPrefix(f, "templates/_") {
			shared = append(shared, f)
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if strings.HasPrefix(name, "_") {
			continue
		}
		t, err := k.c.parsePage(name, funcs, templateFS, "templates/layout.html")
		if err == nil {
			_, err = t.ParseFS(fsys, append([]string{f}, shared...)...)
		}
		if err != nil {
			return fmt.Errorf("console: %s template %s: %w", k.area, name, err)
		}
		k.pages[name] = t
	}
	return nil
}

// parsePage parses files of fsys into a page named name with the
// console's template functions, those on its clock (ago), and extra.
func (c *Console) parsePage(name string, extra template.FuncMap, fsys fs.FS, files ...string) (*template.Template, error) {
	return template.New(name).Funcs(funcs).Funcs(template.FuncMap{"ago": c.agoFunc}).Funcs(extra).ParseFS(fsys, files...)
}

// Render answers with the page name (the area's, else the console's
// "error" or "confirm") around data, for the request's session.
func (k *Kit) Render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t, ok := k.pages[name]
	if !ok {
		t = k.c.pages[name]
	}
	k.c.renderPage(w, r, status, name, t, data)
}

// Session returns the request's valid session (ok false when signed out).
func (k *Kit) Session(w http.ResponseWriter, r *http.Request) (Session, bool) {
	ss, ok := k.c.session(w, r)
	if !ok {
		return Session{}, false
	}
	return k.c.view(ss), true
}

// Require returns the session when its realm is kind ("operator": any
// operator realm); signed out, it redirects to the sign-in page; signed in
// elsewhere, it answers 404 (the area does not exist for them).
func (k *Kit) Require(w http.ResponseWriter, r *http.Request, kind string) (Session, bool) {
	ss, ok := k.c.require(w, r, kind)
	if !ok {
		return Session{}, false
	}
	return k.c.view(ss), true
}

// NotFound answers the console's 404 page.
func (k *Kit) NotFound(w http.ResponseWriter, r *http.Request) { k.c.notFound(w, r) }

// Failure logs an unexpected error and shows it.
func (k *Kit) Failure(w http.ResponseWriter, r *http.Request, err error) { k.c.failure(w, r, err) }

// NotFoundOr answers 404 for an ErrNotFound error, else a Failure.
func (k *Kit) NotFoundOr(w http.ResponseWriter, r *http.Request, err error) {
	k.c.notFoundOr404(w, r, err)
}

// Error shows an error page with title and message.
func (k *Kit) Error(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	k.c.render(w, r, status, "error", errorPage{Title: title, Message: message})
}

// Confirm asks to confirm a deletion (or another action that cannot be
// undone): a form posting Fields and confirm=yes to Action, with a link
// back to Back. Button labels the form's button ("" means "Delete").
type Confirm struct {
	Title   string
	Message string
	Action  string
	Fields  map[string]string
	Back    string
	Button  string
}

// Confirm shows the confirmation page of d.
func (k *Kit) Confirm(w http.ResponseWriter, r *http.Request, d Confirm) {
	k.c.render(w, r, http.StatusOK, "confirm", d)
}

// Now is the console's clock.
func (k *Kit) Now() time.Time { return k.c.opts.Now() }

// Logger is the console's logger.
func (k *Kit) Logger() *slog.Logger { return k.c.log }

// SafeNext returns next when it is a path of this origin, else "" (no
// open redirect). It refuses a backslash and every control byte as well as
// "//": browsers drop TAB, CR and LF from a URL and read a backslash as "/",
// so "/<TAB>/evil.example/" would leave the origin.
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return ""
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return ""
		}
	}
	return next
}

// Secure reports whether r came over TLS, directly or through a proxy that
// says so; cookies set in answer to it are Secure.
func Secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// SetCookie sets an HttpOnly, SameSite=Strict cookie scoped to the whole
// listener (the console's pages are at / and under /console/); maxAge < 0
// deletes it.
func SetCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: Secure(r), SameSite: http.SameSiteStrictMode})
}

// NiceCeil rounds v up to 1, 2 or 5 times a power of ten: the top of a
// chart's axis.
func NiceCeil(v int64) int64 {
	p := int64(1)
	for {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= v {
				return m * p
			}
		}
		p *= 10
	}
}

// Sentinel errors of the areas' backends; handlers map them onto answers.
var (
	// ErrNotFound is something that does not exist or is not the
	// session's: 404.
	ErrNotFound = errors.New("console: not found")
	// ErrInvalid is an input refused; its message is shown.
	ErrInvalid = errors.New("console: invalid")
	// ErrForbidden is an action the session may not take (another's
	// turn); its message is shown.
	ErrForbidden = errors.New("console: not allowed")
	// ErrConflict is an action refused because the thing changed state
	// (a proposal already answered); its message is shown.
	ErrConflict = errors.New("console: conflict")
)

// InvalidMessage is the message of an ErrInvalid error without the
// sentinel's prefix, or "" when err is not one.
func InvalidMessage(err error) string {
	if errors.Is(err, ErrInvalid) {
		return strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ")
	}
	return ""
}
