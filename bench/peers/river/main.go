// Command riverbench compares DataShelf's job queue (the PostgreSQL store
// of internal/datashelf/store/postgres, driven the way the crawler drives
// it) with River (github.com/riverqueue/river, riverpgxv5) on the same
// PostgreSQL cluster, in one run: enqueue one by one, then claim, run a
// no-op (or wait -job-time) and complete with -workers workers; and the
// latency from enqueue to the start of the job while jobs are enqueued at
// a fixed rate. Each system gets a fresh database of its own on every
// cluster, dropped afterwards. Results are appended to a Markdown file.
//
// It is its own Go module (bench/peers/river/go.mod, with a replace of
// quarry to the repository root) so that River never enters quarry's
// go.mod. bench/peers/river/run.sh starts a cluster with fsync on and runs
// it:
//
//	go run . -postgres 'fsync on=postgres://postgres@127.0.0.1:54359/postgres?sslmode=disable' -jobs 20000 -workers 8
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/quarrydb/quarry/bench/internal/report"
	"github.com/quarrydb/quarry/internal/datashelf/dispatch"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// riverVersion is the River release this module requires (go.mod).
const riverVersion = "v0.51.2"

// defaultPoll is how long quarry's dispatcher waits when a claim found
// nothing: the crawler's default (crawler.DefaultPollInterval).
const defaultPoll = 100 * time.Millisecond

type config struct {
	jobs, workers, maxConns int
	rounds                  int
	poll                    time.Duration // quarry's dispatcher poll
	completeDelay           time.Duration // quarry's completion window (0: dispatch's default)
	work                    jobWork       // how long each job runs
	rate                    float64
	latencyFor              time.Duration
	timeout                 time.Duration
}

// result is one system's figures on one cluster, added up over the rounds.
type result struct {
	system, cluster     string
	jobs                int
	enqueueDur, workDur time.Duration
	dup, lost           int
	pgCPU, benchCPU     time.Duration // over enqueue + work; pgCPU < 0: unknown
	walSyncs            int64         // WAL syncs (fsyncs) during the work phase; < 0: unknown
	writeXacts          int64         // transactions that wrote (took an xid) during the work phase; < 0: unknown
	calls               storeCalls    // quarry: its store's calls during the work phase
	lats                []time.Duration
	latJobs, latLate    int
	enqueueLag          time.Duration // how late an enqueue call started after its due time, at most
}

// add adds round o to r.
func (r *result) add(o result) {
	r.jobs += o.jobs
	r.enqueueDur += o.enqueueDur
	r.workDur += o.workDur
	r.dup += o.dup
	r.lost += o.lost
	if r.pgCPU >= 0 && o.pgCPU >= 0 {
		r.pgCPU += o.pgCPU
	} else {
		r.pgCPU = -1
	}
	if r.walSyncs >= 0 && o.walSyncs >= 0 {
		r.walSyncs += o.walSyncs
	} else {
		r.walSyncs = -1
	}
	if r.writeXacts >= 0 && o.writeXacts >= 0 {
		r.writeXacts += o.writeXacts
	} else {
		r.writeXacts = -1
	}
	r.calls.add(&o.calls)
	r.benchCPU += o.benchCPU
	r.lats = append(r.lats, o.lats...)
	r.latJobs += o.latJobs
	r.latLate += o.latLate
	r.enqueueLag = max(r.enqueueLag, o.enqueueLag)
}

func (r *result) enqueuePerSec() float64 { return float64(r.jobs) / r.enqueueDur.Seconds() }
func (r *result) workPerSec() float64    { return float64(r.jobs) / r.workDur.Seconds() }

func (r *result) perJob(d time.Duration) time.Duration {
	if d < 0 {
		return -1
	}
	return d / time.Duration(r.jobs)
}

func main() {
	targets := flag.String("postgres", "", "comma-separated LABEL=URL of PostgreSQL clusters (each system gets a fresh database on each)")
	jobs := flag.Int("jobs", 20000, "jobs enqueued, then worked, per system and cluster")
	workers := flag.Int("workers", 8, "concurrent workers")
	rate := flag.Float64("rate", 50, "jobs/s enqueued for the latency measurement (0: skip it)")
	latencyFor := flag.Duration("latency-duration", 10*time.Second, "how long jobs are enqueued at -rate")
	poll := flag.Duration("quarry-poll", defaultPoll, "quarry's dispatcher: wait when a claim finds nothing (the crawler's PollInterval); also river-tuned's FetchPollInterval")
	completeDelay := flag.Duration("quarry-complete-delay", 0, "quarry's dispatcher: how long finished jobs are collected into one CompleteMany (0: dispatch.DefaultCompleteDelay)")
	jobTime := flag.Duration("job-time", 0, "how long each job runs (a sleep), as a crawl's page fetch does; 0: a no-op, which measures the queue alone")
	jobSpread := flag.Duration("job-spread", 0, "with -job-time: each job runs -job-time ± up to this, spread evenly by the job's index (the same for both queues), as page fetches vary")
	maxConns := flag.Int("max-conns", 16, "connection pool size of each system")
	timeout := flag.Duration("timeout", 10*time.Minute, "deadline of each measurement")
	out := flag.String("out", "", "Markdown file to append the results to")
	rounds := flag.Int("rounds", 3, "rounds; each runs every system once (fresh database), in a rotating order, and the figures add up")
	command := flag.String("command", "", "the command to report (run.sh passes its own); default: this one")
	only := flag.String("systems", "", "comma-separated systems to run, of quarry, quarry-5ms, quarry-separate, river and river-tuned (default: all but river, whose 100 ms fetch cooldown caps it at -workers jobs per 100 ms)")
	cpuProfile := flag.String("cpuprofile", "", "write the bench process's CPU profile over the whole run to this file (with -systems quarry: where the dispatcher's CPU goes)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *targets == "" {
		fail(errors.New("-postgres LABEL=URL is required (bench/peers/river/run.sh starts a cluster with fsync on)"))
	}
	if *rounds < 1 {
		fail(errors.New("-rounds must be at least 1"))
	}
	cfg := config{rounds: *rounds, poll: *poll, completeDelay: *completeDelay, work: jobWork{*jobTime, min(*jobSpread, *jobTime)}, jobs: *jobs, workers: *workers, maxConns: *maxConns, rate: *rate, latencyFor: *latencyFor, timeout: *timeout}
	ctx := context.Background()
	var results []result
	round := 0
	for _, t := range strings.Split(*targets, ",") {
		label, url, ok := strings.Cut(t, "=")
		if !ok {
			fail(fmt.Errorf("-postgres %q: want LABEL=URL", t))
		}
		all := []string{"quarry", "quarry-5ms", "quarry-separate", "river", "river-tuned"}
		systems := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "river" })
		if *only != "" {
			picked := strings.Split(*only, ",")
			for _, sys := range picked {
				if !slices.Contains(all, sys) {
					fail(fmt.Errorf("-systems: unknown system %q; want some of %s", sys, strings.Join(all, ", ")))
				}
			}
			systems = picked
		}
		sum := map[string]*result{}
		for _, sys := range systems {
			sum[sys] = &result{system: sys, cluster: label}
		}
		for range *rounds {
			order := slices.Clone(systems)
			// Rotate the order by round, so that a drifting machine load
			// treats the systems alike.
			for range round % len(order) {
				order = append(order[1:], order[0])
			}
			round++
			for _, sys := range order {
				fmt.Fprintf(os.Stderr, "riverbench: %s on %s\n", sys, label)
				r, err := runSystem(ctx, sys, label, url, cfg)
				if err != nil {
					fail(fmt.Errorf("%s on %s: %w", sys, label, err))
				}
				sum[sys].add(r)
			}
		}
		for _, sys := range systems {
			results = append(results, *sum[sys])
		}
	}
	cmd := *command
	if cmd == "" {
		cmd = "cd bench/peers/river && go run . " + quoteArgs(os.Args[1:])
	}
	text := render(results, cfg, cmd)
	fmt.Print(text)
	if *out != "" {
		if err := report.Append(*out, text); err != nil {
			fail(err)
		}
	}
}

// runSystem creates a fresh database on the cluster at url, runs the
// throughput and latency measurements of one system in it and drops it.
func runSystem(ctx context.Context, sys, label, url string, cfg config) (result, error) {
	r := result{system: sys, cluster: label, jobs: cfg.jobs}
	db := fmt.Sprintf("riverbench_%s_%d", sys, time.Now().UnixNano())
	dbURL, pgPID, err := createDB(ctx, url, db)
	if err != nil {
		return r, err
	}
	defer dropDB(ctx, url, db)
	open := func() (queue, error) {
		switch sys {
		case "quarry", "quarry-5ms", "quarry-separate":
			return openQuarry(ctx, dbURL, cfg, sys)
		case "river":
			return openRiver(ctx, dbURL, cfg, false)
		default:
			return openRiver(ctx, dbURL, cfg, true)
		}
	}
	// Each phase opens the system afresh and closes it before the
	// cluster's counters are read: a backend reports its WAL statistics
	// at most once a second while busy and up to 10 s later while idle,
	// but always when its connection closes, so the counters then hold
	// every sync of the phase and none of the next.
	q, err := open()
	if err != nil {
		return r, err
	}
	defer func() {
		if q != nil {
			q.close()
		}
	}()

	// Throughput: enqueue every job, then start the workers and wait until
	// the database holds every job as completed.
	cpu0, pg0 := report.SelfCPU(), postgresCPU(pgPID)
	t0 := time.Now()
	for i := range cfg.jobs {
		if err := q.enqueue(ctx, i, time.Now()); err != nil {
			return r, fmt.Errorf("enqueue: %w", err)
		}
	}
	r.enqueueDur = time.Since(t0)
	q.close()
	if q, err = open(); err != nil {
		return r, err
	}
	runs := newRunLog(cfg.jobs)
	wctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	wal0, xid0 := walSyncs(ctx, dbURL), nextXid(ctx, dbURL)
	q.resetCalls()
	t1 := time.Now()
	stop, err := q.start(wctx, runs)
	if err != nil {
		cancel()
		return r, err
	}
	err = waitCompleted(wctx, q, cfg.jobs)
	r.workDur = time.Since(t1)
	cpu1, pg1 := report.SelfCPU(), postgresCPU(pgPID)
	stop()
	cancel()
	r.calls = q.calls()
	q.close()
	q = nil
	if wal1 := walSyncs(ctx, dbURL); wal0 >= 0 && wal1 >= 0 {
		r.walSyncs = wal1 - wal0
	} else {
		r.walSyncs = -1
	}
	if xid1 := nextXid(ctx, dbURL); xid0 >= 0 && xid1 >= 0 {
		r.writeXacts = xid1 - xid0
	} else {
		r.writeXacts = -1
	}
	if err != nil {
		return r, fmt.Errorf("work: %w", err)
	}
	r.dup, r.lost = runs.check(cfg.jobs)
	r.benchCPU = cpu1 - cpu0
	if pg0 >= 0 && pg1 >= 0 {
		r.pgCPU = pg1 - pg0
	} else {
		r.pgCPU = -1
	}

	// Latency: workers running on an empty queue, jobs enqueued at a fixed
	// rate (open loop: each at its due time, timed from it), the time from
	// due to the start of the job's work.
	if cfg.rate > 0 && cfg.latencyFor > 0 {
		if q, err = open(); err != nil {
			return r, err
		}
		n := int(cfg.rate * cfg.latencyFor.Seconds())
		lat := newLatencyLog(n)
		lctx, cancel := context.WithTimeout(ctx, cfg.latencyFor+cfg.timeout)
		defer cancel()
		stop, err := q.start(lctx, lat)
		if err != nil {
			return r, err
		}
		time.Sleep(time.Second) // let the workers settle on the empty queue
		every := time.Duration(float64(time.Second) / cfg.rate)
		start := time.Now()
		for i := range n {
			due := start.Add(time.Duration(i) * every)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else {
				r.enqueueLag = max(r.enqueueLag, -d)
			}
			lat.due(cfg.jobs+i, due)
			if err := q.enqueue(lctx, cfg.jobs+i, due); err != nil {
				stop()
				return r, fmt.Errorf("enqueue at rate: %w", err)
			}
		}
		// Wait for the last jobs to start, up to 5 s.
		deadline := time.Now().Add(5 * time.Second)
		for lat.started() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		r.lats = lat.latencies()
		r.latJobs = n
		r.latLate = n - len(r.lats)
	}
	return r, nil
}

// queue is one system under test.
type queue interface {
	// enqueue inserts job i (its URL or args unique to i), due at due.
	enqueue(ctx context.Context, i int, due time.Time) error
	// start starts the workers, which report each job's start to l; stop
	// stops them and waits for them.
	start(ctx context.Context, l starter) (stop func(), err error)
	// completed counts the jobs the database holds as completed.
	completed(ctx context.Context) (int, error)
	// resetCalls and calls count the system's store calls (quarry's only;
	// the others return zeros).
	resetCalls()
	calls() storeCalls
	close()
}

// starter is told when a job's work starts.
type starter interface{ start(i int) }

func waitCompleted(ctx context.Context, q queue, n int) error {
	for {
		c, err := q.completed(ctx)
		if err != nil {
			return err
		}
		if c >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs completed: %w", c, n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ---- quarry ----

type quarryQueue struct {
	s       *postgres.Store
	counted *countingStore
	pool    *pgxpool.Pool
	workers int
	poll    time.Duration
	delay   time.Duration
	work    jobWork
	// separate: dispatch.Options.SeparateCompletions (quarry-separate).
	separate bool
	// cooldown: dispatch.Options.ClaimCooldown (0: its default; 5 ms
	// for quarry-5ms).
	cooldown time.Duration
}

func openQuarry(ctx context.Context, url string, cfg config, sys string) (queue, error) {
	s, err := postgres.Open(ctx, url, &postgres.Options{MaxConns: cfg.maxConns})
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		s.Close()
		return nil, err
	}
	q := &quarryQueue{s: s, counted: &countingStore{Store: s}, pool: pool, workers: cfg.workers, poll: cfg.poll, delay: cfg.completeDelay,
		work: cfg.work, separate: sys == "quarry-separate"}
	if sys == "quarry-5ms" {
		q.cooldown = 5 * time.Millisecond
	}
	return q, nil
}

func quarryURL(i int) string { return "https://shop.example/products/p-" + strconv.Itoa(i) }

func (q *quarryQueue) enqueue(ctx context.Context, i int, _ time.Time) error {
	_, err := q.s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: quarryURL(i)})
	return err
}

// start runs the crawler's dispatcher (internal/datashelf/dispatch, which
// internal/datashelf/crawler's Run is built on): one dispatcher claims as
// many jobs as workers are free, woken by the store's LISTEN/NOTIFY
// wake-ups (Store.Wake), a worker finishing, or the poll interval; each
// worker runs a no-op (or waits -job-time), and finished jobs are
// completed with the next claim (CompleteAndClaim) or in batches
// (CompleteMany); expired leases are rescued on a timer, not in Claim.
func (q *quarryQueue) start(ctx context.Context, l starter) (func(), error) {
	d, err := dispatch.New(dispatch.Options{
		Store:               q.counted,
		Worker:              "bench",
		Workers:             q.workers,
		PollInterval:        q.poll,
		CompleteDelay:       q.delay,
		SeparateCompletions: q.separate,
		ClaimCooldown:       q.cooldown,
		Completed: func(j store.Job, err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, "riverbench: quarry complete:", j.ID, err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := d.Run(ctx, func(ctx context.Context, j store.Job) bool {
			i, _ := strconv.Atoi(j.TargetURL[strings.LastIndexByte(j.TargetURL, '-')+1:])
			l.start(i)
			return runJob(ctx, q.work.of(i)) == nil
		})
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "riverbench: quarry dispatcher:", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

func (q *quarryQueue) completed(ctx context.Context) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT count(*) FROM scrape_job WHERE status = 'completed'`).Scan(&n)
	return n, err
}

func (q *quarryQueue) resetCalls()       { q.counted.reset() }
func (q *quarryQueue) calls() storeCalls { return q.counted.snapshot() }
func (q *quarryQueue) close()            { q.s.Close(); q.pool.Close() }

// storeCalls counts the store calls of quarry's dispatcher that may
// commit a write: claims that returned jobs (an empty claim writes
// nothing), CompleteMany calls, CompleteAndClaim calls (completions
// committed with a claim), heartbeats and lease rescues.
type storeCalls struct {
	claims, emptyClaims, completes, completeClaims, heartbeats, rescues int64
}

func (c *storeCalls) add(o *storeCalls) {
	c.claims += o.claims
	c.completeClaims += o.completeClaims
	c.emptyClaims += o.emptyClaims
	c.completes += o.completes
	c.heartbeats += o.heartbeats
	c.rescues += o.rescues
}

// countingStore counts the calls of storeCalls.
type countingStore struct {
	store.Store
	claims, emptyClaims, completes, completeClaims, heartbeats, rescues atomic.Int64
}

func (s *countingStore) reset() {
	for _, c := range []*atomic.Int64{&s.claims, &s.emptyClaims, &s.completes, &s.completeClaims, &s.heartbeats, &s.rescues} {
		c.Store(0)
	}
}

func (s *countingStore) snapshot() storeCalls {
	return storeCalls{s.claims.Load(), s.emptyClaims.Load(), s.completes.Load(), s.completeClaims.Load(), s.heartbeats.Load(), s.rescues.Load()}
}

func (s *countingStore) Claim(ctx context.Context, worker string, n int) ([]store.Job, error) {
	jobs, err := s.Store.Claim(ctx, worker, n)
	if len(jobs) > 0 {
		s.claims.Add(1)
	} else {
		s.emptyClaims.Add(1)
	}
	return jobs, err
}

func (s *countingStore) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	s.completes.Add(1)
	return s.Store.CompleteMany(ctx, ids, worker)
}

func (s *countingStore) CompleteAndClaim(ctx context.Context, ids []string, worker string, n int) ([]string, []store.Job, error) {
	s.completeClaims.Add(1)
	return s.Store.CompleteAndClaim(ctx, ids, worker, n)
}

func (s *countingStore) Heartbeat(ctx context.Context, id, worker string) error {
	s.heartbeats.Add(1)
	return s.Store.Heartbeat(ctx, id, worker)
}

func (s *countingStore) RescueExpired(ctx context.Context, now time.Time, lease time.Duration) (int, error) {
	s.rescues.Add(1)
	return s.Store.RescueExpired(ctx, now, lease)
}

// ---- River ----

// noopArgs is River's job: its index, nothing else.
type noopArgs struct {
	I int `json:"i"`
}

// Kind implements river.JobArgs.
func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	l    atomic.Pointer[starter]
	work jobWork
}

// Work implements river.Worker: it reports the start and runs the job.
func (w *noopWorker) Work(ctx context.Context, j *river.Job[noopArgs]) error {
	if l := w.l.Load(); l != nil {
		(*l).start(j.Args.I)
	}
	return runJob(ctx, w.work.of(j.Args.I))
}

// runJob is a job's work on both queues: nothing, or a wait of d (a
// crawl's page fetch) cut short when ctx ends.
func runJob(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return backoff.Sleep(ctx, d)
}

type riverQueue struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	worker *noopWorker
}

// openRiver starts River with its defaults but MaxWorkers, or, tuned, with
// FetchCooldown at its minimum (1 ms; default 100 ms, which caps a queue
// at MaxWorkers jobs per 100 ms) and FetchPollInterval at quarry's
// dispatcher poll (100 ms; default 1 s).
func openRiver(ctx context.Context, url string, cfg config, tuned bool) (queue, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(cfg.maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	w := &noopWorker{work: cfg.work}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	rc := &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.workers}},
		Workers: workers,
	}
	if tuned {
		rc.FetchCooldown = river.FetchCooldownMin
		rc.FetchPollInterval = max(cfg.poll, river.FetchCooldownMin)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &riverQueue{pool: pool, client: client, worker: w}, nil
}

func (q *riverQueue) enqueue(ctx context.Context, i int, _ time.Time) error {
	_, err := q.client.Insert(ctx, noopArgs{I: i}, nil)
	return err
}

func (q *riverQueue) start(ctx context.Context, l starter) (func(), error) {
	q.worker.l.Store(&l)
	if err := q.client.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := q.client.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "riverbench: river stop:", err)
		}
	}, nil
}

func (q *riverQueue) completed(ctx context.Context) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
	return n, err
}

func (q *riverQueue) resetCalls()       {}
func (q *riverQueue) calls() storeCalls { return storeCalls{} }
func (q *riverQueue) close()            { q.pool.Close() }

// ---- bookkeeping ----

// runLog counts how often each job ran.
type runLog struct {
	mu   sync.Mutex
	runs map[int]int
}

func newRunLog(n int) *runLog { return &runLog{runs: make(map[int]int, n)} }

func (l *runLog) start(i int) { l.mu.Lock(); l.runs[i]++; l.mu.Unlock() }

func (l *runLog) check(n int) (dup, lost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		switch c := l.runs[i]; {
		case c == 0:
			lost++
		case c > 1:
			dup++
		}
	}
	return dup, lost
}

// latencyLog records each job's due time and the delay to its start.
type latencyLog struct {
	mu    sync.Mutex
	dueAt map[int]time.Time
	lat   []time.Duration
	n     atomic.Int64
}

func newLatencyLog(n int) *latencyLog {
	return &latencyLog{dueAt: make(map[int]time.Time, n), lat: make([]time.Duration, 0, n)}
}

func (l *latencyLog) due(i int, t time.Time) { l.mu.Lock(); l.dueAt[i] = t; l.mu.Unlock() }

func (l *latencyLog) start(i int) {
	now := time.Now()
	l.mu.Lock()
	if t, ok := l.dueAt[i]; ok {
		l.lat = append(l.lat, now.Sub(t))
		delete(l.dueAt, i)
		l.n.Add(1)
	}
	l.mu.Unlock()
}

func (l *latencyLog) started() int { return int(l.n.Load()) }

func (l *latencyLog) latencies() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.lat...)
}

// ---- PostgreSQL ----

// createDB creates database name on the cluster at url and returns its URL
// and the PID of the cluster's postmaster (0 when it cannot be read: a
// remote cluster).
func createDB(ctx context.Context, url, name string) (string, int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", 0, fmt.Errorf("create database: %w", err)
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return "", 0, err
	}
	cfg := conn.Config()
	u := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	return u, ppid(backend), nil
}

// walSyncs returns the cluster's count of WAL syncs (pg_stat_wal.wal_sync,
// PostgreSQL 14+: the fsyncs of commits, among others), or -1.
func walSyncs(ctx context.Context, url string) int64 {
	return queryInt(ctx, url, "SELECT wal_sync FROM pg_stat_wal")
}

// nextXid returns the cluster's next transaction id (which only
// transactions that write take, so its delta counts the commits that
// must reach the WAL), or -1.
func nextXid(ctx context.Context, url string) int64 {
	return queryInt(ctx, url, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
}

// queryInt runs query, which returns one integer, on a connection of its
// own (so that it counts nothing of the measured systems' sessions), or
// returns -1.
func queryInt(ctx context.Context, url, query string) int64 {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		return -1
	}
	return n
}

func dropDB(ctx context.Context, url, name string) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func ppid(pid int) int {
	f := report.ProcStat(pid)
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// postgresCPU is the CPU time of the postmaster, its live children and its
// reaped children, or -1 when /proc cannot tell.
func postgresCPU(postmaster int) time.Duration {
	if postmaster <= 0 {
		return -1
	}
	// Fields after the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
	pm := report.ProcStat(postmaster)
	if pm == nil {
		return -1
	}
	total := report.StatCPU(pm, 11, 12, 13, 14)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := report.ProcStat(pid)
		if len(f) > 14 && f[1] == strconv.Itoa(postmaster) {
			total += report.StatCPU(f, 11, 12)
		}
	}
	return total
}

// ---- report ----

func render(rs []result, cfg config, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## %s — job queue: DataShelf vs River (riverbench)\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n- Load average: %s\n", report.Machine(), report.LoadAvg())
	fmt.Fprintf(&b, "- Command: `%s`\n", command)
	fmt.Fprintf(&b, "- Peer: River %s with riverpgxv5 (%s): `river` has its defaults but MaxWorkers %d; `river-tuned` also FetchCooldown 1 ms (default 100 ms) and FetchPollInterval %s (default 1 s); quarry: internal/datashelf/store/postgres run by the crawler's dispatcher, internal/datashelf/dispatch (claims as many as workers are free; while claims get a job for every free worker, a worker that frees up waits up to %s for others before the next claim; woken by LISTEN/NOTIFY, %s poll as the fallback, -quarry-poll; finished jobs completed in the commit of the next claim (CompleteAndClaim), or on their own after %s or at %d jobs, -quarry-complete-delay; lease rescue on a timer, not in Claim); `quarry-5ms`: the same with a 5 ms cooldown (dispatch.Options.ClaimCooldown); `quarry-separate`: the same with dispatch.Options.SeparateCompletions (finished jobs committed only on their own, CompleteMany, never with a claim).\n", riverVersion, runtime.Version(), cfg.workers, dispatch.DefaultClaimCooldown, cfg.poll, cfg.poll, cmp.Or(cfg.completeDelay, dispatch.DefaultCompleteDelay), dispatch.DefaultCompleteBatch)
	fmt.Fprintf(&b, "- %d rounds, each system once per round in a rotating order, each time in a fresh database; figures added up over the rounds. Throughput: %d jobs enqueued one by one, then %d workers claim, run %s and complete them, until the database holds all as completed. Latency: %.0f jobs/s for %s on idle workers, from each job's due time to its start.\n\n", cfg.rounds, cfg.jobs, cfg.workers, cfg.work, cfg.rate, cfg.latencyFor)
	fmt.Fprintf(&b, "| cluster | system | enqueue jobs/s | claim+run+complete jobs/s | WAL syncs/job (work) | write commits/job (work) | PostgreSQL CPU/job | bench CPU/job | ran twice | lost | latency p50 | p99 | max | not started | enqueue behind by |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	type fig struct{ p50, p99, mx time.Duration }
	figs := make([]fig, len(rs))
	for i := range rs {
		r := &rs[i]
		figs[i] = fig{report.Percentile(r.lats, 50), report.Percentile(r.lats, 99), report.Percentile(r.lats, 100)}
		pg := "n/a"
		if r.pgCPU >= 0 {
			pg = us(r.perJob(r.pgCPU))
		}
		wal := "n/a"
		if r.walSyncs >= 0 {
			wal = fmt.Sprintf("%.2f", float64(r.walSyncs)/float64(r.jobs))
		}
		xacts := "n/a"
		if r.writeXacts >= 0 {
			xacts = fmt.Sprintf("%.3f", float64(r.writeXacts)/float64(r.jobs))
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %s | %s | %s | %s | %d | %d | %s | %s | %s | %d | %s |\n", r.cluster, r.system, r.enqueuePerSec(), r.workPerSec(), wal, xacts, pg, us(r.perJob(r.benchCPU)), r.dup, r.lost, ms(figs[i].p50), ms(figs[i].p99), ms(figs[i].mx), r.latLate, ms(r.enqueueLag))
	}
	for i := range rs {
		q := &rs[i]
		if !strings.HasPrefix(q.system, "quarry") {
			continue
		}
		for j := range rs {
			p := &rs[j]
			peer := strings.HasPrefix(p.system, "river") || q.system == "quarry" && strings.HasPrefix(p.system, "quarry-")
			if peer && p.cluster == q.cluster {
				fmt.Fprintf(&b, "| %s | **%s/%s** | %.2f× | %.2f× | %s | %s | %s | %s | | | %s | %s | %s | | |\n", q.cluster, q.system, p.system, q.enqueuePerSec()/p.enqueuePerSec(), q.workPerSec()/p.workPerSec(),
					fratio(float64(q.walSyncs)/float64(q.jobs), float64(p.walSyncs)/float64(p.jobs)),
					fratio(float64(q.writeXacts)/float64(q.jobs), float64(p.writeXacts)/float64(p.jobs)),
					ratio(q.perJob(q.pgCPU), p.perJob(p.pgCPU)), ratio(q.perJob(q.benchCPU), p.perJob(p.benchCPU)), ratio(figs[i].p50, figs[j].p50), ratio(figs[i].p99, figs[j].p99), ratio(figs[i].mx, figs[j].mx))
			}
		}
	}
	for i := range rs {
		if r := &rs[i]; strings.HasPrefix(r.system, "quarry") {
			c, k := &r.calls, 1000/float64(r.jobs)
			fmt.Fprintf(&b, "\n%s's store calls in the work phase on %s, per 1000 jobs: %.1f CompleteAndClaim (completions committed with a claim), %.1f claims alone that returned jobs, %.1f empty claims, %.1f CompleteMany, %.1f heartbeats, %.1f lease rescues.\n",
				r.system, r.cluster, float64(c.completeClaims)*k, float64(c.claims)*k, float64(c.emptyClaims)*k, float64(c.completes)*k, float64(c.heartbeats)*k, float64(c.rescues)*k)
		}
	}
	b.WriteString("\nThroughput ratios above 1 and CPU/latency/sync ratios below 1 favour quarry. \"WAL syncs/job\": pg_stat_wal.wal_sync over the work phase ÷ jobs (the cluster serves only this run); \"write commits/job\": transaction ids taken over the work phase ÷ jobs (only a transaction that writes takes one, and only its commit waits for a WAL flush; PostgreSQL may flush several such commits with one sync). \"enqueue behind by\": how late an enqueue call started after its due time, at most (one enqueuer; when the disk stalls it falls behind and the latency includes that backlog).\n")
	return b.String()
}

// jobWork is how long the jobs run: base ± up to spread, by job index.
type jobWork struct{ base, spread time.Duration }

// of is job i's run time: the same on both queues, spread evenly over
// [base-spread, base+spread] across indexes.
func (w jobWork) of(i int) time.Duration {
	if w.spread <= 0 {
		return w.base
	}
	// splitmix64 of the index: a fixed, even spread that does not follow
	// the enqueue order.
	x := uint64(i) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53) // in [0, 1)
	return w.base + time.Duration((2*u-1)*float64(w.spread))
}

// String says what each job does.
func (w jobWork) String() string {
	switch {
	case w.base <= 0:
		return "a no-op"
	case w.spread > 0:
		return fmt.Sprintf("a job that waits %v ± up to %v (evenly spread)", w.base, w.spread)
	default:
		return "a job that waits " + w.base.String()
	}
}

func fratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func ratio(a, b time.Duration) string {
	if a < 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " '\"$&;|") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "riverbench:", err)
	os.Exit(1)
}
