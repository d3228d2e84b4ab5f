// Package scheduler runs Checks' monitors on time. Each process keeps the
// ACTIVE checks in a heap ordered by nextRunAt (loaded from the
// type-status index and refreshed periodically); when a check is due it
// claims the run with one conditional write on the check (see
// store.Claim), so that several processes sharing a store never run a
// check twice in one period, runs the probe, records the result and, when
// the alert condition changed, sends one alert. Claims and records made
// while another is being written are written together, in one
// transaction (recorder.go).
package scheduler

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/checks/alert"
	"github.com/quarrydb/quarry/internal/checks/probe"
	"github.com/quarrydb/quarry/internal/checks/store"
)

// Runner executes one run of a check (probe.Prober).
type Runner interface {
	Run(ctx context.Context, s probe.Spec) probe.Result
}

// Alerter delivers alerts (alert.Dispatcher).
type Alerter interface {
	Send(a alert.Alert, t alert.Target) error
}

// Options configures a Scheduler. Zero values mean the defaults.
type Options struct {
	// Owner names this process in leases; default a random id.
	Owner string
	// Types are the check types to run; default every type
	// (probe.Types).
	Types []string
	// Refresh is how often the ACTIVE set is reloaded (checks created,
	// paused or deleted by other processes); default 10s.
	Refresh time.Duration
	// RunTimeout bounds one run; default 30s.
	RunTimeout time.Duration
	// RunLease is how long a claim holds its check without renewal; the
	// running process renews the leases of its runs in flight every
	// RunLease/3, so a run may last its whole RunTimeout, while the checks
	// of a process that died are claimed by the others RunLease after
	// their last renewal. Default DefaultRunLease.
	RunLease time.Duration
	// StopGrace is how long the runs in flight when Run's context ends
	// may go on to finish and record themselves; default 5s (within
	// quarry serve's default --shutdown-timeout of 10s). A run cut off by
	// it loses its period: its check's lease holds until it expires.
	StopGrace time.Duration
	// Lookahead is how far ahead of their due time checks are claimed, so
	// that the claim's durable write is done before the due time and the
	// run starts at it from an in-memory timer. Zero derives it from the
	// store: three times the slowest recent claim, between MinLookahead
	// and MaxLookahead. Negative claims at the due time (no lookahead).
	Lookahead time.Duration
	// ClaimWindow groups claims: when a check comes within the lookahead
	// of its due time, the checks due within ClaimWindow of now are
	// claimed with it, in one write (store.ClaimAll), so that runs due
	// close together share one commit instead of one each. A check is
	// then claimed at most max(lookahead, ClaimWindow) before its due
	// time. Default DefaultClaimWindow; negative: no window (each check
	// at its lookahead); no effect when Lookahead is negative.
	ClaimWindow time.Duration
	// Concurrency bounds runs in flight (a check claimed ahead counts from
	// its claim); default 512.
	Concurrency int
	// FailAfter consecutive unparseable runs make a check FAILED; default 3.
	FailAfter int
	// Retention keeps each run in the check's history; default 7 days;
	// negative keeps none.
	Retention time.Duration
	// UserCache is how long a user's status is cached for deciding
	// whether their checks run, and their maintenance windows for
	// deciding whether an alert is sent; default 5s. Alert targets are
	// read afresh for every alert.
	UserCache time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
	// OnRun, when set, is told of each run: the check, when it was due and
	// when it started (lateness = started - due).
	OnRun func(id string, due, started time.Time)
	// AlertClaim is how long this process's claim on an alert it is
	// delivering lasts without renewal (see store's alert outbox): after a
	// crash, another process delivers the alert within AlertClaim +
	// AlertSweep. Default 15s.
	AlertClaim time.Duration
	// RecordWait is how long a run's record waits for others to share its
	// write (see recorder.go): a run's result is seen, and its alert
	// sent, at most this much later, and runs that finish within it of
	// each other take one write. Default DefaultRecordWait; negative
	// waits only under load, as claims do.
	RecordWait time.Duration
	// AlertSweep is how often claims are renewed and alerts whose claim
	// ran out (their process died) are delivered; default 5s.
	AlertSweep time.Duration
	// NodeBeat is how often Run renews this process's node lease and
	// reads the live nodes (Beat); default 1s.
	NodeBeat time.Duration
	// NodeLease is how long a node lease lasts without renewal: a process
	// that dies stops owning its checks NodeLease after its last beat at
	// most. Default 3s, so that with NodeBeat the survivors take a dead
	// process's checks over within 4 s: within the failover bound, and
	// before the next period of checks run every 6 s or more, which then
	// run late rather than skip a period.
	NodeLease time.Duration
}

// Scheduler runs the checks of one store. Create it with New.
type Scheduler struct {
	st  *store.Store
	run Runner
	al  Alerter
	o   Options
	log *slog.Logger
	sem chan struct{}
	wg  sync.WaitGroup
	// rec records runs and claims claims them, several in one write under
	// load.
	rec    *recorder
	claims *claimer

	mu    sync.Mutex
	queue dueHeap
	index map[string]*entry
	wake  chan struct{}
	users map[string]cachedUser
	// windows are users' maintenance windows, read when an alert is due
	// (maintenance.go).
	windows map[string]cachedWindows
	// changesFrom is where the next Refresh reads the schedule change log
	// from (zero: the first Refresh loads every check anyway).
	changesFrom time.Time
	// ahead holds the runs claimed ahead and not yet started.
	ahead map[string]claim
	// sleepUntil is when Run's loop looks at the queue next (zero: it is
	// looking now); a check scheduled to be claimed before then wakes it,
	// others wait for it.
	sleepUntil time.Time
	// slowClaim is the slowest recent claim (decaying), for the derived
	// lookahead.
	slowClaim time.Duration
	// alerts are the outbox keys of the alerts this process is
	// delivering, whose claims it renews.
	alerts map[string]struct{}
	// running are the checks whose runs are in flight here, with their
	// start, whose leases RenewRuns extends.
	running map[string]time.Time
	// nodes are the live nodes as last read (Beat), sorted, this one
	// included; viewAt is when. A view older than NodeLease, or of this
	// node alone, makes every check this node's own.
	nodes  []string
	viewAt time.Time
	// gone are nodes whose lease ended long ago, removed by the next beat.
	gone []string
	// known are the nodes seen live in the registry (until gone): the
	// only ones whose runs may be taken over when they die (deadNode).
	known map[string]bool
	// shares is whether this scheduler takes part in the node registry:
	// only when it runs every check type, since its share of the checks
	// is drawn from all of them.
	shares bool
}

// claim is a run claimed and not yet started.
type claim struct {
	c   store.Check
	due time.Time
}

// The derived lookahead's bounds (Options.Lookahead zero).
const (
	MinLookahead = 20 * time.Millisecond
	MaxLookahead = time.Second
)

// DefaultClaimWindow is Options.ClaimWindow's default: MaxLookahead, so
// that a check is never claimed earlier than the derived lookahead allows
// (the run lease's bound, DefaultRunLease, counts on it), and runs due
// within a second of each other (60 checks a minute and more) share their
// claims' write.
const DefaultClaimWindow = MaxLookahead

// ForcedGrace is how long after its due time a check forced onto a
// process that does not own it (Schedule) is claimed there: its owner,
// once it has read the check, claims it a lookahead before its due time,
// so the forced claim fails once and the check is left to its owner;
// until then the forced process runs it this late.
const ForcedGrace = 250 * time.Millisecond

// ChangeSkew is how far before its previous refresh a scheduler re-reads
// the schedule change log, so that changes written by a process whose
// clock is behind by up to this much are not missed.
const ChangeSkew = 30 * time.Second

type cachedUser struct {
	u  store.User
	at time.Time
}

// New returns a Scheduler.
func New(st *store.Store, r Runner, a Alerter, o Options) *Scheduler {
	if o.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Owner = "sched-" + hex.EncodeToString(b[:])
	}
	shares := len(o.Types) == 0
	if shares {
		o.Types = probe.Types()
	}
	if o.Refresh <= 0 {
		o.Refresh = 10 * time.Second
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 30 * time.Second
	}
	if o.RunLease <= 0 {
		o.RunLease = DefaultRunLease
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 512
	}
	if o.ClaimWindow == 0 {
		o.ClaimWindow = DefaultClaimWindow
	}
	if o.FailAfter <= 0 {
		o.FailAfter = 3
	}
	if o.Retention == 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.UserCache <= 0 {
		o.UserCache = 5 * time.Second
	}
	if o.RecordWait == 0 {
		o.RecordWait = DefaultRecordWait
	}
	if o.AlertClaim <= 0 {
		o.AlertClaim = 15 * time.Second
	}
	if o.AlertSweep <= 0 {
		o.AlertSweep = 5 * time.Second
	}
	if o.NodeBeat <= 0 {
		o.NodeBeat = time.Second
	}
	if o.NodeLease <= 0 {
		o.NodeLease = 3 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Scheduler{
		st: st, run: r, al: a, o: o, log: o.Logger, rec: newRecorder(st, o.Owner, o.RecordWait), claims: newClaimer(st, o.Owner),
		sem: make(chan struct{}, o.Concurrency), index: map[string]*entry{},
		wake: make(chan struct{}, 1), users: map[string]cachedUser{}, windows: map[string]cachedWindows{},
		ahead: map[string]claim{}, alerts: map[string]struct{}{}, running: map[string]time.Time{},
		known: map[string]bool{}, shares: shares,
	}
}

// Owner is the name this scheduler claims runs under.
func (s *Scheduler) Owner() string { return s.o.Owner }

// Len is the number of checks scheduled.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Schedule (re)schedules a check at t; the API calls it after a create,
// resume, update or run-now so that the change takes effect at once: this
// process claims the check's runs even when it is another node's, until
// the owner has surely refreshed (two Refresh periods) or a claim here is
// lost, so that the check does not wait for the owner's refresh. Those
// claims come ForcedGrace after each due time, so that an owner that has
// read the check wins them.
func (s *Scheduler) Schedule(id string, t time.Time) { s.scheduleAt(id, t, t, true) }

// reschedule schedules check id at t, to be claimed by its owner.
func (s *Scheduler) reschedule(id string, t time.Time) { s.scheduleAt(id, t, t, false) }

// scheduleAt schedules check id, due at due, to be claimed once at is
// within the lookahead (at is due, or later when another process's lease
// must end first); when force is set, by this process whoever owns it
// for two Refresh periods (an earlier force is kept otherwise).
func (s *Scheduler) scheduleAt(id string, due, at time.Time, force bool) {
	now := s.o.Now()
	var until time.Time
	if force {
		until = now.Add(2 * s.o.Refresh)
	}
	s.mu.Lock()
	if e, ok := s.index[id]; ok {
		e.due, e.at, e.foreign, e.deferred, e.holder = due, at, false, false, ""
		if force {
			e.forceUntil, e.named = until, now
		}
		heap.Fix(&s.queue, e.i)
	} else {
		e := &entry{id: id, due: due, at: at, forceUntil: until, named: now}
		s.index[id] = e
		heap.Push(&s.queue, e)
	}
	// Run's loop looks at the queue at sleepUntil anyway, and then claims
	// what is due within the lookahead: only a check to claim before
	// that wakes it (a run's next period, a minute away, does not).
	wake := s.sleepUntil.IsZero() || at.Add(-s.lookaheadLocked()).Before(s.sleepUntil)
	s.mu.Unlock()
	if wake {
		s.wakeLoop()
	}
}

// wakeLoop makes Run's loop look at the queue.
func (s *Scheduler) wakeLoop() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Remove unschedules a check (paused, deleted, failed).
func (s *Scheduler) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.index[id]; ok {
		heap.Remove(&s.queue, e.i)
		delete(s.index, id)
	}
}

// Refresh reloads the ACTIVE checks: new ones are scheduled at their
// nextRunAt, vanished ones removed, and those whose schedule was changed
// (by any process: PATCH, resume, run now; see store.ScheduleChanges)
// since the previous refresh are rescheduled at their stored nextRunAt.
func (s *Scheduler) Refresh(ctx context.Context) error {
	s.mu.Lock()
	from := s.changesFrom
	s.mu.Unlock()
	started := s.o.Now()
	var changed []string
	if !from.IsZero() {
		ids, err := s.st.ScheduleChanges(ctx, from.Add(-ChangeSkew))
		if err != nil {
			return err
		}
		changed = ids
	}
	var active []store.Due
	for _, t := range s.o.Types {
		ds, err := s.st.ActiveChecks(ctx, t)
		if err != nil {
			return err
		}
		active = append(active, ds...)
	}
	seen := make(map[string]bool, len(active))
	var fresh []store.Due
	s.mu.Lock()
	for _, d := range active {
		seen[d.ID] = true
		if _, ok := s.index[d.ID]; !ok {
			fresh = append(fresh, d)
		}
	}
	for _, id := range changed {
		if _, ok := s.index[id]; ok && seen[id] {
			fresh = append(fresh, store.Due{ID: id})
		}
	}
	// A check named by Schedule shortly before or during this refresh
	// (created, resumed or run now here) may be missing from its read,
	// which began before the write or, on DynamoDB, reads an index that
	// lags it: it stays, and a later refresh, or its claim, removes it if
	// it is gone.
	var gone []string
	for id, e := range s.index {
		if !seen[id] && e.named.Before(started.Add(-ChangeSkew)) {
			gone = append(gone, id)
		}
	}
	s.mu.Unlock()
	for _, id := range gone {
		s.Remove(id)
	}
	if len(fresh) > 0 {
		fresh, err := s.st.NextRuns(ctx, fresh)
		if err != nil {
			return err
		}
		for _, d := range fresh {
			s.reschedule(d.ID, d.NextRunAt)
		}
	}
	s.mu.Lock()
	s.changesFrom = started
	s.mu.Unlock()
	return nil
}

// Run schedules until ctx ends: it refreshes the ACTIVE set every
// Refresh, claims each check a lookahead before it is due (see
// Options.Lookahead) and starts its run at its due time from a timer, so
// that start lateness does not include the claim's write. When ctx ends
// it waits for the runs in flight and gives back the runs claimed ahead
// and not started (ReleaseAhead), so that other processes run them.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.Refresh(ctx); err != nil {
		s.log.Warn("checks: scheduler refresh", "err", err)
	}
	refresh := time.NewTicker(s.o.Refresh)
	defer refresh.Stop()
	// Lease renewals and the alert sweep have loops of their own: their
	// store calls never delay a run's start.
	if s.shares {
		s.Beat(ctx, s.o.Now())
		// Last, once the runs are recorded and the claims ahead given
		// back: the others take this node's checks over at their next
		// beat rather than at the end of its node lease.
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.st.DropNode(dctx, s.o.Owner); err != nil {
				s.log.Warn("checks: node lease not dropped; the others take its checks over when it ends", "err", err)
			}
		}()
	}
	var bg sync.WaitGroup
	defer bg.Wait()
	if s.shares {
		bg.Go(func() { every(ctx, s.o.NodeBeat, func() { s.Beat(ctx, s.o.Now()) }) })
	}
	bg.Go(func() { every(ctx, s.o.RunLease/3, func() { s.RenewRuns(ctx, s.o.Now()) }) })
	bg.Go(func() { every(ctx, s.o.AlertSweep, func() { s.SweepAlerts(ctx, s.o.Now()) }) })
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// Runs started go on when ctx ends, for StopGrace, so that a stop
	// does not throw away the periods they were claimed for.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	stopRuns := context.AfterFunc(ctx, func() { time.AfterFunc(s.o.StopGrace, cancelRuns) })
	defer stopRuns()
	defer func() {
		s.wg.Wait()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		s.ReleaseAhead(rctx)
	}()
	for {
		wait := s.startDue(ctx, runCtx, s.o.Now())
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("checks: scheduler refresh", "err", err)
			}
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// Beat renews this process's node lease until now + NodeLease and reads
// the live nodes, among which the checks are shared: each check is owned
// by one live node (rendezvous hashing of its id over the nodes' names),
// and only its owner claims its runs, so the others spend no store
// request on it. The checks this node gains by a change of the view (a
// node died or stopped) have their nextRunAt read afresh and are
// scheduled at it. Run calls Beat every NodeBeat; tests call it with
// their clock.
func (s *Scheduler) Beat(ctx context.Context, now time.Time) {
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	nodes, stale, err := s.st.BeatNode(ctx, s.o.Owner, now, now.Add(s.o.NodeLease), gone)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("checks: node lease", "err", err)
		}
		return
	}
	if !slices.Contains(nodes, s.o.Owner) {
		nodes = append(nodes, s.o.Owner)
	}
	slices.Sort(nodes)
	s.mu.Lock()
	changed := !slices.Equal(nodes, s.nodes)
	s.nodes, s.viewAt, s.gone = nodes, now, stale
	for _, n := range nodes {
		s.known[n] = true
	}
	for _, n := range stale {
		delete(s.known, n)
	}
	var gained []store.Due
	if changed {
		for id, e := range s.index {
			if e.foreign && s.ownsLocked(id, now) {
				gained = append(gained, store.Due{ID: id})
			}
			if s.deadLocked(e.holder, now) && e.at.After(now) {
				// Waiting for the lease of a node now dead: claimed
				// again at once, which takes the run over.
				e.at = later(e.due, now)
				heap.Fix(&s.queue, e.i)
			}
		}
	}
	s.mu.Unlock()
	if len(gained) == 0 {
		return
	}
	fresh, err := s.st.NextRuns(ctx, gained)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("checks: read the checks of a node gone", "err", err)
		}
		return // claimed at their stale due times: a failed claim reads them
	}
	s.mu.Lock()
	for _, d := range fresh {
		if e, ok := s.index[d.ID]; ok && e.foreign {
			e.due, e.at, e.foreign = d.NextRunAt, d.NextRunAt, false
			heap.Fix(&s.queue, e.i)
		}
	}
	s.mu.Unlock()
	s.wakeLoop()
}

// Nodes is the live nodes as last read by Beat, this one included.
func (s *Scheduler) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes)
}

// ownsLocked reports whether check id is this node's to claim at now: its
// rendezvous owner among the live nodes, or every check when the view is
// of this node alone or older than NodeLease (the registry unreadable:
// then every node claims every check and the claims' conditions keep a
// period to one run). s.mu is held.
func (s *Scheduler) ownsLocked(id string, now time.Time) bool {
	if len(s.nodes) <= 1 || now.Sub(s.viewAt) > s.o.NodeLease {
		return true
	}
	var best string
	var top uint64
	for _, n := range s.nodes {
		h := fnv.New64a()
		_, _ = h.Write([]byte(n))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(id))
		if v := mix(h.Sum64()); best == "" || v > top {
			best, top = n, v
		}
	}
	return best == s.o.Owner
}

// deadNode reports whether node, the holder of a check's lease, is known
// dead at now: a node this one has seen in the registry, absent from a
// view of the live nodes younger than NodeLease. A process outside the
// registry (one scheduling only some check types) is never dead to the
// others, and a stale view knows nothing, so nobody is dead then.
func (s *Scheduler) deadNode(node string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadLocked(node, now)
}

// deadLocked is deadNode with s.mu held.
func (s *Scheduler) deadLocked(node string, now time.Time) bool {
	if node == "" || !s.known[node] || now.Sub(s.viewAt) > s.o.NodeLease {
		return false
	}
	return !slices.Contains(s.nodes, node)
}

// mix spreads a hash's bits over the whole word (the splitmix64
// finalizer): FNV's high bits depend weakly on the last bytes, and the
// node with the highest score owns the check.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Lookahead is how far ahead of its due time a check is claimed now.
func (s *Scheduler) Lookahead() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookaheadLocked()
}

// lookaheadLocked is Lookahead with s.mu held.
func (s *Scheduler) lookaheadLocked() time.Duration {
	if s.o.Lookahead != 0 {
		return max(s.o.Lookahead, 0)
	}
	return min(max(3*s.slowClaim, MinLookahead), MaxLookahead)
}

// window is how far ahead of now the checks claimed with one that comes
// within the lookahead ahead may be due (Options.ClaimWindow).
func (s *Scheduler) window(ahead time.Duration) time.Duration {
	if s.o.ClaimWindow < 0 || s.o.Lookahead < 0 {
		return ahead
	}
	return max(ahead, s.o.ClaimWindow)
}

// noteClaim feeds a claim's latency to the derived lookahead: the slowest
// recent claim, decaying by 1/64 per claim.
func (s *Scheduler) noteClaim(d time.Duration) {
	s.mu.Lock()
	s.slowClaim = max(d, s.slowClaim-s.slowClaim/64)
	s.mu.Unlock()
}

// take pops the checks to claim by horizon, parking each until its run
// reschedules it, once the first is to be claimed by claimBy (before
// horizon); it returns them and when the next is to be claimed. Only a
// check to be claimed at its due time (at equal to due) joins another
// ahead of claimBy: one put off (a lease to end, a forced claim's grace, a
// lost claim tried at its due time) must not be claimed earlier than it
// says. Without a check to claim by claimBy it notes that Run's loop looks
// next at claimBy's distance before that (sleepUntil).
func (s *Scheduler) take(claimBy, horizon, now time.Time, limit int) ([]claim, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []claim
	s.sleepUntil = time.Time{}
	for len(s.queue) > 0 && len(out) < limit {
		e := s.queue[0]
		if e.at.After(horizon) || e.at.After(claimBy) && (len(out) == 0 || !e.at.Equal(e.due)) {
			if len(out) == 0 {
				s.sleepUntil = e.at.Add(-claimBy.Sub(now))
			}
			return out, e.at
		}
		owns := s.ownsLocked(e.id, now)
		if !now.Before(e.forceUntil) && !owns {
			// Another live node's: no store request for it. It is looked
			// at again each NodeBeat (cheap, in memory) so that a view
			// gone stale, which makes every check this node's, claims it;
			// a change of view hands it over with its nextRunAt read
			// afresh (Beat).
			e.foreign = true
			e.at = later(now.Add(s.o.NodeBeat), claimBy.Add(time.Millisecond))
			heap.Fix(&s.queue, e.i)
			continue
		}
		if !owns && !e.deferred {
			// Forced here (created or run now through this node) while
			// its owner may not have read it yet: claimed ForcedGrace
			// after its due time, so that an owner that knows it claims
			// first, and this claim's one failure hands it over.
			e.deferred = true
			e.at = later(e.due.Add(ForcedGrace), claimBy.Add(time.Millisecond))
			heap.Fix(&s.queue, e.i)
			continue
		}
		e.foreign = false
		// A check whose run is claimed ahead and waits for its due time
		// is not claimed again (its next period would be, as its own
		// lease allows): its run reschedules it.
		if _, parked := s.ahead[e.id]; !parked {
			out = append(out, claim{c: store.Check{ID: e.id}, due: e.due})
		}
		// Until its run reschedules it, the entry only guards against a
		// lost reschedule; past the horizon, so that this loop ends.
		e.at = later(now.Add(s.o.RunTimeout+MaxLookahead+time.Minute), horizon.Add(time.Millisecond))
		heap.Fix(&s.queue, e.i)
	}
	if len(s.queue) == 0 {
		return out, time.Time{}
	}
	return out, s.queue[0].at
}

// startDue claims, asynchronously and bounded by Concurrency, the checks
// due within the lookahead of now, each with those due within the claim
// window (one write for them all), and returns how long until the next
// one comes within the lookahead. Claiming and waiting for a due time end
// with ctx; a run once started lives by runCtx.
func (s *Scheduler) startDue(ctx, runCtx context.Context, now time.Time) time.Duration {
	for {
		if ctx.Err() != nil {
			return time.Minute
		}
		ahead := s.Lookahead()
		window := s.window(ahead)
		jobs, next := s.take(now.Add(ahead), now.Add(window), now, min(maxClaims, cap(s.sem)))
		if len(jobs) == 0 {
			if next.IsZero() {
				return time.Minute
			}
			return max(next.Sub(now)-ahead, 0)
		}
		// Each run claimed holds a place from its claim.
		for k := range jobs {
			select {
			case s.sem <- struct{}{}:
			case <-ctx.Done():
				for _, j := range jobs[k:] {
					s.reschedule(j.c.ID, j.due)
				}
				for range jobs[:k] {
					<-s.sem
				}
				return time.Minute
			}
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			// The claims are not cut short by a stop: a write cancelled
			// on the client may still be made by the store, and then
			// nobody would give it back. Once made, a stop gives them
			// back (ReleaseAhead, when Run returns).
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.RunTimeout)
			got := s.claimAll(cctx, jobs, s.o.Now(), ahead, window)
			cancel()
			for k, j := range jobs {
				if !got[k].ok {
					<-s.sem
					continue
				}
				c := got[k].c
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					defer func() { <-s.sem }()
					if wait := j.due.Sub(s.o.Now()); wait > 0 {
						t := time.NewTimer(wait)
						select {
						case <-t.C:
						case <-ctx.Done():
							t.Stop()
						}
					}
					if ctx.Err() == nil && s.unpark(j.c.ID) {
						s.perform(runCtx, c, j.due, s.o.Now())
					}
				}()
			}
		}()
		now = s.o.Now()
	}
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// DefaultRunLease is Options.RunLease's default: how long a claim holds a
// check without its process renewing it. A lease runs from the run's
// start (at most MaxLookahead after its claim) or from its last renewal.
// A dead process's runs are taken over before their leases end, once its
// node lease has (store.TakeOver); the run lease bounds the wait only for
// a process outside the node registry: DefaultRunLease + MaxLookahead, 9
// s, within the 10 s failover bound docs/checks.md states.
const DefaultRunLease = 8 * time.Second

// RenewRuns extends, to now + RunLease, the leases of the runs in flight
// here that started at least RunLease/3 before now: a run outlives its
// claim's lease only while this process lives. A lease another process
// took over (this one was cut off from the store for a whole lease) is
// not extended; the run's record is then refused, so the period is
// recorded once.
func (s *Scheduler) RenewRuns(ctx context.Context, now time.Time) {
	s.mu.Lock()
	var ids []string
	for id, start := range s.running {
		if now.Sub(start) >= s.o.RunLease/3 {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		switch err := s.st.RenewRun(ctx, id, s.o.Owner, now.Add(s.o.RunLease)); {
		case err == nil, ctx.Err() != nil:
		case errors.Is(err, store.ErrReleased):
			// The run ended between the listing above and the renewal.
			s.log.Debug("checks: renew a run's lease: the run has ended", "check", id)
		default:
			s.log.Warn("checks: renew a run's lease", "check", id, "err", err)
		}
	}
}

// RunDue claims the checks due within the lookahead of now, with those
// due within the claim window, as Run does, and runs, synchronously,
// those due at now, including those claimed ahead by earlier calls; it
// returns how many runs it performed. Runs claimed ahead and not yet due
// wait for a later call (or ReleaseAhead). Tests drive the scheduler with
// it and a fake clock.
func (s *Scheduler) RunDue(ctx context.Context, now time.Time) int {
	ahead := s.Lookahead()
	window := s.window(ahead)
	var wg sync.WaitGroup
	for {
		jobs, _ := s.take(now.Add(ahead), now.Add(window), now, maxClaims)
		if len(jobs) == 0 {
			break
		}
		wg.Go(func() { s.claimAll(ctx, jobs, now, ahead, window) })
	}
	wg.Wait()
	var due []claim
	s.mu.Lock()
	for id, a := range s.ahead {
		if !a.due.After(now) {
			due = append(due, a)
			delete(s.ahead, id)
		}
	}
	s.mu.Unlock()
	var n atomic.Int64
	for _, j := range due {
		wg.Add(1)
		s.sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-s.sem }()
			if s.perform(ctx, j.c, j.due, now) {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load())
}

// ReleaseAhead gives back every run claimed ahead and not started
// (store.Unclaim): each check's nextRunAt returns to its due time, so
// that another process, at its next refresh, runs that period. It
// returns how many it gave back. Run calls it when it stops.
func (s *Scheduler) ReleaseAhead(ctx context.Context) int {
	s.mu.Lock()
	held := make([]claim, 0, len(s.ahead))
	for id, a := range s.ahead {
		held = append(held, a)
		delete(s.ahead, id)
	}
	s.mu.Unlock()
	n := 0
	for _, a := range held {
		if err := s.st.Unclaim(ctx, a.c.ID, s.o.Owner, a.due, a.c.NextRunAt); err != nil {
			s.log.Warn("checks: claimed run not given back; it is skipped", "check", a.c.ID, "due", a.due, "err", err)
			continue
		}
		s.reschedule(a.c.ID, a.due)
		n++
	}
	return n
}

// unpark takes check id's claimed-ahead run for starting; false when
// ReleaseAhead gave it back first.
func (s *Scheduler) unpark(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ahead[id]
	delete(s.ahead, id)
	return ok
}

// claimed is the outcome of one claim of claimAll.
type claimed struct {
	c  store.Check
	ok bool
}

// claimAll claims the runs of jobs (each due at most window after now;
// ahead is the lookahead): several in one write (store.ClaimAll), one
// through the claimer, which shares a write with claims made at the same
// time. Each run claimed is held in s.ahead until it starts; a check
// whose claim failed is rescheduled (or removed). It returns the
// outcomes in jobs' order.
func (s *Scheduler) claimAll(ctx context.Context, jobs []claim, now time.Time, ahead, window time.Duration) []claimed {
	rs := make([]store.ClaimRequest, len(jobs))
	s.mu.Lock()
	for k, j := range jobs {
		var period time.Duration
		if e, ok := s.index[j.c.ID]; ok {
			period = e.period
		}
		rs[k] = store.ClaimRequest{ID: j.c.ID, Due: j.due, Now: now, Ahead: window, Lease: s.o.RunLease, Period: period}
	}
	s.mu.Unlock()
	t0 := time.Now()
	var got []store.Claimed
	if len(rs) == 1 {
		got = []store.Claimed{s.claims.do(ctx, rs[0])}
	} else {
		got = s.st.ClaimAll(ctx, s.o.Owner, rs)
	}
	s.noteClaim(time.Since(t0))
	out := make([]claimed, len(jobs))
	for k := range jobs {
		out[k].c, out[k].ok = s.settle(ctx, rs[k], ahead, got[k])
	}
	return out
}

// settle handles the outcome got of claim r, made with the lookahead
// ahead: when it succeeded, the run is held in s.ahead until it starts;
// when it failed the check is rescheduled (or removed), or a dead node's
// run taken over.
func (s *Scheduler) settle(ctx context.Context, r store.ClaimRequest, ahead time.Duration, got store.Claimed) (store.Check, bool) {
	id, due, now := r.ID, r.Due, r.Now
	c, err := got.Check, got.Err
	if c.DelayMs > 0 {
		s.mu.Lock()
		if e, ok := s.index[id]; ok {
			e.period = time.Duration(c.DelayMs) * time.Millisecond
		}
		s.mu.Unlock()
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.Remove(id)
		return c, false
	case errors.Is(err, store.ErrLost):
		if c.Status != store.CheckActive {
			s.Remove(id)
			return c, false
		}
		at := c.NextRunAt
		dead := c.LeaseOwner != "" && c.LeaseOwner != s.o.Owner && s.deadNode(c.LeaseOwner, now)
		if dead && c.NextRunAt.Equal(due) && !due.After(now) && c.LeaseUntil.After(now) {
			// Its holder's node lease has ended: take the run over now
			// rather than at the end of the run's lease.
			tc, terr := s.st.TakeOver(ctx, id, s.o.Owner, c.LeaseOwner, due, now, s.o.RunLease)
			if terr == nil {
				s.mu.Lock()
				s.ahead[id] = claim{c: tc, due: due}
				s.mu.Unlock()
				return tc, true
			}
			if !errors.Is(terr, store.ErrLost) && ctx.Err() == nil {
				s.log.Warn("checks: take a dead node's run over", "check", id, "node", c.LeaseOwner, "err", terr)
			}
		}
		if c.LeaseOwner != "" && c.LeaseOwner != s.o.Owner {
			// Another process holds the check (a run in flight, claimed
			// ahead, or a dead process's): the store refuses to claim it
			// ahead, so try at its due time, when the holder's record has
			// usually freed it; only a check already due and still leased
			// (a long run, or its process dead) waits for the lease's
			// end. Waiting for the lease's end every time would leave
			// each check to the process that last won it, and the death
			// of that process would stall all its checks for a lease.
			at = c.NextRunAt.Add(ahead)
			switch {
			case dead:
				// Taken over at its due time (or tried again a beat
				// later), not at its lease's end.
				at = later(c.NextRunAt, now.Add(s.o.NodeBeat))
			case !c.NextRunAt.After(now):
				at = later(c.NextRunAt, c.LeaseUntil.Add(time.Millisecond)).Add(ahead)
			}
		}
		s.scheduleAt(id, c.NextRunAt, at, false)
		s.mu.Lock()
		if e, ok := s.index[id]; ok {
			e.forceUntil = time.Time{} // its owner has it
			if c.LeaseOwner != s.o.Owner {
				e.holder = c.LeaseOwner
			}
		}
		s.mu.Unlock()
		return c, false
	case err != nil:
		if ctx.Err() == nil {
			s.log.Warn("checks: claim", "check", id, "err", err)
		}
		s.reschedule(id, now.Add(5*time.Second))
		return c, false
	}
	s.mu.Lock()
	s.ahead[id] = claim{c: c, due: due}
	s.mu.Unlock()
	return c, true
}

// perform runs claimed check c, due at due, records the result, alerts
// on a change and reschedules the check at its next period; it reports
// whether it ran.
func (s *Scheduler) perform(ctx context.Context, c store.Check, due, now time.Time) bool {
	id := c.ID
	keep := true
	defer func() {
		if keep {
			s.reschedule(id, c.NextRunAt)
		} else {
			s.Remove(id)
		}
	}()
	u, err := s.user(ctx, c.UserID, now)
	if err != nil || u.Status != store.UserActive {
		// A suspended user's checks do not run; the period is skipped.
		_ = s.st.Release(ctx, id, s.o.Owner)
		return false
	}
	started := s.o.Now()
	if s.o.OnRun != nil {
		s.o.OnRun(id, due, started)
	}
	s.mu.Lock()
	s.running[id] = started
	s.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, s.o.RunTimeout)
	res := s.run.Run(rctx, probe.Spec{Type: c.Type, URL: c.URL, Attributes: c.Attributes, Timeout: s.o.RunTimeout})
	cancel()
	defer func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
	}()
	out := s.outcome(c, res, now)
	var a *alert.Alert
	if ev, ok := Transition(c.AlertState, out.AlertState); ok && s.al != nil && !s.inMaintenance(ctx, c, ev, now) {
		a = s.newAlert(c, ev, out)
		if err := s.outbox(&out, *a); err != nil {
			s.log.Warn("checks: alert not encoded; sent at most once", "check", id, "err", err)
		}
	}
	if err := s.record(ctx, id, out); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("checks: record run", "check", id, "err", err)
		}
		return true
	}
	if out.Fail != "" {
		keep = false
	}
	if a != nil {
		if out.Alert != nil {
			s.holdAlert(out.Alert.Key)
		}
		// The alert targets are read afresh (not from the status cache):
		// a change of targets applies to the very next alert.
		if fresh, err := s.st.GetUser(ctx, c.UserID); err == nil {
			u = fresh
		} else if ctx.Err() == nil {
			s.log.Warn("checks: alert targets not re-read; using those read at the run", "check", id, "err", err)
		}
		s.sendAlert(ctx, c, u, *a)
	}
	return true
}

// newAlert is the alert of check c's run out, which changed its state to
// event.
func (s *Scheduler) newAlert(c store.Check, event string, out store.Outcome) *alert.Alert {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &alert.Alert{
		ID: "alt_" + hex.EncodeToString(b[:]), CheckID: c.ID, UserID: c.UserID, URL: c.URL, CheckType: c.Type,
		Event: event, Previous: c.AlertState, Message: Message(event, c.URL, out.Result),
		Result: out.Result, At: out.At,
	}
}

// outbox puts a into out, to be written to the alert outbox with the run,
// claimed by this process.
func (s *Scheduler) outbox(out *store.Outcome, a alert.Alert) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	out.Alert = &store.PendingAlert{Key: store.AlertKey(a.At, a.ID), CheckID: a.CheckID, Alert: b}
	out.AlertClaim = s.o.Now().Add(s.o.AlertClaim)
	return nil
}

// holdAlert notes an outbox alert this process delivers (its claim is
// renewed by SweepAlerts).
func (s *Scheduler) holdAlert(k string) {
	s.mu.Lock()
	s.alerts[k] = struct{}{}
	s.mu.Unlock()
}

// dropAlert forgets an outbox alert; reports whether it was held.
func (s *Scheduler) dropAlert(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.alerts[k]
	delete(s.alerts, k)
	return ok
}

// AlertDone removes a delivered alert from the outbox (the alert
// dispatcher's Options.OnDone): every channel has its outcome.
func (s *Scheduler) AlertDone(a alert.Alert) {
	k := store.AlertKey(a.At, a.ID)
	if !s.dropAlert(k) {
		return // not from the outbox (sent at most once)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.st.DoneAlert(ctx, k, s.o.Owner); err != nil {
		s.log.Warn("checks: delivered alert left in the outbox; it may be delivered again", "alert", a.ID, "err", err)
	}
}

// SweepAlerts renews this process's claims on the alerts it delivers and
// delivers the outbox alerts whose claims ran out at now: those of a
// process that died between recording a run and delivering its alert.
func (s *Scheduler) SweepAlerts(ctx context.Context, now time.Time) {
	s.mu.Lock()
	held := make([]string, 0, len(s.alerts))
	for k := range s.alerts {
		held = append(held, k)
	}
	s.mu.Unlock()
	until := now.Add(s.o.AlertClaim)
	if err := s.st.RenewAlerts(ctx, s.o.Owner, held, until); err != nil && ctx.Err() == nil {
		s.log.Warn("checks: renew alert claims", "err", err)
	}
	if s.al == nil {
		return
	}
	due, err := s.st.DueAlerts(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("checks: sweep alerts", "err", err)
		}
		return
	}
	for _, p := range due {
		if _, err := s.st.ClaimAlert(ctx, p.Key, s.o.Owner, now, until); err != nil {
			continue // another process took it, or it was delivered
		}
		var a alert.Alert
		if err := json.Unmarshal(p.Alert, &a); err != nil {
			s.log.Error("checks: unreadable alert in the outbox; dropped", "key", p.Key, "err", err)
			_ = s.st.DoneAlert(ctx, p.Key, s.o.Owner)
			continue
		}
		s.holdAlert(p.Key)
		c, err := s.st.GetCheck(ctx, "", a.CheckID)
		if errors.Is(err, store.ErrNotFound) {
			c = store.Check{ID: a.CheckID, UserID: a.UserID, URL: a.URL, Type: a.CheckType}
		} else if err != nil {
			s.dropAlert(p.Key) // its claim runs out: swept again later
			continue
		}
		u, err := s.st.GetUser(ctx, a.UserID)
		if err != nil {
			s.dropAlert(p.Key)
			continue
		}
		s.log.Info("checks: delivering an alert its process left", "alert", a.ID, "check", a.CheckID, "left_by", p.Owner)
		s.sendAlert(ctx, c, u, a)
	}
}

// outcome turns a probe result into what the run leaves on the check.
func (s *Scheduler) outcome(c store.Check, res probe.Result, now time.Time) store.Outcome {
	o := store.Outcome{Result: ResultMap(res, now), At: now, AlertState: c.AlertState, Retention: s.o.Retention}
	if s.o.Retention < 0 {
		o.Retention = 0
	}
	switch {
	case res.Permanent:
		o.Fail = "cannot check this target: " + res.Error
	case res.Unparseable:
		o.FailCount = c.FailCount + 1
		if o.FailCount >= s.o.FailAfter {
			o.Fail = fmt.Sprintf("page not understood %d times in a row: %s", o.FailCount, res.Error)
		}
	case isAlertCondition(res.Condition):
		o.AlertState = res.Condition
	}
	// Other conditions (canceled, internal-error) leave the state alone.
	return o
}

// isAlertCondition reports whether a probe condition defines alert state.
func isAlertCondition(c string) bool {
	switch c {
	case probe.ConditionOK, probe.ConditionDown, probe.ConditionKeywordMissing,
		probe.ConditionKeywordPresent, probe.ConditionPriceBelowThreshold:
		return true
	}
	return false
}

// sendAlert queues a for delivery to the targets of check c's user u.
// An alert with no target is done at once; one the dispatcher cannot
// queue stays in the outbox, unclaimed when its claim runs out, and is
// delivered by a later sweep.
func (s *Scheduler) sendAlert(ctx context.Context, c store.Check, u store.User, a alert.Alert) {
	t, err := target(ctx, s.st, c, u)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("checks: alert channels not read; alerting the webhook and email only", "check", c.ID, "err", err)
	}
	if t.WebhookURL == "" && t.Email == "" && len(t.Channels) == 0 {
		s.AlertDone(a)
		return
	}
	if err := s.al.Send(a, t); err != nil {
		s.dropAlert(store.AlertKey(a.At, a.ID))
		s.log.Warn("checks: alert not queued; the outbox keeps it", "check", c.ID, "event", a.Event, "err", err)
	}
}

func (s *Scheduler) user(ctx context.Context, id string, now time.Time) (store.User, error) {
	s.mu.Lock()
	cu, ok := s.users[id]
	s.mu.Unlock()
	if ok && now.Sub(cu.at) < s.o.UserCache && now.Sub(cu.at) >= 0 {
		return cu.u, nil
	}
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return store.User{}, err
	}
	s.mu.Lock()
	s.users[id] = cachedUser{u: u, at: now}
	s.mu.Unlock()
	return u, nil
}

// RecordDeliveries returns an alert.Options.OnResult that records each
// delivery's outcome on the alert's user and check
// (store.RecordAlertDelivery), so that failures are visible through the
// API and not only in the logs.
func RecordDeliveries(st *store.Store, log *slog.Logger) func(a alert.Alert, channel string, attempts int, err error) {
	if log == nil {
		log = slog.Default()
	}
	return func(a alert.Alert, channel string, attempts int, err error) {
		if errors.Is(err, alert.ErrTargetRemoved) {
			return // the user took the channel away: nothing was due any more
		}
		failure := ""
		if err != nil {
			failure = err.Error()
			if !strings.HasPrefix(failure, channel+":") {
				failure = channel + ": " + failure
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if rerr := st.RecordAlertDelivery(ctx, a.UserID, a.CheckID, time.Now(), failure); rerr != nil {
			log.Warn("checks: alert delivery outcome not recorded", "check", a.CheckID, "channel", channel, "delivery", failure, "err", rerr)
		}
	}
}

// CurrentTarget returns the alert dispatcher's Options.CurrentTarget for
// st: the alert's user's targets as stored now, read afresh (not from the
// scheduler's user cache), so that a retried delivery follows a change of
// targets made meanwhile.
func CurrentTarget(st *store.Store) func(ctx context.Context, a alert.Alert) (alert.Target, error) {
	return func(ctx context.Context, a alert.Alert) (alert.Target, error) {
		u, err := st.GetUser(ctx, a.UserID)
		if err != nil {
			return alert.Target{}, err
		}
		c, err := st.GetCheck(ctx, a.UserID, a.CheckID)
		if errors.Is(err, store.ErrNotFound) {
			c = store.Check{ID: a.CheckID, UserID: a.UserID} // deleted meanwhile: the user's defaults
		} else if err != nil {
			return alert.Target{}, err
		}
		return target(ctx, st, c, u)
	}
}

// target is where an alert of check c of user u goes: the check's own
// notification channels when it names any that exist; otherwise the
// user's default channels and the webhook and email of PUT /v1/me/alerts.
// When the channels cannot be read it returns the webhook and email
// with the error.
func target(ctx context.Context, st *store.Store, c store.Check, u store.User) (alert.Target, error) {
	legacy := alert.Target{WebhookURL: u.WebhookURL, WebhookSecret: u.WebhookSecret, Email: u.AlertEmail}
	chs, err := st.AlertChannels(ctx, c)
	if err != nil {
		return legacy, err
	}
	t := legacy
	if ownChannels(c, chs) {
		t = alert.Target{}
	}
	for _, ch := range chs {
		t.Channels = append(t.Channels, alert.Channel{ID: ch.ID, Type: ch.Type, Name: ch.Name, Config: ch.Config})
	}
	return t, nil
}

// ownChannels reports whether chs are channels c names itself (not the
// user's defaults it fell back to).
func ownChannels(c store.Check, chs []store.Channel) bool {
	for _, ch := range chs {
		if slices.Contains(c.Channels, ch.ID) {
			return true
		}
	}
	return false
}

// RecordChannelDeliveries returns an alert.Options.OnChannelResult that
// records each notification channel's delivery outcome on the channel
// (store.RecordChannelDelivery), shown by the channels API.
func RecordChannelDeliveries(st *store.Store, log *slog.Logger) func(a alert.Alert, ch alert.Channel, attempts int, err error) {
	if log == nil {
		log = slog.Default()
	}
	return func(a alert.Alert, ch alert.Channel, attempts int, err error) {
		if errors.Is(err, alert.ErrTargetRemoved) {
			return
		}
		failure := ""
		if err != nil {
			failure = err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if rerr := st.RecordChannelDelivery(ctx, a.UserID, ch.ID, time.Now(), failure); rerr != nil {
			log.Warn("checks: channel delivery outcome not recorded", "channel", ch.ID, "delivery", failure, "err", rerr)
		}
	}
}

// ForgetUser drops a user from the cache (after a suspension, say).
func (s *Scheduler) ForgetUser(id string) {
	s.mu.Lock()
	delete(s.users, id)
	s.mu.Unlock()
}

// Transition decides whether moving from alert condition prev to cur is
// an alert, and names it. The first run starts from "ok". Conditions are
// the probe's: ok, down, keyword-missing, keyword-present,
// price-below-threshold.
func Transition(prev, cur string) (string, bool) {
	if prev == "" {
		prev = "ok"
	}
	if cur == "" || cur == prev {
		return "", false
	}
	if cur != "ok" {
		return cur, true
	}
	switch prev {
	case "down":
		return "up", true
	case "keyword-missing":
		return "keyword-found", true
	case "keyword-present":
		return "keyword-gone", true
	case "price-below-threshold":
		return "price-above-threshold", true
	}
	return "recovered", true
}

// Message is an alert's one-line text: whether the check is DOWN (with
// the run's reason) or UP again, then what changed.
func Message(event, url string, r map[string]any) string {
	switch event {
	case "down", "keyword-missing", "keyword-present":
		return fmt.Sprintf("%s is DOWN: %v", url, r["error"])
	case "up":
		return fmt.Sprintf("%s is UP again (%vms)", url, r["responseTime"])
	case "keyword-found":
		return fmt.Sprintf("%s is UP again (%vms): the keyword is found", url, r["responseTime"])
	case "keyword-gone":
		return fmt.Sprintf("%s is UP again (%vms): the keyword is gone", url, r["responseTime"])
	case "price-below-threshold":
		return fmt.Sprintf("%s: price %v %v is below your threshold", url, r["price"], r["currency"])
	case "price-above-threshold":
		return fmt.Sprintf("%s: price %v %v is above your threshold again", url, r["price"], r["currency"])
	}
	return fmt.Sprintf("%s: %s", url, event)
}

// ResultMap is a run's lastResult: the document's fields (status,
// responseTime, keywordFound) and ours (certExpiresAt for TLS checks).
func ResultMap(r probe.Result, at time.Time) map[string]any {
	m := map[string]any{
		"status":       r.Status,
		"responseTime": r.ResponseTime,
		"httpStatus":   r.HTTPStatus,
		"alerting":     r.Alerting,
		"condition":    r.Condition,
		"timestamp":    at.UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	if r.KeywordFound != nil {
		m["keywordFound"] = *r.KeywordFound
	}
	if r.Price != nil {
		m["price"] = *r.Price
		m["currency"] = r.Currency
	}
	if r.Shipping != nil {
		m["shipping"] = *r.Shipping
	}
	if r.Availability != "" {
		m["availability"] = r.Availability
	}
	if r.PriceSource != "" {
		m["priceSource"] = r.PriceSource
	}
	if !r.CertExpiresAt.IsZero() {
		m["certExpiresAt"] = r.CertExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if r.Error != "" {
		m["error"] = r.Error
	}
	return m
}

// entry is one scheduled check: due is its nextRunAt as last known (what
// its claim names), at when to claim it (less the lookahead).
type entry struct {
	id      string
	due, at time.Time
	i       int
	// forceUntil: until then claimed by this process whoever owns it
	// (Schedule).
	forceUntil time.Time
	// named: when Schedule last named it, or it entered the queue; a
	// refresh that does not see it removes it only ChangeSkew after that.
	named time.Time
	// foreign: left to its owner, another live node; due may be stale.
	foreign bool
	// deferred: forced here, not owned, and its claim put off by
	// ForcedGrace for this due time.
	deferred bool
	// holder: the other node whose run lease this entry waits for, if
	// any (rescheduled at once when that node dies).
	holder string
	// period: the check's delayMs as its last claim here read it (0:
	// not claimed yet), so that a late claim is one write
	// (store.ClaimAhead).
	period time.Duration
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// dueHeap orders entries by the time to claim them.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.i = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
