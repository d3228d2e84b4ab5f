package ddb

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/quarrydb/quarry/ddb/attr"
)

// SweepTokensForTest runs one sweep of expired ClientRequestToken records.
func (s *Store) SweepTokensForTest(now time.Time) (int, error) {
	return s.sweepTokens(context.Background(), now)
}

// TokenRecordForTest reports whether tok has a durable record and its expiry.
func (s *Store) TokenRecordForTest(tok string) (bool, time.Time, error) {
	r, err := s.loadToken(tok)
	if err != nil || r == nil {
		return false, time.Time{}, err
	}
	return true, r.expires, nil
}

// SetBackfillHookForTest installs a hook called after each committed chunk
// of an index backfill (before starting the backfill); returning false
// stops the backfill there, leaving the index backfilling as a crash would.
func (s *Store) SetBackfillHookForTest(hook func(index string, chunk int) bool) {
	s.backfills.hook = hook
}

// WaitBackfillsForTest waits for the running index backfills to end.
func (s *Store) WaitBackfillsForTest() { s.backfills.wg.Wait() }

// IndexKeyCountForTest counts the stored index entries of every index.
func (s *Store) IndexKeyCountForTest() int {
	n, _ := s.countPrefix([]byte{nsIndex})
	return int(n)
}

// CorruptItemForTest overwrites the stored bytes of the item with the given
// key in table with raw, as damage on disk would (corrupt.go).
func (s *Store) CorruptItemForTest(table string, key attr.Item, raw []byte) error {
	t, err := s.table(table)
	if err != nil {
		return err
	}
	return s.db.Set(t.itemKey(key), raw, pebble.Sync)
}
