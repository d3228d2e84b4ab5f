package ddb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

// A stored item that cannot be decoded (damaged on disk, or written by a
// defective version) must not make its table unusable. DynamoDB has no such
// case; the store:
//
//   - answers a read of that item (GetItem, BatchGetItem, TransactGetItems,
//     and writes that need its old image: UpdateItem, conditional writes)
//     with an InternalServerError whose message names the table and the key;
//   - skips it in Query and Scan pages (and in index reads that fetch it),
//     logging an error naming the key and counting it in
//     Metrics.CorruptItems, so that the rest of the table stays readable;
//   - skips a change-log record that cannot be decoded, logged with its
//     sequence number and counted in Metrics.CorruptItems, when it
//     restores a table to a point in time (the rest of the log is applied;
//     pitr.go's changesAfter says what the skipped record costs);
//   - skips it, logged and counted the same way, when it restores a table
//     (RestoreTableFromBackup, RestoreTableToPointInTime: the new table
//     has every other item, its indexes complete) and when enabling TTL
//     indexes the table's expiry times; CreateBackup copies the stored
//     bytes as they are, undecoded, so a backup keeps the damaged item
//     and a restore of it skips the item;
//   - lets an unconditional DeleteItem, PutItem or BatchWriteItem replace or
//     remove it: what can be found by key goes with it (its index entries
//     and TTL entry), and a stream/PITR REMOVE record carries its key only.

// CorruptItemError is a stored item that cannot be decoded. It wraps the
// decoding error (attr.ErrCorrupt).
type CorruptItemError struct {
	// Table names the item's table ("" when unknown).
	Table string
	// Key is the item's key attributes, nil when they could not be
	// decoded from the storage key either.
	Key attr.Item
	// StorageKey is the item's key in the store.
	StorageKey []byte
	// Err is the decoding error.
	Err error
}

func (e *CorruptItemError) Error() string {
	key := strconv.Quote(string(e.StorageKey))
	if e.Key != nil {
		if b, err := json.Marshal(e.Key); err == nil {
			key = string(b)
		}
	}
	table := ""
	if e.Table != "" {
		table = " in table " + e.Table
	}
	return fmt.Sprintf("the stored item with key %s%s cannot be decoded: %v", key, table, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptItemError) Unwrap() error { return e.Err }

// corruptAt wraps err, an error decoding the item stored under key.
func corruptAt(key []byte, err error) error {
	var ce *CorruptItemError
	if errors.As(err, &ce) {
		return err
	}
	return &CorruptItemError{StorageKey: append([]byte(nil), key...), Err: err}
}

// named fills in the table and key of a CorruptItemError in err (the item
// being one of t's), and returns err.
func (t *table) named(err error) error {
	var ce *CorruptItemError
	if errors.As(err, &ce) && ce.Table == "" {
		ce.Table = t.meta.Name
		if k, ok := t.keyFromStorage(ce.StorageKey); ok {
			ce.Key = k
		}
	}
	return err
}

// isCorrupt reports whether err is a stored item that cannot be decoded.
func isCorrupt(err error) bool {
	var ce *CorruptItemError
	return errors.As(err, &ce)
}

// decodeKeys decodes the key values of kinds kds from b, which they must
// fill exactly.
func decodeKeys(b []byte, kds []keyDef, into attr.Item) bool {
	for _, kd := range kds {
		v, rest, err := attr.DecodeKey(b, kd.Kind)
		if err != nil {
			return false
		}
		into[kd.Name] = v
		b = rest
	}
	return len(b) == 0
}

// keyFromStorage decodes the key attributes from the storage key of one of
// t's items.
func (t *table) keyFromStorage(k []byte) (attr.Item, bool) {
	if len(k) < len(t.prefix)+4 || !bytes.HasPrefix(k, t.prefix) {
		return nil, false
	}
	key := attr.Item{}
	if !decodeKeys(k[len(t.prefix)+4:], t.keyDefs(), key) {
		return nil, false
	}
	return key, true
}

// keysFromEntry decodes the index and table key attributes from the key of
// one of ix's entries.
func (ix *index) keysFromEntry(t *table, k []byte) (attr.Item, bool) {
	if len(k) < len(ix.prefix)+4 || !bytes.HasPrefix(k, ix.prefix) {
		return nil, false
	}
	kds := []keyDef{ix.hash}
	if ix.rng != nil {
		kds = append(kds, *ix.rng)
	}
	kds = append(kds, t.keyDefs()...)
	key := attr.Item{}
	if !decodeKeys(k[len(ix.prefix)+4:], kds, key) {
		return nil, false
	}
	return key, true
}

// skipCorrupt logs and counts an item of a Query or Scan page that cannot be
// decoded (k is its storage key or index entry key), which the page leaves
// out.
func (s *Store) skipCorrupt(pl *readPlan, k []byte, err error) {
	s.stats.corruptItems.Add(1)
	ce := &CorruptItemError{Table: pl.t.meta.Name, StorageKey: append([]byte(nil), k...), Err: err}
	index := ""
	if pl.ix != nil {
		index = pl.ix.meta.Name
		ce.Key, _ = pl.ix.keysFromEntry(pl.t, k)
	} else {
		ce.Key, _ = pl.t.keyFromStorage(k)
	}
	s.opts.Logger.Error("ddb: skipping a stored item that cannot be decoded", "table", pl.t.meta.Name, "index", index, "err", ce.Error())
}

// skipCorruptItem logs and counts an item of t that cannot be decoded (k
// is its storage key), which op (the operation, for the log) leaves out.
func (s *Store) skipCorruptItem(op string, t *table, k []byte, err error) {
	s.stats.corruptItems.Add(1)
	ce := &CorruptItemError{Table: t.meta.Name, StorageKey: append([]byte(nil), k...), Err: err}
	ce.Key, _ = t.keyFromStorage(k)
	s.opts.Logger.Error("ddb: skipping a stored item that cannot be decoded", "table", t.meta.Name, "op", op, "err", ce.Error())
}

// skipCorruptLogRecord logs and counts a change-log record of t that
// cannot be decoded (k is its storage key), which a point-in-time restore
// leaves out.
func (s *Store) skipCorruptLogRecord(t *table, k []byte, err error) {
	s.stats.corruptItems.Add(1)
	seq := ""
	if p := logPrefix(t.meta.ID); len(k) == len(p)+8 {
		seq = strconv.FormatUint(binary.BigEndian.Uint64(k[len(p):]), 10)
	}
	s.opts.Logger.Error("ddb: skipping a change-log record that cannot be decoded", "table", t.meta.Name, "op", "RestoreTableToPointInTime", "seq", seq, "err", err)
}

// stageCorruptRemoval stages the removal of what belongs to the undecodable
// item stored under key, beyond the item itself: its index entries and its
// TTL entry, found by key, and a REMOVE change record carrying its key only
// (its old image is lost).
func (s *Store) stageCorruptRemoval(b *wbatch, t *table, key []byte) error {
	keyAttrs, ok := t.keyFromStorage(key)
	if !ok {
		return fmt.Errorf("ddb: undecodable storage key %q", key)
	}
	for _, ix := range t.indexes {
		if err := s.deleteMatching(b, ix.prefix, func(k []byte) bool {
			e, ok := ix.keysFromEntry(t, k)
			if !ok {
				return false
			}
			for _, kd := range t.keyDefs() {
				if !attr.Equal(e[kd.Name], keyAttrs[kd.Name]) {
					return false
				}
			}
			return true
		}); err != nil {
			return err
		}
	}
	if t.meta.TTLAttribute != "" {
		ep := expiryPrefix(t.meta.ID)
		if err := s.deleteMatching(b, ep, func(k []byte) bool {
			return len(k) == len(ep)+8+len(key) && bytes.Equal(k[len(ep)+8:], key)
		}); err != nil {
			return err
		}
	}
	if t.logged() {
		r := changeRecord{TimeMillis: s.opts.Now().UnixMilli(), Event: "REMOVE", Keys: keyAttrs}
		if t.meta.Stream != nil {
			r.StreamLabel = t.meta.StreamLabel
			r.ViewType = t.meta.Stream.StreamViewType
		}
		r.Seq = s.seq.next()
		b.numbered(t.meta.ID, r.Seq)
		v, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		b.Set(logKey(t.meta.ID, r.Seq), v, nil)
	}
	return nil
}

// deleteMatching stages the deletion of every key under prefix that match
// accepts (a full scan of the prefix: for the rare undecodable item only).
func (s *Store) deleteMatching(b *wbatch, prefix []byte, match func(k []byte) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixSuccessor(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if match(it.Key()) {
			if err := b.Delete(append([]byte(nil), it.Key()...), nil); err != nil {
				it.Close()
				return err
			}
		}
	}
	return it.Close()
}
