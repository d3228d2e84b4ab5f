// Package outbox keeps the claims of a transactional outbox in a DynamoDB
// table: items a system writes in the transaction that makes them due (a
// run's alert, a notification's webhook), under one partition key, each
// claimed by the process delivering it until a time it renews while the
// delivery goes on, and deleted once done. When that process dies its
// claim runs out and another process's sweep (Due, then Claim) takes the
// item over, so that what the outbox holds is delivered at least once.
//
// An item has the attributes PK (the outbox's partition), SK (its key),
// owner (the claiming process; absent before the first claim) and
// claimUntil (epoch milliseconds); the system adds its own.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Errors of Claim.
var (
	// ErrTaken means another process holds the item's claim.
	ErrTaken = errors.New("outbox: claimed by another process")
	// ErrGone means the item does not exist (done, or never written).
	ErrGone = errors.New("outbox: no such item")
)

type av = types.AttributeValue

// Outbox is one outbox: the items of partition PK of table Table.
type Outbox struct {
	Client *dynamodb.Client
	Table  string
	PK     string
	// Name names the outbox in errors ("alert", "webhook").
	Name string
}

func (o Outbox) key(k string) map[string]av {
	return map[string]av{"PK": ddbitem.S(o.PK), "SK": ddbitem.S(k)}
}

// Attrs are the claim attributes of a new item claimed by owner until
// until ("" owner: reserved for its writer until until, not claimed).
func Attrs(owner string, until time.Time) map[string]av {
	m := map[string]av{"claimUntil": ddbitem.N(until.UnixMilli())}
	if owner != "" {
		m["owner"] = ddbitem.S(owner)
	}
	return m
}

// Claim takes item k for owner until until when nobody claimed it yet or
// its claim ran out at now, and returns the item; ErrTaken or ErrGone
// otherwise.
func (o Outbox) Claim(ctx context.Context, k, owner string, now, until time.Time) (map[string]av, error) {
	out, err := o.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(o.Table), Key: o.key(k),
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
			return nil, fmt.Errorf("%w: %s %s", ErrGone, o.Name, k)
		}
		return ccf.Item, fmt.Errorf("%w: %s %s", ErrTaken, o.Name, k)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: claim %s %s: %w", o.Name, k, err)
	}
	return out.Attributes, nil
}

// Renew extends owner's claims on keys until until; a claim another
// process took is left to it.
func (o Outbox) Renew(ctx context.Context, owner string, keys []string, until time.Time) error {
	var errs []error
	for _, k := range keys {
		_, err := o.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(o.Table), Key: o.key(k),
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
		return fmt.Errorf("outbox: renew %s claims: %w", o.Name, errors.Join(errs...))
	}
	return nil
}

// Due returns up to limit items whose keys start with prefix and whose
// claim (or reservation) ran out at now, in key order.
func (o Outbox) Due(ctx context.Context, prefix string, now time.Time, limit int) ([]map[string]av, error) {
	var out []map[string]av
	p := dynamodb.NewQueryPaginator(o.Client, &dynamodb.QueryInput{
		TableName:                 aws.String(o.Table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
		FilterExpression:          aws.String("claimUntil < :now"),
		ExpressionAttributeValues: map[string]av{":pk": ddbitem.S(o.PK), ":p": ddbitem.S(prefix), ":now": ddbitem.N(now.UnixMilli())},
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("outbox: pending %ss: %w", o.Name, err)
		}
		for _, it := range page.Items {
			if len(out) < limit {
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// Done deletes item k when owner still holds it (a process that lost its
// claim leaves the item to the new owner, which delivers it again).
func (o Outbox) Done(ctx context.Context, k, owner string) error {
	_, err := o.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(o.Table), Key: o.key(k),
		ConditionExpression:       aws.String("#o = :me"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]av{":me": ddbitem.S(owner)},
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("outbox: %s %s done, not removed (it may be delivered again): %w", o.Name, k, err)
	}
	return nil
}

// ClaimUntil reads an item's claimUntil.
func ClaimUntil(it map[string]av) time.Time {
	return time.UnixMilli(ddbitem.Int(it, "claimUntil")).UTC()
}
