package ddb

import (
	"sync"
	"sync/atomic"
)

// StreamChanges returns a channel that is closed once GetRecords on the
// stream arn may return a record it would not have returned at the time of
// the call: a change of the stream's table committed afterwards has become
// readable. A reader in this process calls it before each GetRecords and,
// when the read is empty, waits on the channel instead of polling an idle
// stream. The channel may also close without a new record (a write of
// another table was in flight at the call); the reader then reads nothing
// and waits again. For an arn this store does not know it returns nil,
// which never receives: the reader falls back to its poll interval.
func (s *Store) StreamChanges(arn string) <-chan struct{} {
	ref, err := s.findStream(arn)
	if err != nil {
		return nil
	}
	return s.wake.wait(ref.t.meta.ID, &s.seq)
}

// streamWaker wakes the in-process readers of streams waiting on a table's
// changes. A commit costs one atomic load while nobody waits.
type streamWaker struct {
	waiting atomic.Int32 // len(tables)
	mu      sync.Mutex
	tables  map[uint64]*tableWait // by table id
}

// tableWait is the readers of one table's changes.
type tableWait struct {
	ch chan struct{}
	// pending is the highest sequence number of a committed change of the
	// table, or one possibly of it, not yet at or below the watermark
	// (0: none); ch closes once the watermark reaches it.
	pending uint64
}

// wait returns the channel of table id's next readable change. A change
// committed before the call but still above the watermark may belong to
// the table without the waker having seen it (nobody waited then), so the
// last sequence number issued is pending until the watermark passes it.
func (w *streamWaker) wait(id uint64, seq *seqTracker) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.tables[id]
	if tw == nil {
		if w.tables == nil {
			w.tables = map[uint64]*tableWait{}
		}
		tw = &tableWait{ch: make(chan struct{})}
		w.tables[id] = tw
		w.waiting.Add(1)
	}
	if last := seq.lastIssued(); last > seq.stable() {
		tw.pending = max(tw.pending, last)
	}
	return tw.ch
}

// settled is called after a batch's sequence numbers were committed
// (committed) or abandoned: tables[i] is the table of seqs[i]. The
// watermark may have moved either way, so every pending table is checked.
func (w *streamWaker) settled(tables, seqs []uint64, committed bool, seq *seqTracker) {
	if w.waiting.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if committed {
		for i, id := range tables {
			if tw := w.tables[id]; tw != nil {
				tw.pending = max(tw.pending, seqs[i])
			}
		}
	}
	var stable uint64
	read := false
	for id, tw := range w.tables {
		if tw.pending == 0 {
			continue
		}
		if !read {
			stable, read = seq.stable(), true
		}
		if tw.pending <= stable {
			close(tw.ch)
			delete(w.tables, id)
			w.waiting.Add(-1)
		}
	}
}
