package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"sync"

	"github.com/quarrydb/quarry/internal/console"
	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
)

// eecarConsole is EECAR as the console's marketplace pages see it: the
// market's own services (the API's validation and messages, search,
// notifications), called in process as the session's company.
type eecarConsole struct {
	m     *market.Market
	st    *store.Store
	names sync.Map // company id → name (companies are never renamed)
}

var _ console.EECAR = (*eecarConsole)(nil)

func newEECARConsole(m *market.Market) *eecarConsole {
	return &eecarConsole{m: m, st: m.Store()}
}

// consoleErr maps EECAR's errors onto the console's, keeping the
// message (the API's words).
func consoleErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %s", console.ErrNotFound, err.Error())
	case errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("%w: %s", console.ErrInvalid, err.Error())
	case errors.Is(err, store.ErrForbidden):
		return fmt.Errorf("%w: %s", console.ErrForbidden, err.Error())
	case errors.Is(err, store.ErrQuota):
		return fmt.Errorf("%w: %s", console.ErrInvalid, err.Error())
	case errors.Is(err, store.ErrState):
		return fmt.Errorf("%w: %s", console.ErrConflict, err.Error())
	}
	return err
}

// name is a company's name (its id when it cannot be read).
func (e *eecarConsole) name(ctx context.Context, id string) string {
	if v, ok := e.names.Load(id); ok {
		return v.(string)
	}
	c, err := e.st.GetCompany(ctx, id)
	if err != nil {
		return id
	}
	e.names.Store(id, c.Name)
	return c.Name
}

func (e *eecarConsole) part(ctx context.Context, p store.Part) console.EECARPart {
	out := console.EECARPart{ID: p.ID, Name: p.Name, Category: p.Category, Manufacturer: p.Manufacturer, Model: p.Model,
		Year: p.Year, Condition: p.Condition, Price: p.Price, Quantity: p.Quantity, Description: p.Description,
		SellerID: p.SellerID, SellerName: e.name(ctx, p.SellerID), Images: p.Images, RawSpecs: p.Specs,
		Specs: market.FlattenSpecs(p.Specs), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	for _, u := range p.UseCases {
		s := u.Industry
		if u.Application != "" {
			s += ": " + u.Application
		}
		if u.Description != "" {
			s += " — " + u.Description
		}
		out.UseCases = append(out.UseCases, s)
	}
	if a, ok := e.m.Assess(p); ok {
		out.Battery = &console.EECARBattery{SOH: a.SOH, Estimated: a.SOHEstimated, Cathode: a.Cathode,
			Recommendation: a.Recommendation, Applications: a.Applications}
	}
	return out
}

func (e *eecarConsole) hits(ctx context.Context, res market.SearchResponse) []console.EECARHit {
	out := make([]console.EECARHit, 0, len(res.Results))
	for _, r := range res.Results {
		if r.Part == nil {
			continue
		}
		out = append(out, console.EECARHit{Part: e.part(ctx, *r.Part), Score: r.Score, Vector: r.SearchScores["vector"],
			BM25: r.SearchScores["bm25"], Reason: r.Reason})
	}
	return out
}

func (e *eecarConsole) Search(ctx context.Context, _ string, q console.EECARQuery) ([]console.EECARHit, error) {
	res, err := e.m.Search(ctx, market.SearchRequest{Query: q.Q, TopK: q.TopK, Filters: market.Filters{
		Category: q.Category, Manufacturer: q.Manufacturer, MaxPrice: q.MaxPrice, MinPrice: q.MinPrice,
		Condition: q.Condition, MinSOH: q.MinSOH, Cathode: q.Cathode}})
	if err != nil {
		return nil, consoleErr(err)
	}
	return e.hits(ctx, res), nil
}

func (e *eecarConsole) Part(ctx context.Context, id string) (console.EECARPart, error) {
	p, err := e.st.GetPart(ctx, id)
	if err != nil {
		return console.EECARPart{}, consoleErr(err)
	}
	return e.part(ctx, p), nil
}

func (e *eecarConsole) MyParts(ctx context.Context, company, after string, limit int) ([]console.EECARPart, string, error) {
	ids, next := e.m.SellerParts(company, after, limit)
	out := make([]console.EECARPart, 0, len(ids))
	for _, id := range ids {
		p, err := e.st.GetPart(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // withdrawn meanwhile
		}
		if err != nil {
			return nil, "", err
		}
		out = append(out, e.part(ctx, p))
	}
	return out, next, nil
}

func (e *eecarConsole) SavePart(ctx context.Context, company, id string, in console.EECARPartInput) (console.EECARPart, error) {
	pi := market.PartInput{Name: in.Name, Category: in.Category, Manufacturer: in.Manufacturer, Model: in.Model, Year: in.Year,
		Condition: in.Condition, Price: in.Price, Quantity: in.Quantity, Description: in.Description, Images: in.Images, Specs: in.Specs}
	var p store.Part
	var err error
	if id == "" {
		p, err = e.m.RegisterPart(ctx, company, pi)
	} else {
		// The use cases are not on the form: keep them.
		prev, gerr := e.st.GetPart(ctx, id)
		if gerr != nil {
			return console.EECARPart{}, consoleErr(gerr)
		}
		if prev.SellerID != company {
			return console.EECARPart{}, console.ErrNotFound
		}
		pi.UseCases = prev.UseCases
		p, err = e.m.UpdatePart(ctx, company, id, pi)
	}
	if err != nil {
		return console.EECARPart{}, consoleErr(err)
	}
	return e.part(ctx, p), nil
}

func (e *eecarConsole) WithdrawPart(ctx context.Context, company, id string) error {
	err := e.m.DeletePart(ctx, company, id)
	if errors.Is(err, store.ErrForbidden) {
		return console.ErrNotFound
	}
	return consoleErr(err)
}

func (e *eecarConsole) PutImage(ctx context.Context, company string, data []byte) (string, error) {
	key, err := e.m.PutImage(ctx, company, data)
	if err != nil {
		return "", consoleErr(err)
	}
	return market.ImagePath + key, nil
}

func (e *eecarConsole) Image(ctx context.Context, key string) (io.ReadCloser, string, error) {
	rc, ctype, err := e.m.Image(ctx, key)
	return rc, ctype, consoleErr(err)
}

func consoleNeed(n store.Need) console.EECARNeed {
	return console.EECARNeed{ID: n.ID, Industry: n.Industry, Category: n.RequiredSpecs.Category, MinQuantity: n.RequiredSpecs.MinQuantity,
		MaxPrice: n.RequiredSpecs.MaxPrice, MaterialPreferences: n.RequiredSpecs.MaterialPreferences, TargetApplication: n.TargetApplication,
		ProductionProcess: n.ProductionProcess, Priority: n.Priority, Status: n.Status, CreatedAt: n.CreatedAt}
}

func (e *eecarConsole) Needs(ctx context.Context, company, after string, limit int) ([]console.EECARNeed, string, error) {
	ns, next, err := e.st.NeedsPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]console.EECARNeed, 0, len(ns))
	for _, n := range ns {
		out = append(out, consoleNeed(n))
	}
	return out, next, nil
}

func (e *eecarConsole) Need(ctx context.Context, company, id string) (console.EECARNeed, error) {
	n, err := e.st.GetNeed(ctx, company, id)
	if err != nil {
		return console.EECARNeed{}, consoleErr(err)
	}
	return consoleNeed(n), nil
}

func (e *eecarConsole) NeedMatches(ctx context.Context, company, id string) ([]console.EECARHit, error) {
	n, err := e.st.GetNeed(ctx, company, id)
	if err != nil {
		return nil, consoleErr(err)
	}
	res, err := e.m.NeedMatches(ctx, n, 10)
	if err != nil {
		return nil, consoleErr(err)
	}
	return e.hits(ctx, res), nil
}

func (e *eecarConsole) CreateNeed(ctx context.Context, company string, n console.EECARNeed) (console.EECARNeed, error) {
	c, err := e.st.GetCompany(ctx, company)
	if err != nil {
		return console.EECARNeed{}, consoleErr(err)
	}
	out, err := e.m.SaveNeed(ctx, c, "", market.NeedInput{Industry: n.Industry, ProductionProcess: n.ProductionProcess,
		TargetApplication: n.TargetApplication, Priority: n.Priority, RequiredSpecs: store.RequiredSpecs{Category: n.Category,
			MinQuantity: n.MinQuantity, MaxPrice: n.MaxPrice, MaterialPreferences: n.MaterialPreferences}})
	if err != nil {
		return console.EECARNeed{}, consoleErr(err)
	}
	return consoleNeed(out), nil
}

func consoleWatch(w store.Watch) console.EECARWatch {
	out := console.EECARWatch{ID: w.ID, Category: w.Criteria.Category, MaxPrice: w.Criteria.MaxPrice, Keywords: w.Criteria.Keywords,
		Status: w.Status, CreatedAt: w.CreatedAt, TriggeredAt: w.TriggeredAt}
	for k, v := range w.Criteria.MinSpecs {
		out.MinSpecs = append(out.MinSpecs, [2]string{k, strconv.FormatFloat(v, 'f', -1, 64)})
	}
	sort.Slice(out.MinSpecs, func(i, j int) bool { return out.MinSpecs[i][0] < out.MinSpecs[j][0] })
	return out
}

func (e *eecarConsole) Watches(ctx context.Context, company, after string, limit int) ([]console.EECARWatch, string, error) {
	ws, next, err := e.st.WatchesPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]console.EECARWatch, 0, len(ws))
	for _, w := range ws {
		out = append(out, consoleWatch(w))
	}
	return out, next, nil
}

func (e *eecarConsole) Watch(ctx context.Context, company, id, after string, limit int) (console.EECARWatch, []console.EECARTrigger, string, error) {
	w, err := e.st.GetWatch(ctx, company, id)
	if err != nil {
		return console.EECARWatch{}, nil, "", consoleErr(err)
	}
	ts, next, err := e.st.TriggersPage(ctx, w.ID, limit, after)
	if err != nil {
		return console.EECARWatch{}, nil, "", consoleErr(err)
	}
	out := make([]console.EECARTrigger, 0, len(ts))
	for _, t := range ts {
		ct := console.EECARTrigger{PartID: t.PartID, MatchScore: t.MatchScore, NotifiedAt: t.NotifiedAt}
		if p, err := e.st.GetPart(ctx, t.PartID); err == nil {
			ct.PartName = p.Name
		}
		out = append(out, ct)
	}
	return consoleWatch(w), out, next, nil
}

func (e *eecarConsole) CreateWatch(ctx context.Context, company string, w console.EECARWatch) (console.EECARWatch, error) {
	in := store.Watch{Criteria: store.WatchCriteria{Category: w.Category, MaxPrice: w.MaxPrice, Keywords: w.Keywords}}
	for _, kv := range w.MinSpecs {
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil {
			return console.EECARWatch{}, fmt.Errorf("%w: minSpecs.%s must be a number", console.ErrInvalid, kv[0])
		}
		if in.Criteria.MinSpecs == nil {
			in.Criteria.MinSpecs = map[string]float64{}
		}
		in.Criteria.MinSpecs[kv[0]] = v
	}
	out, err := e.m.CreateWatch(ctx, company, in)
	if err != nil {
		return console.EECARWatch{}, consoleErr(err)
	}
	return consoleWatch(out), nil
}

func (e *eecarConsole) CancelWatch(ctx context.Context, company, id string) error {
	_, err := e.m.CancelWatch(ctx, company, id)
	return consoleErr(err)
}

func (e *eecarConsole) proposal(ctx context.Context, p store.Proposal) console.EECARProposal {
	out := console.EECARProposal{ID: p.ID, FromID: p.FromCompanyID, FromName: e.name(ctx, p.FromCompanyID), ToID: p.ToCompanyID,
		ToName: e.name(ctx, p.ToCompanyID), PartIDs: p.PartIDs, Type: p.ProposalType, Message: p.Message, Quantity: p.Quantity,
		PriceOffer: p.PriceOffer, Status: p.Status, CreatedAt: p.CreatedAt}
	for _, h := range p.History {
		out.History = append(out.History, console.EECARStep{By: h.By, ByName: e.name(ctx, h.By), Action: h.Action,
			PriceOffer: h.PriceOffer, Quantity: h.Quantity, Message: h.Message, At: h.At})
	}
	// The first sender is the other party of the first response.
	out.SenderName = out.FromName
	if len(p.History) > 0 {
		sender := p.FromCompanyID
		if sender == p.History[0].By {
			sender = p.ToCompanyID
		}
		out.SenderName = e.name(ctx, sender)
	}
	return out
}

func (e *eecarConsole) Inbox(ctx context.Context, company string) ([]console.EECARProposal, error) {
	var out []console.EECARProposal
	for _, status := range []string{store.ProposalPending, store.ProposalNegotiating} {
		ps, err := e.st.ListProposals(ctx, company, status)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, e.proposal(ctx, p))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt > out[j].CreatedAt })
	return out, nil
}

func (e *eecarConsole) Proposals(ctx context.Context, company, after string, limit int) ([]console.EECARProposal, string, error) {
	ps, next, err := e.st.CompanyProposals(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]console.EECARProposal, 0, len(ps))
	for _, p := range ps {
		out = append(out, e.proposal(ctx, p))
	}
	return out, next, nil
}

func (e *eecarConsole) Proposal(ctx context.Context, company, id string) (console.EECARProposal, error) {
	p, err := e.st.GetProposal(ctx, company, id)
	if err != nil {
		return console.EECARProposal{}, consoleErr(err)
	}
	return e.proposal(ctx, p), nil
}

func (e *eecarConsole) Propose(ctx context.Context, company string, in console.EECARProposalInput) (console.EECARProposal, error) {
	p, err := e.m.Propose(ctx, company, store.Proposal{ToCompanyID: in.ToCompanyID, PartIDs: in.PartIDs, ProposalType: in.Type,
		Quantity: in.Quantity, PriceOffer: in.PriceOffer, Message: in.Message})
	if err != nil {
		return console.EECARProposal{}, consoleErr(err)
	}
	return e.proposal(ctx, p), nil
}

func (e *eecarConsole) Respond(ctx context.Context, company, id string, r console.EECARResponse) (console.EECARProposal, error) {
	p, err := e.st.Respond(ctx, company, id, store.Response{Action: r.Action, PriceOffer: r.PriceOffer, Quantity: r.Quantity, Message: r.Message})
	if err != nil {
		return console.EECARProposal{}, consoleErr(err)
	}
	return e.proposal(ctx, p), nil
}

// noteLink is the console page a notification is about.
func noteLink(n store.Notification) string {
	if id, _ := n.Data["proposalId"].(string); id != "" {
		return "/console/eecar/proposals/" + url.PathEscape(id)
	}
	if id, _ := n.Data["partId"].(string); id != "" {
		return "/console/eecar/parts/" + url.PathEscape(id)
	}
	return ""
}

func consoleNote(n store.Notification) console.EECARNotification {
	return console.EECARNotification{ID: n.ID, Type: n.Type, Title: n.Title, Message: n.Message, Read: n.Read, SentAt: n.SentAt, Link: noteLink(n)}
}

func (e *eecarConsole) Notifications(ctx context.Context, company, after string, limit int) ([]console.EECARNotification, string, error) {
	ns, next, err := e.st.NotificationsPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]console.EECARNotification, 0, len(ns))
	for _, n := range ns {
		out = append(out, consoleNote(n))
	}
	return out, next, nil
}

func (e *eecarConsole) Open(ctx context.Context, company, id string) (console.EECARNotification, error) {
	n, err := e.st.GetNotification(ctx, company, id)
	if err != nil {
		return console.EECARNotification{}, consoleErr(err)
	}
	if !n.Read {
		if err := e.st.MarkRead(ctx, company, id); err != nil {
			return console.EECARNotification{}, consoleErr(err)
		}
		n.Read = true
	}
	return consoleNote(n), nil
}

func (e *eecarConsole) Unread(ctx context.Context, company string) (int, error) {
	ns, err := e.st.Notifications(ctx, company, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range ns {
		if !x.Read {
			n++
		}
	}
	return n, nil
}
