package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
)

// Limits and defaults of session parameters.
const (
	MinTimeout         = 60
	MaxTimeout         = 21600
	DefaultRegion      = "us-west-2"
	DefaultReadyWait   = 30 * time.Second
	DefaultIdleGrace   = 120 * time.Second
	DefaultReapEvery   = 2 * time.Second
	DefaultSampleEvery = 5 * time.Second
	defaultCloseBudget = 15 * time.Second
	// stopBudget bounds one stop (writes, browser close, context persist)
	// when the caller's context sets no deadline.
	stopBudget = 2 * time.Minute
)

// Regions are the region values the API accepts (informational here).
var Regions = []string{"us-west-2", "us-east-1", "eu-central-1", "ap-southeast-1"}

// Options configures a Manager. Zero values mean the defaults.
type Options struct {
	// NodeID names this quarry process in ecsTaskArn ("local:<node>:…"),
	// so a restarted process finds the sessions it owned. Default: the
	// host name.
	NodeID string
	// AdvertiseURL is the base URL at which the other quarry processes of
	// the installation reach this one's HTTP API (http://host:port): it is
	// recorded on the sessions this process runs, and CDP connections
	// that reach another process are forwarded there. "" disables
	// forwarding to this process.
	AdvertiseURL string
	// WorkDir holds the profiles restored from contexts, in
	// <WorkDir>/profiles/<session id>. Required. When the browsers run as
	// another user, it must be a directory that user can traverse (the
	// browser provider hands each restored profile to it): the Manager
	// keeps <WorkDir>/profiles at mode 0711.
	WorkDir string
	// ReadyWait bounds how long create waits for READY (default 30s,
	// well under the SDK's 60s client timeout).
	ReadyWait time.Duration
	// IdleGrace: a session without keepAlive ends when no CDP client has
	// been connected for this long (default 120s).
	IdleGrace time.Duration
	// ReapEvery is the reaper's period (default 2s).
	ReapEvery time.Duration
	// SampleEvery is how often the running browsers' CPU and memory are
	// read from /proc into avgCpuUsage and memoryUsage (default 5s; one
	// scan of /proc serves every session of the process).
	SampleEvery time.Duration
	// Lease is how long this process may go without renewing its lease in
	// the node registry before the other processes end its sessions
	// (FAILED, slots freed): see RenewLease and SweepLeases. Default
	// DefaultLease.
	Lease time.Duration
	// LeaseRenew is how often the lease is renewed; default a third of
	// Lease. It must be shorter than Lease.
	LeaseRenew time.Duration
	// UploadMaxBytes caps one uploaded file (default
	// DefaultUploadMaxBytes); UploadQuota caps the files uploaded to one
	// session, all together (default DefaultUploadQuota).
	UploadMaxBytes, UploadQuota int64
	// Record bounds what the session inspector records of each session's
	// pages (see RecordLimits); the zero value means the defaults.
	Record RecordLimits
	// ArtifactSweepEvery is how often this process sweeps one page of
	// the blob store for the artifacts of sessions whose item is gone
	// (SweepArtifacts; default DefaultArtifactSweepEvery); ArtifactGrace
	// is how old such an artifact must be to go (default
	// DefaultArtifactGrace).
	ArtifactSweepEvery, ArtifactGrace time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Deps are the Manager's collaborators.
type Deps struct {
	Repo     *Repo
	Auth     *auth.Store
	Contexts *contexts.Store
	Blobs    blob.Store
	Browsers browser.Provider
	Tokens   *Tokens
	Notifier *Notifier
	// Egress points browsers' connections at their sessions' upstream
	// proxies; nil: sessions with proxies are refused.
	Egress EgressRoutes
	// Extensions holds the extensions sessions may load; nil: sessions
	// naming one are refused.
	Extensions *extensions.Store
}

// Manager runs sessions: it creates them (taking a concurrency slot,
// launching a browser and waiting for READY), releases them, stops the
// expired and idle ones, and reconciles what a previous process left.
type Manager struct {
	d    Deps
	o    Options
	log  *slog.Logger
	mu   sync.Mutex
	live map[string]*live
	wg   sync.WaitGroup
	// base is the parent of the contexts of the Manager's own writes
	// (those that outlive a request: final states, slots, usage); abort
	// cancels it when Close's deadline passes, so that no write outlives
	// a shutdown, however unreachable the store.
	base  context.Context
	abort context.CancelFunc
	// inc names this process in its lease (random per start).
	inc   string
	lease leaseState
	// fenced maps the sessions whose browsers this process killed while
	// it could not renew its lease (fence) to their projects, until their
	// end is written (endFenced); guarded by mu.
	fenced map[string]string
	// sweepMu serializes SweepArtifacts; sweepAfter is the last blob key
	// its previous page listed ("": start from the first).
	sweepMu    sync.Mutex
	sweepAfter string
}

// live is a session whose browser runs in this process.
type live struct {
	id, projectID string
	b             browser.Browser
	log           *cdp.Log
	keepAlive     bool
	profileDir    string // restored profile to delete at the end ("" if the provider owns it)
	context       *contexts.Context
	persist       bool
	rec           *recorder     // the inspector's recording (guarded by mu); nil before READY
	route         *egress.Route // its browser's way out when the session has proxies; nil otherwise

	// uploadMu serializes the session's uploads, so that each is checked
	// against the quota with the others' sizes known.
	uploadMu sync.Mutex

	mu        sync.Mutex
	clients   int
	idleSince time.Time
	stopping  bool
	usage     usageTrack
	uploads   map[string]int64 // uploaded files by name: their sizes
	uploaded  int64            // the sum of uploads
}

// NewManager returns a Manager. Call Reconcile before serving and Run for
// the reaper and the stream notifier.
func NewManager(d Deps, o Options) *Manager {
	if o.NodeID == "" {
		o.NodeID, _ = os.Hostname()
	}
	if o.ReadyWait <= 0 {
		o.ReadyWait = DefaultReadyWait
	}
	if o.IdleGrace <= 0 {
		o.IdleGrace = DefaultIdleGrace
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = DefaultReapEvery
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = DefaultSampleEvery
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.LeaseRenew <= 0 || o.LeaseRenew >= o.Lease {
		o.LeaseRenew = o.Lease / 3
	}
	if o.UploadMaxBytes <= 0 {
		o.UploadMaxBytes = DefaultUploadMaxBytes
	}
	if o.UploadQuota <= 0 {
		o.UploadQuota = DefaultUploadQuota
	}
	if o.ArtifactSweepEvery <= 0 {
		o.ArtifactSweepEvery = DefaultArtifactSweepEvery
	}
	if o.ArtifactGrace <= 0 {
		o.ArtifactGrace = DefaultArtifactGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Manager{d: d, o: o, log: o.Logger, live: map[string]*live{}, fenced: map[string]string{}}
	m.inc, _ = newID("")
	m.base, m.abort = context.WithCancel(context.Background())
	if d.Notifier != nil {
		d.Notifier.OnEnd(m.ended)
		d.Notifier.OnRemove(m.removeArtifacts)
	}
	return m
}

func (m *Manager) now() time.Time { return m.o.Now().UTC() }

// detach returns a context for work that must finish even when the
// caller goes away (a client disconnecting mid-release): not cancelled
// with ctx, but keeping ctx's deadline (else budget), and cancelled when
// Close gives up.
func (m *Manager) detach(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(m.base, budget)
	if d, ok := ctx.Deadline(); ok {
		c2, cancel2 := context.WithDeadline(c, d)
		return c2, func() { cancel2(); cancel() }
	}
	return c, cancel
}

func (m *Manager) taskPrefix() string { return "local:" + m.o.NodeID + ":" }

// Run runs the stream notifier, the reaper, the lease renewal, the
// sweep of other nodes' expired leases and the sweep of removed sessions'
// artifacts until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- m.d.Notifier.Run(ctx) }()
	t := time.NewTicker(m.o.ReapEvery)
	defer t.Stop()
	st := time.NewTicker(m.o.SampleEvery)
	defer st.Stop()
	// Lease renewals and sweeps run apart from the reaper, so that slow
	// stops cannot delay them past a lease; each call is bounded, so that
	// a store that stops answering cannot hold them either.
	var leases sync.WaitGroup
	every := func(period, bound time.Duration, what string, f func(context.Context) error) {
		leases.Add(1)
		go func() {
			defer leases.Done()
			tk := time.NewTicker(period)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					cctx, cancel := context.WithTimeout(ctx, bound)
					if err := f(cctx); err != nil && ctx.Err() == nil {
						m.log.Warn("wallcrawler: "+what, "err", err)
					}
					cancel()
				}
			}
		}()
	}
	every(m.o.LeaseRenew, m.o.LeaseRenew, "renew this node's lease", m.RenewLease)
	every(m.o.ReapEvery, max(m.o.Lease, 30*time.Second), "sweep the nodes' leases", func(ctx context.Context) error {
		_, err := m.SweepLeases(ctx)
		return err
	})
	every(m.o.LeaseRenew, max(m.o.Lease, 30*time.Second), "end the sessions closed while this node was cut off from the store", func(ctx context.Context) error {
		return m.fenceOrEnd(ctx)
	})
	every(m.o.ArtifactSweepEvery, 5*time.Minute, "sweep the artifacts of removed sessions", func(ctx context.Context) error {
		_, err := m.SweepArtifacts(ctx)
		return err
	})
	defer leases.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sessions: stream notifier: %w", err)
		case <-t.C:
			m.Reap(ctx)
		case <-st.C:
			m.SampleUsage(ctx)
		}
	}
}

// Reconcile takes this node's lease (replacing the one a previous process
// of the node left) and ends the sessions a previous process on this node
// left running (their browsers died with it): they become FAILED and free
// their slots, as the other nodes do with the sessions of a node whose
// lease expired (SweepLeases). Call it at start, before serving.
func (m *Manager) Reconcile(ctx context.Context) (int, error) {
	if err := m.RenewLease(ctx); err != nil {
		return 0, err
	}
	n, _, err := m.failOrphans(ctx, m.o.NodeID, "quarry restarted; the browser was lost", "quarry restarted")
	return n, err
}

// Close stops every session running in this process (quarry shutdown) and
// waits for background work. Every write it makes, and every write still
// under way, ends by ctx's deadline: a session whose final state cannot be
// written (the store is gone) still has its browser closed, and the next
// start on this node (Reconcile) marks it FAILED.
func (m *Manager) Close(ctx context.Context) {
	defer m.abort()
	stopAbort := context.AfterFunc(ctx, m.abort)
	defer stopAbort()
	m.mu.Lock()
	ids := make([]string, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	var failed atomic.Bool
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.stop(ctx, id, StateStopped, "quarry shutdown"); err != nil {
				failed.Store(true)
				m.log.Warn("wallcrawler: stop session at shutdown", "session", id, "err", err)
			}
		}()
	}
	wg.Wait()
	// What stop could not take (its first write failed): close the
	// browsers anyway.
	m.mu.Lock()
	left := make([]*live, 0, len(m.live))
	for id, l := range m.live {
		left = append(left, l)
		delete(m.live, id)
	}
	m.mu.Unlock()
	for _, l := range left {
		m.log.Warn("wallcrawler: closing a browser whose session could not be ended in the store", "session", l.id)
		m.dropLive(ctx, l)
	}
	m.wg.Wait()
	if len(left) == 0 && !failed.Load() {
		// Every session ended cleanly: nothing for the others to sweep.
		m.dropOwnLease(ctx)
	} else {
		m.closeLease()
	}
}

// Live reports how many sessions have a browser in this process.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

func newID(prefix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}
