// Package console is quarry's web console: server-rendered pages (Go's
// html/template, embedded assets, a strict Content-Security-Policy, usable
// with JavaScript off) at / and under /console/.
//
// This package is the console's core, and imports no system package: it
// signs people in through the Realms it is given (each system's own
// credentials, and operator tokens), keeps their sessions and the forms'
// CSRF tokens, renders the layout and its own pages (home, sign-in, error,
// confirmation), serves the static assets, and mounts the Areas it is
// given. Each area is a package below this one (checks, datashelf, eecar,
// wallcrawler, explorer) holding its pages and its adapter from its
// system's packages; cmd/quarry lists the areas of the systems running.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/quarrydb/quarry/internal/platform/rrweb"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Principal is who a credential belongs to, in its realm.
type Principal struct {
	// ID identifies the principal in its realm (a user id, a company id, a
	// token's hash); it is kept in the session.
	ID string
	// Name is shown in the console's header.
	Name string
	// Check, when set, is what the realm's Revalidator is given on each
	// request instead of ID: a fingerprint of the credential (its hash,
	// never the credential), so that revoking that credential ends its
	// sessions even when the principal (a company) remains.
	Check string
}

// Authenticator checks a credential through a system's own auth.
type Authenticator interface {
	// Authenticate returns the principal of credential, or an error when
	// it is not valid.
	Authenticate(ctx context.Context, credential string) (Principal, error)
}

// Revalidator is implemented by an Authenticator whose principals can be
// revoked: each request of a session checks its principal is still valid.
type Revalidator interface {
	// Valid returns an error when the principal may no longer sign in;
	// id is its Principal.Check, or its ID when Check is empty.
	Valid(ctx context.Context, id string) error
}

// AuthFunc adapts a function to Authenticator.
type AuthFunc func(ctx context.Context, credential string) (Principal, error)

// Authenticate calls f.
func (f AuthFunc) Authenticate(ctx context.Context, credential string) (Principal, error) {
	return f(ctx, credential)
}

// Realm is one kind of credential the sign-in form accepts.
type Realm struct {
	// Kind names the realm in sessions and in the form: "operator",
	// "checks", "eecar", "wallcrawler".
	Kind string
	// Label describes the credential on the form ("Checks API token").
	Label string
	// Operator grants the operator areas (the store explorer).
	Operator bool
	// Auth validates the credential.
	Auth Authenticator
	// Prefix starts every credential the realm issues ("chk_", "ek_"): a
	// credential with it signs in to this realm whatever the form's
	// selector says. "" for a realm without one (the selector decides).
	Prefix string
	// Home is the page a sign-in without a next= lands on, and where /
	// sends the realm's sessions ("/console/checks/"); "" keeps the
	// home page of cards.
	Home string
}

// realmOf returns the realm whose Prefix starts credential, if any.
// Prefixes are distinct, so at most one matches.
func (c *Console) realmOf(credential string) (Realm, bool) {
	for _, r := range c.opts.Realms {
		if r.Prefix != "" && strings.HasPrefix(credential, r.Prefix) {
			return r, true
		}
	}
	return Realm{}, false
}

// Options configure the console.
type Options struct {
	// Realms are the credentials accepted at sign-in, in the form's order.
	Realms []Realm
	// Key signs session cookies and derives CSRF tokens (at least 32
	// bytes; every process serving the same users needs the same key).
	Key []byte
	// SessionTTL is how long a session lasts (default 8 h).
	SessionTTL time.Duration
	// Areas are the console's parts (each system's pages, the store
	// explorer); their header links are in this order.
	Areas []Area
	// Logger logs failures (default: discard).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TrustedProxy reports whether a request's RemoteAddr is a reverse
	// proxy whose X-Forwarded-Proto and X-Forwarded-For headers are
	// believed (--trusted-proxies); nil: none is. Another client's
	// X-Forwarded-* headers are dropped before any page sees them.
	TrustedProxy func(remoteAddr string) bool
}

// Console is the console's HTTP handler.
type Console struct {
	opts   Options
	sess   *sessions
	realms map[string]Realm
	pages  map[string]*template.Template
	mux    *http.ServeMux
	log    *slog.Logger
	// signedOut holds the nonces of sessions signed out in this process
	// (until they expire): their cookies stop working at once.
	signedOut sync.Map // nonce → expiry (Unix seconds)
	// throttle counts failed sign-ins per client address and credential
	// kind.
	throttle signinThrottle
}

// maxForm bounds a form's body.
const maxForm = 1 << 20

// maxUpload bounds a multipart form's body (forms with files: EECAR's part
// images).
const maxUpload = 16 << 20

// New returns the console.
func New(opts Options) (*Console, error) {
	if len(opts.Key) < 32 {
		return nil, errors.New("console: the session key must be at least 32 bytes")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 8 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, sess: &sessions{key: opts.Key, ttl: opts.SessionTTL, now: opts.Now},
		realms: map[string]Realm{}, pages: map[string]*template.Template{}, log: opts.Logger.With("system", "console")}
	for _, r := range opts.Realms {
		c.realms[r.Kind] = r
	}
	pages, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := c.parsePage(name, nil, templateFS, "templates/layout.html", p)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	if err := c.routes(); err != nil {
		return nil, err
	}
	return c, nil
}

// funcs are the template functions of every page.
var funcs = template.FuncMap{
	"join": strings.Join,
	"query": func(kv ...string) template.URL {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		return template.URL(v.Encode())
	},
	"pathesc": url.PathEscape,
	"fields":  strings.Fields,
	"list":    func(v ...any) []any { return v },
}

func (c *Console) routes() error {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/console/static/", http.FileServerFS(static))
	m.Handle("GET /console/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	}))
	// rrweb (vendored, internal/platform/rrweb): the session inspector's
	// DOM replay player, its style and its licence.
	vendored := http.StripPrefix("/console/static/rrweb/", http.FileServerFS(rrweb.FS))
	m.Handle("GET /console/static/rrweb/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		if strings.HasSuffix(r.URL.Path, "/LICENSE") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		vendored.ServeHTTP(w, r)
	}))
	m.HandleFunc("GET /{$}", c.home)
	m.HandleFunc("GET /console/{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	m.HandleFunc("GET /console/signin", c.signinForm)
	m.HandleFunc("POST /console/signin", c.signin)
	m.HandleFunc("POST /console/signout", c.signout)
	names := map[string]bool{}
	for _, a := range c.opts.Areas {
		if names[a.Name()] {
			return fmt.Errorf("console: two areas named %s", a.Name())
		}
		names[a.Name()] = true
		if err := a.Mount(m, &Kit{c: c, area: a.Name(), pages: map[string]*template.Template{}}); err != nil {
			return err
		}
	}
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) { c.notFound(w, r) })
	c.mux = m
	return nil
}

// ServeHTTP serves the console's pages. Paths outside / and /console/
// answer a JSON 404, as the listener's other paths (the systems' APIs) do.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/console/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "{\"error\":%q}\n", "not found: "+r.URL.Path)
		return
	}
	if c.opts.TrustedProxy == nil || !c.opts.TrustedProxy(r.RemoteAddr) {
		for _, name := range []string{"X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-For"} {
			r.Header.Del(name)
		}
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/console/static/") {
		h.Set("Cache-Control", "no-store")
	}
	if r.Method == http.MethodPost {
		limit := int64(maxForm)
		multi := strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data")
		if multi {
			limit = maxUpload // forms with files (EECAR's part images)
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		parse := r.ParseForm
		if multi {
			parse = func() error { return r.ParseMultipartForm(maxForm) }
		}
		if err := parse(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if r.URL.Path != "/console/signin" {
			ss, ok := c.session(w, r)
			if !ok || !c.sess.checkCSRF(ss, r.PostForm.Get("csrf")) {
				c.render(w, r, http.StatusForbidden, "error", errorPage{Title: "Refused", Message: "This form was refused: its security token is missing or does not match your session. Reload the page and try again."})
				return
			}
		}
	}
	c.mux.ServeHTTP(w, r)
}

type ctxKey struct{}

// session returns the request's valid session, clearing a cookie that is
// invalid, expired or whose principal was revoked.
func (c *Console) session(w http.ResponseWriter, r *http.Request) (session, bool) {
	if ss, ok := r.Context().Value(ctxKey{}).(session); ok {
		return ss, true
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	ss, err := c.sess.decode(ck.Value)
	if _, out := c.signedOut.Load(ss.Nonce); err == nil && out {
		err = errNoSession
	}
	if err == nil {
		realm, ok := c.realms[ss.Realm]
		if !ok {
			err = errNoSession
		} else if rv, ok := realm.Auth.(Revalidator); ok {
			id := ss.Subject
			if ss.Check != "" {
				id = ss.Check
			}
			err = rv.Valid(r.Context(), id)
		}
	}
	if err != nil {
		SetCookie(w, r, sessionCookie, "", -1)
		return session{}, false
	}
	*r = *r.WithContext(context.WithValue(r.Context(), ctxKey{}, ss))
	return ss, true
}

// operator reports whether the session may use the operator areas.
func (c *Console) operator(ss session) bool { return c.realms[ss.Realm].Operator }

// view is ss as areas see it.
func (c *Console) view(ss session) Session {
	return Session{Realm: ss.Realm, Subject: ss.Subject, Name: ss.Name, Operator: c.operator(ss)}
}

// require returns the session when it is in one of kinds ("operator" for
// any operator realm); signed out, it redirects to the sign-in page;
// signed in elsewhere, it answers 404 (the area does not exist for them).
func (c *Console) require(w http.ResponseWriter, r *http.Request, kind string) (session, bool) {
	ss, ok := c.session(w, r)
	if !ok {
		http.Redirect(w, r, "/console/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return session{}, false
	}
	if (kind == "operator" && !c.operator(ss)) || (kind != "operator" && ss.Realm != kind) {
		c.notFound(w, r)
		return session{}, false
	}
	return ss, true
}

// page is what every template gets.
type page struct {
	Signed   bool
	Name     string
	Realm    string
	Operator bool
	CSRF     string
	// PublicNav and Nav are the areas' header links (PublicNavigator,
	// Navigator).
	PublicNav []template.HTML
	Nav       []template.HTML
	Path      string
	Data      any
	// Public is a page rendered for anyone (a status page): no header
	// navigation, no session.
	Public bool
}

type errorPage struct {
	Title   string
	Message string
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	c.renderPage(w, r, status, name, c.pages[name], data)
}

// renderPage renders t (the page name) for the request's session.
func (c *Console) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, t *template.Template, data any) {
	p := page{Data: data, Path: r.URL.Path}
	for _, a := range c.opts.Areas {
		if n, ok := a.(PublicNavigator); ok {
			p.PublicNav = append(p.PublicNav, n.PublicNav())
		}
	}
	if ss, ok := c.session(w, r); ok {
		p.Signed, p.Name, p.Realm, p.CSRF = true, ss.Name, ss.Realm, c.sess.csrf(ss)
		p.Operator = c.operator(ss)
		v := c.view(ss)
		for _, a := range c.opts.Areas {
			if n, ok := a.(Navigator); ok {
				p.Nav = append(p.Nav, n.Nav(r, v))
			}
		}
	}
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.log.Error("render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusNotFound, "error", errorPage{Title: "Not found", Message: "There is no such page, or it is not yours."})
}

// notFoundOr404 answers 404 for an ErrNotFound error, else a failure.
func (c *Console) notFoundOr404(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrNotFound) {
		c.notFound(w, r)
		return
	}
	c.failure(w, r, err)
}

// failure shows an unexpected error.
func (c *Console) failure(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Error("console", "path", r.URL.Path, "err", err)
	c.render(w, r, http.StatusBadGateway, "error", errorPage{Title: "Error", Message: StoreMessage(err)})
}

// StoreMessage is the store's own message for an API error, else err's.
func StoreMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}

type homeData struct {
	// Cards are the areas' cards (Carder); Carded is set when one is not
	// empty.
	Cards  []template.HTML
	Carded bool
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.session(w, r)
	if !ok {
		c.signinForm(w, r)
		return
	}
	if home := c.realms[ss.Realm].Home; home != "" {
		http.Redirect(w, r, home, http.StatusSeeOther)
		return
	}
	var d homeData
	for _, a := range c.opts.Areas {
		if cr, ok := a.(Carder); ok {
			card := cr.Card(c.view(ss))
			d.Cards = append(d.Cards, card)
			d.Carded = d.Carded || card != ""
		}
	}
	c.render(w, r, http.StatusOK, "home", d)
}

type signinData struct {
	Realms []Realm
	Realm  string
	Next   string
	Error  string
	Nonce  string
}

func (c *Console) signinForm(w http.ResponseWriter, r *http.Request) {
	c.signinPage(w, r, http.StatusOK, r.URL.Query().Get("realm"), "")
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request, status int, realm, msg string) {
	nonce := randomToken()
	SetCookie(w, r, preCookie, nonce, 3600)
	next := r.FormValue("next")
	if r.Method == http.MethodGet && r.URL.Path == "/" {
		next = ""
	}
	c.render(w, r, status, "signin", signinData{Realms: c.opts.Realms, Realm: realm, Next: SafeNext(next), Error: msg, Nonce: nonce})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	pre, err := r.Cookie(preCookie)
	if err != nil || pre.Value == "" || r.PostForm.Get("nonce") != pre.Value {
		c.signinPage(w, r, http.StatusForbidden, "", "The sign-in form expired or was not sent by this console; try again.")
		return
	}
	cred := strings.TrimSpace(r.PostForm.Get("credential"))
	kind := r.PostForm.Get("realm")
	realm, ok := c.realms[kind]
	// A credential's prefix says which realm issued it: it wins over the
	// selector, which stays for credentials without a known prefix.
	if pr, found := c.realmOf(cred); found {
		realm, kind, ok = pr, pr.Kind, true
	}
	if !ok {
		c.signinPage(w, r, http.StatusBadRequest, "", "Choose what kind of credential you are signing in with.")
		return
	}
	client := clientAddr(r)
	if wait := c.throttle.wait(client, kind, c.opts.Now()); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.log.Warn("console sign-in throttled", "realm", kind, "client", client)
		c.signinPage(w, r, http.StatusTooManyRequests, kind, fmt.Sprintf("Too many failed sign-ins from this address; try again in %d seconds.", secs))
		return
	}
	p, err := realm.Auth.Authenticate(r.Context(), cred)
	if err != nil {
		c.throttle.fail(client, kind, c.opts.Now())
		c.log.Info("console sign-in refused", "realm", kind, "err", err)
		c.signinPage(w, r, http.StatusUnauthorized, kind, "That "+realm.Label+" is not valid.")
		return
	}
	ss := session{Realm: kind, Subject: p.ID, Check: p.Check, Name: p.Name, Expires: c.opts.Now().Add(c.opts.SessionTTL).Unix(), Nonce: randomToken()}
	SetCookie(w, r, sessionCookie, c.sess.encode(ss), int(c.opts.SessionTTL/time.Second))
	SetCookie(w, r, preCookie, "", -1)
	next := SafeNext(r.PostForm.Get("next"))
	if next == "" {
		next = "/"
		if realm.Home != "" {
			next = realm.Home
		}
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	if ss, ok := c.session(w, r); ok {
		now := c.opts.Now().Unix()
		c.signedOut.Range(func(k, v any) bool {
			if v.(int64) <= now {
				c.signedOut.Delete(k)
			}
			return true
		})
		c.signedOut.Store(ss.Nonce, ss.Expires)
	}
	SetCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/console/signin?out=1", http.StatusSeeOther)
}
