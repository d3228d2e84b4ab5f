package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// The node registry: one item in the CHECK table (PK = SK = "NODES")
// with one attribute per scheduler process, "node:<lease owner>", holding
// the time until which the process counts as alive (its node lease). A
// process renews its own attribute and reads the others' in the same
// request (BeatNode), to share the checks among the live processes (see
// the scheduler's ownership). The item carries no indexed attribute; the
// attributes of processes gone for nodeRetention are removed by the
// beats of the others.
const (
	pkNodes    = "NODES"
	nodePrefix = "node:"
	// nodeRetention is how long after its lease a node's attribute is kept.
	nodeRetention = time.Hour
)

// BeatNode renews owner's node lease until until and returns the owners
// whose node lease runs past now, in the order of their names (owner
// included), and those whose lease ended more than an hour before now,
// to be passed as gone to a later beat, which removes them.
func (s *Store) BeatNode(ctx context.Context, owner string, now, until time.Time, gone []string) (live, stale []string, err error) {
	names := map[string]string{"#me": nodePrefix + owner}
	update := "SET #me = :until"
	if len(gone) > 0 {
		var rm []string
		for i, g := range gone {
			n := fmt.Sprintf("#g%d", i)
			names[n] = nodePrefix + g
			rm = append(rm, n)
		}
		update += " REMOVE " + strings.Join(rm, ", ")
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(pkNodes, pkNodes),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]av{":until": ddbitem.N(ms(until))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("checks: renew the node lease of %s: %w", owner, err)
	}
	return liveNodes(out.Attributes, now), staleNodes(out.Attributes, now), nil
}

// staleNodes returns the owners in item whose lease ended more than
// nodeRetention before now.
func staleNodes(item map[string]av, now time.Time) []string {
	var out []string
	for k := range item {
		if n, ok := strings.CutPrefix(k, nodePrefix); ok && fromMs(ddbitem.Int(item, k)).Before(now.Add(-nodeRetention)) {
			out = append(out, n)
		}
	}
	return out
}

// liveNodes returns the owners in item whose lease runs past now, sorted.
func liveNodes(item map[string]av, now time.Time) []string {
	var out []string
	for k := range item {
		if n, ok := strings.CutPrefix(k, nodePrefix); ok && fromMs(ddbitem.Int(item, k)).After(now) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// DropNode removes owner's node lease (the process stops), so that the
// others take its checks over at their next beat.
func (s *Store) DropNode(ctx context.Context, owner string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Checks), Key: key(pkNodes, pkNodes),
		UpdateExpression:         aws.String("REMOVE #me"),
		ExpressionAttributeNames: map[string]string{"#me": nodePrefix + owner},
	})
	if err != nil {
		return fmt.Errorf("checks: drop the node lease of %s: %w", owner, err)
	}
	return nil
}

// TakeOver claims the run of check id due at due (at or before now) from
// dead, a process whose node lease has ended, without waiting for the
// run's own lease to end: one transaction that moves nextRunAt to the
// next period and leases the check to owner until now + lease, on the
// conditions that dead still holds the check at due and that dead's node
// lease in the registry has ended (or is gone). A record dead would still
// make of a run it had claimed is refused then (its condition is
// leaseOwner = dead), so a period is recorded at most once. ErrLost when
// a condition fails (a check gone or no longer active included). Missed
// periods are skipped as ClaimAhead skips them.
func (s *Store) TakeOver(ctx context.Context, id, owner, dead string, due, now time.Time, lease time.Duration) (Check, error) {
	if dead == "" || dead == owner {
		return Check{}, fmt.Errorf("%w: check %s: no other owner to take it from", ErrLost, id)
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.names.Checks), Key: key(id, skCheck),
			UpdateExpression:         aws.String("SET nextRunAt = nextRunAt + delayMs, leaseOwner = :me, leaseUntil = :lease"),
			ConditionExpression:      aws.String("#s = :active AND nextRunAt = :due AND nextRunAt <= :now AND leaseOwner = :dead"),
			ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]av{
				":me": ddbitem.S(owner), ":dead": ddbitem.S(dead), ":lease": ddbitem.N(ms(now.Add(lease))),
				":active": ddbitem.S(CheckActive), ":due": ddbitem.N(ms(due)), ":now": ddbitem.N(ms(now)),
			},
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(s.names.Checks), Key: key(pkNodes, pkNodes),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :now"),
			ExpressionAttributeNames:  map[string]string{"#n": nodePrefix + dead},
			ExpressionAttributeValues: map[string]av{":now": ddbitem.N(ms(now))},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 {
		return Check{}, fmt.Errorf("%w: check %s: not taken over from %s (%s)", ErrLost, id, dead, strings.Join(r, ", "))
	}
	if err != nil {
		return Check{}, fmt.Errorf("checks: take %s over from %s: %w", id, dead, err)
	}
	c, err := s.GetCheck(ctx, "", id)
	if err != nil {
		return Check{}, err
	}
	if c.LeaseOwner != owner {
		return Check{}, fmt.Errorf("%w: check %s", ErrLost, id)
	}
	return s.skipMissed(ctx, c, owner, now)
}
