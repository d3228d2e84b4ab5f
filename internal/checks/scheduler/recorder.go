package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// batcher groups concurrent calls of one store operation (group commit):
// a call made while a group is being written waits for that write and
// goes in the next group, with every call that came meanwhile, written
// by one of them in one call of write. Under load (the previous write
// had calls wait for it, or was of several), a group that would start
// less than gather after the previous one started waits for the rest of
// gather first, so that calls a few milliseconds apart share writes too:
// at most one write per gather while the load lasts, unless the calls
// waiting fill a group, which is written at once. Otherwise a call is
// written at once, so grouping adds no wait when calls are sparse.
type batcher[In, Out any] struct {
	// write does the calls of one group and returns their outcomes, in
	// order.
	write func(ctx context.Context, in []In) []Out
	// max is the most calls one group takes.
	max int
	// gather is the shortest time between the starts of two writes.
	gather time.Duration
	// always, when set, makes every group wait for the rest of gather
	// after the previous write's start, load or not.
	always bool

	mu sync.Mutex
	// queue holds the calls waiting for a group, oldest first; writing is
	// whether a group is being written. The queue is empty whenever no
	// group is being written.
	queue   []*pending[In, Out]
	writing bool
	// started is when the last write started; loaded is whether calls
	// waited for it or it was of several.
	started time.Time
	loaded  bool
}

// pending is one call waiting in a batcher. wake is closed when it was
// done (out is its outcome) or when it is to write the next group itself
// (lead).
type pending[In, Out any] struct {
	in   In
	out  Out
	lead bool
	wake chan struct{}
}

// do makes call in, grouped with the concurrent ones, and returns its
// outcome. The caller whose call heads the queue writes the group, with
// its own ctx.
func (b *batcher[In, Out]) do(ctx context.Context, in In) Out {
	p := &pending[In, Out]{in: in, wake: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if b.writing {
		b.mu.Unlock()
		<-p.wake
		if !p.lead {
			return p.out
		}
		b.mu.Lock()
	}
	b.writing = true
	if wait := b.gather - time.Since(b.started); (b.loaded || b.always) && len(b.queue) < b.max && wait > 0 && wait <= b.gather {
		// Under load: the calls of the next wait join this group. A full
		// group has no room for them and goes at once, so that a steady
		// rate above max calls per gather is not queued behind the waits.
		b.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		b.mu.Lock()
	}
	b.started = time.Now()
	// p heads the queue: it was empty, or p was handed the lead as its
	// first.
	n := min(len(b.queue), b.max)
	group := make([]*pending[In, Out], n)
	copy(group, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.mu.Unlock()

	ins := make([]In, n)
	for i, g := range group {
		ins[i] = g.in
	}
	outs := b.write(ctx, ins)

	b.mu.Lock()
	b.loaded = n > 1 || len(b.queue) > 0
	var next *pending[In, Out]
	if len(b.queue) > 0 {
		next = b.queue[0]
		next.lead = true
	} else {
		b.writing = false
	}
	b.mu.Unlock()
	for i, g := range group {
		g.out = outs[i]
		if g != p {
			close(g.wake)
		}
	}
	if next != nil {
		close(next.wake)
	}
	return p.out
}

// maxGroup is the most runs a recorder writes in one group: 25 runs of at
// most four items each fill one transaction.
const maxGroup = store.MaxTransactItems / 4

// recordGather is a recorder's gather under load when Options.RecordWait
// is negative.
const recordGather = 20 * time.Millisecond

// DefaultRecordWait is Options.RecordWait's default: runs a second apart
// or less (60 checks a minute and more) share record writes, and a
// result is seen at most 250 ms after its run.
const DefaultRecordWait = 250 * time.Millisecond

// recorder records runs in groups (store.CompleteAll).
type recorder = batcher[store.Record, error]

// newRecorder returns a recorder whose groups wait for wait after the
// previous write's start (negative: recordGather, under load only).
func newRecorder(st *store.Store, owner string, wait time.Duration) *recorder {
	r := &recorder{max: maxGroup, gather: wait, always: true, write: func(ctx context.Context, rs []store.Record) []error {
		return st.CompleteAll(ctx, owner, rs)
	}}
	if wait < 0 {
		r.gather, r.always = recordGather, false
	}
	return r
}

// record records check id's run o, as store.Complete does, and returns
// its outcome; concurrent calls share writes.
func (s *Scheduler) record(ctx context.Context, id string, o store.Outcome) error {
	return s.rec.do(ctx, store.Record{ID: id, Outcome: o})
}

// maxClaims is the most claims a claimer makes in one group (one
// transaction item each, read back by one BatchGetItem of at most 100
// keys).
const maxClaims = 50

// claimGather is a claimer's gather: under load a claim waits at most this
// long, which the derived lookahead (three times the slowest recent
// claim) covers, so that runs still start at their due times.
const claimGather = 10 * time.Millisecond

// claimer makes claims in groups (store.ClaimAll).
type claimer = batcher[store.ClaimRequest, store.Claimed]

func newClaimer(st *store.Store, owner string) *claimer {
	return &claimer{max: maxClaims, gather: claimGather, write: func(ctx context.Context, rs []store.ClaimRequest) []store.Claimed {
		return st.ClaimAll(ctx, owner, rs)
	}}
}
