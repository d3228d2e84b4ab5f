package eecar

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/console"
)

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
