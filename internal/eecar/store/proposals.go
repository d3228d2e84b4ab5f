package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Proposal is PK PROPOSAL#{id}, SK METADATA; GSI1PK COMPANY#{toCompanyId},
// GSI1SK STATUS#{status}#CREATED#{timestamp}.
type Proposal struct {
	ID            string         `json:"proposalId"`
	FromCompanyID string         `json:"fromCompanyId"`
	ToCompanyID   string         `json:"toCompanyId"`
	PartIDs       []string       `json:"partIds"`
	ProposalType  string         `json:"proposalType"`
	Message       string         `json:"message,omitempty"`
	Quantity      int            `json:"quantity"`
	PriceOffer    float64        `json:"priceOffer"`
	Terms         map[string]any `json:"terms,omitempty"`
	Status        string         `json:"status"`
	CreatedAt     string         `json:"createdAt"`
	RespondedAt   string         `json:"respondedAt,omitempty"`
	// History records each response (an extension).
	History []Response `json:"history,omitempty"`
	// Offer is the first offer as proposed (an extension): its sender,
	// price, quantity, message and time. A counter-offer overwrites the
	// proposal's terms, so the first ones are kept here. Proposals
	// written before it existed have none.
	Offer *Response `json:"offer,omitempty"`
}

// Response is one step of a negotiation.
type Response struct {
	By         string  `json:"by"`
	Action     string  `json:"action"`
	PriceOffer float64 `json:"priceOffer,omitempty"`
	Quantity   int     `json:"quantity,omitempty"`
	Message    string  `json:"message,omitempty"`
	At         string  `json:"at"`
}

// Proposal statuses and response actions.
const (
	ProposalPending     = "pending"
	ProposalAccepted    = "accepted"
	ProposalRejected    = "rejected"
	ProposalNegotiating = "negotiating"

	ActionAccept  = "accept"
	ActionReject  = "reject"
	ActionCounter = "counter"
)

func (s *Store) proposalItem(p Proposal) (map[string]av, error) {
	return marshal(p, map[string]av{
		"PK": ddbitem.S("PROPOSAL#" + p.ID), "SK": ddbitem.S("METADATA"),
		"GSI1PK": ddbitem.S("COMPANY#" + p.ToCompanyID), "GSI1SK": ddbitem.S("STATUS#" + p.Status + "#CREATED#" + p.CreatedAt),
	})
}

// CreateProposal writes a pending proposal and notifies its recipient, in
// one transaction.
func (s *Store) CreateProposal(ctx context.Context, p Proposal) (Proposal, error) {
	p.Status, p.CreatedAt, p.RespondedAt, p.History = ProposalPending, ddbitem.FormatTime(s.Now()), "", nil
	p.Offer = &Response{By: p.FromCompanyID, Action: "propose", PriceOffer: p.PriceOffer, Quantity: p.Quantity, Message: p.Message, At: p.CreatedAt}
	it, err := s.proposalItem(p)
	if err != nil {
		return Proposal{}, err
	}
	n := Notification{RecipientID: p.ToCompanyID, Type: "proposal_received", Title: "New " + p.ProposalType + " proposal",
		Message: p.Message, Data: map[string]any{"proposalId": p.ID, "fromCompanyId": p.FromCompanyID}}
	np, err := s.notificationPut(&n)
	if err != nil {
		return Proposal{}, err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: np},
		{Put: s.proposalLink(p.FromCompanyID, p)},
		{Put: s.proposalLink(p.ToCompanyID, p)},
	}})
	if err != nil {
		return Proposal{}, fmt.Errorf("eecar: create proposal: %w", err)
	}
	return p, nil
}

// proposalLink is the extension item COMPANY#{companyId} /
// PROPOSAL#{createdAt}#{proposalId} that lists a proposal under each of
// its two parties (GSI1 lists it only under the party who must answer).
func (s *Store) proposalLink(company string, p Proposal) *types.Put {
	return &types.Put{TableName: aws.String(s.table), Item: map[string]av{
		"PK": ddbitem.S("COMPANY#" + company), "SK": ddbitem.S("PROPOSAL#" + p.CreatedAt + "#" + p.ID),
		"proposalId": ddbitem.S(p.ID),
	}}
}

// CompanyProposals lists the proposals company is a party of, sent or
// received, newest first: limit of them after cursor ("" the first page),
// with the next page's cursor ("" on the last). Proposals created before
// the COMPANY#/PROPOSAL# links existed are not listed.
func (s *Store) CompanyProposals(ctx context.Context, company string, limit int, cursor string) ([]Proposal, string, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S("COMPANY#" + company), ":p": ddbitem.S("PROPOSAL#")},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	if cursor != "" {
		// The cursor is the last link's sort key; the partition is always
		// the caller's, so a cursor cannot reach another company's list.
		sk, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !strings.HasPrefix(string(sk), "PROPOSAL#") {
			return nil, "", fmt.Errorf("%w: bad cursor", ErrInvalid)
		}
		in.ExclusiveStartKey = key("COMPANY#"+company, string(sk))
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("eecar: list proposals: %w", err)
	}
	ps := make([]Proposal, 0, len(out.Items))
	for _, it := range out.Items {
		p, err := s.GetProposal(ctx, company, ddbitem.String(it, "proposalId"))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		ps = append(ps, p)
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = base64.RawURLEncoding.EncodeToString([]byte(ddbitem.String(out.LastEvaluatedKey, "SK")))
	}
	return ps, next, nil
}

// GetProposal reads a proposal visible to company (one of its parties).
func (s *Store) GetProposal(ctx context.Context, company, id string) (Proposal, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("PROPOSAL#"+id, "METADATA"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Proposal{}, fmt.Errorf("eecar: get proposal: %w", err)
	}
	var p Proposal
	if out.Item == nil || unmarshal(out.Item, &p) != nil || (company != p.FromCompanyID && company != p.ToCompanyID) {
		return Proposal{}, fmt.Errorf("%w: proposal %s", ErrNotFound, id)
	}
	return p, nil
}

// ListProposals lists the proposals awaiting company's response, of a
// status ("" all), newest first, at most 50 (access pattern 3).
func (s *Store) ListProposals(ctx context.Context, company, status string) ([]Proposal, error) {
	in := s.gsi1Query("COMPANY#"+company, statusPrefix(status), true)
	in.Limit = aws.Int32(50) // read one page of 50, not 1 MB of them
	items, err := s.queryAll(ctx, in, 50)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(items))
	for _, it := range items {
		var p Proposal
		if ddbitem.String(it, "SK") == "METADATA" && unmarshal(it, &p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Respond applies the recipient's response. accept and reject are final;
// counter sets negotiating and hands the proposal to the other party
// (from and to swap, with the new price/quantity/message), who may then
// accept, reject or counter in turn. Only the current recipient may
// respond, and only to a pending or negotiating proposal: the write is
// conditional on both, so two racing responses cannot both apply.
func (s *Store) Respond(ctx context.Context, company, id string, r Response) (Proposal, error) {
	p, err := s.GetProposal(ctx, company, id)
	if err != nil {
		return Proposal{}, err
	}
	if p.ToCompanyID != company {
		return Proposal{}, fmt.Errorf("%w: only the recipient may respond", ErrForbidden)
	}
	if p.Status != ProposalPending && p.Status != ProposalNegotiating {
		return Proposal{}, fmt.Errorf("%w: proposal %s is %s", ErrState, id, p.Status)
	}
	prevStatus := p.Status
	r.By, r.At = company, ddbitem.FormatTime(s.Now())
	switch r.Action {
	case ActionAccept:
		p.Status = ProposalAccepted
	case ActionReject:
		p.Status = ProposalRejected
	case ActionCounter:
		if r.PriceOffer < 0 || r.Quantity < 0 {
			return Proposal{}, fmt.Errorf("%w: priceOffer and quantity must not be negative", ErrInvalid)
		}
		p.Status = ProposalNegotiating
		p.FromCompanyID, p.ToCompanyID = p.ToCompanyID, p.FromCompanyID
		if r.PriceOffer > 0 {
			p.PriceOffer = r.PriceOffer
		}
		if r.Quantity > 0 {
			p.Quantity = r.Quantity
		}
		if r.Message != "" {
			p.Message = r.Message
		}
	default:
		return Proposal{}, fmt.Errorf("%w: action must be accept, reject or counter", ErrInvalid)
	}
	p.RespondedAt = r.At
	p.History = append(p.History, r)
	it, err := s.proposalItem(p)
	if err != nil {
		return Proposal{}, err
	}
	n := Notification{RecipientID: otherParty(p, company), Type: "proposal_" + p.Status, Title: "Proposal " + p.Status,
		Message: r.Message, Data: map[string]any{"proposalId": p.ID, "action": r.Action}}
	np, err := s.notificationPut(&n)
	if err != nil {
		return Proposal{}, err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: it,
			ConditionExpression:       aws.String("#s = :prev AND toCompanyId = :me"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]av{":prev": ddbitem.S(prevStatus), ":me": ddbitem.S(company)},
		}},
		{Put: np},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return Proposal{}, fmt.Errorf("%w: proposal %s changed meanwhile", ErrState, id)
	}
	if err != nil {
		return Proposal{}, fmt.Errorf("eecar: respond: %w", err)
	}
	return p, nil
}

func otherParty(p Proposal, me string) string {
	if p.FromCompanyID == me {
		return p.ToCompanyID
	}
	return p.FromCompanyID
}

// MatchCacheTTL is how long cached search results live.
const MatchCacheTTL = 7 * 24 * time.Hour

// CachedMatch is PK MATCH#{queryHash}, SK RESULT; GSI1PK CACHE, GSI1SK
// HIT_COUNT#{hitCount, ten digits}; TTL 7 days.
type CachedMatch struct {
	QueryHash string `json:"queryHash"`
	Query     string `json:"query"`
	// QueryEmbedding is the blob key of the query's vector
	// (queries/{queryHash}.f32, little-endian float32), as the original
	// design keeps it in S3; deleted when the item expires.
	QueryEmbedding string         `json:"queryEmbedding,omitempty"`
	MatchedParts   []MatchedPart  `json:"matchedParts"`
	ModelUsed      string         `json:"modelUsed"`
	CreatedAt      string         `json:"createdAt"`
	HitCount       int            `json:"hitCount"`
	Extra          map[string]any `json:"extra,omitempty"`
}

// MatchedPart is one cached result.
type MatchedPart struct {
	PartID string             `json:"partId"`
	Score  float64            `json:"score"`
	Scores map[string]float64 `json:"searchScores,omitempty"`
	Reason string             `json:"reason"`
}

// QueryHash hashes a normalised query description (query text, filters,
// topK and the catalogue version) into the cache key.
func QueryHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func hitKey(n int) string { return fmt.Sprintf("HIT_COUNT#%010d", n) }

// GetMatch returns a cached result and bumps its hitCount (and GSI1SK);
// ok is false on a miss or an expired entry.
func (s *Store) GetMatch(ctx context.Context, hash string) (CachedMatch, bool, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key("MATCH#"+hash, "RESULT"),
		UpdateExpression:          aws.String("ADD hitCount :one"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND #ttl > :now"),
		ExpressionAttributeNames:  map[string]string{"#ttl": TTLAttribute},
		ExpressionAttributeValues: map[string]av{":one": ddbitem.N(1), ":now": ddbitem.N(s.Now().Unix())},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddbitem.ConditionFailed(err) {
		return CachedMatch{}, false, nil
	}
	if err != nil {
		return CachedMatch{}, false, fmt.Errorf("eecar: get match: %w", err)
	}
	var m CachedMatch
	if err := unmarshal(out.Attributes, &m); err != nil {
		return CachedMatch{}, false, fmt.Errorf("eecar: cached match: %w", err)
	}
	// Keep GSI1SK in step with the count (best effort: a racing bump
	// writes the larger value later).
	_, _ = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key("MATCH#"+hash, "RESULT"),
		UpdateExpression:          aws.String("SET GSI1SK = :k"),
		ConditionExpression:       aws.String("hitCount = :n"),
		ExpressionAttributeValues: map[string]av{":k": ddbitem.S(hitKey(m.HitCount)), ":n": ddbitem.N(int64(m.HitCount))},
	})
	return m, true, nil
}

// PutMatch caches a search result for 7 days.
func (s *Store) PutMatch(ctx context.Context, m CachedMatch) error {
	m.CreatedAt, m.HitCount = ddbitem.FormatTime(s.Now()), 0
	it, err := marshal(m, map[string]av{
		"PK": ddbitem.S("MATCH#" + m.QueryHash), "SK": ddbitem.S("RESULT"),
		"GSI1PK": ddbitem.S("CACHE"), "GSI1SK": ddbitem.S(hitKey(0)),
		TTLAttribute: ddbitem.N(s.Now().Add(MatchCacheTTL).Unix()),
	})
	if err != nil {
		return err
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		return fmt.Errorf("eecar: put match: %w", err)
	}
	return nil
}

// TopCached lists cached results by hit count, most hit first (access
// pattern 4).
func (s *Store) TopCached(ctx context.Context, limit int) ([]CachedMatch, error) {
	return queryInto[CachedMatch](ctx, s, s.gsi1Query("CACHE", "HIT_COUNT#", true), limit)
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
