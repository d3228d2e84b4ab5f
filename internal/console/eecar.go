package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// EECAR's marketplace for a signed-in company: search with match reasons
// and filters, part pages with specs and battery health, the company's
// parts (create, edit, withdraw, images), needs and their matches, watches
// and their triggers, proposals (inbox, outbox, history, responses) and
// notifications. Every page is in Korean or English (eecar_i18n.go).

// EECARPart is a part as the console shows it.
type EECARPart struct {
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
	Battery   *EECARBattery
	CreatedAt string
	UpdatedAt string
}

// EECARBattery is a battery's health assessment.
type EECARBattery struct {
	SOH            float64
	Estimated      bool // from the age rule, not stated
	Cathode        string
	Recommendation string // reuse, recycle, dispose
	Applications   []string
}

// EECARHit is one search result with its reason.
type EECARHit struct {
	Part   EECARPart
	Score  float64
	Vector float64
	BM25   float64
	Reason string
}

// EECARQuery is a search with its filters (nil or "" for any).
type EECARQuery struct {
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

// EECARPartInput is a part as the forms send it.
type EECARPartInput struct {
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

// EECARNeed is a company's need.
type EECARNeed struct {
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

// EECARWatch is a buyer's watch.
type EECARWatch struct {
	ID          string
	Category    string
	MaxPrice    float64
	MinSpecs    [][2]string // path, minimum
	Keywords    []string
	Status      string
	CreatedAt   string
	TriggeredAt string
}

// EECARTrigger is a part a watch found.
type EECARTrigger struct {
	PartID     string
	PartName   string // "" when the part is gone
	MatchScore float64
	NotifiedAt string
}

// EECARProposal is a proposal between two companies.
type EECARProposal struct {
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
	History    []EECARStep
}

// EECARStep is one response in a proposal's history.
type EECARStep struct {
	By         string
	ByName     string
	Action     string
	PriceOffer float64
	Quantity   int
	Message    string
	At         string
}

// EECARProposalInput is a new proposal.
type EECARProposalInput struct {
	ToCompanyID string
	PartIDs     []string
	Type        string
	Quantity    int
	PriceOffer  float64
	Message     string
}

// EECARResponse answers a proposal: accept, reject or counter.
type EECARResponse struct {
	Action     string
	PriceOffer float64
	Quantity   int
	Message    string
}

// EECARNotification is a notification of a company.
type EECARNotification struct {
	ID      string
	Type    string
	Title   string
	Message string
	Read    bool
	SentAt  string
	// Link is the console page it is about ("" when none).
	Link string
}

// EECAR is what the console needs of EECAR's market, acting as the
// signed-in company (company ids come from the session). Errors wrapping
// ErrInvalid carry the API's message; ErrNotFound is also what another
// company's need, watch, proposal or notification gives.
type EECAR interface {
	Search(ctx context.Context, company string, q EECARQuery) ([]EECARHit, error)
	Part(ctx context.Context, id string) (EECARPart, error)
	// MyParts lists the company's parts newest first, limit of them after
	// the cursor after; next is "" on the last page.
	MyParts(ctx context.Context, company, after string, limit int) (parts []EECARPart, next string, err error)
	// SavePart creates a part (id "") or replaces one of the company's.
	SavePart(ctx context.Context, company, id string, in EECARPartInput) (EECARPart, error)
	WithdrawPart(ctx context.Context, company, id string) error
	// PutImage stores an uploaded image and returns its reference.
	PutImage(ctx context.Context, company string, data []byte) (string, error)
	// Image opens an uploaded image by its key (the caller closes it).
	Image(ctx context.Context, key string) (io.ReadCloser, string, error)
	// Needs, Watches and Watch's triggers are listed a page at a time:
	// limit of them after the cursor after, with the next page's cursor
	// ("" on the last).
	Needs(ctx context.Context, company, after string, limit int) ([]EECARNeed, string, error)
	Need(ctx context.Context, company, id string) (EECARNeed, error)
	NeedMatches(ctx context.Context, company, id string) ([]EECARHit, error)
	CreateNeed(ctx context.Context, company string, n EECARNeed) (EECARNeed, error)
	Watches(ctx context.Context, company, after string, limit int) ([]EECARWatch, string, error)
	Watch(ctx context.Context, company, id, after string, limit int) (EECARWatch, []EECARTrigger, string, error)
	CreateWatch(ctx context.Context, company string, w EECARWatch) (EECARWatch, error)
	CancelWatch(ctx context.Context, company, id string) error
	// Inbox lists the open proposals awaiting the company's answer.
	Inbox(ctx context.Context, company string) ([]EECARProposal, error)
	// Proposals lists every proposal the company is a party of, newest
	// first, a page at a time.
	Proposals(ctx context.Context, company, after string, limit int) ([]EECARProposal, string, error)
	Proposal(ctx context.Context, company, id string) (EECARProposal, error)
	Propose(ctx context.Context, company string, in EECARProposalInput) (EECARProposal, error)
	Respond(ctx context.Context, company, id string, r EECARResponse) (EECARProposal, error)
	// Notifications lists the notifications newest first, a page at a
	// time.
	Notifications(ctx context.Context, company, after string, limit int) ([]EECARNotification, string, error)
	// Open returns a notification and marks it read.
	Open(ctx context.Context, company, id string) (EECARNotification, error)
	// Unread counts the unread among the latest 100 notifications.
	Unread(ctx context.Context, company string) (int, error)
}

// eecarPageSize is the page size of the part and proposal lists.
const eecarPageSize = 20

// maxUpload bounds a multipart form (part images).
const maxUpload = 16 << 20

func (c *Console) eecarRoutes(m *http.ServeMux) {
	if c.opts.EECAR == nil {
		return
	}
	m.HandleFunc("GET /console/eecar/{$}", c.eecarSearch)
	m.HandleFunc("GET /console/eecar/parts/{id}", c.eecarPart)
	m.HandleFunc("GET /console/eecar/my/{$}", c.eecarMyParts)
	m.HandleFunc("GET /console/eecar/my/new", c.eecarPartForm)
	m.HandleFunc("POST /console/eecar/my/new", c.eecarSavePart)
	m.HandleFunc("GET /console/eecar/my/{id}/edit", c.eecarPartForm)
	m.HandleFunc("POST /console/eecar/my/{id}/edit", c.eecarSavePart)
	m.HandleFunc("POST /console/eecar/my/{id}/withdraw", c.eecarWithdraw)
	m.HandleFunc("GET /console/eecar/images/{key}", c.eecarImage)
	m.HandleFunc("GET /console/eecar/needs/{$}", c.eecarNeeds)
	m.HandleFunc("POST /console/eecar/needs/{$}", c.eecarCreateNeed)
	m.HandleFunc("GET /console/eecar/needs/{id}", c.eecarNeed)
	m.HandleFunc("GET /console/eecar/watches/{$}", c.eecarWatches)
	m.HandleFunc("POST /console/eecar/watches/{$}", c.eecarCreateWatch)
	m.HandleFunc("GET /console/eecar/watches/{id}", c.eecarWatch)
	m.HandleFunc("POST /console/eecar/watches/{id}/cancel", c.eecarCancelWatch)
	m.HandleFunc("GET /console/eecar/proposals/{$}", c.eecarProposals)
	m.HandleFunc("POST /console/eecar/proposals/{$}", c.eecarPropose)
	m.HandleFunc("GET /console/eecar/proposals/{id}", c.eecarProposal)
	m.HandleFunc("POST /console/eecar/proposals/{id}/respond", c.eecarRespond)
	m.HandleFunc("GET /console/eecar/notifications/{$}", c.eecarNotifications)
	m.HandleFunc("GET /console/eecar/notifications/{id}", c.eecarOpen)
	m.HandleFunc("POST /console/eecar/lang", c.eecarSetLang)
}

// eecarData is what every EECAR page gets besides its own data.
type eecarData struct {
	L    Lang
	Me   string // the company's id
	Msg  string
	Err  string
	Form url.Values
}

// eecarRender renders an EECAR page; its data carries the language.
func (c *Console) eecarRender(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	w.Header().Set("Content-Language", string(c.lang(r)))
	w.Header().Add("Vary", "Accept-Language")
	c.render(w, r, status, name, data)
}

// eecarFail shows err: the API's message for ErrInvalid (400), 404 for
// ErrNotFound, else a failure.
func (c *Console) eecarFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrNotFound) {
		c.notFound(w, r)
		return
	}
	c.failure(w, r, err)
}

// invalidMessage is the API's message of a refused input, or "" when err
// is not a refusal.
func invalidMessage(err error) string {
	if errors.Is(err, ErrInvalid) {
		return strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ")
	}
	return ""
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
	eecarData
	Categories []string
	Hits       []EECARHit
	Searched   bool
	More       string // the query string of the next page
	Prev       string
	From       int // the first result's rank
}

// searchPage is the number of results a search page shows; a search asks
// for page × searchPage results (at most 100) and shows the last page.
const searchPage = 10

func (c *Console) eecarSearch(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	q := r.URL.Query()
	d := searchData{eecarData: eecarData{L: l, Me: ss.Subject, Form: q}, Categories: eecarCategories}
	query := EECARQuery{Q: strings.TrimSpace(q.Get("q")), Category: q.Get("category"), Manufacturer: strings.TrimSpace(q.Get("manufacturer")),
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
		hits, err := c.opts.EECAR.Search(r.Context(), ss.Subject, query)
		if msg := invalidMessage(err); msg != "" {
			d.Err, status = msg, http.StatusBadRequest
			break
		} else if err != nil {
			c.failure(w, r, err)
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
	c.eecarRender(w, r, status, "eecar_search", d)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// eecarCategories are EECAR's part categories, in the forms' order.
var eecarCategories = []string{"battery", "motor", "inverter", "charger", "electronics", "body-chassis-frame", "body-panel", "body-door", "body-window", "interior", "other"}

type partData struct {
	eecarData
	Part EECARPart
	Mine bool
}

func (c *Console) eecarPart(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	p, err := c.opts.EECAR.Part(r.Context(), r.PathValue("id"))
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	d := partData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject, Msg: c.lang(r).msg(r.URL.Query().Get("m")), Form: url.Values{}}, Part: p, Mine: p.SellerID == ss.Subject}
	c.eecarRender(w, r, http.StatusOK, "eecar_part", d)
}

type myPartsData struct {
	eecarData
	Parts []EECARPart
	Next  string
	First bool
}

func (c *Console) eecarMyParts(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	after := r.URL.Query().Get("after")
	parts, next, err := c.opts.EECAR.MyParts(r.Context(), ss.Subject, after, eecarPageSize)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	l := c.lang(r)
	c.eecarRender(w, r, http.StatusOK, "eecar_my", myPartsData{eecarData: eecarData{L: l, Me: ss.Subject, Msg: l.msg(r.URL.Query().Get("m"))},
		Parts: parts, Next: next, First: after == ""})
}

type partFormData struct {
	eecarData
	ID         string // "" for a new part
	Categories []string
	Images     []string
}

// specFields are the spec paths the part form has fields for; the rest
// of the specs are edited as JSON.
var specFields = [][2]string{{"soh", "chemicalProps.soh"}, {"cathode", "chemicalProps.cathode"},
	{"voltage", "electricalProps.voltage"}, {"capacity", "electricalProps.capacity"}, {"power", "electricalProps.power"}}

func (c *Console) eecarPartForm(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	d := partFormData{eecarData: eecarData{L: l, Me: ss.Subject, Form: url.Values{}}, ID: r.PathValue("id"), Categories: eecarCategories}
	if d.ID != "" {
		p, err := c.opts.EECAR.Part(r.Context(), d.ID)
		if err == nil && p.SellerID != ss.Subject {
			err = ErrNotFound // another company's part is not editable, nor shown as such
		}
		if err != nil {
			c.eecarFail(w, r, err)
			return
		}
		d.Form = partForm(p)
		d.Images = p.Images
	} else {
		d.Form.Set("condition", "used")
		d.Form.Set("quantity", "1")
	}
	c.eecarRender(w, r, http.StatusOK, "eecar_partform", d)
}

// partForm fills the part form's fields from a part.
func partForm(p EECARPart) url.Values {
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
func (c *Console) partInput(r *http.Request, company string, l Lang) (EECARPartInput, []string, error) {
	f := r.PostForm
	in := EECARPartInput{Name: f.Get("name"), Category: f.Get("category"), Manufacturer: f.Get("manufacturer"),
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
			ref, err := c.upload(r.Context(), company, fh)
			if err != nil {
				return in, kept, err
			}
			in.Images = append(in.Images, ref)
		}
	}
	return in, in.Images, nil
}

func (c *Console) upload(ctx context.Context, company string, fh *multipart.FileHeader) (string, error) {
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
	return c.opts.EECAR.PutImage(ctx, company, data)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *Console) eecarSavePart(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	id := r.PathValue("id")
	in, images, err := c.partInput(r, ss.Subject, l)
	var p EECARPart
	if err == nil {
		p, err = c.opts.EECAR.SavePart(r.Context(), ss.Subject, id, in)
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden) {
		c.notFound(w, r)
		return
	}
	if err != nil {
		msg := invalidMessage(err)
		if fe := (formError{}); errors.As(err, &fe) {
			msg = fe.Error()
		}
		if msg == "" {
			c.failure(w, r, err)
			return
		}
		form := cloneValues(r.PostForm)
		form.Del("csrf")
		c.eecarRender(w, r, http.StatusBadRequest, "eecar_partform", partFormData{eecarData: eecarData{L: l, Me: ss.Subject, Err: msg, Form: form},
			ID: id, Categories: eecarCategories, Images: images})
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

func (c *Console) eecarWithdraw(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	p, err := c.opts.EECAR.Part(r.Context(), id)
	if err == nil && p.SellerID != ss.Subject {
		err = ErrNotFound
	}
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	l := c.lang(r)
	if r.PostForm.Get("confirm") != "yes" {
		c.render(w, r, http.StatusOK, "confirm", Confirm{Title: l.T("withdraw.title"), Message: fmt.Sprintf(l.T("withdraw.confirm"), p.Name),
			Action: r.URL.Path, Fields: map[string]string{}, Back: "/console/eecar/parts/" + url.PathEscape(id)})
		return
	}
	if err := c.opts.EECAR.WithdrawPart(r.Context(), ss.Subject, id); err != nil {
		c.eecarFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/my/?m=withdrawn", http.StatusSeeOther)
}

func (c *Console) eecarImage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.require(w, r, "eecar"); !ok {
		return
	}
	rc, ctype, err := c.opts.EECAR.Image(r.Context(), r.PathValue("key"))
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "private, max-age=86400")
	_, _ = io.Copy(w, rc)
}

type needsData struct {
	eecarData
	Needs      []EECARNeed
	Next       string
	Categories []string
}

func (c *Console) eecarNeeds(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	c.needsPage(w, r, ss, http.StatusOK, "", url.Values{"priority": {"medium"}})
}

func (c *Console) needsPage(w http.ResponseWriter, r *http.Request, ss session, status int, msg string, form url.Values) {
	needs, next, err := c.opts.EECAR.Needs(r.Context(), ss.Subject, r.URL.Query().Get("after"), eecarPageSize)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	l := c.lang(r)
	c.eecarRender(w, r, status, "eecar_needs", needsData{eecarData: eecarData{L: l, Me: ss.Subject, Err: msg, Form: form}, Needs: needs, Next: next, Categories: eecarCategories})
}

func (c *Console) eecarCreateNeed(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	f := r.PostForm
	n := EECARNeed{Industry: strings.TrimSpace(f.Get("industry")), Category: f.Get("category"), TargetApplication: strings.TrimSpace(f.Get("targetApplication")),
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
		n, err = c.opts.EECAR.CreateNeed(r.Context(), ss.Subject, n)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = invalidMessage(err)
	}
	if msg != "" {
		c.needsPage(w, r, ss, http.StatusBadRequest, msg, r.PostForm)
		return
	}
	if err != nil {
		c.failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/needs/"+url.PathEscape(n.ID), http.StatusSeeOther)
}

type needData struct {
	eecarData
	Need EECARNeed
	Hits []EECARHit
	From int
}

func (c *Console) eecarNeed(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	n, err := c.opts.EECAR.Need(r.Context(), ss.Subject, id)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	hits, err := c.opts.EECAR.NeedMatches(r.Context(), ss.Subject, id)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	c.eecarRender(w, r, http.StatusOK, "eecar_need", needData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject}, Need: n, Hits: hits, From: 1})
}

type watchesData struct {
	eecarData
	Watches    []EECARWatch
	Next       string
	Categories []string
}

func (c *Console) eecarWatches(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	c.watchesPage(w, r, ss, http.StatusOK, c.lang(r).msg(r.URL.Query().Get("m")), "", url.Values{})
}

func (c *Console) watchesPage(w http.ResponseWriter, r *http.Request, ss session, status int, msg, errMsg string, form url.Values) {
	ws, next, err := c.opts.EECAR.Watches(r.Context(), ss.Subject, r.URL.Query().Get("after"), eecarPageSize)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	c.eecarRender(w, r, status, "eecar_watches", watchesData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject, Msg: msg, Err: errMsg, Form: form}, Watches: ws, Next: next, Categories: eecarCategories})
}

func (c *Console) eecarCreateWatch(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	f := r.PostForm
	wt := EECARWatch{Category: f.Get("category")}
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
		wt, err = c.opts.EECAR.CreateWatch(r.Context(), ss.Subject, wt)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = invalidMessage(err)
	}
	if msg != "" {
		c.watchesPage(w, r, ss, http.StatusBadRequest, "", msg, r.PostForm)
		return
	}
	if err != nil {
		c.failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/watches/"+url.PathEscape(wt.ID), http.StatusSeeOther)
}

type watchData struct {
	eecarData
	Watch    EECARWatch
	Triggers []EECARTrigger
	Next     string
}

func (c *Console) eecarWatch(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	wt, ts, next, err := c.opts.EECAR.Watch(r.Context(), ss.Subject, r.PathValue("id"), r.URL.Query().Get("after"), eecarPageSize)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	l := c.lang(r)
	c.eecarRender(w, r, http.StatusOK, "eecar_watch", watchData{eecarData: eecarData{L: l, Me: ss.Subject, Msg: l.msg(r.URL.Query().Get("m"))}, Watch: wt, Triggers: ts, Next: next})
}

func (c *Console) eecarCancelWatch(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := c.opts.EECAR.CancelWatch(r.Context(), ss.Subject, id); err != nil {
		c.eecarFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/watches/"+url.PathEscape(id)+"?m=cancelled", http.StatusSeeOther)
}

type proposalsData struct {
	eecarData
	Box       string // in, out, all
	Proposals []EECARProposal
	Next      string
}

func (c *Console) eecarProposals(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	q := r.URL.Query()
	d := proposalsData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject}, Box: q.Get("box")}
	var err error
	switch d.Box {
	case "out", "all":
		// The outbox is the open proposals awaiting the other party,
		// among one page of all the company's proposals.
		var ps []EECARProposal
		ps, d.Next, err = c.opts.EECAR.Proposals(r.Context(), ss.Subject, q.Get("after"), eecarPageSize)
		for _, p := range ps {
			if d.Box == "all" || p.ToID != ss.Subject && (p.Status == "pending" || p.Status == "negotiating") {
				d.Proposals = append(d.Proposals, p)
			}
		}
	default:
		d.Box = "in"
		d.Proposals, err = c.opts.EECAR.Inbox(r.Context(), ss.Subject)
	}
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	c.eecarRender(w, r, http.StatusOK, "eecar_proposals", d)
}

func (c *Console) eecarPropose(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	f := r.PostForm
	in := EECARProposalInput{ToCompanyID: f.Get("to"), PartIDs: f["part"], Type: f.Get("type"), Message: strings.TrimSpace(f.Get("message"))}
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
	var p EECARProposal
	var err error
	if len(errs) == 0 {
		p, err = c.opts.EECAR.Propose(r.Context(), ss.Subject, in)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = invalidMessage(err)
	}
	if msg != "" {
		// Back on the part's page, with the message above the form.
		if len(in.PartIDs) == 0 {
			c.render(w, r, http.StatusBadRequest, "error", errorPage{Title: l.T("propose"), Message: msg})
			return
		}
		part, perr := c.opts.EECAR.Part(r.Context(), in.PartIDs[0])
		if perr != nil {
			c.eecarFail(w, r, perr)
			return
		}
		form := cloneValues(f)
		form.Del("csrf")
		c.eecarRender(w, r, http.StatusBadRequest, "eecar_part", partData{eecarData: eecarData{L: l, Me: ss.Subject, Err: msg, Form: form}, Part: part, Mine: part.SellerID == ss.Subject})
		return
	}
	if err != nil {
		c.failure(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/proposals/"+url.PathEscape(p.ID)+"?m=proposed", http.StatusSeeOther)
}

type proposalData struct {
	eecarData
	P     EECARProposal
	Turn  bool // the company must answer
	Parts []EECARPart
}

func (c *Console) eecarProposal(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	c.proposalPage(w, r, ss, http.StatusOK, l.msg(r.URL.Query().Get("m")), "", url.Values{})
}

func (c *Console) proposalPage(w http.ResponseWriter, r *http.Request, ss session, status int, msg, errMsg string, form url.Values) {
	p, err := c.opts.EECAR.Proposal(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	d := proposalData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject, Msg: msg, Err: errMsg, Form: form}, P: p,
		Turn: p.ToID == ss.Subject && (p.Status == "pending" || p.Status == "negotiating")}
	for _, id := range p.PartIDs {
		part, err := c.opts.EECAR.Part(r.Context(), id)
		if errors.Is(err, ErrNotFound) {
			d.Parts = append(d.Parts, EECARPart{ID: id})
			continue
		}
		if err != nil {
			c.failure(w, r, err)
			return
		}
		d.Parts = append(d.Parts, part)
	}
	c.eecarRender(w, r, status, "eecar_proposal", d)
}

func (c *Console) eecarRespond(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	l := c.lang(r)
	f := r.PostForm
	resp := EECARResponse{Action: f.Get("action"), Message: strings.TrimSpace(f.Get("message"))}
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
		_, err = c.opts.EECAR.Respond(r.Context(), ss.Subject, r.PathValue("id"), resp)
	}
	msg := strings.Join(errs, "; ")
	if msg == "" {
		msg = invalidMessage(err)
	}
	if msg == "" && (errors.Is(err, ErrForbidden) || errors.Is(err, ErrConflict)) {
		msg = err.Error()
	}
	if msg != "" {
		form := cloneValues(f)
		form.Del("csrf")
		c.proposalPage(w, r, ss, http.StatusBadRequest, "", msg, form)
		return
	}
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/eecar/proposals/"+url.PathEscape(r.PathValue("id"))+"?m="+url.QueryEscape(resp.Action), http.StatusSeeOther)
}

type notificationsData struct {
	eecarData
	Notes []EECARNotification
	Next  string
}

func (c *Console) eecarNotifications(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	ns, next, err := c.opts.EECAR.Notifications(r.Context(), ss.Subject, r.URL.Query().Get("after"), eecarPageSize)
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	c.eecarRender(w, r, http.StatusOK, "eecar_notifications", notificationsData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject}, Notes: ns, Next: next})
}

type noteData struct {
	eecarData
	N EECARNotification
}

func (c *Console) eecarOpen(w http.ResponseWriter, r *http.Request) {
	ss, ok := c.require(w, r, "eecar")
	if !ok {
		return
	}
	n, err := c.opts.EECAR.Open(r.Context(), ss.Subject, r.PathValue("id"))
	if err != nil {
		c.eecarFail(w, r, err)
		return
	}
	c.eecarRender(w, r, http.StatusOK, "eecar_note", noteData{eecarData: eecarData{L: c.lang(r), Me: ss.Subject}, N: n})
}
