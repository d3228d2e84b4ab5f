package eecar

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

// Adapter is EECAR as the marketplace pages see it: a Backend over the
// market's own services (the API's validation and messages, search,
// notifications), called in process as the session's company.
type Adapter struct {
	m     *market.Market
	st    *store.Store
	names sync.Map // company id → name (companies are never renamed)
}

var _ Backend = (*Adapter)(nil)

// Adapt returns the marketplace pages' view of m.
func Adapt(m *market.Market) *Adapter {
	return &Adapter{m: m, st: m.Store()}
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
func (e *Adapter) name(ctx context.Context, id string) string {
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

func (e *Adapter) part(ctx context.Context, p store.Part) Part {
	out := Part{ID: p.ID, Name: p.Name, Category: p.Category, Manufacturer: p.Manufacturer, Model: p.Model,
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
		out.Battery = &Battery{SOH: a.SOH, Estimated: a.SOHEstimated, Cathode: a.Cathode,
			Recommendation: a.Recommendation, Applications: a.Applications}
	}
	return out
}

func (e *Adapter) hits(ctx context.Context, res market.SearchResponse) []Hit {
	out := make([]Hit, 0, len(res.Results))
	for _, r := range res.Results {
		if r.Part == nil {
			continue
		}
		out = append(out, Hit{Part: e.part(ctx, *r.Part), Score: r.Score, Vector: r.SearchScores["vector"],
			BM25: r.SearchScores["bm25"], Reason: r.Reason})
	}
	return out
}

func (e *Adapter) Search(ctx context.Context, _ string, q Query) ([]Hit, error) {
	res, err := e.m.Search(ctx, market.SearchRequest{Query: q.Q, TopK: q.TopK, Filters: market.Filters{
		Category: q.Category, Manufacturer: q.Manufacturer, MaxPrice: q.MaxPrice, MinPrice: q.MinPrice,
		Condition: q.Condition, MinSOH: q.MinSOH, Cathode: q.Cathode}})
	if err != nil {
		return nil, consoleErr(err)
	}
	return e.hits(ctx, res), nil
}

func (e *Adapter) Part(ctx context.Context, id string) (Part, error) {
	p, err := e.st.GetPart(ctx, id)
	if err != nil {
		return Part{}, consoleErr(err)
	}
	return e.part(ctx, p), nil
}

func (e *Adapter) MyParts(ctx context.Context, company, after string, limit int) ([]Part, string, error) {
	ids, next := e.m.SellerParts(company, after, limit)
	out := make([]Part, 0, len(ids))
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

func (e *Adapter) SavePart(ctx context.Context, company, id string, in PartInput) (Part, error) {
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
			return Part{}, consoleErr(gerr)
		}
		if prev.SellerID != company {
			return Part{}, console.ErrNotFound
		}
		pi.UseCases = prev.UseCases
		p, err = e.m.UpdatePart(ctx, company, id, pi)
	}
	if err != nil {
		return Part{}, consoleErr(err)
	}
	return e.part(ctx, p), nil
}

func (e *Adapter) WithdrawPart(ctx context.Context, company, id string) error {
	err := e.m.DeletePart(ctx, company, id)
	if errors.Is(err, store.ErrForbidden) {
		return console.ErrNotFound
	}
	return consoleErr(err)
}

func (e *Adapter) PutImage(ctx context.Context, company string, data []byte) (string, error) {
	key, err := e.m.PutImage(ctx, company, data)
	if err != nil {
		return "", consoleErr(err)
	}
	return market.ImagePath + key, nil
}

func (e *Adapter) Image(ctx context.Context, key string) (io.ReadCloser, string, error) {
	rc, ctype, err := e.m.Image(ctx, key)
	return rc, ctype, consoleErr(err)
}

func consoleNeed(n store.Need) Need {
	return Need{ID: n.ID, Industry: n.Industry, Category: n.RequiredSpecs.Category, MinQuantity: n.RequiredSpecs.MinQuantity,
		MaxPrice: n.RequiredSpecs.MaxPrice, MaterialPreferences: n.RequiredSpecs.MaterialPreferences, TargetApplication: n.TargetApplication,
		ProductionProcess: n.ProductionProcess, Priority: n.Priority, Status: n.Status, CreatedAt: n.CreatedAt}
}

func (e *Adapter) Needs(ctx context.Context, company, after string, limit int) ([]Need, string, error) {
	ns, next, err := e.st.NeedsPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]Need, 0, len(ns))
	for _, n := range ns {
		out = append(out, consoleNeed(n))
	}
	return out, next, nil
}

func (e *Adapter) Need(ctx context.Context, company, id string) (Need, error) {
	n, err := e.st.GetNeed(ctx, company, id)
	if err != nil {
		return Need{}, consoleErr(err)
	}
	return consoleNeed(n), nil
}

func (e *Adapter) NeedMatches(ctx context.Context, company, id string) ([]Hit, error) {
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

func (e *Adapter) CreateNeed(ctx context.Context, company string, n Need) (Need, error) {
	c, err := e.st.GetCompany(ctx, company)
	if err != nil {
		return Need{}, consoleErr(err)
	}
	out, err := e.m.SaveNeed(ctx, c, "", market.NeedInput{Industry: n.Industry, ProductionProcess: n.ProductionProcess,
		TargetApplication: n.TargetApplication, Priority: n.Priority, RequiredSpecs: store.RequiredSpecs{Category: n.Category,
			MinQuantity: n.MinQuantity, MaxPrice: n.MaxPrice, MaterialPreferences: n.MaterialPreferences}})
	if err != nil {
		return Need{}, consoleErr(err)
	}
	return consoleNeed(out), nil
}

func consoleWatch(w store.Watch) Watch {
	out := Watch{ID: w.ID, Category: w.Criteria.Category, MaxPrice: w.Criteria.MaxPrice, Keywords: w.Criteria.Keywords,
		Status: w.Status, CreatedAt: w.CreatedAt, TriggeredAt: w.TriggeredAt}
	for k, v := range w.Criteria.MinSpecs {
		out.MinSpecs = append(out.MinSpecs, [2]string{k, strconv.FormatFloat(v, 'f', -1, 64)})
	}
	sort.Slice(out.MinSpecs, func(i, j int) bool { return out.MinSpecs[i][0] < out.MinSpecs[j][0] })
	return out
}

func (e *Adapter) Watches(ctx context.Context, company, after string, limit int) ([]Watch, string, error) {
	ws, next, err := e.st.WatchesPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]Watch, 0, len(ws))
	for _, w := range ws {
		out = append(out, consoleWatch(w))
	}
	return out, next, nil
}

func (e *Adapter) Watch(ctx context.Context, company, id, after string, limit int) (Watch, []Trigger, string, error) {
	w, err := e.st.GetWatch(ctx, company, id)
	if err != nil {
		return Watch{}, nil, "", consoleErr(err)
	}
	ts, next, err := e.st.TriggersPage(ctx, w.ID, limit, after)
	if err != nil {
		return Watch{}, nil, "", consoleErr(err)
	}
	out := make([]Trigger, 0, len(ts))
	for _, t := range ts {
		ct := Trigger{PartID: t.PartID, MatchScore: t.MatchScore, NotifiedAt: t.NotifiedAt}
		if p, err := e.st.GetPart(ctx, t.PartID); err == nil {
			ct.PartName = p.Name
		}
		out = append(out, ct)
	}
	return consoleWatch(w), out, next, nil
}

func (e *Adapter) CreateWatch(ctx context.Context, company string, w Watch) (Watch, error) {
	in := store.Watch{Criteria: store.WatchCriteria{Category: w.Category, MaxPrice: w.MaxPrice, Keywords: w.Keywords}}
	for _, kv := range w.MinSpecs {
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil {
			return Watch{}, fmt.Errorf("%w: minSpecs.%s must be a number", console.ErrInvalid, kv[0])
		}
		if in.Criteria.MinSpecs == nil {
			in.Criteria.MinSpecs = map[string]float64{}
		}
		in.Criteria.MinSpecs[kv[0]] = v
	}
	out, err := e.m.CreateWatch(ctx, company, in)
	if err != nil {
		return Watch{}, consoleErr(err)
	}
	return consoleWatch(out), nil
}

func (e *Adapter) CancelWatch(ctx context.Context, company, id string) error {
	_, err := e.m.CancelWatch(ctx, company, id)
	return consoleErr(err)
}

func (e *Adapter) proposal(ctx context.Context, p store.Proposal) Proposal {
	out := Proposal{ID: p.ID, FromID: p.FromCompanyID, FromName: e.name(ctx, p.FromCompanyID), ToID: p.ToCompanyID,
		ToName: e.name(ctx, p.ToCompanyID), PartIDs: p.PartIDs, Type: p.ProposalType, Message: p.Message, Quantity: p.Quantity,
		PriceOffer: p.PriceOffer, Status: p.Status, CreatedAt: p.CreatedAt}
	for _, h := range p.History {
		out.History = append(out.History, Step{By: h.By, ByName: e.name(ctx, h.By), Action: h.Action,
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
	out.Offer = e.offer(ctx, p, out.SenderName)
	return out
}

// offer is the proposal's first offer. A proposal stored without its
// Offer gets the current terms for those no counter-offer changed, and
// zero (not shown) for the others: they are not kept anywhere else.
func (e *Adapter) offer(ctx context.Context, p store.Proposal, sender string) Step {
	if o := p.Offer; o != nil {
		return Step{By: o.By, ByName: e.name(ctx, o.By), Action: "propose", PriceOffer: o.PriceOffer,
			Quantity: o.Quantity, Message: o.Message, At: o.At}
	}
	s := Step{ByName: sender, Action: "propose", PriceOffer: p.PriceOffer, Quantity: p.Quantity, Message: p.Message, At: p.CreatedAt}
	for _, h := range p.History {
		if h.Action != store.ActionCounter {
			continue
		}
		if h.PriceOffer > 0 {
			s.PriceOffer = 0
		}
		if h.Quantity > 0 {
			s.Quantity = 0
		}
		if h.Message != "" {
			s.Message = ""
		}
	}
	return s
}

func (e *Adapter) Inbox(ctx context.Context, company string) ([]Proposal, error) {
	var out []Proposal
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

func (e *Adapter) Proposals(ctx context.Context, company, after string, limit int) ([]Proposal, string, error) {
	ps, next, err := e.st.CompanyProposals(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]Proposal, 0, len(ps))
	for _, p := range ps {
		out = append(out, e.proposal(ctx, p))
	}
	return out, next, nil
}

func (e *Adapter) Proposal(ctx context.Context, company, id string) (Proposal, error) {
	p, err := e.st.GetProposal(ctx, company, id)
	if err != nil {
		return Proposal{}, consoleErr(err)
	}
	return e.proposal(ctx, p), nil
}

func (e *Adapter) Propose(ctx context.Context, company string, in ProposalInput) (Proposal, error) {
	p, err := e.m.Propose(ctx, company, store.Proposal{ToCompanyID: in.ToCompanyID, PartIDs: in.PartIDs, ProposalType: in.Type,
		Quantity: in.Quantity, PriceOffer: in.PriceOffer, Message: in.Message})
	if err != nil {
		return Proposal{}, consoleErr(err)
	}
	return e.proposal(ctx, p), nil
}

func (e *Adapter) Respond(ctx context.Context, company, id string, r Response) (Proposal, error) {
	p, err := e.st.Respond(ctx, company, id, store.Response{Action: r.Action, PriceOffer: r.PriceOffer, Quantity: r.Quantity, Message: r.Message})
	if err != nil {
		return Proposal{}, consoleErr(err)
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

func consoleNote(n store.Notification) Notification {
	return Notification{ID: n.ID, Type: n.Type, Title: n.Title, Message: n.Message, Read: n.Read, SentAt: n.SentAt, Link: noteLink(n)}
}

func (e *Adapter) Notifications(ctx context.Context, company, after string, limit int) ([]Notification, string, error) {
	ns, next, err := e.st.NotificationsPage(ctx, company, limit, after)
	if err != nil {
		return nil, "", consoleErr(err)
	}
	out := make([]Notification, 0, len(ns))
	for _, n := range ns {
		out = append(out, consoleNote(n))
	}
	return out, next, nil
}

func (e *Adapter) Open(ctx context.Context, company, id string) (Notification, error) {
	n, err := e.st.GetNotification(ctx, company, id)
	if err != nil {
		return Notification{}, consoleErr(err)
	}
	if !n.Read {
		if err := e.st.MarkRead(ctx, company, id); err != nil {
			return Notification{}, consoleErr(err)
		}
		n.Read = true
	}
	return consoleNote(n), nil
}

func (e *Adapter) Unread(ctx context.Context, company string) (int, error) {
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

// Realm signs EECAR companies in with their API keys; the session keeps
// the key's hash, and a revoked key ends its sessions at their next
// request.
func Realm(st *store.Store) console.Realm {
	return console.Realm{Kind: "eecar", Label: "EECAR company API key", Auth: realm{st},
		Prefix: store.KeyPrefix, Home: "/console/eecar/"}
}

type realm struct{ st *store.Store }

func (a realm) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	co, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: co.ID, Name: co.Name, Check: store.HashKey(cred)}, nil
}

// Valid fails once the key (by its hash) is revoked or its company gone.
func (a realm) Valid(ctx context.Context, hash string) error {
	_, err := a.st.AuthenticateHash(ctx, hash)
	return err
}
