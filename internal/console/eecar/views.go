package eecar

import (
	"context"
	"io"
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
	// Offer is the first offer (Action "propose"); History the responses
	// after it.
	Offer   Step
	History []Step
}

// Open reports whether the proposal awaits an answer (pending or
// negotiating); accepted and rejected ones are closed.
func (p Proposal) Open() bool { return p.Status == "pending" || p.Status == "negotiating" }

// Last is the proposal's latest step: its last response, or its first
// offer when none.
func (p Proposal) Last() Step {
	if len(p.History) == 0 {
		return p.Offer
	}
	return p.History[len(p.History)-1]
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
