package eecar

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

	"github.com/quarrydb/quarry/internal/console"
)

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
		hits = relevant(hits)
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

// minVector is the vector similarity at which a hit sharing no word with
// the query still counts as a match. EECAR's hybrid score is normalised
// over each search's candidates, so a query matching nothing still ranks
// every part, its best at the top of the scale: the floor is on the raw
// scores instead. With the local embedder, queries of made-up or
// off-topic words ("xyzzy", "hello world", "뷁뷁") reach at most 0.27 with
// the catalogue of internal/eecar/fixture, while every relevant part of
// its labelled queries shares a word with the query (BM25 > 0).
const minVector = 0.3

// relevant keeps the hits that share a word with the query (BM25 above
// zero) or whose vector similarity reaches minVector, in their order.
func relevant(hits []Hit) []Hit {
	out := hits[:0:0]
	for _, h := range hits {
		if h.BM25 > 0 || h.Vector >= minVector {
			out = append(out, h)
		}
	}
	return out
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
