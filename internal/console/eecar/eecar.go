// Package eecar is the console's EECAR marketplace for a signed-in
// company: search with match reasons and filters, part pages with specs
// and battery health, the company's parts (create, edit, withdraw,
// images), needs and their matches, watches and their triggers, proposals
// (inbox, outbox, history, responses) and notifications. Every page is in
// Korean or English (i18n.go). Backend is EECAR as the pages see it; Adapt
// makes one of EECAR's market.
package eecar

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// pageSize is the page size of the part and proposal lists.
const pageSize = 20

//go:embed templates/*.html
var templates embed.FS

// Area is the marketplace of EECAR companies (realm "eecar").
type Area struct {
	b Backend
	k *console.Kit
}

// New returns the marketplace over b.
func New(b Backend) *Area { return &Area{b: b} }

// Name implements console.Area.
func (*Area) Name() string { return "eecar" }

// Nav links a company to the marketplace and its unread notifications.
func (a *Area) Nav(r *http.Request, s console.Session) template.HTML {
	if s.Realm != "eecar" {
		return ""
	}
	return template.HTML(`<a href="/console/eecar/">EECAR</a> <a href="/console/eecar/notifications/" class="unread" title="unread notifications">✉ <span id="nav-unread" class="badge">` +
		strconv.Itoa(a.unread(r, s.Subject)) + `</span></a>`)
}

type unreadKey struct{}

// unread is the company's count of unread notifications (0 when it cannot
// be read), read once per request: the header and the page show the same.
func (a *Area) unread(r *http.Request, company string) int {
	if n, ok := r.Context().Value(unreadKey{}).(int); ok {
		return n
	}
	n, _ := a.b.Unread(r.Context(), company)
	*r = *r.WithContext(context.WithValue(r.Context(), unreadKey{}, n))
	return n
}

// Mount implements console.Area.
func (a *Area) Mount(m *http.ServeMux, k *console.Kit) error {
	a.k = k
	if err := k.Pages(templates, nil); err != nil {
		return err
	}
	m.HandleFunc("GET /console/eecar/{$}", a.search)
	m.HandleFunc("GET /console/eecar/parts/{id}", a.part)
	m.HandleFunc("GET /console/eecar/my/{$}", a.myParts)
	m.HandleFunc("GET /console/eecar/my/new", a.partFormPage)
	m.HandleFunc("POST /console/eecar/my/new", a.savePart)
	m.HandleFunc("GET /console/eecar/my/{id}/edit", a.partFormPage)
	m.HandleFunc("POST /console/eecar/my/{id}/edit", a.savePart)
	m.HandleFunc("POST /console/eecar/my/{id}/withdraw", a.withdraw)
	m.HandleFunc("GET /console/eecar/images/{key}", a.image)
	m.HandleFunc("GET /console/eecar/needs/{$}", a.needs)
	m.HandleFunc("POST /console/eecar/needs/{$}", a.createNeed)
	m.HandleFunc("GET /console/eecar/needs/{id}", a.need)
	m.HandleFunc("GET /console/eecar/watches/{$}", a.watches)
	m.HandleFunc("POST /console/eecar/watches/{$}", a.createWatch)
	m.HandleFunc("GET /console/eecar/watches/{id}", a.watch)
	m.HandleFunc("POST /console/eecar/watches/{id}/cancel", a.cancelWatch)
	m.HandleFunc("GET /console/eecar/proposals/{$}", a.proposals)
	m.HandleFunc("POST /console/eecar/proposals/{$}", a.propose)
	m.HandleFunc("GET /console/eecar/proposals/{id}", a.proposal)
	m.HandleFunc("POST /console/eecar/proposals/{id}/respond", a.respond)
	m.HandleFunc("GET /console/eecar/notifications/{$}", a.notifications)
	m.HandleFunc("GET /console/eecar/notifications/{id}", a.open)
	m.HandleFunc("POST /console/eecar/lang", a.setLang)
	return nil
}

// pageData is what every EECAR page gets besides its own data.
type pageData struct {
	L    Lang
	Me   string // the company's id
	Msg  string
	Err  string
	Form url.Values
	// Unread is the company's count of unread notifications (set by
	// render).
	Unread int
	// Now is the console's clock at render, for relative times (set by
	// render).
	Now time.Time
}

func (d *pageData) common() *pageData { return d }

// page is an EECAR page's data: it embeds pageData.
type page interface{ common() *pageData }

// render renders an EECAR page; its data carries the language and the
// unread count.
func (a *Area) render(w http.ResponseWriter, r *http.Request, status int, name string, data page) {
	d := data.common()
	d.Unread = a.unread(r, d.Me)
	d.Now = a.k.Now()
	w.Header().Set("Content-Language", string(lang(r)))
	w.Header().Add("Vary", "Accept-Language")
	a.k.Render(w, r, status, name, data)
}

// number parses an optional number field ("" is nil); comma grouping and
// a leading ₩ are accepted.
func number(l Lang, field, s string) (*float64, error) {
	s = strings.NewReplacer(",", "", "₩", "", " ", "").Replace(strings.TrimSpace(s))
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v {
		return nil, fmt.Errorf(l.T("err.number"), field)
	}
	return &v, nil
}

// integer parses an optional whole number field ("" is nil).
func integer(l Lang, field, s string) (*int, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	if s == "" {
		return nil, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf(l.T("err.integer"), field)
	}
	return &v, nil
}
