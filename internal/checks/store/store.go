// Package store keeps Checks' users, API tokens, checks and run history in
// the USER and CHECK tables through the DynamoDB API. Every invariant that
// concurrent requests could break is one conditional write or transaction:
// unique emails (a guard item), checkLimit (a counter on the user taken in
// the same transaction that writes the check), and the scheduler's claim of
// a due run (a conditional update of nextRunAt and a lease).
package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/checks/tables"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Errors of the package, matched with errors.Is.
var (
	ErrNotFound     = errors.New("checks: not found")
	ErrExists       = errors.New("checks: already exists")
	ErrLimit        = errors.New("checks: check limit reached")
	ErrSuspended    = errors.New("checks: user is suspended")
	ErrInvalid      = errors.New("checks: invalid request")
	ErrState        = errors.New("checks: wrong state")
	ErrUnauthorized = errors.New("checks: unauthorized")
	// ErrLost means a scheduler's claim on a run was taken over.
	ErrLost = errors.New("checks: lease lost")
	// ErrReleased means a run's lease is gone because the run ended: its
	// record was written (or the run released, or the check deleted), so
	// there is nothing left to renew.
	ErrReleased = errors.New("checks: lease released")
)

// Tiers and statuses.
const (
	TierFree = "FREE"
	TierPro  = "PRO"

	UserActive    = "ACTIVE"
	UserSuspended = "SUSPENDED"

	CheckActive = "ACTIVE"
	CheckPaused = "PAUSED"
	CheckFailed = "FAILED"
)

// Sort keys of the item kinds.
const (
	skUser   = "USER"
	skCheck  = "CHECK"
	skEmail  = "EMAIL"
	skToken  = "TOKEN"
	skResult = "RESULT#"
)

// Options configures a Store.
type Options struct {
	// Limits maps a tier to its checkLimit; defaults FREE 5, PRO 100.
	Limits map[string]int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand is the source of ids and tokens; default crypto/rand.
	Rand io.Reader
}

// Store reads and writes the Checks tables.
type Store struct {
	client *dynamodb.Client
	names  tables.Names
	opts   Options
}

// New returns a Store over the tables named by names. opts may be nil.
func New(client *dynamodb.Client, names tables.Names, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Limits == nil {
		o.Limits = map[string]int{TierFree: 5, TierPro: 100}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return &Store{client: client, names: names, opts: o}
}

// Names are the tables the store uses.
func (s *Store) Names() tables.Names { return s.names }

// Limit returns the checkLimit of a tier (false for an unknown tier).
func (s *Store) Limit(tier string) (int, bool) {
	n, ok := s.opts.Limits[tier]
	return n, ok
}

func (s *Store) now() time.Time { return s.opts.Now().UTC() }

func (s *Store) randomID(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.opts.Rand, b); err != nil {
		return "", fmt.Errorf("checks: random: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

type av = types.AttributeValue

func key(pk, sk string) map[string]av { return map[string]av{"PK": ddbitem.S(pk), "SK": ddbitem.S(sk)} }

func anyMap(it map[string]av, k string) map[string]any {
	m, ok := it[k].(*types.AttributeValueMemberM)
	if !ok {
		return nil
	}
	var out map[string]any
	if attributevalue.UnmarshalMap(m.Value, &out) != nil {
		return nil
	}
	return out
}

func mapValue(m map[string]any) (av, error) {
	if m == nil {
		m = map[string]any{}
	}
	item, err := attributevalue.MarshalMap(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &types.AttributeValueMemberM{Value: item}, nil
}
