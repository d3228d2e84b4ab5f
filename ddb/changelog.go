package ddb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble"

	"github.com/quarrydb/quarry/ddb/attr"
)

// The change log records every change of an item of a table that has a
// stream (or, from backups, point-in-time recovery) enabled. A record is
// written in the same atomic batch as the change it describes, so after any
// crash the table and its log agree. Streams serve the log; point-in-time
// recovery replays it.
//
// Keys: r<table id><seq> → changeRecord (JSON). Sequence numbers are global
// and strictly increasing in allocation order; readers only see records up
// to the stable watermark (below every sequence number still being
// committed), so a reader never skips a record that commits late.
//
// Invariants the streams (streams.go) and point-in-time recovery (pitr.go)
// rely on:
//
//   - Same batch: every change of an item of a logged table stages its
//     record (stageLog, or stageCorruptRemoval for an undecodable item) in
//     the wbatch that makes the change; nothing writes a logged table's
//     item outside a wbatch.
//   - Per-item order: a record's sequence number is allocated while the
//     writer holds the item's stripe lock (lockKeys), which it keeps until
//     the batch commits, so the records of one item are in the order of
//     its changes (changesAfter takes the first record after a time as the
//     item's image at that time).
//   - Every allocated number is released exactly once, by commit (written)
//     or release (abandoned; the record never existed): a number never
//     released holds the watermark, and every stream reader, forever. So
//     every wbatch is released on every path (defer b.release(s)).
//   - Below the watermark nothing appears later: stable() is below the
//     smallest number in flight, so a reader that has read up to it has
//     seen every record there will ever be up to it
//     (TestSeqTrackerWatermark). After a restart nothing is in flight and
//     the watermark is the highest recorded number (loadSeq).

const nsLog = 'r'

// changeRecord is one change of one item.
type changeRecord struct {
	Seq uint64 `json:"seq"`
	// TimeMillis is when the change was committed (Unix milliseconds).
	TimeMillis int64 `json:"t"`
	// Event is INSERT, MODIFY or REMOVE.
	Event string `json:"e"`
	// StreamLabel names the stream the record belongs to ("" when the
	// table had no enabled stream); ViewType is that stream's view type.
	StreamLabel string    `json:"sl,omitempty"`
	ViewType    string    `json:"vt,omitempty"`
	Keys        attr.Item `json:"k"`
	Old         attr.Item `json:"o,omitempty"`
	New         attr.Item `json:"n,omitempty"`
	// ByTTL marks deletions made by the TTL sweeper.
	ByTTL bool `json:"ttl,omitempty"`
}

func logPrefix(tableID uint64) []byte { return idPrefix(nsLog, tableID) }

func logKey(tableID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(logPrefix(tableID), seq)
}

// seqTracker allocates sequence numbers and tracks those not yet committed.
type seqTracker struct {
	mu       sync.Mutex
	last     uint64
	inflight map[uint64]struct{}
}

func (s *seqTracker) next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last++
	if s.inflight == nil {
		s.inflight = map[uint64]struct{}{}
	}
	s.inflight[s.last] = struct{}{}
	return s.last
}

func (s *seqTracker) done(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	s.mu.Lock()
	for _, q := range seqs {
		delete(s.inflight, q)
	}
	s.mu.Unlock()
}

// stable returns the highest sequence number below which every record is
// committed (or abandoned).
func (s *seqTracker) stable() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.last
	for q := range s.inflight {
		if q-1 < st {
			st = q - 1
		}
	}
	return st
}

// loadSeq initialises the tracker from the newest record of every table.
func (s *Store) loadSeq() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsLog}, UpperBound: []byte{nsLog + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for _, t := range s.tables {
		p := logPrefix(t.meta.ID)
		if it.SeekLT(prefixSuccessor(p)) && len(it.Key()) == len(p)+8 && string(it.Key()[:len(p)]) == string(p) {
			if q := binary.BigEndian.Uint64(it.Key()[len(p):]); q > s.seq.last {
				s.seq.last = q
			}
		}
	}
	// Records of deleted tables may remain until swept; stay above them too.
	if it.Last() && len(it.Key()) == 17 {
		if q := binary.BigEndian.Uint64(it.Key()[9:]); q > s.seq.last {
			s.seq.last = q
		}
	}
	return it.Error()
}

// wbatch is a write batch with the sequence numbers it holds and, for
// each, the id of the table whose change record it numbers.
type wbatch struct {
	*pebble.Batch
	seqs   []uint64
	tables []uint64
}

// numbered records that the batch holds change record seq of table id.
func (b *wbatch) numbered(id, seq uint64) {
	b.seqs = append(b.seqs, seq)
	b.tables = append(b.tables, id)
}

func (s *Store) newBatch() *wbatch { return &wbatch{Batch: s.db.NewBatch()} }

// commit commits the batch durably and releases its sequence numbers.
func (s *Store) commit(b *wbatch) error {
	err := b.Commit(s.wo)
	s.seq.done(b.seqs)
	s.wake.settled(b.tables, b.seqs, err == nil, &s.seq)
	b.seqs, b.tables = nil, nil
	return err
}

// release closes the batch; sequence numbers of an uncommitted batch are
// released (the watermark moves past them).
func (b *wbatch) release(s *Store) {
	if len(b.seqs) > 0 {
		s.seq.done(b.seqs)
		s.wake.settled(nil, nil, false, &s.seq)
	}
	b.Close()
}

// logged reports whether changes of t are recorded in the change log.
func (t *table) logged() bool { return t.meta.Stream != nil || t.meta.PITR }

// stageLog adds the change record of one item change to b.
func (s *Store) stageLog(b *wbatch, t *table, old, new attr.Item, byTTL bool) {
	if !t.logged() || (old == nil && new == nil) {
		return
	}
	r := changeRecord{TimeMillis: s.opts.Now().UnixMilli(), Old: old, New: new, ByTTL: byTTL}
	switch {
	case old == nil:
		r.Event = "INSERT"
		r.Keys = t.keyOf(new)
	case new == nil:
		r.Event = "REMOVE"
		r.Keys = t.keyOf(old)
	default:
		r.Event = "MODIFY"
		r.Keys = t.keyOf(new)
	}
	if t.meta.Stream != nil {
		r.StreamLabel = t.meta.StreamLabel
		r.ViewType = t.meta.Stream.StreamViewType
	}
	r.Seq = s.seq.next()
	b.numbered(t.meta.ID, r.Seq)
	v, err := json.Marshal(&r)
	if err != nil {
		panic(fmt.Sprintf("ddb: encode change record: %v", err)) // items always marshal
	}
	b.Set(logKey(t.meta.ID, r.Seq), v, nil)
}
