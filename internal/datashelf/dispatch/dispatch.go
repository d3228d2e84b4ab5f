// Package dispatch runs the jobs of DataShelf's queue (store.Store) on a
// pool of workers, the way the crawler runs its crawls:
//
//   - one dispatcher claims as many jobs as workers are free (one Claim)
//     and hands them to the workers. While claims get a job for every
//     free worker (more are likely queued), a worker that frees up waits
//     up to ClaimCooldown (1 ms) for others to free up too, so that one
//     claim, one commit, takes several jobs. After a claim that got fewer
//     (the queue is drained for now) or none, the dispatcher sleeps until
//     a worker finishes, the store wakes it (store.Store.Wake: a job was
//     enqueued, retried or rescued), the poll interval passes (the
//     fallback for a lost wake-up) or the next lease rescue is due, and
//     then claims at once;
//   - each worker runs the Handler under heartbeats (every Lease/3);
//   - jobs the Handler finished are completed in batches: the dispatcher's
//     next claim takes the batch and commits it with the claim
//     (store.Store.CompleteAndClaim: a finished job frees a worker, so
//     while jobs keep finishing, one commit both settles them and hands
//     out the next ones); a batch no claim took within CompleteDelay, at
//     CompleteBatch jobs, before the dispatcher decides the queue is idle
//     and when Run ends is committed on its own (store.Store.CompleteMany);
//   - expired leases are rescued (store.Store.RescueExpired) when Run
//     starts and every RescueEvery, never inside a claim: a job whose
//     worker died is queued again at most Lease + RescueEvery after its
//     last heartbeat, by any running dispatcher.
//
// internal/datashelf/crawler runs on it, and bench/peers/river drives the
// queue through it.
package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultWorkers       = 4
	DefaultPollInterval  = 100 * time.Millisecond
	DefaultCompleteDelay = 10 * time.Millisecond
	DefaultCompleteBatch = 100
	DefaultClaimCooldown = time.Millisecond
	// MaxRescueEvery caps the default RescueEvery (Lease/4).
	MaxRescueEvery = time.Minute
)

// Handler runs one claimed job on a worker goroutine, under heartbeats
// that stop when it returns. It returns true when the job succeeded and
// is to be completed (in a batch; the outcome goes to Options.Completed),
// false when it settled the job itself (store.Store.Fail or
// FailPermanently) or left it running (ctx ended: the lease rescue queues
// it again).
type Handler func(ctx context.Context, j store.Job) bool

// Options configures a Dispatcher. Store and Worker are required; zero
// fields are defaulted by New.
type Options struct {
	// Store holds the queue.
	Store store.Store
	// Worker is the name claims are made under (locked_by).
	Worker string
	// Workers is the number of jobs run concurrently (default 4).
	Workers int
	// Lease is the jobs' lease, extended by heartbeats every Lease/3
	// (default store.DefaultLease).
	Lease time.Duration
	// PollInterval is how long an idle dispatcher waits for a wake-up
	// before claiming again anyway (default 100 ms).
	PollInterval time.Duration
	// RescueEvery is how often expired leases are rescued (default
	// Lease/4, at most MaxRescueEvery).
	RescueEvery time.Duration
	// ClaimCooldown: while claims get a job for every free worker, the
	// dispatcher waits this long after a worker frees up before it
	// claims, unless every worker is free first (default 1 ms; negative:
	// no wait). More workers are then free at each claim, so one claim
	// (one commit) takes more jobs; and as jobs claimed together start
	// together, jobs of about the same length keep finishing close
	// together. Once a claim gets fewer jobs than free workers (the queue
	// is drained for now), no claim waits: a job enqueued next is claimed
	// as soon as its wake-up comes.
	ClaimCooldown time.Duration
	// CompleteDelay is how long a finished job may wait for a claim or
	// other finished jobs to be committed with (default 10 ms: longer
	// than ClaimCooldown and a claim's commit, so that the next claim can
	// take it);
	// CompleteBatch caps a batch (default 100).
	CompleteDelay time.Duration
	CompleteBatch int
	// SeparateCompletions, when set, never commits finished jobs with a
	// claim: the completer commits them on its own (CompleteMany), two
	// commits where one would do. It is for comparison (the riverbench
	// harness measures both ways in one run).
	SeparateCompletions bool
	// Now is the clock given to RescueExpired (default time.Now).
	Now func() time.Time
	// Logger receives claim, heartbeat, rescue and completion errors; nil
	// discards.
	Logger *slog.Logger

	// Budget, when set, caps each claim: given the number of free
	// workers, it returns how many jobs may be claimed. Once it returns 0
	// with no job in flight, Run returns nil (the crawler's MaxPages).
	Budget func(free int) int
	// Claimed, when set, is called with each claimed job before a worker
	// gets it.
	Claimed func(j store.Job)
	// Completed, when set, is called with the outcome of each job the
	// Handler finished: nil once it is completed, store.ErrNotRunning when
	// the store refused it (the lease was lost: the job was rescued and
	// maybe claimed by another worker), or the store's error.
	Completed func(j store.Job, err error)
	// Idle, when set, is called when no job is in flight and a claim found
	// none, after pending completions are committed; true makes Run return
	// nil (the crawler: the queue is drained).
	Idle func(ctx context.Context) bool
	// Stop, when closed, makes Run stop claiming, let the workers finish
	// their jobs and return nil.
	Stop <-chan struct{}
}

// Dispatcher runs jobs; create one with New.
type Dispatcher struct {
	o   Options
	log *slog.Logger
}

// New returns a Dispatcher for o.
func New(o Options) (*Dispatcher, error) {
	if o.Store == nil || o.Worker == "" {
		return nil, errors.New("dispatch: Store and Worker are required")
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Lease <= 0 {
		o.Lease = store.DefaultLease
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RescueEvery <= 0 {
		o.RescueEvery = min(o.Lease/4, MaxRescueEvery)
	}
	if o.ClaimCooldown == 0 {
		o.ClaimCooldown = DefaultClaimCooldown
	}
	if o.CompleteDelay <= 0 {
		o.CompleteDelay = DefaultCompleteDelay
	}
	if o.CompleteBatch <= 0 {
		o.CompleteBatch = DefaultCompleteBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{o: o, log: log}, nil
}

// Run runs jobs with h until ctx ends (it then returns ctx's error, once
// the workers' handlers returned: the jobs they report finished are still
// completed, the others stay running and are rescued once their lease
// expires), Stop is closed, Budget is
// spent or Idle says so (it then returns nil once the workers finished
// and their jobs are completed).
func (d *Dispatcher) Run(ctx context.Context, h Handler) error {
	o := d.o
	wctx, stopWake := context.WithCancel(ctx)
	wake := o.Store.Wake(wctx)
	defer func() {
		stopWake()
		for range wake { // until the subscription ended (its connection closed)
		}
	}()
	comp := newCompleter(o, d.log)
	compDone := make(chan struct{})
	go func() {
		defer close(compDone)
		comp.run(context.WithoutCancel(ctx))
	}()
	jobs := make(chan store.Job)
	// Each job in flight sends one value, so the buffer never fills.
	finished := make(chan struct{}, o.Workers)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if d.work(ctx, h, j) {
					comp.add(j)
				}
				finished <- struct{}{}
			}
		}()
	}
	err := d.dispatch(ctx, jobs, finished, wake, comp)
	close(jobs)
	wg.Wait()
	comp.close()
	<-compDone
	return err
}

// dispatch is the dispatcher's loop.
func (d *Dispatcher) dispatch(ctx context.Context, jobs chan<- store.Job, finished <-chan struct{}, wake <-chan struct{}, comp *completer) error {
	o := d.o
	inflight := 0
	// more: the last claim got a job for every worker it claimed for, so
	// more jobs are likely queued.
	more := false
	var nextRescue time.Time // zero: rescue at once
	for {
	collect:
		for {
			select {
			case <-finished:
				inflight--
			default:
				break collect
			}
		}
		if more && o.ClaimCooldown > 0 && inflight > 0 && inflight < o.Workers {
			// A worker is free and more jobs are likely queued: the
			// others get ClaimCooldown to free up too, so that one claim
			// (one commit) takes their jobs together.
			d.cooldown(ctx, finished, &inflight)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-o.Stop:
			return nil
		default:
		}
		if !time.Now().Before(nextRescue) {
			nextRescue = time.Now().Add(o.RescueEvery)
			if n, err := o.Store.RescueExpired(ctx, o.Now(), o.Lease); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				d.log.Warn("dispatch: rescue expired jobs", "err", err)
			} else if n > 0 {
				d.log.Info("dispatch: rescued expired jobs", "count", n)
			}
		}
		free := o.Workers - inflight
		if o.Budget != nil && free > 0 {
			free = o.Budget(free)
			if free <= 0 && inflight == 0 {
				return nil
			}
		}
		var claimed []store.Job
		if free > 0 {
			// The jobs that freed these workers are completed in the
			// claim's commit: one commit a batch instead of two.
			var finishedJobs []store.Job
			if !o.SeparateCompletions {
				finishedJobs = comp.take()
			}
			var err error
			if len(finishedJobs) > 0 {
				ids := make([]string, len(finishedJobs))
				for i, j := range finishedJobs {
					ids[i] = j.ID
				}
				var done []string
				done, claimed, err = o.Store.CompleteAndClaim(ctx, ids, o.Worker, free)
				comp.settle(finishedJobs, done, err)
			} else {
				claimed, err = o.Store.Claim(ctx, o.Worker, free)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				d.log.Warn("dispatch: claim", "err", err)
			}
		}
		for _, j := range claimed {
			if o.Claimed != nil {
				o.Claimed(j)
			}
			inflight++
			select {
			case jobs <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if free > 0 {
			if more = len(claimed) > 0 && len(claimed) == free; more {
				continue
			}
		}
		if inflight == 0 && free > 0 && o.Idle != nil {
			comp.flush()
			if o.Idle(ctx) {
				return nil
			}
		}
		poll := time.NewTimer(o.PollInterval)
		rescue := time.NewTimer(time.Until(nextRescue))
		select {
		case <-finished:
			inflight--
		case _, ok := <-wake:
			if !ok {
				wake = nil // ctx ended; the next turn returns
			}
		case <-poll.C:
		case <-rescue.C:
		case <-o.Stop:
		case <-ctx.Done():
		}
		poll.Stop()
		rescue.Stop()
	}
}

// cooldown waits ClaimCooldown, or until no job is in flight, counting the
// workers that finish.
func (d *Dispatcher) cooldown(ctx context.Context, finished <-chan struct{}, inflight *int) {
	t := time.NewTimer(d.o.ClaimCooldown)
	defer t.Stop()
	for *inflight > 0 {
		select {
		case <-finished:
			*inflight--
		case <-t.C:
			return
		case <-d.o.Stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// work runs h on j under heartbeats and reports whether j is to be
// completed.
func (d *Dispatcher) work(ctx context.Context, h Handler, j store.Job) bool {
	jctx, cancel := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(max(d.o.Lease/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-t.C:
				if err := d.o.Store.Heartbeat(jctx, j.ID, d.o.Worker); err != nil && jctx.Err() == nil {
					d.log.Warn("dispatch: heartbeat", "job", j.ID, "err", err)
				}
			}
		}
	}()
	ok := h(jctx, j)
	cancel()
	<-hbDone
	return ok
}
