package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/platform/outbox"
)

// The webhook outbox makes a notification's webhook delivery at least
// once. A notification that goes to its recipient's webhook (a watch
// match, a compliance violation) is written with an outbox item in the
// same transaction: PK = "WEBHOOKS", SK = "PENDING#<sentAt>#<notification
// id>", holding the notification, first reserved for WebhookGrace for the
// process that wrote it. That process claims it (ClaimWebhook), delivers
// it, renews its claim while the delivery retries (RenewWebhooks) and
// deletes it once delivered or given up (DoneWebhook). When the process
// dies first, its reservation or claim runs out and any other process's
// sweep (DueWebhooks) delivers the notification again, with the same
// X-EECAR-Notification-Id, which receivers use to drop a duplicate. The
// items carry no GSI attribute and expire with the notification.
const (
	pkWebhooks = "WEBHOOKS"
	skPending  = "PENDING#"
	// WebhookGrace is how long a new outbox item is left to the process
	// that wrote it before others sweep it.
	WebhookGrace = 15 * time.Second
)

// ErrWebhookTaken means another process holds a webhook's claim.
var ErrWebhookTaken = errors.New("eecar: webhook claimed by another process")

// PendingWebhook is a notification whose webhook delivery is not done.
type PendingWebhook struct {
	Key          string
	Notification Notification
	Owner        string
	ClaimUntil   time.Time
}

// WebhookKey is the outbox key of notification n.
func WebhookKey(n Notification) string { return skPending + n.SentAt + "#" + n.ID }

// webhooks is the webhook outbox.
func (s *Store) webhooks() outbox.Outbox {
	return outbox.Outbox{Client: s.client, Table: s.table, PK: pkWebhooks, Name: "webhook"}
}

// webhookPut is the outbox item of n, reserved for its writer until
// WebhookGrace from now.
func (s *Store) webhookPut(n Notification) (*types.Put, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("eecar: webhook outbox: %w", err)
	}
	item := outbox.Attrs("", s.Now().Add(WebhookGrace))
	item["PK"], item["SK"], item["notification"] = ddbitem.S(pkWebhooks), ddbitem.S(WebhookKey(n)), ddbitem.S(string(body))
	item[TTLAttribute] = ddbitem.N(s.Now().Add(NotificationTTL).Unix())
	return &types.Put{TableName: aws.String(s.table), Item: item}, nil
}

// ClaimWebhook takes the outbox item k for owner until until: when no
// process claimed it yet (its writer's first claim), or when its claim
// ran out at now. ErrWebhookTaken when another process holds it;
// ErrNotFound when it is done (or was never written).
func (s *Store) ClaimWebhook(ctx context.Context, k, owner string, now, until time.Time) (PendingWebhook, error) {
	it, err := s.webhooks().Claim(ctx, k, owner, now, until)
	switch {
	case errors.Is(err, outbox.ErrGone):
		return PendingWebhook{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, outbox.ErrTaken):
		return PendingWebhook{}, fmt.Errorf("%w: %w", ErrWebhookTaken, err)
	case err != nil:
		return PendingWebhook{}, fmt.Errorf("eecar: %w", err)
	}
	return parseWebhook(it), nil
}

// RenewWebhooks extends owner's claims on keys until until; a claim
// another process took is left to it.
func (s *Store) RenewWebhooks(ctx context.Context, owner string, keys []string, until time.Time) error {
	return s.webhooks().Renew(ctx, owner, keys, until)
}

// DueWebhooks returns up to limit outbox items whose reservation or
// claim ran out at now, oldest first.
func (s *Store) DueWebhooks(ctx context.Context, now time.Time, limit int) ([]PendingWebhook, error) {
	items, err := s.webhooks().Due(ctx, skPending, now, limit)
	if err != nil {
		return nil, fmt.Errorf("eecar: %w", err)
	}
	out := make([]PendingWebhook, len(items))
	for i, it := range items {
		out[i] = parseWebhook(it)
	}
	return out, nil
}

// DoneWebhook removes outbox item k when owner still holds it.
func (s *Store) DoneWebhook(ctx context.Context, k, owner string) error {
	return s.webhooks().Done(ctx, k, owner)
}

func parseWebhook(it map[string]av) PendingWebhook {
	p := PendingWebhook{Key: ddbitem.String(it, "SK"), Owner: ddbitem.String(it, "owner"), ClaimUntil: outbox.ClaimUntil(it)}
	_ = json.Unmarshal([]byte(ddbitem.String(it, "notification")), &p.Notification)
	return p
}
