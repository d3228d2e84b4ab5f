package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Company is a buyer or seller (an extension entity: PK COMPANY#{id},
// SK PROFILE, next to the document's NEED# items of the same company).
type Company struct {
	ID         string `json:"companyId"`
	Name       string `json:"name"`
	Industry   string `json:"industry,omitempty"`
	WebhookURL string `json:"webhookUrl,omitempty"`
	CreatedAt  string `json:"createdAt"`
	// LastDeliveredAt is when a notification was last delivered to the
	// webhook.
	LastDeliveredAt string `json:"lastDeliveredAt,omitempty"`
	// LastDeliveryError says why the last failed delivery to the webhook
	// failed (after its retries), and LastDeliveryErrorAt when; both are
	// cleared when the webhook is changed.
	LastDeliveryError   string `json:"lastDeliveryError,omitempty"`
	LastDeliveryErrorAt string `json:"lastDeliveryErrorAt,omitempty"`
}

// HashKey is how an API key is stored: SHA-256 hex.
func HashKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// CreateCompany creates a company and its first API key (returned once;
// only its hash is stored, at PK APIKEY#{hash}).
func (s *Store) CreateCompany(ctx context.Context, name, industry string) (Company, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return Company{}, "", fmt.Errorf("%w: name is required (at most 200 characters)", ErrInvalid)
	}
	id, err := s.NewID("co_")
	if err != nil {
		return Company{}, "", err
	}
	c := Company{ID: id, Name: name, Industry: industry, CreatedAt: ddbitem.FormatTime(s.Now())}
	raw, put, err := s.keyPut(id)
	if err != nil {
		return Company{}, "", err
	}
	item, err := marshal(c, map[string]av{"PK": ddbitem.S("COMPANY#" + id), "SK": ddbitem.S("PROFILE")})
	if err != nil {
		return Company{}, "", err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		{Put: put},
	}})
	if err != nil {
		return Company{}, "", fmt.Errorf("eecar: create company: %w", err)
	}
	return c, raw, nil
}

func (s *Store) keyPut(companyID string) (string, *types.Put, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return "", nil, fmt.Errorf("eecar: random: %w", err)
	}
	raw := KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return raw, &types.Put{
		TableName: aws.String(s.table),
		Item: map[string]av{
			"PK": ddbitem.S("APIKEY#" + HashKey(raw)), "SK": ddbitem.S("METADATA"),
			"companyId": ddbitem.S(companyID), "createdAt": ddbitem.S(ddbitem.FormatTime(s.Now())),
		},
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	}, nil
}

// KeyPrefix starts every company API key; the rest is 32 random bytes in
// unpadded base64url.
const KeyPrefix = "ek_"

// NewKey issues another API key for a company.
func (s *Store) NewKey(ctx context.Context, companyID string) (string, error) {
	if _, err := s.GetCompany(ctx, companyID); err != nil {
		return "", err
	}
	raw, put, err := s.keyPut(companyID)
	if err != nil {
		return "", err
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression}); err != nil {
		return "", fmt.Errorf("eecar: new key: %w", err)
	}
	return raw, nil
}

// RevokeKey deletes an API key: requests and console sessions with it
// fail from then on. It fails with ErrNotFound when no such key exists.
func (s *Store) RevokeKey(ctx context.Context, raw string) error {
	out, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
		Key: key("APIKEY#"+HashKey(raw), "METADATA"), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return fmt.Errorf("eecar: revoke key: %w", err)
	}
	if len(out.Attributes) == 0 {
		return fmt.Errorf("%w: no such API key", ErrNotFound)
	}
	return nil
}

// Authenticate returns the company of a raw API key.
func (s *Store) Authenticate(ctx context.Context, raw string) (Company, error) {
	if raw == "" || len(raw) > 200 {
		return Company{}, ErrUnauthorized
	}
	return s.AuthenticateHash(ctx, HashKey(raw))
}

// AuthenticateHash returns the company of the API key whose HashKey is
// hash (for a holder of the hash, never the key: the console re-checks a
// signed-in company's key with it, so that a revoked key ends its
// sessions). It fails with ErrUnauthorized when no such key exists.
func (s *Store) AuthenticateHash(ctx context.Context, hash string) (Company, error) {
	if len(hash) != 64 {
		return Company{}, ErrUnauthorized
	}
	h := "APIKEY#" + hash
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(h, "METADATA"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Company{}, fmt.Errorf("eecar: authenticate: %w", err)
	}
	if out.Item == nil || subtle.ConstantTimeCompare([]byte(ddbitem.String(out.Item, "PK")), []byte(h)) != 1 {
		return Company{}, ErrUnauthorized
	}
	c, err := s.GetCompany(ctx, ddbitem.String(out.Item, "companyId"))
	if err != nil {
		return Company{}, ErrUnauthorized
	}
	return c, nil
}

// GetCompany reads a company.
func (s *Store) GetCompany(ctx context.Context, id string) (Company, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("COMPANY#"+id, "PROFILE")})
	if err != nil {
		return Company{}, fmt.Errorf("eecar: get company: %w", err)
	}
	if out.Item == nil {
		return Company{}, fmt.Errorf("%w: company %s", ErrNotFound, id)
	}
	var c Company
	if err := unmarshal(out.Item, &c); err != nil {
		return Company{}, fmt.Errorf("eecar: company %s: %w", id, err)
	}
	return c, nil
}

// SetWebhook sets where a company's notifications are also delivered.
func (s *Store) SetWebhook(ctx context.Context, id, url string) (Company, error) {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key("COMPANY#"+id, "PROFILE"),
		UpdateExpression:          aws.String("SET webhookUrl = :u REMOVE lastDeliveryError, lastDeliveryErrorAt, lastDeliveredAt"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]av{":u": ddbitem.S(url)},
	})
	if ddbitem.ConditionFailed(err) {
		return Company{}, fmt.Errorf("%w: company %s", ErrNotFound, id)
	}
	if err != nil {
		return Company{}, fmt.Errorf("eecar: set webhook: %w", err)
	}
	return s.GetCompany(ctx, id)
}

// maxDeliveryError bounds the stored delivery error.
const maxDeliveryError = 500

// RecordDelivery records the outcome of a webhook delivery on the company:
// lastDeliveredAt on success, lastDeliveryError and lastDeliveryErrorAt on
// failure. It is recorded only while the webhook is still url, so an
// outcome for a webhook since replaced is dropped.
func (s *Store) RecordDelivery(ctx context.Context, id, url string, deliveryErr error) error {
	now := ddbitem.S(ddbitem.FormatTime(s.Now()))
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key("COMPANY#"+id, "PROFILE"),
		ConditionExpression:       aws.String("webhookUrl = :u"),
		ExpressionAttributeValues: map[string]av{":u": ddbitem.S(url), ":t": now},
	}
	if deliveryErr == nil {
		in.UpdateExpression = aws.String("SET lastDeliveredAt = :t")
	} else {
		msg := deliveryErr.Error()
		if len(msg) > maxDeliveryError {
			msg = strings.ToValidUTF8(msg[:maxDeliveryError], "") + "…"
		}
		in.UpdateExpression = aws.String("SET lastDeliveryError = :e, lastDeliveryErrorAt = :t")
		in.ExpressionAttributeValues[":e"] = ddbitem.S(msg)
	}
	_, err := s.client.UpdateItem(ctx, in)
	if ddbitem.ConditionFailed(err) {
		return nil // the webhook changed meanwhile (or the company is gone)
	}
	if err != nil {
		return fmt.Errorf("eecar: record delivery: %w", err)
	}
	return nil
}
