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
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/console"
)

// Part is a part as the console shows it.
type Part struct {
	ID           string
	Name         string
	Category     string
	Manufacturer string
	Model        string
	Year         int
	Condition    string // new, used, refurbished
	Price        float64
	Quantity     int
	Description  string
	SellerID     string
	SellerName   string
	// Images are the part's image references: uploaded ones are
	// /eecar/images/{key} (shown through the console), others URLs.
	Images []string
	// Specs are the flattened specs ("chemicalProps.soh", "92"), sorted.
	Specs [][2]string
	// RawSpecs are the specs as stored (the edit form).
	RawSpecs map[string]any
	UseCases []string
	// Battery is the battery-health assessment (batteries only).
	Battery   *Battery
	CreatedAt string
	UpdatedAt string
}

// Battery is a battery's health assessment.
type Battery struct {
	SOH            float64
	Estimated      bool // from the age rule, not stated
	Cathode        string
	Recommendation string // reuse, recycle, dispose
	Applications   []string
}

// Hit is one search result with its reason.
type Hit struct {
	Part   Part
	Score  float64
	Vector float64
	BM25   float64
	Reason string
}

// Query is a search with its filters (nil or "" for any).
type Query struct {
	Q            string
	Category     string
	Manufacturer string
	Condition    string
	Cathode      string
	MinPrice     *float64
	MaxPrice     *float64
	MinSOH       *float64
	TopK         int
}

// PartInput is a part as the forms send it.
type PartInput struct {
	Name         string
	Category     string
	Manufacturer string
	Model        string
	Year         int
	Condition    string
	Price        *float64
	Quantity     *int
	Description  string
	Images       []string
	Specs        map[string]any
}

// Need is a company's need.
type Need struct {
	ID                  string
	Industry            string
	Category            string
	MinQuantity         int
	MaxPrice            float64
	MaterialPreferences []string
	TargetApplication   string
	ProductionProcess   string
	Priority            string
	Status              string
	CreatedAt           string
}

// Watch is a buyer's watch.
type Watch struct {
	ID          string
	Category    string
	MaxPrice    float64
	MinSpecs    [][2]string // path, minimum
	Keywords    []string
	Status      string
	CreatedAt   string
	TriggeredAt string
}

// Trigger is a part a watch found.
type Trigger struct {
	PartID     string
	PartName   string // "" when the part is gone
	MatchScore float64
	NotifiedAt string
}

// Proposal is a proposal between two companies.
type Proposal struct {
	ID         string
	FromID     string
	FromName   string
	ToID       string // the party who must answer (while open)
	ToName     string
	PartIDs    []string
	Type       string // buy, sell
	Message    string
	Quantity   int
	PriceOffer float64
	Status     string // pending, negotiating, accepted, rejected
	CreatedAt  string
	SenderName string // who proposed first
	History    []Step
}

// Step is one response in a proposal's history.
type Step struct {
	By         string
	ByName     string
	Action     string
	PriceOffer float64
	Quantity   int
	Message    string
	At         string
}

// ProposalInput is a new proposal.
type ProposalInput struct {
	ToCompanyID string
	PartIDs     []string
	Type        string
	Quantity    int
	PriceOffer  float64
	Message     string
}

// Response answers a proposal: accept, reject or counter.
type Response struct {
	Action     string
	PriceOffer float64
	Quantity   int
	Message    string
}

// Notification is a notification of a company.
type Notification struct {
	ID      string
	Type    string
	Title   string
	Message string
	Read    bool
	SentAt  string
	// Link is the console page it is about ("" when none).
	Link string
}

// Backend is what the marketplace needs of EECAR's market, acting as the
// signed-in company (company ids come from the session). Errors wrapping
// console.ErrInvalid carry the API's message; console.ErrNotFound is also what another
// company's need, watch, proposal or notification gives.
type Backend interface {
	Search(ctx context.Context, company string, q Query) ([]Hit, error)
	Part(ctx context.Context, id string) (Part, error)
	// MyParts lists the company's parts newest first, limit of them after
	// the cursor after; next is "" on the last page.
	MyParts(ctx context.Context, company, after string, limit int) (parts []Part, next string, err error)
	// SavePart creates a part (id "") or replaces one of the company's.
	SavePart(ctx context.Context, company, id string, in PartInput) (Part, error)
	WithdrawPart(ctx context.Context, company, id string) error
	// PutImage stores an uploaded image and returns its reference.
	PutImage(ctx context.Context, company string, data []byte) (string, error)
	// Image opens an uploaded image by its key (the caller closes it).
	Image(ctx context.Context, key string) (io.ReadCloser, string, error)
	// Needs, Watches and Watch's triggers are listed a page at a time:
	// limit of them after the cursor after, with the next page's cursor
	// ("" on the last).
	Needs(ctx context.Context, company, after string, limit int) ([]Need, string, error)
	Need(ctx context.Context, company, id string) (Need, error)
	NeedMatches(ctx context.Context, company, id string) ([]Hit, error)
	CreateNeed(ctx context.Context, company string, n Need) (Need, error)
	Watches(ctx context.Context, company, after string, limit int) ([]Watch, string, error)
	Watch(ctx context.Context, company, id, after string, limit int) (Watch, []Trigger, string, error)
	CreateWatch(ctx context.Context, company string, w Watch) (Watch, error)
	CancelWatch(ctx context.Context, company, id string) error
	// Inbox lists the open proposals awaiting the company's answer.
	Inbox(ctx context.Context, company string) ([]Proposal, error)
	// Proposals lists every proposal the company is a party of, newest
	// first, a page at a time.
	Proposals(ctx context.Context, company, after string, limit int) ([]Proposal, string, error)
	Proposal(ctx context.Context, company, id string) (Proposal, error)
	Propose(ctx context.Context, company string, in ProposalInput) (Proposal, error)
	Respond(ctx context.Context, company, id string, r Response) (Proposal, error)
	// Notifications lists the notifications newest first, a page at a
	// time.
	Notifications(ctx context.Context, company, after string, limit int) ([]Notification, string, error)
	// Open returns a notification and marks it read.
	Open(ctx context.Context, company, id string) (Notification, error)
	// Unread counts the unread among the latest 100 notifications.
	Unread(ctx context.Context, company string) (int, error)
}

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
}

func (d *pageData) common() *pageData { return d }

// page is an EECAR page's data: it embeds pageData.
type page interface{ common() *pageData }

// render renders an EECAR page; its data carries the language and the
// unread count.
func (a *Area) render(w http.ResponseWriter, r *http.Request, status int, name string, data page) {
	d := data.common()
	d.Unread = a.unread(r, d.Me)
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

type searchData struct {
	pageData
	Categories []string
	Hits       []Hit
	Searched   bool
	More       string // the query string of the next page
	Prev       string
	From       int // the first result's rank
}

// searchPage is the number of results a search page shows; a search asks
// for page × searchPage results (at most 100) and shows the last page.
const searchPage = 10

func (a *Area) search(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	q := r.URL.Query()
	d := searchData{pageData: pageData{L: l, Me: ss.Subject, Form: q}, Categories: categories}
	query := Query{Q: strings.TrimSpace(q.Get("q")), Category: q.Get("category"), Manufacturer: strings.TrimSpace(q.Get("manufacturer")),
		Condition: q.Get("condition"), Cathode: strings.TrimSpace(q.Get("cathode"))}
	var errs []string
	var err error
	if query.MinPrice, err = number(l, l.T("f.minprice"), q.Get("minPrice")); err != nil {
		errs = append(errs, err.Error())
	}
	if query.MaxPrice, err = number(l, l.T("f.maxprice"), q.Get("maxPrice")); err != nil {
		errs = append(errs, err.Error())
	}
	if query.MinSOH, err = number(l, l.T("f.minsoh"), q.Get("minSoh")); err != nil {
		errs = append(errs, err.Error())
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page < 1 || page > 100/searchPage {
		page = 1
	}
	status := http.StatusOK
	switch {
	case len(errs) > 0:
		d.Err, status = strings.Join(errs, "; "), http.StatusBadRequest
	case query.Q != "":
		query.TopK = page*searchPage + 1 // one more: is there a next page?
		if query.TopK > 100 {
			query.TopK = 100
		}
		hits, err := a.b.Search(r.Context(), ss.Subject, query)
		if msg := console.InvalidMessage(err); msg != "" {
			d.Err, status = msg, http.StatusBadRequest
			break
		} else if err != nil {
			a.k.Failure(w, r, err)
			return
		}
		d.Searched = true
		from := (page - 1) * searchPage
		if len(hits) > page*searchPage && page < 100/searchPage {
			next := cloneValues(q)
			next.Set("page", strconv.Itoa(page+1))
			d.More = next.Encode()
		}
		if page > 1 {
			prev := cloneValues(q)
			prev.Set("page", strconv.Itoa(page-1))
			d.Prev = prev.Encode()
		}
		if from < len(hits) {
			d.Hits = hits[from:min(len(hits), page*searchPage)]
		}
		d.From = from + 1
	}
	a.render(w, r, status, "search", &d)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// categories are EECAR's part categories, in the forms' order.
var categories = []string{"battery", "motor", "inverter", "charger", "electronics", "body-chassis-frame", "body-panel", "body-door", "body-window", "interior", "other"}

type partData struct {
	pageData
	Part Part
	Mine bool
}

func (a *Area) part(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	p, err := a.b.Part(r.Context(), r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	d := partData{pageData: pageData{L: lang(r), Me: ss.Subject, Msg: lang(r).msg(r.URL.Query().Get("m")), Form: url.Values{}}, Part: p, Mine: p.SellerID == ss.Subject}
	a.render(w, r, http.StatusOK, "part", &d)
}

type myPartsData struct {
	pageData
	Parts []Part
	Next  string
	First bool
}

func (a *Area) myParts(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	after := r.URL.Query().Get("after")
	parts, next, err := a.b.MyParts(r.Context(), ss.Subject, after, pageSize)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	l := lang(r)
	a.render(w, r, http.StatusOK, "my", &myPartsData{pageData: pageData{L: l, Me: ss.Subject, Msg: l.msg(r.URL.Query().Get("m"))},
		Parts: parts, Next: next, First: after == ""})
}

type partFormData struct {
	pageData
	ID         string // "" for a new part
	Categories []string
	Images     []string
}

// specFields are the spec paths the part form has fields for; the rest
// of the specs are edited as JSON.
var specFields = [][2]string{{"soh", "chemicalProps.soh"}, {"cathode", "chemicalProps.cathode"},
	{"voltage", "electricalProps.voltage"}, {"capacity", "electricalProps.capacity"}, {"power", "electricalProps.power"}}

func (a *Area) partFormPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	d := partFormData{pageData: pageData{L: l, Me: ss.Subject, Form: url.Values{}}, ID: r.PathValue("id"), Categories: categories}
	if d.ID != "" {
		p, err := a.b.Part(r.Context(), d.ID)
		if err == nil && p.SellerID != ss.Subject {
			err = console.ErrNotFound // another company's part is not editable, nor shown as such
		}
		if err != nil {
			a.k.NotFoundOr(w, r, err)
			return
		}
		d.Form = partForm(p)
		d.Images = p.Images
	} else {
		d.Form.Set("condition", "used")
		d.Form.Set("quantity", "1")
	}
	a.render(w, r, http.StatusOK, "partform", &d)
}

// partForm fills the part form's fields from a part.
func partForm(p Part) url.Values {
	f := url.Values{}
	f.Set("name", p.Name)
	f.Set("category", p.Category)
	f.Set("manufacturer", p.Manufacturer)
	f.Set("model", p.Model)
	if p.Year != 0 {
		f.Set("year", strconv.Itoa(p.Year))
	}
	f.Set("condition", p.Condition)
	f.Set("price", strconv.FormatFloat(p.Price, 'f', -1, 64))
	f.Set("quantity", strconv.Itoa(p.Quantity))
	f.Set("description", p.Description)
	rest := cloneSpecs(p.RawSpecs)
	for _, sf := range specFields {
		if v, ok := takeSpec(rest, sf[1]); ok {
			f.Set(sf[0], fmt.Sprint(v))
		}
	}
	if len(rest) > 0 {
		b, _ := json.MarshalIndent(rest, "", "  ")
		f.Set("specs", string(b))
	}
	return f
}

// cloneSpecs deep-copies the maps of a specs object.
func cloneSpecs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneSpecs(sub)
		}
		out[k] = v
	}
	return out
}

// takeSpec removes "group.key" from specs and returns its value; a group
// left empty is removed too.
func takeSpec(specs map[string]any, path string) (any, bool) {
	group, k, _ := strings.Cut(path, ".")
	sub, ok := specs[group].(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok := sub[k]
	delete(sub, k)
	if len(sub) == 0 {
		delete(specs, group)
	}
	return v, ok
}

// setSpec sets "group.key" in specs.
func setSpec(specs map[string]any, path string, v any) {
	group, k, _ := strings.Cut(path, ".")
	sub, ok := specs[group].(map[string]any)
	if !ok {
		sub = map[string]any{}
		specs[group] = sub
	}
	sub[k] = v
}

// partInput reads the part form (and its uploaded images).
func (a *Area) partInput(r *http.Request, company string, l Lang) (PartInput, []string, error) {
	f := r.PostForm
	in := PartInput{Name: f.Get("name"), Category: f.Get("category"), Manufacturer: f.Get("manufacturer"),
		Model: strings.TrimSpace(f.Get("model")), Condition: f.Get("condition"), Description: f.Get("description")}
	var errs []string
	var err error
	if in.Price, err = number(l, l.T("f.price"), f.Get("price")); err != nil {
		errs = append(errs, err.Error())
	}
	if in.Quantity, err = integer(l, l.T("f.quantity"), f.Get("quantity")); err != nil {
		errs = append(errs, err.Error())
	}
	if y, err := integer(l, l.T("f.year"), f.Get("year")); err != nil {
		errs = append(errs, err.Error())
	} else if y != nil {
		in.Year = *y
	}
	in.Specs = map[string]any{}
	if s := strings.TrimSpace(f.Get("specs")); s != "" {
		if err := json.Unmarshal([]byte(s), &in.Specs); err != nil {
			errs = append(errs, l.T("err.specs")+": "+err.Error())
		}
	}
	for _, sf := range specFields {
		v := strings.TrimSpace(f.Get(sf[0]))
		if v == "" {
			continue
		}
		if sf[0] == "cathode" {
			setSpec(in.Specs, sf[1], v)
			continue
		}
		n, err := number(l, l.T("f."+sf[0]), v)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		setSpec(in.Specs, sf[1], *n)
	}
	for _, img := range f["image"] {
		if !contains(f["remove"], img) {
			in.Images = append(in.Images, img)
		}
	}
	kept := append([]string(nil), in.Images...)
	if len(errs) > 0 {
		return in, kept, formError{errors.New(strings.Join(errs, "; "))}
	}
	if r.MultipartForm != nil {
		for _, fh := range r.MultipartForm.File["upload"] {
			ref, err := a.upload(r.Context(), company, fh)
			if err != nil {
				return in, kept, err
			}
			in.Images = append(in.Images, ref)
		}
	}
	return in, in.Images, nil
}

func (a *Area) upload(ctx context.Context, company string, fh *multipart.FileHeader) (string, error) {
	if fh.Size == 0 {
		return "", nil
	}
	f, err := fh.Open()
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	return a.b.PutImage(ctx, company, data)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (a *Area) savePart(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	id := r.PathValue("id")
	in, images, err := a.partInput(r, ss.Subject, l)
	var p Part
	if err == nil {
		p, err = a.b.SavePart(r.Context(), ss.Subject, id, in)
	}
	if errors.Is(err, console.ErrNotFound) || errors.Is(err, console.ErrForbidden) {
		a.k.NotFound(w, r)
		return
	}
	if err != nil {
		msg := console.InvalidMessage(err)
		if fe := (formError{}); errors.As(err, &fe) {
			msg = fe.Error()
		}
		if msg == "" {
			a.k.Failure(w, r, err)
			return
		}
		form := cloneValues(r.PostForm)
		form.Del("csrf")
		a.render(w, r, http.StatusBadRequest, "partform", &partFormData{pageData: pageData{L: l, Me: ss.Subject, Err: msg, Form: form},
			ID: id, Categories: categories, Images: images})
		return
	}
	m := "created"
	if id != "" {
		m = "saved"
	}
	http.Redirect(w, r, "/console/eecar/parts/"+url.PathEscape(p.ID)+"?m="+m, http.StatusSeeOther)
}

// formError is a form field the console itself could not read.
type formError struct{ error }

func (a *Area) withdraw(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	p, err := a.b.Part(r.Context(), id)
	if err == nil && p.SellerID != ss.Subject {
		err = console.ErrNotFound
	}
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	l := lang(r)
	if r.PostForm.Get("confirm") != "yes" {
		a.k.Confirm(w, r, console.Confirm{Title: l.T("withdraw.title"), Message: fmt.Sprintf(l.T("withdraw.confirm"), p.Name),
			Action: r.URL.Path, Fields: map[string]string{}, Back: "/console/eecar/parts/" + url.PathEscape(id)})
		return
	}
	if err := a.b.WithdrawPart(r.Context(), ss.Subject, id); err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/my/?m=withdrawn", http.StatusSeeOther)
}

func (a *Area) image(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "eecar"); !ok {
		return
	}
	rc, ctype, err := a.b.Image(r.Context(), r.PathValue("key"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "private, max-age=86400")
	_, _ = io.Copy(w, rc)
}

type needsData struct {
	pageData
	Needs      []Need
	Next       string
	Categories []string
}

func (a *Area) needs(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	a.needsPage(w, r, ss, http.StatusOK, "", url.Values{"priority": {"medium"}})
}

func (a *Area) needsPage(w http.ResponseWriter, r *http.Request, ss console.Session, status int, msg string, form url.Values) {
	needs, next, err := a.b.Needs(r.Context(), ss.Subject, r.URL.Query().Get("after"), pageSize)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	l := lang(r)
	a.render(w, r, status, "needs", &needsData{pageData: pageData{L: l, Me: ss.Subject, Err: msg, Form: form}, Needs: needs, Next: next, Categories: categories})
}

func (a *Area) createNeed(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	f := r.PostForm
	n := Need{Industry: strings.TrimSpace(f.Get("industry")), Category: f.Get("category"), TargetApplication: strings.TrimSpace(f.Get("targetApplication")),
		ProductionProcess: strings.TrimSpace(f.Get("productionProcess")), Priority: f.Get("priority")}
	for _, m := range strings.Split(f.Get("materials"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			n.MaterialPreferences = append(n.MaterialPreferences, m)
		}
	}
	var errs []string
	if v, err := number(l, l.T("f.maxprice"), f.Get("maxPrice")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		n.MaxPrice = *v
	}
	if v, err := integer(l, l.T("f.minqty"), f.Get("minQuantity")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		n.MinQuantity = *v
	}
	var err error
	if len(errs) == 0 {
		n, err = a.b.CreateNeed(r.Context(), ss.Subject, n)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = console.InvalidMessage(err)
	}
	if msg != "" {
		a.needsPage(w, r, ss, http.StatusBadRequest, msg, r.PostForm)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/needs/"+url.PathEscape(n.ID), http.StatusSeeOther)
}

type needData struct {
	pageData
	Need Need
	Hits []Hit
	From int
}

func (a *Area) need(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	n, err := a.b.Need(r.Context(), ss.Subject, id)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	hits, err := a.b.NeedMatches(r.Context(), ss.Subject, id)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "need", &needData{pageData: pageData{L: lang(r), Me: ss.Subject}, Need: n, Hits: hits, From: 1})
}

type watchesData struct {
	pageData
	Watches    []Watch
	Next       string
	Categories []string
}

func (a *Area) watches(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	a.watchesPage(w, r, ss, http.StatusOK, lang(r).msg(r.URL.Query().Get("m")), "", url.Values{})
}

func (a *Area) watchesPage(w http.ResponseWriter, r *http.Request, ss console.Session, status int, msg, errMsg string, form url.Values) {
	ws, next, err := a.b.Watches(r.Context(), ss.Subject, r.URL.Query().Get("after"), pageSize)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.render(w, r, status, "watches", &watchesData{pageData: pageData{L: lang(r), Me: ss.Subject, Msg: msg, Err: errMsg, Form: form}, Watches: ws, Next: next, Categories: categories})
}

func (a *Area) createWatch(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	f := r.PostForm
	wt := Watch{Category: f.Get("category")}
	for _, k := range strings.Split(f.Get("keywords"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			wt.Keywords = append(wt.Keywords, k)
		}
	}
	var errs []string
	if v, err := number(l, l.T("f.maxprice"), f.Get("maxPrice")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		wt.MaxPrice = *v
	}
	if v, err := number(l, l.T("f.minsoh"), f.Get("minSoh")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		wt.MinSpecs = append(wt.MinSpecs, [2]string{"chemicalProps.soh", strconv.FormatFloat(*v, 'f', -1, 64)})
	}
	var err error
	if len(errs) == 0 {
		wt, err = a.b.CreateWatch(r.Context(), ss.Subject, wt)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = console.InvalidMessage(err)
	}
	if msg != "" {
		a.watchesPage(w, r, ss, http.StatusBadRequest, "", msg, r.PostForm)
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/watches/"+url.PathEscape(wt.ID), http.StatusSeeOther)
}

type watchData struct {
	pageData
	Watch    Watch
	Triggers []Trigger
	Next     string
}

func (a *Area) watch(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	wt, ts, next, err := a.b.Watch(r.Context(), ss.Subject, r.PathValue("id"), r.URL.Query().Get("after"), pageSize)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	l := lang(r)
	a.render(w, r, http.StatusOK, "watch", &watchData{pageData: pageData{L: l, Me: ss.Subject, Msg: l.msg(r.URL.Query().Get("m"))}, Watch: wt, Triggers: ts, Next: next})
}

func (a *Area) cancelWatch(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := a.b.CancelWatch(r.Context(), ss.Subject, id); err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/watches/"+url.PathEscape(id)+"?m=cancelled", http.StatusSeeOther)
}

type proposalsData struct {
	pageData
	Box       string // in, out, all
	Proposals []Proposal
	Next      string
}

func (a *Area) proposals(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	q := r.URL.Query()
	d := proposalsData{pageData: pageData{L: lang(r), Me: ss.Subject}, Box: q.Get("box")}
	var err error
	switch d.Box {
	case "out", "all":
		// The outbox is the open proposals awaiting the other party,
		// among one page of all the company's proposals.
		var ps []Proposal
		ps, d.Next, err = a.b.Proposals(r.Context(), ss.Subject, q.Get("after"), pageSize)
		for _, p := range ps {
			if d.Box == "all" || p.ToID != ss.Subject && (p.Status == "pending" || p.Status == "negotiating") {
				d.Proposals = append(d.Proposals, p)
			}
		}
	default:
		d.Box = "in"
		d.Proposals, err = a.b.Inbox(r.Context(), ss.Subject)
	}
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "proposals", &d)
}

func (a *Area) propose(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	f := r.PostForm
	in := ProposalInput{ToCompanyID: f.Get("to"), PartIDs: f["part"], Type: f.Get("type"), Message: strings.TrimSpace(f.Get("message"))}
	var errs []string
	if v, err := number(l, l.T("f.offer"), f.Get("priceOffer")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		in.PriceOffer = *v
	}
	if v, err := integer(l, l.T("f.quantity"), f.Get("quantity")); err != nil {
		errs = append(errs, err.Error())
	} else if v != nil {
		in.Quantity = *v
	}
	var p Proposal
	var err error
	if len(errs) == 0 {
		p, err = a.b.Propose(r.Context(), ss.Subject, in)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = console.InvalidMessage(err)
	}
	if msg != "" {
		// Back on the part's page, with the message above the form.
		if len(in.PartIDs) == 0 {
			a.k.Error(w, r, http.StatusBadRequest, l.T("propose"), msg)
			return
		}
		part, perr := a.b.Part(r.Context(), in.PartIDs[0])
		if perr != nil {
			a.k.NotFoundOr(w, r, perr)
			return
		}
		form := cloneValues(f)
		form.Del("csrf")
		a.render(w, r, http.StatusBadRequest, "part", &partData{pageData: pageData{L: l, Me: ss.Subject, Err: msg, Form: form}, Part: part, Mine: part.SellerID == ss.Subject})
		return
	}
	if err != nil {
		a.k.Failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/proposals/"+url.PathEscape(p.ID)+"?m=proposed", http.StatusSeeOther)
}

type proposalData struct {
	pageData
	P     Proposal
	Turn  bool // the company must answer
	Parts []Part
}

func (a *Area) proposal(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	a.proposalPage(w, r, ss, http.StatusOK, l.msg(r.URL.Query().Get("m")), "", url.Values{})
}

func (a *Area) proposalPage(w http.ResponseWriter, r *http.Request, ss console.Session, status int, msg, errMsg string, form url.Values) {
	p, err := a.b.Proposal(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	d := proposalData{pageData: pageData{L: lang(r), Me: ss.Subject, Msg: msg, Err: errMsg, Form: form}, P: p,
		Turn: p.ToID == ss.Subject && (p.Status == "pending" || p.Status == "negotiating")}
	for _, id := range p.PartIDs {
		part, err := a.b.Part(r.Context(), id)
		if errors.Is(err, console.ErrNotFound) {
			d.Parts = append(d.Parts, Part{ID: id})
			continue
		}
		if err != nil {
			a.k.Failure(w, r, err)
			return
		}
		d.Parts = append(d.Parts, part)
	}
	a.render(w, r, status, "proposal", &d)
}

func (a *Area) respond(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	l := lang(r)
	f := r.PostForm
	resp := Response{Action: f.Get("action"), Message: strings.TrimSpace(f.Get("message"))}
	var errs []string
	if resp.Action == "counter" {
		if v, err := number(l, l.T("f.offer"), f.Get("priceOffer")); err != nil {
			errs = append(errs, err.Error())
		} else if v != nil {
			resp.PriceOffer = *v
		}
		if v, err := integer(l, l.T("f.quantity"), f.Get("quantity")); err != nil {
			errs = append(errs, err.Error())
		} else if v != nil {
			resp.Quantity = *v
		}
	}
	var err error
	if len(errs) == 0 {
		_, err = a.b.Respond(r.Context(), ss.Subject, r.PathValue("id"), resp)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = console.InvalidMessage(err)
	}
	if msg == "" && (errors.Is(err, console.ErrForbidden) || errors.Is(err, console.ErrConflict)) {
		msg = err.Error()
	}
	if msg != "" {
		form := cloneValues(f)
		form.Del("csrf")
		a.proposalPage(w, r, ss, http.StatusBadRequest, "", msg, form)
		return
	}
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/proposals/"+url.PathEscape(r.PathValue("id"))+"?m="+url.QueryEscape(resp.Action), http.StatusSeeOther)
}

type notificationsData struct {
	pageData
	Notes []Notification
	Next  string
}

func (a *Area) notifications(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	ns, next, err := a.b.Notifications(r.Context(), ss.Subject, r.URL.Query().Get("after"), pageSize)
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "notifications", &notificationsData{pageData: pageData{L: lang(r), Me: ss.Subject}, Notes: ns, Next: next})
}

type noteData struct {
	pageData
	N Notification
}

func (a *Area) open(w http.ResponseWriter, r *http.Request) {
	ss, ok := a.k.Require(w, r, "eecar")
	if !ok {
		return
	}
	n, err := a.b.Open(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		a.k.NotFoundOr(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "note", &noteData{pageData: pageData{L: lang(r), Me: ss.Subject}, N: n})
}
