package scheduler

import (
	"context"
	"sync"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// recorder records runs in groups (group commit): a run to record while
// a group is being written waits for that write and goes in the next
// group, with every run that came meanwhile, written by one of them in
// one store.CompleteAll (one commit). A lone run is written at once, so
// recording adds no wait when runs are sparse, and under load many runs
// share one store call and one fsync.
type recorder struct {
	st    *store.Store
	owner string
	// max is the most runs one group takes.
	max int

	mu sync.Mutex
	// queue holds the runs waiting for a group, oldest first; writing is
	// whether a group is being written. The queue is empty whenever no
	// group is being written.
	queue   []*pendingRecord
	writing bool
}

// pendingRecord is one run waiting in a recorder. wake is closed when it
// was recorded (err is its outcome) or when it is to write the next group
// itself (lead).
type pendingRecord struct {
	rec  store.Record
	err  error
	lead bool
	wake chan struct{}
}

// maxGroup is the most runs a recorder writes in one group: 25 runs of at
// most four items each fill one transaction.
const maxGroup = store.MaxTransactItems / 4

func newRecorder(st *store.Store, owner string) *recorder {
	return &recorder{st: st, owner: owner, max: maxGroup}
}

// record records check id's run o, as store.Complete does, and returns
// its outcome; several concurrent calls share writes. The caller whose run
// heads the queue writes the group, with its own ctx.
func (r *recorder) record(ctx context.Context, id string, o store.Outcome) error {
	p := &pendingRecord{rec: store.Record{ID: id, Outcome: o}, wake: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, p)
	if r.writing {
		r.mu.Unlock()
		<-p.wake
		if !p.lead {
			return p.err
		}
		r.mu.Lock()
	}
	r.writing = true
	// p heads the queue: it was empty, or p was handed the lead as its
	// first.
	n := min(len(r.queue), r.max)
	group := make([]*pendingRecord, n)
	copy(group, r.queue)
	r.queue = append(r.queue[:0], r.queue[n:]...)
	r.mu.Unlock()

	recs := make([]store.Record, n)
	for i, g := range group {
		recs[i] = g.rec
	}
	errs := r.st.CompleteAll(ctx, r.owner, recs)

	r.mu.Lock()
	var next *pendingRecord
	if len(r.queue) > 0 {
		next = r.queue[0]
		next.lead = true
	} else {
		r.writing = false
	}
	r.mu.Unlock()
	for i, g := range group {
		g.err = errs[i]
		if g != p {
			close(g.wake)
		}
	}
	if next != nil {
		close(next.wake)
	}
	return p.err
}
