package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// The alert outbox makes alerts at least once. An alert is written in the
// transaction that records its run (Outcome.Alert), in the CHECK table
// under PK = "ALERTS", SK = "PENDING#<epoch ms, 13 digits>#<alert id>",
// claimed by the process that recorded the run until claimUntil. That
// process delivers it, renews the claim while the delivery retries
// (RenewAlerts) and deletes it once every channel has its outcome
// (DoneAlert). When the process dies, its claims run out and any other
// process's sweep (DueAlerts, ClaimAlert) delivers the alert again, with
// the same alert id, which receivers use to drop a duplicate: the one left
// by a process that delivered and died before deleting the item. The
// items carry no indexed attribute; they expire by TTL after
// AlertRetention, so an alert no process can deliver does not stay
// forever.
const (
	pkAlerts  = "ALERTS"
	skPending = "PENDING#"
	// AlertRetention is how long an undelivered alert is kept.
	AlertRetention = 24 * time.Hour
)

// PendingAlert is an alert recorded with its run and not yet delivered.
type PendingAlert struct {
	// Key is its sort key ("PENDING#<ms>#<alert id>"); see AlertKey.
	Key string
	// CheckID is the check whose run raised it.
	CheckID string
	// Alert is the alert as its deliverer encodes it (JSON).
	Alert []byte
	// Owner is the process delivering it, until ClaimUntil.
	Owner      string
	ClaimUntil time.Time
}

// AlertKey returns the outbox key of the alert id raised at at.
func AlertKey(at time.Time, id string) string {
	return fmt.Sprintf("%s%013d#%s", skPending, max(ms(at), 0), id)
}

// alertPut is the outbox item of a, claimed by owner until until, for
// the transaction of its run's record.
func (s *Store) alertPut(a PendingAlert, owner string, until time.Time) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.names.Checks),
		Item: map[string]av{
			"PK": ddbitem.S(pkAlerts), "SK": ddbitem.S(a.Key), "check": ddbitem.S(a.CheckID),
			"alert": ddbitem.S(string(a.Alert)), "owner": ddbitem.S(owner), "claimUntil": ddbitem.N(ms(until)),
			tables.TTLAttribute: ddbitem.N(s.now().Add(AlertRetention).Unix()),
		},
	}}
}

// RenewAlerts extends owner's claim on the alerts of keys until until;
// keys whose claim another process took are skipped (that process
// delivers them).
func (s *Store) RenewAlerts(ctx context.Context, owner string, keys []string, until time.Time) error {
	var errs []error
	for _, k := range keys {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.names.Checks), Key: key(pkAlerts, k),
			UpdateExpression:          aws.String("SET claimUntil = :until"),
			ConditionExpression:       aws.String("#o = :me"),
			ExpressionAttributeNames:  map[string]string{"#o": "owner"},
			ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner), ":until": ddbitem.N(ms(until))},
		})
		if err != nil && !ddbitem.ConditionFailed(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("checks: renew alert claims: %w", errors.Join(errs...))
	}
	return nil
}

// DueAlerts returns up to limit pending alerts whose claim ran out at
// now, oldest first.
func (s *Store) DueAlerts(ctx context.Context, now time.Time, limit int) ([]PendingAlert, error) {
	var out []PendingAlert
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.names.Checks),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		FilterExpression:          aws.String("claimUntil < :now"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(pkAlerts), ":p": ddbitem.S(skPending), ":now": ddbitem.N(ms(now))},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("checks: pending alerts: %w", err)
		}
		for _, it := range page.Items {
			if len(out) == limit {
				break
			}
			out = append(out, parsePending(it))
		}
	}
	return out, nil
}

// ClaimAlert takes the pending alert of key for owner until until, when
// its claim ran out at now; ErrLost when another process holds it and
// ErrNotFound when it was delivered meanwhile.
func (s *Store) ClaimAlert(ctx context.Context, k, owner string, now, until time.Time) (PendingAlert, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(pkAlerts, k),
		UpdateExpression:                    aws.String("SET #o = :me, claimUntil = :until"),
		ConditionExpression:                 aws.String("attribute_exists(PK) AND claimUntil < :now"),
		ExpressionAttributeNames:            map[string]string{"#o": "owner"},
		ExpressionAttributeValues:           map[string]av{":me": ddbitem.S(owner), ":until": ddbitem.N(ms(until)), ":now": ddbitem.N(ms(now))},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil {
			return PendingAlert{}, fmt.Errorf("%w: alert %s", ErrNotFound, k)
		}
		return parsePending(ccf.Item), fmt.Errorf("%w: alert %s", ErrLost, k)
	}
	if err != nil {
		return PendingAlert{}, fmt.Errorf("checks: claim alert %s: %w", k, err)
	}
	return parsePending(out.Attributes), nil
}

// DoneAlert removes a delivered alert from the outbox, when owner still
// holds it (a process that lost its claim leaves the alert to the new
// owner, which delivers it again under the same id).
func (s *Store) DoneAlert(ctx context.Context, k, owner string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.names.Checks), Key: key(pkAlerts, k),
		ConditionExpression:       aws.String("#o = :me"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner)},
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("checks: alert %s delivered, not removed from the outbox: %w", k, err)
	}
	return nil
}

func parsePending(it map[string]av) PendingAlert {
	return PendingAlert{
		Key: ddbitem.String(it, "SK"), CheckID: ddbitem.String(it, "check"), Alert: []byte(ddbitem.String(it, "alert")),
		Owner: ddbitem.String(it, "owner"), ClaimUntil: fromMs(ddbitem.Int(it, "claimUntil")),
	}
}
