package scheduler

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
)

// TestRecorderGroupsRunsUnderLoad: a run recorded while nothing else is
// being written goes to the store at once, alone; the runs that come
// while that write is in flight wait for it and are then written
// together, in one transaction, each recorded.
func TestRecorderGroupsRunsUnderLoad(t *testing.T) {
	ctx := context.Background()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The first transaction waits in the client until released, so that
	// the other runs come while it is in flight.
	entered, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	var transactions atomic.Int64
	gate := middleware.InitializeMiddlewareFunc("test.gate", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		if armed.Load() && middleware.GetOperationName(ctx) == "TransactWriteItems" && transactions.Add(1) == 1 {
			close(entered)
			<-release
		}
		return next.HandleInitialize(ctx, in)
	})
	client := ddb.NewClient(db, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error { return st.Initialize.Add(gate, middleware.After) })
	})
	names, err := tables.EnsureTables(ctx, client, tables.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(client, names, &store.Options{Limits: map[string]int{store.TierPro: 100}})
	u, _, err := st.CreateUser(ctx, "ops@example.com", store.TierPro)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	const runs = 6
	var ids []string
	for range runs {
		c, err := st.CreateCheck(ctx, store.Check{UserID: u.ID, URL: "http://127.0.0.1:1/", Type: "AVAILABILITY", DelayMs: 60000}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, c.ID, "a", t0, t0, time.Minute); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	out := store.Outcome{Result: map[string]any{"status": "UP"}, At: t0, AlertState: "ok", Retention: time.Hour}

	armed.Store(true)
	r := newRecorder(st, "a", -1)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = r.do(ctx, store.Record{ID: ids[0], Outcome: out}) })
	<-entered
	var returned atomic.Int64
	for i := 1; i < runs; i++ {
		wg.Go(func() {
			errs[i] = r.do(ctx, store.Record{ID: ids[i], Outcome: out})
			returned.Add(1)
		})
	}
	// Until the other runs wait behind the first write (or, were they
	// written one by one, have returned).
	for {
		r.mu.Lock()
		queued := len(r.queue)
		r.mu.Unlock()
		if queued == runs-1 || returned.Load() == runs-1 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()

	if n := transactions.Load(); n != 2 {
		t.Errorf("%d runs recorded in %d transactions, want 2 (the first alone, then the rest together)", runs, n)
	}
	for i, id := range ids {
		if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
		}
		c, err := st.GetCheck(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		h, err := st.Results(ctx, u.ID, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if c.LastResult["status"] != "UP" || c.LeaseOwner != "" || len(h) != 1 {
			t.Errorf("run %d: lastResult %v lease %q history %d, want UP, none, 1", i, c.LastResult, c.LeaseOwner, len(h))
		}
	}
	if r.writing || len(r.queue) != 0 {
		t.Errorf("recorder left writing %v with %d queued", r.writing, len(r.queue))
	}
}

// TestBatcherGathersUnderLoad: once calls have had to wait for a write
// (load), calls that come within gather of the previous write's start,
// even ones that would each find no write in flight, wait for the rest of
// gather and are written as one group; without load a call is written
// alone at once.
func TestBatcherGathersUnderLoad(t *testing.T) {
	w := newGroupLog(true)
	b := &batcher[int, int]{max: 100, gather: 500 * time.Millisecond, write: func(_ context.Context, in []int) []int {
		w.write(len(in))
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = 2 * v
		}
		return out
	}}
	ctx := context.Background()
	call := func(wg *sync.WaitGroup, v int) {
		wg.Go(func() {
			if got := b.do(ctx, v); got != 2*v {
				t.Errorf("call %d: %d, want %d", v, got, 2*v)
			}
		})
	}
	// Load: two calls wait for the first write.
	var wg sync.WaitGroup
	call(&wg, 1)
	<-w.entered
	call(&wg, 2)
	call(&wg, 3)
	waitQueued(b, 2)
	close(w.release)
	wg.Wait()
	// Calls that come after, each of which could be written alone.
	for i := range 5 {
		call(&wg, 10+i)
	}
	wg.Wait()
	if groups := w.sizes(); len(groups) != 3 || groups[0] != 1 || groups[1] != 2 || groups[2] != 5 {
		t.Errorf("groups written %v, want [1 2 5]", groups)
	}
}

// TestRecorderWaitsForOthers: with a record wait (the default), calls that
// come within it of the previous write's start share one write even
// without load; the first call after a quiet spell is written alone.
func TestRecorderWaitsForOthers(t *testing.T) {
	w := newGroupLog(false)
	b := &batcher[int, int]{max: 100, gather: 500 * time.Millisecond, always: true, write: func(_ context.Context, in []int) []int {
		w.write(len(in))
		return in
	}}
	ctx := context.Background()
	b.do(ctx, 1)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { b.do(ctx, 10+i) })
	}
	wg.Wait()
	if groups := w.sizes(); len(groups) != 2 || groups[0] != 1 || groups[1] != 3 {
		t.Errorf("groups written %v, want [1 3]", groups)
	}
}

// TestBatcherFullGroupDoesNotWait: calls that fill a group are written
// at once, whatever the gather: the wait is for calls to join a group,
// and a full one has no room, so a steady rate above a group per gather
// (10,000 checks a minute record 167 runs a second, against 25 runs per
// 250 ms) is written as fast as the store takes it rather than queued.
func TestBatcherFullGroupDoesNotWait(t *testing.T) {
	w := newGroupLog(true)
	b := &batcher[int, int]{max: 2, gather: time.Hour, always: true, write: func(_ context.Context, in []int) []int {
		w.write(len(in))
		return in
	}}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() { b.do(ctx, 0) })
	<-w.entered
	for i := range 4 {
		wg.Go(func() { b.do(ctx, 1+i) })
	}
	waitQueued(b, 4)
	close(w.release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("full groups waited for the gather (an hour)")
	}
	if groups := w.sizes(); len(groups) != 3 || groups[1] != 2 || groups[2] != 2 {
		t.Errorf("groups written %v, want [1 2 2]", groups)
	}
}

// waitQueued returns once n calls wait in b's queue.
func waitQueued[In, Out any](b *batcher[In, Out], n int) {
	for {
		b.mu.Lock()
		queued := len(b.queue)
		b.mu.Unlock()
		if queued == n {
			return
		}
		runtime.Gosched()
	}
}

// groupLog records the size of each group a batcher writes; when hold is
// set, the first write closes entered and waits until release is closed,
// so that the test can queue calls behind it.
type groupLog struct {
	mu               sync.Mutex
	groups           []int
	hold             bool
	entered, release chan struct{}
}

func newGroupLog(hold bool) *groupLog {
	return &groupLog{hold: hold, entered: make(chan struct{}), release: make(chan struct{})}
}

// write records a group of n; called from the batcher's write.
func (g *groupLog) write(n int) {
	g.mu.Lock()
	g.groups = append(g.groups, n)
	first := len(g.groups) == 1
	g.mu.Unlock()
	if first && g.hold {
		close(g.entered)
		<-g.release
	}
}

// sizes returns the sizes of the groups written so far.
func (g *groupLog) sizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.groups...)
}
