package ddb

import (
	"encoding/binary"
	"encoding/json"
	"sort"
	"time"

	"github.com/cockroachdb/pebble"
)

// Streams of deleted tables.
//
// As on DynamoDB, deleting a table disables its stream and the stream stays
// readable for 24 hours afterwards (ListStreams, DescribeStream,
// GetShardIterator, GetRecords), like the stream of a table that disabled
// it. DeleteTable then keeps the table's change log and moves its metadata
// to
//
//	g<table id, 8 bytes BE> → tableMeta JSON, with DeletedMillis set
//
// in the same batch that deletes the items; trimStreams deletes the record
// and the log once none of the table's streams is visible. A table without
// a visible stream is deleted whole: its change log goes in the batch that
// deletes its items.

const nsRetired = 'g'

func retiredKey(id uint64) []byte { return binary.BigEndian.AppendUint64([]byte{nsRetired}, id) }

// retiredMeta returns m as of its deletion at now: its enabled stream
// disabled.
func retiredMeta(m *tableMeta, now time.Time) *tableMeta {
	cp := *m
	cp.Streams = append([]streamMeta(nil), tableStreams(m)...)
	for i := range cp.Streams {
		if m.Stream != nil && cp.Streams[i].Label == m.StreamLabel {
			cp.Streams[i].DisabledMillis = now.UnixMilli()
			if cp.Streams[i].ViewType == "" {
				cp.Streams[i].ViewType = m.Stream.StreamViewType
			}
		}
	}
	cp.Stream = nil
	cp.DeletedMillis = now.UnixMilli()
	return &cp
}

// stageRetire adds to b the record of t's deletion at now, keeping its
// change log, and returns the retired table.
func stageRetire(b *pebble.Batch, t *table, now time.Time) (*table, error) {
	m := retiredMeta(t.meta, now)
	v, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := b.Set(retiredKey(m.ID), v, nil); err != nil {
		return nil, err
	}
	return newTable(m), nil
}

// loadRetired reads the deleted tables whose streams are kept.
func (s *Store) loadRetired() error {
	s.retired = map[uint64]*table{}
	return s.readTables(nsRetired, func(t *table) { s.retired[t.meta.ID] = t })
}

// retiredTables returns the deleted tables whose streams are kept, by id.
func (s *Store) retiredTables() []*table {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*table, 0, len(s.retired))
	for _, t := range s.retired {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.ID < out[j].meta.ID })
	return out
}

// retiredStream returns the visible stream label of a deleted table called
// name (with id, unless 0), or nil.
func (s *Store) retiredStream(name, label string, id uint64, now time.Time) *streamRef {
	for _, t := range s.retiredTables() {
		if t.meta.Name == name && (id == 0 || t.meta.ID == id) {
			if ref := s.streamOf(t, label, now); ref != nil {
				return ref
			}
		}
	}
	return nil
}

// dropRetired deletes the deleted tables none of whose streams is visible
// at now, with their change logs.
func (s *Store) dropRetired(now time.Time) error {
	for _, t := range s.retiredTables() {
		if len(visibleStreams(t.meta, now)) > 0 {
			continue
		}
		b := s.db.NewBatch()
		lp := logPrefix(t.meta.ID)
		b.DeleteRange(lp, prefixSuccessor(lp), nil)
		b.Delete(retiredKey(t.meta.ID), nil)
		err := b.Commit(s.wo)
		b.Close()
		if err != nil {
			return err
		}
		s.mu.Lock()
		delete(s.retired, t.meta.ID)
		s.mu.Unlock()
	}
	return nil
}
