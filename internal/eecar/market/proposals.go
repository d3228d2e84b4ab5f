package market

import (
	"context"
	"fmt"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar/store"
)

// Propose validates and writes a company's proposal to another company
// (pending; the recipient is notified), then checks its parts against the
// compliance rules. Its messages are the API's (400 with ErrInvalid).
func (m *Market) Propose(ctx context.Context, fromID string, in store.Proposal) (store.Proposal, error) {
	var errs []string
	if in.ToCompanyID == "" || in.ToCompanyID == fromID {
		errs = append(errs, "toCompanyId must be another company")
	} else if _, err := m.st.GetCompany(ctx, in.ToCompanyID); err != nil {
		errs = append(errs, "toCompanyId: no such company")
	}
	if in.ProposalType != "buy" && in.ProposalType != "sell" {
		errs = append(errs, "proposalType must be buy or sell")
	}
	if len(in.PartIDs) == 0 || len(in.PartIDs) > 50 {
		errs = append(errs, "partIds must list 1 to 50 parts")
	}
	if in.Quantity < 0 || in.PriceOffer < 0 {
		errs = append(errs, "quantity and priceOffer must be ≥ 0")
	}
	if len(errs) > 0 {
		return store.Proposal{}, fmt.Errorf("%w: %s", store.ErrInvalid, strings.Join(errs, "; "))
	}
	parts := make([]store.Part, 0, len(in.PartIDs))
	for _, id := range in.PartIDs {
		part, err := m.st.GetPart(ctx, id)
		if err != nil {
			return store.Proposal{}, fmt.Errorf("%w: partIds: no such part %s", store.ErrInvalid, id)
		}
		parts = append(parts, part)
	}
	in.FromCompanyID = fromID
	var err error
	if in.ID, err = m.st.NewID("prop_"); err != nil {
		return store.Proposal{}, err
	}
	p, err := m.st.CreateProposal(ctx, in)
	if err != nil {
		return store.Proposal{}, err
	}
	m.CheckProposal(ctx, p, parts)
	return p, nil
}

// NeedInput is the body of POST and PUT /eecar/needs.
type NeedInput struct {
	CompanyName       string              `json:"companyName"`
	Industry          string              `json:"industry"`
	RequiredSpecs     store.RequiredSpecs `json:"requiredSpecs"`
	ProductionProcess string              `json:"productionProcess"`
	TargetApplication string              `json:"targetApplication"`
	Priority          string              `json:"priority"`
	Status            string              `json:"status"`
	ExpiresAt         string              `json:"expiresAt"`
}

// SaveNeed creates a company's need (id "") or replaces one of its needs
// (keeping its createdAt): the company's name and priority medium by
// default.
func (m *Market) SaveNeed(ctx context.Context, c store.Company, id string, in NeedInput) (store.Need, error) {
	if in.RequiredSpecs.Category != "" && !store.ValidCategory(in.RequiredSpecs.Category) {
		return store.Need{}, fmt.Errorf("%w: requiredSpecs.category must be one of %s", store.ErrInvalid, strings.Join(store.Categories(), ", "))
	}
	if in.RequiredSpecs.MaxPrice < 0 || in.RequiredSpecs.MinQuantity < 0 {
		return store.Need{}, fmt.Errorf("%w: requiredSpecs.maxPrice and minQuantity must be ≥ 0", store.ErrInvalid)
	}
	name := in.CompanyName
	if name == "" {
		name = c.Name
	}
	if in.Priority == "" {
		in.Priority = "medium"
	}
	n := store.Need{CompanyID: c.ID, CompanyName: name, Industry: in.Industry, RequiredSpecs: in.RequiredSpecs,
		ProductionProcess: in.ProductionProcess, TargetApplication: in.TargetApplication, Priority: in.Priority,
		Status: in.Status, ExpiresAt: in.ExpiresAt}
	if id == "" {
		var err error
		if n.ID, err = m.st.NewID("need_"); err != nil {
			return store.Need{}, err
		}
	} else {
		cur, err := m.st.GetNeed(ctx, c.ID, id)
		if err != nil {
			return store.Need{}, err
		}
		n.ID, n.CreatedAt = cur.ID, cur.CreatedAt
	}
	return m.st.PutNeed(ctx, n)
}
