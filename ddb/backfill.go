package ddb

import (
	"bytes"
	"context"
	"sync"

	"github.com/cockroachdb/pebble"
)

// Online index creation. UpdateTable commits a new global secondary index
// marked Backfilling and returns; from then on every item write maintains
// the index. A background goroutine then writes the entries of the items
// that existed before, in chunks of backfillChunk items in key order:
//
//   - each chunk runs under the table's ddl lock held for reading (so item
//     writes never wait for it, and DeleteTable or an UpdateTable deleting
//     the index waits for at most one chunk), and under the item locks of
//     the chunk's items, taken at once in lockKeys' fixed order;
//   - under those locks it re-reads every item, so it writes the entry of
//     the current item, never of a stale snapshot, and commits the chunk
//     before it lets go of them;
//   - when the table or the index is gone (deleted or replaced) it stops.
//
// When every item is done it persists the index as ACTIVE. The backfill is
// idempotent: Open restarts, from the beginning, every index still marked
// Backfilling (a crash or Close interrupted it).

// backfillChunk is the number of items per backfill batch.
var backfillChunk = 500

// backfills tracks the running backfill goroutines so Close can stop them.
type backfills struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
	// hook, when set (tests), is called after each committed chunk with
	// the index name and the chunk number (1-based); returning false stops
	// the backfill there, leaving the index Backfilling as a crash would.
	hook func(index string, chunk int) bool
}

func (bf *backfills) init() {
	bf.ctx, bf.cancel = context.WithCancel(context.Background())
}

// stop cancels the running backfills and waits for them.
func (bf *backfills) stop() {
	bf.mu.Lock()
	bf.closed = true
	bf.cancel()
	bf.mu.Unlock()
	bf.wg.Wait()
}

// startBackfill starts the backfill of index id of table name.
func (s *Store) startBackfill(name string, id uint64) {
	bf := &s.backfills
	bf.mu.Lock()
	defer bf.mu.Unlock()
	if bf.closed {
		return
	}
	bf.wg.Add(1)
	go func() {
		defer bf.wg.Done()
		if err := s.backfill(bf.ctx, name, id); err != nil && bf.ctx.Err() == nil {
			s.opts.Logger.Error("ddb: index backfill failed", "table", name, "index", id, "err", err)
		}
	}()
}

// resumeBackfills restarts the backfill of every index still marked
// Backfilling (Open).
func (s *Store) resumeBackfills() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, t := range s.tables {
		for _, im := range t.meta.Indexes {
			if im.Backfilling {
				s.startBackfill(name, im.ID)
			}
		}
	}
}

// backfillIndex returns the current table called name and its index id
// when that index is still backfilling, with the table's ddl lock held for
// reading; ok is false (nothing held) otherwise.
func (s *Store) backfillIndex(name string, id uint64) (t *table, ix *index, unlock func(), ok bool) {
	t, unlock, err := s.writeTable(name)
	if err != nil {
		return nil, nil, nil, false
	}
	for _, x := range t.indexes {
		if x.meta.ID == id && x.meta.Backfilling {
			return t, x, unlock, true
		}
	}
	unlock()
	return nil, nil, nil, false
}

// backfill writes the index entries of index id of table name for every
// item, then marks the index ACTIVE.
func (s *Store) backfill(ctx context.Context, name string, id uint64) error {
	var after []byte // last key done; nil: start of the table
	for chunk := 1; ; chunk++ {
		if ctx.Err() != nil {
			return nil
		}
		done, last, err := s.backfillChunk(name, id, after)
		if err != nil || last == nil && !done {
			return err // error, or the index or table is gone
		}
		if done {
			return s.finishBackfill(name, id)
		}
		after = last
		if h := s.backfills.hook; h != nil && !h(nameOfIndex(s, name, id), chunk) {
			return nil
		}
	}
}

func nameOfIndex(s *Store, name string, id uint64) string {
	t, err := s.table(name)
	if err != nil {
		return ""
	}
	for _, ix := range t.indexes {
		if ix.meta.ID == id {
			return ix.meta.Name
		}
	}
	return ""
}

// backfillChunk backfills up to backfillChunk items after key after. It
// returns the last key it did, and done when no items remain; last is nil
// and done false when the index or table is gone.
func (s *Store) backfillChunk(name string, id uint64, after []byte) (done bool, last []byte, err error) {
	t, ix, unlock, ok := s.backfillIndex(name, id)
	if !ok {
		return false, nil, nil
	}
	defer unlock()
	lower := t.prefix
	if after != nil {
		if !bytes.HasPrefix(after, t.prefix) {
			return false, nil, nil // the table was replaced by another of the same name
		}
		lower = append(append([]byte(nil), after...), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixSuccessor(t.prefix)})
	if err != nil {
		return false, nil, err
	}
	var keys [][]byte
	for it.First(); it.Valid() && len(keys) < backfillChunk; it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	more := it.Valid()
	if err := it.Close(); err != nil {
		return false, nil, err
	}
	if len(keys) == 0 {
		return true, after, nil
	}
	release := s.lockKeys(keys...)
	defer release()
	b := s.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		item, err := s.getItem(k) // the current item, not the iterator's
		if isCorrupt(err) {
			// No index entry can be made for it; the rest of the table is
			// indexed (corrupt.go).
			s.opts.Logger.Error("ddb: index backfill skips a stored item that cannot be decoded", "index", ix.meta.Name, "err", t.named(err).Error())
			continue
		}
		if err != nil {
			return false, nil, err
		}
		if item == nil {
			continue // deleted meanwhile (its write removed any entry)
		}
		if ek := ix.entryKey(t, item); ek != nil {
			b.Set(ek, encodeItem(ix.project(t, item)), nil)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return false, nil, err
	}
	return !more, keys[len(keys)-1], nil
}

// finishBackfill persists index id of table name as ACTIVE (synced, which
// also makes the unsynced chunks before it durable).
func (s *Store) finishBackfill(name string, id uint64) error {
	old, unlock, ok := s.lockDDL(name)
	if !ok {
		return nil
	}
	defer unlock()
	m := *old.meta
	m.Indexes = append([]*indexMeta(nil), old.meta.Indexes...)
	found := false
	for i, im := range m.Indexes {
		if im.ID == id && im.Backfilling {
			cp := *im
			cp.Backfilling = false
			cp.Status = "ACTIVE"
			m.Indexes[i] = &cp
			found = true
		}
	}
	if !found {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.putMeta(b, &m); err != nil {
		return err
	}
	if err := b.Commit(s.wo); err != nil {
		return err
	}
	s.tables[m.Name] = newTable(&m)
	return nil
}
