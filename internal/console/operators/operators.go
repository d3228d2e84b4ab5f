// Package operators keeps the console's operator tokens: random bearer
// secrets minted by `quarry admin token create`, stored only as their
// SHA-256 hashes in one small DynamoDB table.
package operators

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/console"
)

// DefaultTable is the operator tokens' table.
const DefaultTable = "quarry-operator-tokens"

// TokenPrefix starts every operator token.
const TokenPrefix = "qop_"

// ErrUnauthorized is a token that is missing, malformed, unknown or revoked.
var ErrUnauthorized = errors.New("operators: invalid operator token")

// Token is a stored operator token (never the secret itself).
type Token struct {
	// ID is the hex SHA-256 of the secret.
	ID string
	// Name is who or what the token was minted for.
	Name string
	// Created is when it was minted.
	Created time.Time
}

// Short is the first 12 hex digits of ID, enough to name a token.
func (t Token) Short() string { return t.ID[:12] }

// Store reads and writes operator tokens.
type Store struct {
	client *dynamodb.Client
	table  string
}

// New returns a store of the tokens in table.
func New(client *dynamodb.Client, table string) *Store {
	return &Store{client: client, table: table}
}

// EnsureTable creates the table when missing and waits until it is active.
func (s *Store) EnsureTable(ctx context.Context) error {
	_, err := s.client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(s.table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("operators: create table %s: %w", s.table, err)
	}
	w := dynamodb.NewTableExistsWaiter(s.client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)}, time.Minute); err != nil {
		return fmt.Errorf("operators: table %s: %w", s.table, err)
	}
	return nil
}

// Hash returns the hex SHA-256 of a token, its stored id.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Create mints a token for name and returns the secret, shown once.
func (s *Store) Create(ctx context.Context, name string) (string, Token, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return "", Token{}, errors.New("operators: a token needs a name of 1 to 200 characters")
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Token{}, fmt.Errorf("operators: random token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	t := Token{ID: Hash(secret), Name: name, Created: time.Now().UTC().Truncate(time.Second)}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"id":      &types.AttributeValueMemberS{Value: t.ID},
			"name":    &types.AttributeValueMemberS{Value: t.Name},
			"created": &types.AttributeValueMemberS{Value: t.Created.Format(time.RFC3339)},
		},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	})
	if err != nil {
		return "", Token{}, fmt.Errorf("operators: store token: %w", err)
	}
	return secret, t, nil
}

// Authenticate returns the token of a secret.
func (s *Store) Authenticate(ctx context.Context, secret string) (Token, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 200 {
		return Token{}, ErrUnauthorized
	}
	return s.Get(ctx, Hash(secret))
}

// Get returns the token with id (a hash); ErrUnauthorized when there is
// none (revoked).
func (s *Store) Get(ctx context.Context, id string) (Token, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		return Token{}, fmt.Errorf("operators: look up token: %w", err)
	}
	got, _ := out.Item["id"].(*types.AttributeValueMemberS)
	if got == nil || subtle.ConstantTimeCompare([]byte(got.Value), []byte(id)) != 1 {
		return Token{}, ErrUnauthorized
	}
	return parse(out.Item), nil
}

func parse(it map[string]types.AttributeValue) Token {
	str := func(k string) string {
		if v, ok := it[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	created, _ := time.Parse(time.RFC3339, str("created"))
	return Token{ID: str("id"), Name: str("name"), Created: created}
}

// List returns every token (the table is small).
func (s *Store) List(ctx context.Context) ([]Token, error) {
	var out []Token
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("operators: list tokens: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, parse(it))
		}
	}
	return out, nil
}

// Revoke deletes the tokens whose id starts with prefix (at least 8 hex
// digits) and returns how many it deleted.
func (s *Store) Revoke(ctx context.Context, prefix string) (int, error) {
	if len(prefix) < 8 {
		return 0, errors.New("operators: name the token by at least 8 digits of its id")
	}
	all, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range all {
		if !strings.HasPrefix(t.ID, prefix) {
			continue
		}
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: t.ID}}})
		if err != nil {
			return n, fmt.Errorf("operators: revoke %s: %w", t.Short(), err)
		}
		n++
	}
	return n, nil
}

// Realm signs operators in with their tokens; a revoked token ends its
// sessions at their next request.
func Realm(st *Store) console.Realm {
	return console.Realm{Kind: "operator", Label: "Operator token", Operator: true, Auth: realm{st},
		Prefix: TokenPrefix, Home: "/console/explorer/"}
}

type realm struct{ st *Store }

func (a realm) Authenticate(ctx context.Context, cred string) (console.Principal, error) {
	t, err := a.st.Authenticate(ctx, cred)
	if err != nil {
		return console.Principal{}, err
	}
	return console.Principal{ID: t.ID, Name: t.Name}, nil
}

func (a realm) Valid(ctx context.Context, id string) error {
	_, err := a.st.Get(ctx, id)
	return err
}
