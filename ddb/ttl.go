package ddb

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

// Time to live. When a table has a TTL attribute, every item whose value of
// that attribute is a Number is also listed in an expiry index
//
//	e<table id><expiry seconds, 8 bytes BE><item storage key> → ""
//
// written in the same batch as the item. The sweeper walks the index up to
// now and deletes expired items with ordinary deletes (index entries and a
// change record marked as a TTL deletion). As in DynamoDB, items whose TTL
// is more than five years in the past are never deleted, and expired items
// stay readable until the sweeper removes them.

const nsExpiry = 'e'

// ttlHorizon is how far in the past a TTL value may lie and still expire.
const ttlHorizon = 5 * 365 * 24 * time.Hour

// TimeToLiveSpecification enables or disables TTL on an attribute.
type TimeToLiveSpecification struct {
	Enabled       *bool  `json:"Enabled"`
	AttributeName string `json:"AttributeName"`

	// nameSet records that the request carried AttributeName (even
	// empty); see UnmarshalJSON.
	nameSet bool
}

// UnmarshalJSON decodes a TimeToLiveSpecification, noting whether
// AttributeName was present: DynamoDB reports a missing one as null and an
// empty one by its length.
func (ts *TimeToLiveSpecification) UnmarshalJSON(b []byte) error {
	var raw struct {
		Enabled       *bool   `json:"Enabled"`
		AttributeName *string `json:"AttributeName"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode TimeToLiveSpecification: %w", err)
	}
	*ts = TimeToLiveSpecification{Enabled: raw.Enabled, nameSet: raw.AttributeName != nil}
	if raw.AttributeName != nil {
		ts.AttributeName = *raw.AttributeName
	}
	return nil
}

// UpdateTimeToLiveInput is the request of UpdateTimeToLive.
type UpdateTimeToLiveInput struct {
	TableName               *string                  `json:"TableName"`
	TimeToLiveSpecification *TimeToLiveSpecification `json:"TimeToLiveSpecification"`
}

// UpdateTimeToLiveOutput is the response of UpdateTimeToLive.
type UpdateTimeToLiveOutput struct {
	TimeToLiveSpecification *TimeToLiveSpecification `json:"TimeToLiveSpecification"`
}

// TimeToLiveDescription describes a table's TTL setting.
type TimeToLiveDescription struct {
	TimeToLiveStatus string `json:"TimeToLiveStatus"`
	AttributeName    string `json:"AttributeName,omitempty"`
}

// DescribeTimeToLiveOutput is the response of DescribeTimeToLive.
type DescribeTimeToLiveOutput struct {
	TimeToLiveDescription TimeToLiveDescription `json:"TimeToLiveDescription"`
}

// expirySeconds returns the expiry time of an item under TTL attribute
// name, or false when the item does not expire.
func expirySeconds(item attr.Item, name string) (uint64, bool) {
	v, ok := item[name]
	if !ok || v.Kind != attr.KindN || len(v.S) == 0 || v.S[0] == '-' {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(v.S)
	if !ok {
		return 0, false
	}
	sec := new(big.Int).Quo(r.Num(), r.Denom())
	if !sec.IsUint64() {
		return 0, false
	}
	return sec.Uint64(), true
}

func expiryPrefix(tableID uint64) []byte { return idPrefix(nsExpiry, tableID) }

func expiryKey(tableID, sec uint64, itemKey []byte) []byte {
	k := binary.BigEndian.AppendUint64(expiryPrefix(tableID), sec)
	return append(k, itemKey...)
}

// stageTTL maintains the expiry index for one item change.
func (s *Store) stageTTL(b *wbatch, t *table, key []byte, old, new attr.Item) {
	name := t.meta.TTLAttribute
	if name == "" {
		return
	}
	os, oldOK := expirySeconds(old, name)
	ns, newOK := expirySeconds(new, name)
	if oldOK && (!newOK || os != ns) {
		b.Delete(expiryKey(t.meta.ID, os, key), nil)
	}
	if newOK && (!oldOK || os != ns) {
		b.Set(expiryKey(t.meta.ID, ns, key), nil, nil)
	}
}

// UpdateTimeToLive enables or disables TTL on a table. Enabling indexes the
// expiry of existing items before it returns.
func (s *Store) UpdateTimeToLive(in *UpdateTimeToLiveInput) (*UpdateTimeToLiveOutput, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if in.TimeToLiveSpecification == nil {
		c.add("Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
	} else {
		if in.TimeToLiveSpecification.Enabled == nil {
			c.add("Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null")
		}
		switch spec := in.TimeToLiveSpecification; {
		case spec.AttributeName == "" && !spec.nameSet:
			c.add("Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null")
		case spec.AttributeName == "":
			c.add("Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1")
		case len(in.TimeToLiveSpecification.AttributeName) > 255:
			c.add("Value '%s' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255", in.TimeToLiveSpecification.AttributeName)
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	spec := in.TimeToLiveSpecification
	old, unlock, ok := s.lockDDL(*in.TableName)
	if !ok {
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	defer unlock()
	m := *old.meta
	if *spec.Enabled {
		if m.TTLAttribute != "" {
			return nil, validationf("TimeToLive is already enabled")
		}
		m.TTLAttribute = spec.AttributeName
	} else {
		if m.TTLAttribute == "" {
			return nil, validationf("TimeToLive is already disabled")
		}
		if m.TTLAttribute != spec.AttributeName {
			return nil, validationf("TimeToLive is active on a different AttributeName: current AttributeName is %s", m.TTLAttribute)
		}
		m.TTLAttribute = ""
	}
	b := s.newBatch()
	defer b.release(s)
	ep := expiryPrefix(m.ID)
	b.DeleteRange(ep, prefixSuccessor(ep), nil)
	t := newTable(&m)
	if m.TTLAttribute != "" {
		err := s.forEachItem("UpdateTimeToLive", t, func(key []byte, item attr.Item) {
			if sec, ok := expirySeconds(item, m.TTLAttribute); ok {
				b.Set(expiryKey(m.ID, sec, key), nil, nil)
			}
		})
		if err != nil {
			return nil, internal(err)
		}
	}
	if err := s.putMeta(b.Batch, &m); err != nil {
		return nil, internal(err)
	}
	if err := s.commit(b); err != nil {
		return nil, internal(err)
	}
	s.tables[m.Name] = t
	return &UpdateTimeToLiveOutput{TimeToLiveSpecification: spec}, nil
}

// DescribeTimeToLive describes a table's TTL setting.
func (s *Store) DescribeTimeToLive(in *TableNameInput) (*DescribeTimeToLiveOutput, error) {
	var c constraintErrors
	checkTableName(&c, "tableName", in.TableName)
	if err := c.err(); err != nil {
		return nil, err
	}
	t, terr := s.table(*in.TableName)
	if terr != nil {
		return nil, notFound("Requested resource not found: Table: %s not found", *in.TableName)
	}
	out := &DescribeTimeToLiveOutput{TimeToLiveDescription: TimeToLiveDescription{TimeToLiveStatus: "DISABLED"}}
	if t.meta.TTLAttribute != "" {
		out.TimeToLiveDescription = TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: t.meta.TTLAttribute}
	}
	return out, nil
}

// SweepExpired deletes every item whose TTL has passed, in every table, and
// returns how many it deleted. The background sweeper calls it every
// Options.TTLInterval; tests may call it directly.
func (s *Store) SweepExpired(ctx context.Context) (int, error) {
	total := 0
	for _, name := range s.tableNames() {
		n, err := s.sweepTable(ctx, name)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *Store) sweepTable(ctx context.Context, name string) (int, error) {
	t, unlock, terr := s.writeTable(name)
	if terr != nil {
		return 0, nil // deleted meanwhile
	}
	defer unlock()
	if t.meta.TTLAttribute == "" {
		return 0, nil
	}
	now := s.opts.Now()
	lo := now.Add(-ttlHorizon).Unix()
	if lo < 0 {
		lo = 0
	}
	ep := expiryPrefix(t.meta.ID)
	lower := binary.BigEndian.AppendUint64(append([]byte(nil), ep...), uint64(lo))
	// Items expire when their TTL is strictly before now (whole seconds).
	upper := binary.BigEndian.AppendUint64(append([]byte(nil), ep...), uint64(now.Unix()))
	var keys [][]byte
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, err
	}
	for it.First(); it.Valid() && len(keys) < 1000; it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()[len(ep)+8:]...))
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	deleted := 0
	for _, key := range keys {
		if ctx.Err() != nil {
			return deleted, ctx.Err()
		}
		ok, err := s.expireOne(t, key, now)
		if err != nil {
			return deleted, err
		}
		if ok {
			deleted++
		}
	}
	return deleted, nil
}

// expireOne deletes the item at key if it is still expired.
func (s *Store) expireOne(t *table, key []byte, now time.Time) (bool, error) {
	defer s.lockKeys(key)()
	old, err := s.getItem(key)
	if isCorrupt(err) {
		// Its expiry cannot be checked; the sweep goes on (corrupt.go).
		s.opts.Logger.Error("ddb: TTL sweep skips a stored item that cannot be decoded", "err", t.named(err).Error())
		return false, nil
	}
	if err != nil || old == nil {
		return false, err
	}
	sec, ok := expirySeconds(old, t.meta.TTLAttribute)
	if !ok || int64(sec) >= now.Unix() || int64(sec) < now.Add(-ttlHorizon).Unix() {
		return false, nil
	}
	b := s.newBatch()
	defer b.release(s)
	s.stageDelete(b, t, key, old, true)
	return true, s.commit(b)
}

// stageDelete stages the deletion of an item; byTTL marks TTL deletions in
// the change log.
func (s *Store) stageDelete(b *wbatch, t *table, key []byte, old attr.Item, byTTL bool) {
	s.stageLog(b, t, old, nil, byTTL)
	s.stageTTL(b, t, key, old, nil)
	s.stageItem(b, t, key, old, nil)
}

// runBackground runs the store's periodic work until ctx ends.
func (s *Store) runBackground(ctx context.Context) {
	defer close(s.bgDone)
	if s.opts.TTLInterval < 0 {
		return
	}
	tick := time.NewTicker(s.opts.TTLInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if n, err := s.SweepExpired(ctx); err != nil && ctx.Err() == nil {
				s.opts.Logger.Error("ddb: TTL sweep", "err", err)
			} else if n > 0 {
				s.opts.Logger.Debug("ddb: TTL sweep", "deleted", n)
			}
			for _, f := range s.periodic {
				if err := f(ctx, s.opts.Now()); err != nil && ctx.Err() == nil {
					s.opts.Logger.Error("ddb: background task", "err", err)
				}
			}
		}
	}
}
