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

// CorruptLogRecordForTest overwrites the stored bytes of table's n-th
// change-log record (0: the oldest) with raw, as damage on disk would.
func (s *Store) CorruptLogRecordForTest(table string, n int, raw []byte) error {
	t, terr := s.table(table)
	if terr != nil {
		return terr
	}
	p := logPrefix(t.meta.ID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixSuccessor(p)})
	if err != nil {
		return err
	}
	var key []byte
	for ok := it.First(); ok; ok = it.Next() {
		if n == 0 {
			key = append([]byte(nil), it.Key()...)
			break
		}
		n--
	}
	if err := it.Close(); err != nil {
		return err
	}
	if key == nil {
		return pebble.ErrNotFound
	}
	return s.db.Set(key, raw, pebble.Sync)
}
