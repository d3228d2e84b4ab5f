package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Principal is the outcome of a successful Authorize: who is calling and on
// behalf of which project.
type Principal struct {
	// KeyID is the friendly id of the API key used.
	KeyID string
	// ProjectID is the selected project: the requested one, or the key's
	// primary project when none was requested. It is ACTIVE.
	ProjectID string
	// ProjectIDs are all the projects the key may use (primary first).
	ProjectIDs []string
	// Project is the selected project as read during authorization.
	Project Project
}

// CanUse reports whether the principal's key may use project id.
func (p Principal) CanUse(id string) bool { return slices.Contains(p.ProjectIDs, id) }

// Authorize checks a raw API key and an optional requested project (""
// selects the key's primary project). It fails with ErrUnauthorized when the
// key is missing, unknown or not ACTIVE, and with ErrForbidden when the
// requested project is not one of the key's projects or the selected
// project does not exist or is not ACTIVE (the document's authorizer denies
// the request then). On success it may update the key's lastUsedAt (best
// effort, at most once per Options.LastUsedInterval).
func (s *Store) Authorize(ctx context.Context, rawKey, requestedProjectID string) (Principal, error) {
	if rawKey == "" || len(rawKey) > maxKeyLen {
		return Principal{}, fmt.Errorf("%w: missing or malformed API key", ErrUnauthorized)
	}
	return s.AuthorizeHash(ctx, HashKey(rawKey), requestedProjectID)
}

// AuthorizeHash is Authorize for the key whose HashKey is hash: the web
// console keeps the hash of the key a person signed in with (never the
// key), and checks it again on every request, so a revoked key or an
// inactive project ends its console sessions at once.
func (s *Store) AuthorizeHash(ctx context.Context, hash, requestedProjectID string) (Principal, error) {
	if len(hash) != 64 {
		return Principal{}, fmt.Errorf("%w: malformed key hash", ErrUnauthorized)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.names.APIKeys),
		Key:            map[string]types.AttributeValue{"apiKeyHash": &types.AttributeValueMemberS{Value: hash}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Principal{}, fmt.Errorf("auth: look up key: %w", err)
	}
	if out.Item == nil {
		return Principal{}, fmt.Errorf("%w: invalid API key", ErrUnauthorized)
	}
	key := parseKey(out.Item)
	if subtle.ConstantTimeCompare([]byte(key.Hash), []byte(hash)) != 1 {
		return Principal{}, fmt.Errorf("%w: invalid API key", ErrUnauthorized)
	}
	if key.Status != StatusActive {
		return Principal{}, fmt.Errorf("%w: API key is not active", ErrUnauthorized)
	}
	projects := key.Projects()
	selected := requestedProjectID
	if selected == "" {
		selected = key.ProjectID
	}
	if !slices.Contains(projects, selected) {
		return Principal{}, fmt.Errorf("%w: API key may not use project %s", ErrForbidden, selected)
	}
	p, err := s.GetProject(ctx, selected)
	if err != nil {
		if isNotFound(err) {
			return Principal{}, fmt.Errorf("%w: project %s does not exist", ErrForbidden, selected)
		}
		return Principal{}, err
	}
	if p.Status != StatusActive {
		return Principal{}, fmt.Errorf("%w: project %s is not active", ErrForbidden, selected)
	}
	s.touch(ctx, key)
	return Principal{KeyID: key.ID, ProjectID: selected, ProjectIDs: projects, Project: p}, nil
}

// touch updates lastUsedAt when it is older than the configured interval.
// Failures are ignored: lastUsedAt is informational.
func (s *Store) touch(ctx context.Context, key APIKey) {
	if s.opts.LastUsedInterval < 0 {
		return
	}
	now := s.now()
	if !key.LastUsedAt.IsZero() && now.Sub(key.LastUsedAt) < s.opts.LastUsedInterval {
		return
	}
	_, _ = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.names.APIKeys),
		Key:                 map[string]types.AttributeValue{"apiKeyHash": &types.AttributeValueMemberS{Value: key.Hash}},
		UpdateExpression:    aws.String("SET lastUsedAt = :t"),
		ConditionExpression: aws.String("attribute_exists(apiKeyHash)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberS{Value: ddbitem.FormatTime(now)},
		},
	})
}

// principalKey is the context key of the Principal.
type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the Principal stored in ctx by WithPrincipal.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
