package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
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

// webhookPut is the outbox item of n, reserved for its writer until
// WebhookGrace from now.
func (s *Store) webhookPut(n Notification) (*types.Put, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("eecar: webhook outbox: %w", err)
	}
	return &types.Put{TableName: aws.String(s.table), Item: map[string]av{
		"PK": ddbitem.S(pkWebhooks), "SK": ddbitem.S(WebhookKey(n)), "notification": ddbitem.S(string(body)),
		"claimUntil": ddbitem.N(s.Now().Add(WebhookGrace).UnixMilli()),
		TTLAttribute: ddbitem.N(s.Now().Add(NotificationTTL).Unix()),
	}}, nil
}

// ClaimWebhook takes the outbox item k for owner until until: when no
// process claimed it yet (its writer's first claim), or when its claim
// ran out at now. ErrWebhookTaken when another process holds it;
// ErrNotFound when it is done (or was never written).
func (s *Store) ClaimWebhook(ctx context.Context, k, owner string, now, until time.Time) (PendingWebhook, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(pkWebhooks, k),
		UpdateExpression:                    aws.String("SET #o = :me, claimUntil = :until"),
		ConditionExpression:                 aws.String("attribute_exists(PK) AND (attribute_not_exists(#o) OR claimUntil < :now)"),
		ExpressionAttributeNames:            map[string]string{"#o": "owner"},
		ExpressionAttributeValues:           map[string]av{":me": ddbitem.S(owner), ":until": ddbitem.N(until.UnixMilli()), ":now": ddbitem.N(now.UnixMilli())},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return PendingWebhook{}, fmt.Errorf("%w: webhook %s", ErrNotFound, k)
		}
		return PendingWebhook{}, fmt.Errorf("%w: %s", ErrWebhookTaken, k)
	}
	if err != nil {
		return PendingWebhook{}, fmt.Errorf("eecar: claim webhook %s: %w", k, err)
	}
	return parseWebhook(out.Attributes), nil
}

// RenewWebhooks extends owner's claims on keys until until; a claim
// another process took is left to it.
func (s *Store) RenewWebhooks(ctx context.Context, owner string, keys []string, until time.Time) error {
	var errs []error
	for _, k := range keys {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: key(pkWebhooks, k),
			UpdateExpression:          aws.String("SET claimUntil = :until"),
			ConditionExpression:       aws.String("#o = :me"),
			ExpressionAttributeNames:  map[string]string{"#o": "owner"},
			ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner), ":until": ddbitem.N(until.UnixMilli())},
		})
		if err != nil && !ddbitem.ConditionFailed(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("eecar: renew webhook claims: %w", errors.Join(errs...))
	}
	return nil
}

// DueWebhooks returns up to limit outbox items whose reservation or
// claim ran out at now, oldest first.
func (s *Store) DueWebhooks(ctx context.Context, now time.Time, limit int) ([]PendingWebhook, error) {
	var out []PendingWebhook
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		FilterExpression:          aws.String("claimUntil < :now"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(pkWebhooks), ":p": ddbitem.S(skPending), ":now": ddbitem.N(now.UnixMilli())},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("eecar: pending webhooks: %w", err)
		}
		for _, it := range page.Items {
			if len(out) < limit {
				out = append(out, parseWebhook(it))
			}
		}
	}
	return out, nil
}

// DoneWebhook removes outbox item k when owner still holds it.
func (s *Store) DoneWebhook(ctx context.Context, k, owner string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(pkWebhooks, k),
		ConditionExpression:       aws.String("#o = :me"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner)},
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("eecar: webhook %s done, not removed from the outbox: %w", k, err)
	}
	return nil
}

func parseWebhook(it map[string]av) PendingWebhook {
	p := PendingWebhook{Key: ddbitem.String(it, "SK"), Owner: ddbitem.String(it, "owner"),
		ClaimUntil: time.UnixMilli(ddbitem.Int(it, "claimUntil")).UTC()}
	_ = json.Unmarshal([]byte(ddbitem.String(it, "notification")), &p.Notification)
	return p
}
