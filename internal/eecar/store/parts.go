package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Categories are the document's part categories.
var categories = []string{"battery", "motor", "inverter", "charger", "electronics", "body-chassis-frame", "body-panel", "body-door", "body-window", "interior", "other"}

// Categories returns the valid categories.
func Categories() []string { return append([]string(nil), categories...) }

// ValidCategory reports whether c is one of Categories.
func ValidCategory(c string) bool {
	for _, x := range categories {
		if x == c {
			return true
		}
	}
	return false
}

// Part is a part as the API shows it: METADATA merged with SPEC, VECTOR and
// the USAGE# items.
type Part struct {
	ID string `json:"partId"`
	Metadata
	Specs    map[string]any `json:"specs,omitempty"`
	Vector   *VectorRef     `json:"vector,omitempty"`
	UseCases []UseCase      `json:"useCases,omitempty"`
}

// VectorRef is the VECTOR item: where the embedding lives in the blob store.
type VectorRef struct {
	S3Key          string `json:"s3Key"`
	EmbeddingModel string `json:"embeddingModel"`
	Dimension      int    `json:"dimension"`
	CreatedAt      string `json:"createdAt"`
}

// UseCase is a USAGE#{usageId} item.
type UseCase struct {
	ID           string         `json:"usageId"`
	Industry     string         `json:"industry"`
	Application  string         `json:"application"`
	Requirements map[string]any `json:"requirements,omitempty"`
	SuccessCase  bool           `json:"successCase"`
	Description  string         `json:"description,omitempty"`
}

// Metadata is the METADATA item's attributes.
type Metadata struct {
	Name         string   `json:"name"`
	Category     string   `json:"category"`
	Manufacturer string   `json:"manufacturer"`
	Model        string   `json:"model,omitempty"`
	Year         int      `json:"year,omitempty"`
	Condition    string   `json:"condition"`
	Price        float64  `json:"price"`
	Quantity     int      `json:"quantity"`
	SellerID     string   `json:"sellerId"`
	Description  string   `json:"description,omitempty"`
	Images       []string `json:"images,omitempty"`
	CreatedAt    string   `json:"createdAt"`
	UpdatedAt    string   `json:"updatedAt"`
}

// reserved attribute names a spec may not use.
func reservedAttr(k string) bool {
	switch k {
	case "PK", "SK", "GSI1PK", "GSI1SK", TTLAttribute:
		return true
	}
	return false
}

// maxUseCases keeps a part's transaction under DynamoDB's 100 items.
const maxUseCases = 40

func partPK(id string) string { return "PART#" + id }

// catalogueKey is the catalogue version counter (an extension): every part
// write bumps it in the same transaction, and search results are cached
// per version, so a cached result never hides a newer part.
const catalogueKeyPK, catalogueKeySK = "CATALOGUE", "VERSION"

func (s *Store) catalogueBump() types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(catalogueKeyPK, catalogueKeySK),
		UpdateExpression:          aws.String("ADD version :one"),
		ExpressionAttributeValues: map[string]av{":one": ddbitem.N(1)},
	}}
}

// IsCatalogueVersion reports whether an item key (PK, SK) is the
// catalogue version counter's, whose stream records carry each new
// version in "version".
func IsCatalogueVersion(pk, sk string) bool { return pk == catalogueKeyPK && sk == catalogueKeySK }

// CatalogueVersion returns the catalogue version counter.
func (s *Store) CatalogueVersion(ctx context.Context) (int64, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(catalogueKeyPK, catalogueKeySK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("eecar: catalogue version: %w", err)
	}
	return int64(ddbitem.Float(out.Item, "version")), nil
}

// PutPart writes a part — METADATA (with GSI1 CATEGORY#/CREATED_AT#), SPEC,
// VECTOR and its USAGE# items — in one transaction. With prev nil it
// creates (the id must be new); otherwise it replaces prev (same seller),
// deleting use cases that are gone.
func (s *Store) PutPart(ctx context.Context, p Part, prev *Part) (Part, error) {
	if len(p.UseCases) > maxUseCases {
		return Part{}, fmt.Errorf("%w: at most %d use cases", ErrInvalid, maxUseCases)
	}
	now := ddbitem.FormatTime(s.Now())
	p.UpdatedAt = now
	if prev == nil {
		p.CreatedAt = now
	} else {
		p.CreatedAt = prev.CreatedAt
	}
	pk := partPK(p.ID)
	mdItem, err := marshal(p.Metadata, map[string]av{
		"PK": ddbitem.S(pk), "SK": ddbitem.S("METADATA"),
		"GSI1PK": ddbitem.S("CATEGORY#" + p.Category), "GSI1SK": ddbitem.S("CREATED_AT#" + p.CreatedAt),
	})
	if err != nil {
		return Part{}, err
	}
	put := types.Put{TableName: aws.String(s.table), Item: mdItem}
	if prev == nil {
		put.ConditionExpression = aws.String("attribute_not_exists(PK)")
	} else {
		put.ConditionExpression = aws.String("sellerId = :seller")
		put.ExpressionAttributeValues = map[string]av{":seller": ddbitem.S(p.SellerID)}
	}
	items := []types.TransactWriteItem{{Put: &put}, s.catalogueBump()}
	spec := map[string]any{}
	for k, v := range p.Specs {
		if reservedAttr(k) {
			return Part{}, fmt.Errorf("%w: spec name %q is reserved", ErrInvalid, k)
		}
		spec[k] = v
	}
	specItem, err := marshal(spec, map[string]av{"PK": ddbitem.S(pk), "SK": ddbitem.S("SPEC")})
	if err != nil {
		return Part{}, err
	}
	items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: specItem}})
	if p.Vector != nil {
		vItem, err := marshal(p.Vector, map[string]av{"PK": ddbitem.S(pk), "SK": ddbitem.S("VECTOR")})
		if err != nil {
			return Part{}, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: vItem}})
	}
	keep := map[string]bool{}
	for i := range p.UseCases {
		u := &p.UseCases[i]
		if u.ID == "" {
			if u.ID, err = s.NewID("u_"); err != nil {
				return Part{}, err
			}
		}
		if keep[u.ID] {
			return Part{}, fmt.Errorf("%w: duplicate usageId %q", ErrInvalid, u.ID)
		}
		keep[u.ID] = true
		uItem, err := marshal(u, map[string]av{"PK": ddbitem.S(pk), "SK": ddbitem.S("USAGE#" + u.ID)})
		if err != nil {
			return Part{}, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: uItem}})
	}
	if prev != nil {
		for _, u := range prev.UseCases {
			if !keep[u.ID] {
				items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(pk, "USAGE#"+u.ID)}})
			}
		}
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		if prev == nil {
			return Part{}, fmt.Errorf("%w: part %s", ErrExists, p.ID)
		}
		return Part{}, fmt.Errorf("%w: only the seller may change part %s", ErrForbidden, p.ID)
	}
	if err != nil {
		return Part{}, fmt.Errorf("eecar: put part: %w", err)
	}
	return p, nil
}

// GetPart reads a part's items (one query on PK) and merges them.
func (s *Store) GetPart(ctx context.Context, id string) (Part, error) {
	items, err := s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(partPK(id))},
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return Part{}, err
	}
	p, ok := mergePart(id, items)
	if !ok {
		return Part{}, fmt.Errorf("%w: part %s", ErrNotFound, id)
	}
	return p, nil
}

// mergePart builds a Part from its items; false without METADATA.
func mergePart(id string, items []map[string]av) (Part, bool) {
	p := Part{ID: id}
	found := false
	for _, it := range items {
		sk := ddbitem.String(it, "SK")
		switch {
		case sk == "METADATA":
			var md Metadata
			if unmarshal(it, &md) != nil {
				continue
			}
			found = true
			p.Metadata = md
		case sk == "SPEC":
			spec := map[string]any{}
			_ = unmarshal(it, &spec)
			delete(spec, "PK")
			delete(spec, "SK")
			p.Specs = spec
		case sk == "VECTOR":
			var v VectorRef
			if unmarshal(it, &v) == nil {
				p.Vector = &v
			}
		case strings.HasPrefix(sk, "USAGE#"):
			var u UseCase
			if unmarshal(it, &u) == nil {
				p.UseCases = append(p.UseCases, u)
			}
		}
	}
	return p, found
}

// PartFromMetadata decodes a METADATA item (as a stream or GSI1 returns it).
func PartFromMetadata(it map[string]av) (Part, bool) {
	pk := ddbitem.String(it, "PK")
	if !strings.HasPrefix(pk, "PART#") || ddbitem.String(it, "SK") != "METADATA" {
		return Part{}, false
	}
	return mergePart(strings.TrimPrefix(pk, "PART#"), []map[string]av{it})
}

// ListByCategory lists a category's parts newest first through GSI1
// (access pattern 1), metadata only. cursor is the previous page's next
// cursor ("" for the first page); the returned cursor is "" at the end.
func (s *Store) ListByCategory(ctx context.Context, category string, limit int, cursor string) ([]Part, string, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	in := s.gsi1Query("CATEGORY#"+category, "CREATED_AT#", true)
	in.Limit = aws.Int32(int32(limit))
	if cursor != "" {
		start, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("eecar: list parts: %w", err)
	}
	parts := make([]Part, 0, len(out.Items))
	for _, it := range out.Items {
		if p, ok := PartFromMetadata(it); ok {
			parts = append(parts, p)
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		next = encodeCursor(out.LastEvaluatedKey)
	}
	return parts, next, nil
}

// encodeCursor is base64 of the last key (as the original), its four
// string attributes as JSON.
func encodeCursor(k map[string]av) string {
	m := map[string]string{}
	for name := range k {
		m[name] = ddbitem.String(k, name)
	}
	data, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(c string) (map[string]av, error) {
	data, err := base64.RawURLEncoding.DecodeString(c)
	var m map[string]string
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil || m["PK"] == "" || m["SK"] == "" || m["GSI1PK"] == "" || m["GSI1SK"] == "" || len(m) != 4 {
		return nil, fmt.Errorf("%w: bad cursor", ErrInvalid)
	}
	out := map[string]av{}
	for k, v := range m {
		out[k] = ddbitem.S(v)
	}
	return out, nil
}

// DeletePart deletes all of a part's items; only its seller may.
func (s *Store) DeletePart(ctx context.Context, id, sellerID string) (Part, error) {
	p, err := s.GetPart(ctx, id)
	if err != nil {
		return Part{}, err
	}
	if p.SellerID != sellerID {
		return Part{}, fmt.Errorf("%w: only the seller may delete part %s", ErrForbidden, id)
	}
	pk := partPK(id)
	items := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName: aws.String(s.table), Key: key(pk, "METADATA"),
		ConditionExpression:       aws.String("sellerId = :s"),
		ExpressionAttributeValues: map[string]av{":s": ddbitem.S(sellerID)},
	}}, s.catalogueBump()}
	for _, sk := range []string{"SPEC", "VECTOR"} {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(pk, sk)}})
	}
	for _, u := range p.UseCases {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(pk, "USAGE#"+u.ID)}})
	}
	if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		return Part{}, fmt.Errorf("eecar: delete part: %w", err)
	}
	return p, nil
}

// AllParts returns every part, merged (METADATA, SPEC, VECTOR, USAGE#),
// from one Scan of the PART# items: the search index is built from it at
// start without a query per part.
func (s *Store) AllParts(ctx context.Context) ([]Part, error) {
	byID := map[string][]map[string]av{}
	var order []string
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("begins_with(PK, :p)"),
		ExpressionAttributeValues: map[string]av{":p": ddbitem.S("PART#")},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("eecar: scan parts: %w", err)
		}
		for _, it := range page.Items {
			id := strings.TrimPrefix(ddbitem.String(it, "PK"), "PART#")
			if _, seen := byID[id]; !seen {
				order = append(order, id)
			}
			byID[id] = append(byID[id], it)
		}
	}
	out := make([]Part, 0, len(order))
	for _, id := range order {
		if part, ok := mergePart(id, byID[id]); ok {
			out = append(out, part)
		}
	}
	return out, nil
}

// SetVector replaces a part's VECTOR item (after re-embedding with another
// model). It does not bump the catalogue version: the part is unchanged.
func (s *Store) SetVector(ctx context.Context, id string, v VectorRef) error {
	it, err := marshal(v, map[string]av{"PK": ddbitem.S(partPK(id)), "SK": ddbitem.S("VECTOR")})
	if err != nil {
		return err
	}
	// Only while the part exists (a transaction with a check on METADATA).
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.table), Key: key(partPK(id), "METADATA"),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: it}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: part %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("eecar: set vector: %w", err)
	}
	return nil
}
