package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/platform/outbox"
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

// alerts is the alert outbox.
func (s *Store) alerts() outbox.Outbox {
	return outbox.Outbox{Client: s.client, Table: s.names.Checks, PK: pkAlerts, Name: "alert"}
}

// alertPut is the outbox item of a, claimed by owner until until, for
// the transaction of its run's record.
func (s *Store) alertPut(a PendingAlert, owner string, until time.Time) types.TransactWriteItem {
	item := outbox.Attrs(owner, until)
	item["PK"], item["SK"], item["check"] = ddbitem.S(pkAlerts), ddbitem.S(a.Key), ddbitem.S(a.CheckID)
	item["alert"] = ddbitem.S(string(a.Alert))
	item[tables.TTLAttribute] = ddbitem.N(s.now().Add(AlertRetention).Unix())
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.names.Checks), Item: item}}
}

// RenewAlerts extends owner's claim on the alerts of keys until until;
// keys whose claim another process took are skipped (that process
// delivers them).
func (s *Store) RenewAlerts(ctx context.Context, owner string, keys []string, until time.Time) error {
	return s.alerts().Renew(ctx, owner, keys, until)
}

// DueAlerts returns up to limit pending alerts whose claim ran out at
// now, oldest first.
func (s *Store) DueAlerts(ctx context.Context, now time.Time, limit int) ([]PendingAlert, error) {
	items, err := s.alerts().Due(ctx, skPending, now, limit)
	if err != nil {
		return nil, fmt.Errorf("checks: %w", err)
	}
	out := make([]PendingAlert, len(items))
	for i, it := range items {
		out[i] = parsePending(it)
	}
	return out, nil
}

// ClaimAlert takes the pending alert of key for owner until until, when
// its claim ran out at now; ErrLost when another process holds it and
// ErrNotFound when it was delivered meanwhile.
func (s *Store) ClaimAlert(ctx context.Context, k, owner string, now, until time.Time) (PendingAlert, error) {
	it, err := s.alerts().Claim(ctx, k, owner, now, until)
	switch {
	case errors.Is(err, outbox.ErrGone):
		return PendingAlert{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, outbox.ErrTaken):
		return parsePending(it), fmt.Errorf("%w: %w", ErrLost, err)
	case err != nil:
		return PendingAlert{}, fmt.Errorf("checks: %w", err)
	}
	return parsePending(it), nil
}

// DoneAlert removes a delivered alert from the outbox, when owner still
// holds it (a process that lost its claim leaves the alert to the new
// owner, which delivers it again under the same id).
func (s *Store) DoneAlert(ctx context.Context, k, owner string) error {
	return s.alerts().Done(ctx, k, owner)
}

func parsePending(it map[string]av) PendingAlert {
	return PendingAlert{
		Key: ddbitem.String(it, "SK"), CheckID: ddbitem.String(it, "check"), Alert: []byte(ddbitem.String(it, "alert")),
		Owner: ddbitem.String(it, "owner"), ClaimUntil: outbox.ClaimUntil(it),
	}
}
