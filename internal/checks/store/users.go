package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// User is a USER item.
type User struct {
	ID         string `json:"id"`
	Email      string `json:"email"`
	Tier       string `json:"tier"`
	CheckLimit int    `json:"checkLimit"`
	Status     string `json:"status"`
	// CheckCount is the number of checks the user has (an extension: the
	// counter that makes checkLimit hold under concurrent creates).
	CheckCount int    `json:"checkCount"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
	// Alert targets (extensions).
	WebhookURL    string `json:"webhookUrl,omitempty"`
	WebhookSecret string `json:"-"`
	AlertEmail    string `json:"alertEmail,omitempty"`
	// Alert delivery outcome (extensions): when an alert was last
	// delivered to any target, and the last delivery failure ("<channel>:
	// <reason>") and when it happened.
	LastAlertAt      string `json:"lastAlertAt,omitempty"`
	LastAlertError   string `json:"lastAlertError,omitempty"`
	LastAlertErrorAt string `json:"lastAlertErrorAt,omitempty"`
	// StatusPage is the token of the user's public status page, "" when
	// it is off (an extension; see EnableStatusPage).
	StatusPage string `json:"-"`
}

func parseUser(it map[string]av) User {
	return User{
		ID: ddbitem.String(it, "PK"), Email: ddbitem.String(it, "email"), Tier: ddbitem.String(it, "tier"),
		CheckLimit: int(ddbitem.Int(it, "checkLimit")), Status: ddbitem.String(it, "status"),
		CheckCount: int(ddbitem.Int(it, "checkCount")),
		CreatedAt:  ddbitem.String(it, "createdAt"), UpdatedAt: ddbitem.String(it, "updatedAt"),
		WebhookURL: ddbitem.String(it, "webhookUrl"), WebhookSecret: ddbitem.String(it, "webhookSecret"), AlertEmail: ddbitem.String(it, "alertEmail"),
		LastAlertAt: ddbitem.String(it, "lastAlertAt"), LastAlertError: ddbitem.String(it, "lastAlertError"), LastAlertErrorAt: ddbitem.String(it, "lastAlertErrorAt"),
		StatusPage: ddbitem.String(it, "statusPage"),
	}
}

// NormalizeEmail validates an address and returns its canonical form
// (lower case, no display name).
func NormalizeEmail(email string) (string, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(email))
	if err != nil || a.Name != "" || len(a.Address) > 254 {
		return "", fmt.Errorf("%w: email %q is not a valid address", ErrInvalid, email)
	}
	return strings.ToLower(a.Address), nil
}

// HashToken is how a token is stored: SHA-256 hex.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (s *Store) newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := s.opts.Rand.Read(b); err != nil {
		return "", fmt.Errorf("checks: random: %w", err)
	}
	return "chk_" + base64.RawURLEncoding.EncodeToString(b), nil
}

func (s *Store) tokenPut(token, userID string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.names.Users),
		Item: map[string]av{
			"PK": ddbitem.S("TOKEN#" + HashToken(token)), "SK": ddbitem.S(skToken),
			"userid": ddbitem.S(userID), "createdAt": ddbitem.S(ddbitem.FormatTime(s.now())),
		},
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	}}
}

// CreateUser creates an ACTIVE user with a unique email (enforced by a
// guard item written in the same transaction) and returns it with its
// first API token, which is not stored (only its hash is).
func (s *Store) CreateUser(ctx context.Context, email, tier string) (User, string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, "", err
	}
	if tier == "" {
		tier = TierFree
	}
	limit, ok := s.Limit(tier)
	if !ok {
		return User{}, "", fmt.Errorf("%w: tier %q (want FREE or PRO)", ErrInvalid, tier)
	}
	id, err := s.randomID("usr_", 12)
	if err != nil {
		return User{}, "", err
	}
	token, err := s.newToken()
	if err != nil {
		return User{}, "", err
	}
	now := ddbitem.FormatTime(s.now())
	u := User{ID: id, Email: email, Tier: tier, CheckLimit: limit, Status: UserActive, CreatedAt: now, UpdatedAt: now}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.names.Users),
			Item: map[string]av{
				"PK": ddbitem.S(id), "SK": ddbitem.S(skUser), "email": ddbitem.S(email), "tier": ddbitem.S(tier),
				"checkLimit": ddbitem.N(int64(limit)), "status": ddbitem.S(UserActive), "checkCount": ddbitem.N(0),
				"createdAt": ddbitem.S(now), "updatedAt": ddbitem.S(now),
			},
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
		{Put: &types.Put{
			TableName:           aws.String(s.names.Users),
			Item:                map[string]av{"PK": ddbitem.S("EMAIL#" + email), "SK": ddbitem.S(skEmail), "userid": ddbitem.S(id)},
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
		s.tokenPut(token, id),
	}})
	if r := ddbitem.CancelReasons(err); len(r) == 3 && r[1] == "ConditionalCheckFailed" {
		return User{}, "", fmt.Errorf("%w: a user with email %s", ErrExists, email)
	}
	if err != nil {
		return User{}, "", fmt.Errorf("checks: create user: %w", err)
	}
	return u, token, nil
}

// GetUser reads a user by id.
func (s *Store) GetUser(ctx context.Context, id string) (User, error) {
	if id == "" {
		return User{}, fmt.Errorf("%w: user", ErrNotFound)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.names.Users), Key: key(id, skUser), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return User{}, fmt.Errorf("checks: get user: %w", err)
	}
	if out.Item == nil {
		return User{}, fmt.Errorf("%w: user %s", ErrNotFound, id)
	}
	return parseUser(out.Item), nil
}

// UserByEmail finds a user through the email index.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.names.Users), IndexName: aws.String(tables.EmailIndex),
		KeyConditionExpression:    aws.String("email = :e"),
		ExpressionAttributeValues: map[string]av{":e": ddbitem.S(email)},
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return User{}, fmt.Errorf("checks: user by email: %w", err)
	}
	if len(out.Items) == 0 {
		return User{}, fmt.Errorf("%w: user %s", ErrNotFound, email)
	}
	return parseUser(out.Items[0]), nil
}

// NewToken issues another API token for a user.
func (s *Store) NewToken(ctx context.Context, userID string) (string, error) {
	if _, err := s.GetUser(ctx, userID); err != nil {
		return "", err
	}
	token, err := s.newToken()
	if err != nil {
		return "", err
	}
	p := s.tokenPut(token, userID).Put
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression}); err != nil {
		return "", fmt.Errorf("checks: new token: %w", err)
	}
	return token, nil
}

// RevokeToken deletes a token.
func (s *Store) RevokeToken(ctx context.Context, token string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.names.Users), Key: key("TOKEN#"+HashToken(token), skToken),
	})
	if err != nil {
		return fmt.Errorf("checks: revoke token: %w", err)
	}
	return nil
}

// Authenticate returns the user of an API token. A suspended user still
// authenticates (and may read, pause and delete); creates are refused.
func (s *Store) Authenticate(ctx context.Context, token string) (User, error) {
	if token == "" || len(token) > 200 {
		return User{}, ErrUnauthorized
	}
	h := HashToken(token)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.names.Users), Key: key("TOKEN#"+h, skToken), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return User{}, fmt.Errorf("checks: authenticate: %w", err)
	}
	if out.Item == nil || subtle.ConstantTimeCompare([]byte(ddbitem.String(out.Item, "PK")), []byte("TOKEN#"+h)) != 1 {
		return User{}, ErrUnauthorized
	}
	u, err := s.GetUser(ctx, ddbitem.String(out.Item, "userid"))
	if err != nil {
		return User{}, ErrUnauthorized
	}
	return u, nil
}

// SetUserStatus suspends or reactivates a user.
func (s *Store) SetUserStatus(ctx context.Context, id, status string) (User, error) {
	if status != UserActive && status != UserSuspended {
		return User{}, fmt.Errorf("%w: status %q", ErrInvalid, status)
	}
	return s.updateUser(ctx, id, "SET #s = :s, updatedAt = :now", map[string]av{":s": ddbitem.S(status)})
}

// SetTier changes a user's tier and checkLimit. Lowering the limit below
// the user's current number of checks keeps them; further creates fail.
func (s *Store) SetTier(ctx context.Context, id, tier string) (User, error) {
	limit, ok := s.Limit(tier)
	if !ok {
		return User{}, fmt.Errorf("%w: tier %q (want FREE or PRO)", ErrInvalid, tier)
	}
	return s.updateUser(ctx, id, "SET tier = :t, checkLimit = :l, updatedAt = :now", map[string]av{":t": ddbitem.S(tier), ":l": ddbitem.N(int64(limit))})
}

// SetAlerts sets where a user's alerts go; empty strings clear. The
// user's last delivery error is cleared (it was about the old targets).
func (s *Store) SetAlerts(ctx context.Context, id, webhookURL, webhookSecret, email string) (User, error) {
	if email != "" {
		var err error
		if email, err = NormalizeEmail(email); err != nil {
			return User{}, err
		}
	}
	return s.updateUser(ctx, id, "SET webhookUrl = :w, webhookSecret = :k, alertEmail = :e, updatedAt = :now REMOVE lastAlertError, lastAlertErrorAt",
		map[string]av{":w": ddbitem.S(webhookURL), ":k": ddbitem.S(webhookSecret), ":e": ddbitem.S(email)})
}

// RecordAlertDelivery records the outcome of delivering an alert of check
// checkID to its user's targets at at: on success lastAlertAt, on failure
// lastAlertError (failure, e.g. "webhook: …") and lastAlertErrorAt, on
// both the user and the check (a check deleted meanwhile is skipped).
func (s *Store) RecordAlertDelivery(ctx context.Context, userID, checkID string, at time.Time, failure string) error {
	update := "SET lastAlertAt = :at"
	values := map[string]av{":at": ddbitem.S(ddbitem.FormatTime(at))}
	if failure != "" {
		update = "SET lastAlertError = :e, lastAlertErrorAt = :at"
		values[":e"] = ddbitem.S(failure)
	}
	for _, k := range []struct{ table, pk, sk string }{{s.names.Users, userID, skUser}, {s.names.Checks, checkID, skCheck}} {
		if k.pk == "" {
			continue
		}
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(k.table), Key: key(k.pk, k.sk),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("attribute_exists(PK)"),
			ExpressionAttributeValues: values,
		})
		if err != nil && !ddbitem.ConditionFailed(err) {
			return fmt.Errorf("checks: record alert delivery for %s: %w", k.pk, err)
		}
	}
	return nil
}

func (s *Store) updateUser(ctx context.Context, id, update string, values map[string]av) (User, error) {
	values[":now"] = ddbitem.S(ddbitem.FormatTime(s.now()))
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Users), Key: key(id, skUser),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	}
	if strings.Contains(update, "#s") {
		in.ExpressionAttributeNames = map[string]string{"#s": "status"}
	}
	out, err := s.client.UpdateItem(ctx, in)
	if ddbitem.ConditionFailed(err) {
		return User{}, fmt.Errorf("%w: user %s", ErrNotFound, id)
	}
	if err != nil {
		return User{}, fmt.Errorf("checks: update user: %w", err)
	}
	return parseUser(out.Attributes), nil
}
