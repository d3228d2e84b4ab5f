// Package store keeps EECAR's entities in the single table
// eecar-parts-table (PK, SK, GSI1PK/GSI1SK, TTL) exactly in the document's
// key patterns, through the DynamoDB API. The two sort-key defects of the
// document are fixed (DESIGN.md §5): GSI1SK HIT_COUNT#{n} is zero-padded to
// ten digits, and a need's PRIORITY#{p} is an ordered number (1 high,
// 2 medium, 3 low).
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/platform/ddbtable"
)

// Table and index names, and the TTL attribute, as the document names them.
const (
	TableBase    = "eecar-parts-table"
	GSI1         = "GSI1"
	TTLAttribute = "TTL"
)

// Errors of the package, matched with errors.Is.
var (
	ErrNotFound     = errors.New("eecar: not found")
	ErrInvalid      = errors.New("eecar: invalid request")
	ErrForbidden    = errors.New("eecar: not allowed")
	ErrState        = errors.New("eecar: wrong state")
	ErrUnauthorized = errors.New("eecar: unauthorized")
	ErrExists       = errors.New("eecar: already exists")
)

// Definition is the table's CreateTable input: PK/SK, GSI1 (ALL), the
// stream that drives watch triggers and keeps search indexes current.
func Definition(name string) *dynamodb.CreateTableInput {
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(h, r string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(r), KeyType: types.KeyTypeRange}}
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{str("PK"), str("SK"), str("GSI1PK"), str("GSI1SK")},
		KeySchema:            key("PK", "SK"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(GSI1), KeySchema: key("GSI1PK", "GSI1SK"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
}

// EnsureTable creates the table when missing (with TTL on "TTL") and
// returns its name.
func EnsureTable(ctx context.Context, client *dynamodb.Client, prefix string) (string, error) {
	name := prefix + TableBase
	if err := ddbtable.Ensure(ctx, client, ddbtable.Spec{Def: Definition(name), TTLAttribute: TTLAttribute}); err != nil {
		return name, fmt.Errorf("eecar: %w", err)
	}
	return name, nil
}

// Options configures a Store.
type Options struct {
	Now  func() time.Time
	Rand io.Reader
}

// Store reads and writes eecar-parts-table.
type Store struct {
	client *dynamodb.Client
	table  string
	now    func() time.Time
	rand   io.Reader
}

// New returns a Store over table. opts may be nil.
func New(client *dynamodb.Client, table string, opts *Options) *Store {
	s := &Store{client: client, table: table, now: time.Now, rand: rand.Reader}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	if opts != nil && opts.Rand != nil {
		s.rand = opts.Rand
	}
	return s
}

// Table is the table's name.
func (s *Store) Table() string { return s.table }

// Client is the DynamoDB client.
func (s *Store) Client() *dynamodb.Client { return s.client }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now().UTC() }

// NewID returns prefix + 24 random hex digits.
func (s *Store) NewID(prefix string) (string, error) {
	b := make([]byte, 12)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return "", fmt.Errorf("eecar: random: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

type av = types.AttributeValue

func key(pk, sk string) map[string]av { return map[string]av{"PK": ddbitem.S(pk), "SK": ddbitem.S(sk)} }

// marshal encodes a tagged struct as an item and adds extra attributes.
func marshal(v any, extra map[string]av) (map[string]av, error) {
	it, err := attributevalue.MarshalMapWithOptions(v, func(o *attributevalue.EncoderOptions) { o.TagKey = "json" })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for k, x := range extra {
		it[k] = x
	}
	return it, nil
}

// unmarshal decodes an item into a json-tagged struct.
func unmarshal(it map[string]av, v any) error {
	return attributevalue.UnmarshalMapWithOptions(it, v, func(o *attributevalue.DecoderOptions) { o.TagKey = "json" })
}

// gsi1Query is a query of GSI1 for the items of partition pk whose sort
// key begins with prefix, in descending sort key order when desc (newest,
// highest first).
func (s *Store) gsi1Query(pk, prefix string, desc bool) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName: aws.String(s.table), IndexName: aws.String(GSI1),
		KeyConditionExpression:    aws.String("GSI1PK = :pk AND begins_with(GSI1SK, :prefix)"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(pk), ":prefix": ddbitem.S(prefix)},
		ScanIndexForward:          aws.Bool(!desc),
	}
}

// statusPrefix is the GSI1SK prefix of the items of a status ("" any).
func statusPrefix(status string) string {
	if status == "" {
		return "STATUS#"
	}
	return "STATUS#" + status + "#"
}

// queryAll runs a query to the end (or limit items when limit > 0).
func (s *Store) queryAll(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]map[string]av, error) {
	var out []map[string]av
	p := dynamodb.NewQueryPaginator(s.client, in)
	for p.HasMorePages() && (limit <= 0 || len(out) < limit) {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("eecar: query: %w", err)
		}
		out = append(out, page.Items...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// queryInto runs a query to the end (or limit items) and decodes each item
// into a T; items that do not decode are skipped.
func queryInto[T any](ctx context.Context, s *Store, in *dynamodb.QueryInput, limit int) ([]T, error) {
	items, err := s.queryAll(ctx, in, limit)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		var v T
		if unmarshal(it, &v) == nil {
			out = append(out, v)
		}
	}
	return out, nil
}
