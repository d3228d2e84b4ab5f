package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// KeyPrefix starts every raw API key this package issues; the rest is 32
// random bytes in unpadded base64url.
const KeyPrefix = "wc_"

// maxKeyLen bounds the raw keys Authorize will hash.
const maxKeyLen = 512

// APIKey is an item of the wallcrawler-api-keys table. It never holds the
// raw key.
type APIKey struct {
	Hash      string // SHA-256 hex of the raw key (the table's key)
	ID        string // friendly identifier, "key_…"
	ProjectID string // primary project
	// ProjectIDs are the additional projects the key may use (the
	// original design's projectIds). Items that also list the primary
	// project read the same: Projects removes the duplicate.
	ProjectIDs []string
	Name       string
	Status     string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero when never used (or not tracked)
}

// Projects returns the projects the key may use: its primary project
// followed by the additional ones, without duplicates.
func (k APIKey) Projects() []string {
	out := []string{k.ProjectID}
	for _, p := range k.ProjectIDs {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// CreateKeyInput describes a new API key.
type CreateKeyInput struct {
	// ProjectID is the key's primary project; required, must exist.
	ProjectID string
	// ProjectIDs are additional projects the key may use; each must exist.
	ProjectIDs []string
	// Name is an optional label.
	Name string
}

// HashKey returns the SHA-256 hex digest under which a raw key is stored.
func HashKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// CreateKey issues a new ACTIVE API key and returns the raw key, which is
// not stored anywhere and cannot be recovered: the caller MUST show it to
// the user now. Only its SHA-256 hex is written.
func (s *Store) CreateKey(ctx context.Context, in CreateKeyInput) (raw string, key APIKey, err error) {
	if in.ProjectID == "" {
		return "", APIKey{}, fmt.Errorf("%w: projectId is required", ErrInvalid)
	}
	key = APIKey{ProjectID: in.ProjectID, Name: strings.TrimSpace(in.Name), Status: StatusActive, CreatedAt: s.now()}
	// projectIds holds the additional projects only, without duplicates.
	for _, p := range in.ProjectIDs {
		if p != "" && p != key.ProjectID && !slices.Contains(key.ProjectIDs, p) {
			key.ProjectIDs = append(key.ProjectIDs, p)
		}
	}
	for _, p := range key.Projects() {
		if _, err := s.GetProject(ctx, p); err != nil {
			return "", APIKey{}, err
		}
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.opts.Rand, b); err != nil {
		return "", APIKey{}, fmt.Errorf("auth: random: %w", err)
	}
	raw = KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	key.Hash = HashKey(raw)
	if key.ID, err = s.randomID("key_", 8); err != nil {
		return "", APIKey{}, err
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.names.APIKeys),
		Item:                keyItem(key),
		ConditionExpression: aws.String("attribute_not_exists(apiKeyHash)"),
	})
	if err != nil {
		return "", APIKey{}, fmt.Errorf("auth: create key: %w", err)
	}
	return raw, key, nil
}

// ListKeys returns the keys whose primary project is projectID (through
// the projectId-index GSI, so it may lag writes slightly).
func (s *Store) ListKeys(ctx context.Context, projectID string) ([]APIKey, error) {
	var out []APIKey
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.APIKeys),
		IndexName:                 aws.String(tables.APIKeysByProjectIndex),
		KeyConditionExpression:    aws.String("projectId = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: projectID}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("auth: list keys: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, parseKey(it))
		}
	}
	return out, nil
}

// RevokeKey marks the key whose raw value is raw INACTIVE; ErrNotFound if
// there is no such key.
func (s *Store) RevokeKey(ctx context.Context, raw string) error {
	return s.revokeHash(ctx, HashKey(raw))
}

// RevokeKeyByID marks the key with friendly id keyID of project projectID
// INACTIVE; ErrNotFound if the project has no such key.
func (s *Store) RevokeKeyByID(ctx context.Context, projectID, keyID string) error {
	keys, err := s.ListKeys(ctx, projectID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == keyID {
			return s.revokeHash(ctx, k.Hash)
		}
	}
	return fmt.Errorf("%w: key %s in project %s", ErrNotFound, keyID, projectID)
}

func (s *Store) revokeHash(ctx context.Context, hash string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.names.APIKeys),
		Key:                      map[string]types.AttributeValue{"apiKeyHash": &types.AttributeValueMemberS{Value: hash}},
		UpdateExpression:         aws.String("SET #s = :s"),
		ConditionExpression:      aws.String("attribute_exists(apiKeyHash)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: StatusInactive},
		},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: key", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("auth: revoke key: %w", err)
	}
	return nil
}

func keyItem(k APIKey) map[string]types.AttributeValue {
	list := make([]types.AttributeValue, len(k.ProjectIDs))
	for i, p := range k.ProjectIDs {
		list[i] = &types.AttributeValueMemberS{Value: p}
	}
	it := map[string]types.AttributeValue{
		"apiKeyHash": &types.AttributeValueMemberS{Value: k.Hash},
		"keyId":      &types.AttributeValueMemberS{Value: k.ID},
		"projectId":  &types.AttributeValueMemberS{Value: k.ProjectID},
		"projectIds": &types.AttributeValueMemberL{Value: list},
		"status":     &types.AttributeValueMemberS{Value: k.Status},
		"createdAt":  &types.AttributeValueMemberS{Value: ddbitem.FormatTime(k.CreatedAt)},
	}
	if k.Name != "" {
		it["name"] = &types.AttributeValueMemberS{Value: k.Name}
	}
	return it
}

// parseKey decodes a key item. A key seeded by hand as the original design
// describes (apiKeyHash, projectId, projectIds) has no status: it reads as
// ACTIVE.
func parseKey(it map[string]types.AttributeValue) APIKey {
	k := APIKey{
		Hash:       ddbitem.String(it, "apiKeyHash"),
		ID:         ddbitem.String(it, "keyId"),
		ProjectID:  ddbitem.String(it, "projectId"),
		ProjectIDs: strList(it, "projectIds"),
		Name:       ddbitem.String(it, "name"),
		Status:     ddbitem.String(it, "status"),
		CreatedAt:  ddbitem.ParseTime(ddbitem.String(it, "createdAt")),
	}
	if k.Status == "" {
		k.Status = StatusActive
	}
	if v := ddbitem.String(it, "lastUsedAt"); v != "" {
		k.LastUsedAt = ddbitem.ParseTime(v)
	}
	return k
}
