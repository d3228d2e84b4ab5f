package eecar

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/quarrydb/quarry/internal/console"
)

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
