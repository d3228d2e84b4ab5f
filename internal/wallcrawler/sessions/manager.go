package sessions

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
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
	// Record bounds what the session inspector records of each session's
	// pages (see RecordLimits); the zero value means the defaults.
	Record RecordLimits
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
	rec           *recorder // the inspector's recording (guarded by mu); nil before READY

	mu        sync.Mutex
	clients   int
	idleSince time.Time
	stopping  bool
	usage     usageTrack
}

// usageTrack turns /proc samples of a browser's process group into the
// session's avgCpuUsage and memoryUsage.
type usageTrack struct {
	baseCPU time.Duration // CPU time at the baseline
	baseAt  time.Time     // when the baseline was taken (READY)
	lastCPU time.Duration // the CPU time seen last (never decreases)
	peakRSS int64         // the largest Memory() seen
	based   bool
}

// add takes a sample at t and returns the figures to store: CPU percent
// of one core since the baseline, and the peak resident memory. ok is
// false for the baseline itself.
func (u *usageTrack) add(s browser.ProcUsage, t time.Time) (cpu float64, rss int64, ok bool) {
	u.peakRSS = max(u.peakRSS, s.Memory())
	if !u.based {
		u.baseCPU, u.lastCPU, u.baseAt, u.based = s.CPU, s.CPU, t, true
		return 0, u.peakRSS, false
	}
	// Processes that end unreaped take their time with them: the total
	// never goes back.
	u.lastCPU = max(u.lastCPU, s.CPU)
	wall := t.Sub(u.baseAt)
	if wall > 0 {
		cpu = 100 * float64(u.lastCPU-u.baseCPU) / float64(wall)
	}
	return cpu, u.peakRSS, true
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
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Manager{d: d, o: o, log: o.Logger, live: map[string]*live{}}
	m.inc, _ = newID("")
	m.base, m.abort = context.WithCancel(context.Background())
	if d.Notifier != nil {
		d.Notifier.OnEnd(m.ended)
		d.Notifier.OnRemove(m.removeArtifacts)
	}
	return m
}

// blobSegment reports whether s can be one segment of a blob key as quarry
// makes them (letters, digits, '_' and '-'): a hand-written item's odd id
// must not make removeArtifacts reach outside its session's folder.
func blobSegment(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// artifactNames are the blobs kept beside a session's item under
// <projectId>/<sessionId>/: its CDP log, downloads and the inspector's
// recording.
var artifactNames = []string{"logs.json", "downloads.zip", recordingBlob, replayBlob}

// removeArtifacts deletes what is kept of session id of projectID once its
// item is gone (its TTL passed: the API can no longer reach them), so that
// they do not pile up for ever. Every node following the stream does it;
// deleting a missing blob is not an error.
func (m *Manager) removeArtifacts(projectID, id string) {
	if m.d.Blobs == nil || !blobSegment(id) || !blobSegment(projectID) {
		return // not an id quarry made: nothing of it is kept
	}
	ctx, cancel := context.WithTimeout(m.base, 30*time.Second)
	defer cancel()
	for _, name := range artifactNames {
		if err := m.d.Blobs.Delete(ctx, artifactKey(projectID, id, name)); err != nil {
			m.log.Warn("session artifact not removed", "session", id, "blob", name, "err", err)
		}
	}
}

// ended closes the browser of a session that runs here and that another
// process ended (a release or a timeout that reached another node of the
// installation): its record says TERMINATING or final while this process
// is not the one stopping it.
func (m *Manager) ended(id string) {
	m.mu.Lock()
	l := m.live[id]
	if l != nil {
		l.mu.Lock()
		stopping := l.stopping
		l.mu.Unlock()
		if stopping {
			l = nil
		} else {
			delete(m.live, id)
		}
	}
	m.mu.Unlock()
	if l == nil {
		return
	}
	m.log.Info("wallcrawler: session ended by another process; closing its browser", "session", id)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.base, 2*defaultCloseBudget)
		defer cancel()
		// The other process wrote the final state: the last usage
		// figures are written on their own.
		if cpu, rss, ok := m.finishBrowser(ctx, l, nil); ok {
			if err := m.d.Repo.SetUsage(ctx, l.id, cpu, rss, false); err != nil {
				m.log.Warn("wallcrawler: record usage", "session", l.id, "err", err)
			}
		}
	}()
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

// CreateInput is a validated POST /v1/sessions.
type CreateInput struct {
	// ProjectID must be one of the principal's projects ("" = its own).
	ProjectID      string
	ContextID      string
	ContextPersist bool
	Width, Height  int
	KeepAlive      bool
	// Timeout in seconds; 0 means the project's defaultTimeout.
	Timeout      int
	Region       string
	UserMetadata map[string]any
}

// Create starts a session and returns it once READY. origin is the
// scheme and host clients reach quarry at ("http://127.0.0.1:8080"); the
// connectUrl is built from it.
//
// With a context, its archive is restored synchronously, after the
// concurrency slot is taken (so a project unpacks at most as many archives
// at once as its concurrency) and before the session is recorded: an
// archive that passes an unpack cap, holds an unsafe entry or is corrupt
// fails Create with ErrContextArchive, leaves no session record and no
// profile on disk, launches no browser and frees the slot. The restore
// counts against ReadyWait.
func (m *Manager) Create(ctx context.Context, p auth.Principal, in CreateInput, origin string) (Session, error) {
	deadline := time.Now().Add(m.o.ReadyWait)
	st := newSteps()
	project := p.Project
	if in.ProjectID != "" && in.ProjectID != p.ProjectID {
		if !p.CanUse(in.ProjectID) {
			return Session{}, fmt.Errorf("%w: project %s", ErrNotFound, in.ProjectID)
		}
		var err error
		if project, err = m.d.Auth.GetProject(ctx, in.ProjectID); err != nil {
			return Session{}, err
		}
		if project.Status != auth.StatusActive {
			return Session{}, fmt.Errorf("%w: project %s is not active", auth.ErrForbidden, project.ID)
		}
	}
	if in.Timeout == 0 {
		in.Timeout = project.DefaultTimeout
		if in.Timeout <= 0 {
			in.Timeout = auth.DefaultSessionTimeout
		}
	}
	if in.Timeout < MinTimeout || in.Timeout > MaxTimeout {
		return Session{}, fmt.Errorf("%w: timeout must be between %d and %d seconds", ErrInvalid, MinTimeout, MaxTimeout)
	}
	if in.Region == "" {
		in.Region = DefaultRegion
	}
	if !slices.Contains(Regions, in.Region) {
		return Session{}, fmt.Errorf("%w: region must be one of %s", ErrInvalid, strings.Join(Regions, ", "))
	}
	if in.Width < 0 || in.Height < 0 || in.Width > 7680 || in.Height > 4320 {
		return Session{}, fmt.Errorf("%w: viewport must be at most 7680x4320", ErrInvalid)
	}
	var ctxRec *contexts.Context
	if in.ContextID != "" {
		if m.d.Contexts == nil {
			return Session{}, fmt.Errorf("%w: contexts are not enabled", ErrInvalid)
		}
		c, err := m.d.Contexts.Get(ctx, project.ID, in.ContextID)
		if err == nil && c.Deleting() {
			err = contexts.ErrNotFound
		}
		if errors.Is(err, contexts.ErrNotFound) {
			return Session{}, fmt.Errorf("%w: context %s not found", ErrInvalid, in.ContextID)
		}
		if err != nil {
			return Session{}, err
		}
		ctxRec = &c
	}

	st.mark("lookup")
	if err := m.d.Auth.AcquireSlot(ctx, project.ID); err != nil {
		return Session{}, err
	}
	st.mark("slot")
	id, err := newID("sess_")
	if err != nil {
		m.releaseSlot(project.ID)
		return Session{}, err
	}
	var profileDir string
	if ctxRec != nil {
		profiles := filepath.Join(m.o.WorkDir, "profiles")
		err := os.MkdirAll(profiles, 0o711)
		if err == nil {
			err = os.Chmod(profiles, 0o711) // enterable, not listable, by the browser user
		}
		if err != nil {
			m.releaseSlot(project.ID)
			return Session{}, fmt.Errorf("sessions: profiles dir: %w", err)
		}
		profileDir = filepath.Join(profiles, id)
		if err := m.restore(ctx, deadline, *ctxRec, profileDir); err != nil {
			m.releaseSlot(project.ID)
			return Session{}, err
		}
		st.mark("restore")
	}
	now := m.now()
	expires := now.Add(time.Duration(in.Timeout) * time.Second).Truncate(time.Second)
	token, err := m.d.Tokens.Sign(id, project.ID, expires)
	if err != nil {
		if profileDir != "" {
			_ = os.RemoveAll(profileDir)
		}
		m.releaseSlot(project.ID)
		return Session{}, err
	}
	// The item is written PROVISIONING at once (its history records the
	// CREATING step), and the browser launches while it is written.
	x := Session{
		ID: id, ProjectID: project.ID, InternalStatus: StateProvisioning,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: expires, LastEventAt: now,
		KeepAlive: in.KeepAlive, Region: in.Region, TaskARN: m.taskPrefix(), NodeURL: m.o.AdvertiseURL,
		SigningKey: token, ConnectURL: connectURL(origin, id, token),
		Timeout: in.Timeout, Width: in.Width, Height: in.Height,
		UserMetadata: in.UserMetadata,
		Events:       []Event{newEvent(now, "", StateCreating, "create"), newEvent(now, StateCreating, StateProvisioning, "launch browser")},
	}
	if ctxRec != nil {
		x.ContextID, x.ContextPersist, x.ContextKey = ctxRec.ID, in.ContextPersist, ctxRec.StorageKey
	}
	inserted := make(chan error, 1)
	done := make(chan launchResult, 1)
	m.wg.Add(1)
	go m.provision(x, ctxRec, profileDir, in, inserted, done)
	defer st.log(m.log, "wallcrawler: create steps", id)
	err = m.d.Repo.Insert(ctx, x)
	inserted <- err // on error, provision drops the browser and the profile, then frees the slot
	st.mark("insert")
	if err != nil {
		return Session{}, err
	}

	// provision reports the READY item (the answer of its conditional
	// write) or why there is none: no stream or table read on the way.
	timer := time.NewTimer(max(time.Until(deadline), time.Millisecond))
	defer timer.Stop()
	var reason string
	select {
	case r := <-done:
		st.mark("ready")
		if r.err == nil {
			return r.x, nil
		}
		cur, err := m.d.Repo.Get(context.WithoutCancel(ctx), id)
		if err == nil && cur.Error != "" {
			return cur, fmt.Errorf("%w: %s", ErrUnavailable, cur.Error)
		}
		if err == nil {
			return cur, fmt.Errorf("%w: session %s is %s", ErrUnavailable, id, cur.InternalStatus)
		}
		return Session{}, fmt.Errorf("%w: %w", ErrUnavailable, r.err)
	case <-timer.C:
		reason = fmt.Sprintf("browser not ready within %s", m.o.ReadyWait)
	case <-ctx.Done():
		reason = "client went away before the browser was ready"
	}
	// The READY write may just have landed.
	if cur, err := m.d.Repo.Get(context.WithoutCancel(ctx), id); err == nil && cur.InternalStatus == StateReady {
		return cur, nil
	}
	m.fail(id, project.ID, []string{StateProvisioning}, reason)
	return Session{}, fmt.Errorf("%w: %s", ErrUnavailable, reason)
}

// launchResult is what provision reports to the Create waiting for it:
// the READY session, or why it did not become READY.
type launchResult struct {
	x   Session
	err error
}

// restore unpacks c's archive into dir before deadline. On any error dir
// is removed; an archive the contexts store refuses (caps, unsafe entries,
// corruption) is ErrContextArchive.
func (m *Manager) restore(ctx context.Context, deadline time.Time, c contexts.Context, dir string) error {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	start := time.Now()
	_, err := m.d.Contexts.Restore(rctx, c, dir)
	if err == nil {
		return nil
	}
	_ = os.RemoveAll(dir)
	switch {
	case errors.Is(err, contexts.ErrArchiveTooLarge), errors.Is(err, contexts.ErrUnsafeArchive), errors.Is(err, contexts.ErrCorruptArchive):
		m.log.Warn("wallcrawler: context archive refused", "context", c.ID, "project", c.ProjectID, "took", time.Since(start), "err", err)
		return fmt.Errorf("%w: context %s: %w", ErrContextArchive, c.ID, err)
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: context %s not restored within %s", ErrUnavailable, c.ID, m.o.ReadyWait)
	}
	return fmt.Errorf("sessions: restore context %s: %w", c.ID, err)
}

// provision launches the browser of a PROVISIONING session and marks it
// READY (or FAILED). It runs detached from the create request, launching
// while Create writes the item: inserted receives the outcome of that
// write (on error, provision drops the browser and profileDir), and done
// the outcome of the launch. profileDir is the context's restored profile
// ("" without a context), which it removes when the launch fails.
func (m *Manager) provision(x Session, ctxRec *contexts.Context, profileDir string, in CreateInput, inserted <-chan error, done chan<- launchResult) {
	defer m.wg.Done()
	ctx, cancel := context.WithTimeout(m.base, m.o.ReadyWait+5*time.Second)
	defer cancel()
	l := &live{id: x.ID, projectID: x.ProjectID, keepAlive: x.KeepAlive, log: cdp.NewLog(0), context: ctxRec, persist: in.ContextPersist, profileDir: profileDir}
	opts := browser.LaunchOptions{Width: in.Width, Height: in.Height, UserDataDir: profileDir}
	st := newSteps()
	defer st.log(m.log, "wallcrawler: launch steps", x.ID)
	b, err := m.d.Browsers.Launch(ctx, opts)
	st.mark("launch")
	if ierr := <-inserted; ierr != nil {
		// No session: nobody wants the browser. Its slot is freed
		// once it is gone.
		if b != nil {
			l.b = b
			m.dropLive(ctx, l)
		} else if l.profileDir != "" {
			_ = os.RemoveAll(l.profileDir)
		}
		m.releaseSlot(x.ProjectID)
		done <- launchResult{err: ierr}
		return
	}
	if err != nil {
		if l.profileDir != "" {
			_ = os.RemoveAll(l.profileDir)
		}
		m.fail(x.ID, x.ProjectID, []string{StateProvisioning}, "launch browser: "+err.Error())
		done <- launchResult{err: err}
		return
	}
	l.b = b
	l.idleSince = m.now()
	m.mu.Lock()
	m.live[x.ID] = l
	m.mu.Unlock()
	ready, err := m.d.Repo.Transition(ctx, x.ID, []string{StateProvisioning}, StateReady, "browser answers CDP", map[string]av{
		"startedAt":  ddbitem.S(ddbitem.FormatTime(m.now())),
		"publicIP":   ddbitem.S("127.0.0.1"),
		"ecsTaskArn": ddbitem.S(m.taskPrefix() + b.ID()),
		"retryCount": ddbitem.N(int64(b.LaunchRetries())),
	})
	st.mark("ready")
	if err != nil {
		// Released, timed out or failed meanwhile: nobody wants it.
		m.log.Info("wallcrawler: browser launched for a session that moved on", "session", x.ID, "err", err)
		m.mu.Lock()
		mine := m.live[x.ID] == l
		if mine {
			delete(m.live, x.ID)
		}
		m.mu.Unlock()
		if mine { // else the stopper took it and cleans up
			m.dropLive(ctx, l)
		}
		done <- launchResult{err: err}
		return
	}
	m.startRecording(l) // connects in the background
	done <- launchResult{x: ready}
	// After the answer: the baseline of avgCpuUsage (its CPU time only).
	m.sampleWith(l, browser.SampleGroupsCPU)
	st.mark("sample")
	m.wg.Add(1)
	go m.watchCrash(l)
}

// watchCrash ends a session whose browser exits on its own.
func (m *Manager) watchCrash(l *live) {
	defer m.wg.Done()
	<-l.b.Done()
	l.mu.Lock()
	stopping := l.stopping
	l.mu.Unlock()
	if stopping {
		return
	}
	reason := "browser exited"
	if err := l.b.Err(); err != nil {
		reason += ": " + err.Error()
	}
	ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
	defer cancel()
	_, _ = m.stop(ctx, l.id, StateFailed, reason)
}

// fail moves a session from one of from to FAILED and frees its slot.
func (m *Manager) fail(id, projectID string, from []string, reason string) {
	ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
	defer cancel()
	_, err := m.d.Repo.Transition(ctx, id, from, StateFailed, reason, map[string]av{
		"endedAt": ddbitem.S(ddbitem.FormatTime(m.now())), "error": ddbitem.S(reason),
	})
	if err != nil {
		m.log.Warn("wallcrawler: could not mark session failed", "session", id, "err", err)
		return
	}
	m.releaseSlot(projectID)
}

// countBrowserTime adds an ended session's browser time to its project's
// usage.
func (m *Manager) countBrowserTime(x Session) {
	if x.StartedAt.IsZero() || x.EndedAt.Before(x.StartedAt) {
		return
	}
	ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
	defer cancel()
	if err := m.d.Auth.AddUsage(ctx, x.ProjectID, x.EndedAt.Sub(x.StartedAt).Milliseconds(), 0); err != nil {
		m.log.Warn("wallcrawler: count browser time", "project", x.ProjectID, "err", err)
	}
}

func (m *Manager) releaseSlot(projectID string) {
	ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
	defer cancel()
	if err := m.d.Auth.ReleaseSlot(ctx, projectID); err != nil {
		m.log.Warn("wallcrawler: release concurrency slot", "project", projectID, "err", err)
	}
}

// Get returns a session of one of the principal's projects.
func (m *Manager) Get(ctx context.Context, p auth.Principal, id string) (Session, error) {
	x, err := m.d.Repo.Get(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !p.CanUse(x.ProjectID) {
		return Session{}, fmt.Errorf("%w: session %s", ErrNotFound, id)
	}
	return x, nil
}

// List returns the sessions of the principal's selected project, newest
// first, optionally only those of an SDK status and those whose
// userMetadata matches q (see MatchQuery).
func (m *Manager) List(ctx context.Context, p auth.Principal, status, q string) ([]Session, error) {
	all, err := m.d.Repo.ListByProject(ctx, p.ProjectID, 0)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, x := range all {
		if status != "" && x.Status != status {
			continue
		}
		if q != "" && !MatchQuery(x.UserMetadata, q) {
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

// Release ends a session on the client's request (REQUEST_RELEASE): it is
// idempotent, and returns the session as it stands afterwards.
func (m *Manager) Release(ctx context.Context, p auth.Principal, id string) (Session, error) {
	if _, err := m.Get(ctx, p, id); err != nil {
		return Session{}, err
	}
	return m.stop(ctx, id, StateStopped, "REQUEST_RELEASE")
}

// stop ends a session: TERMINATING, browser closed, profile archived when
// the context persists, downloads and logs kept, then final (STOPPED,
// TIMED_OUT or FAILED) with endedAt, and its slot freed. When another
// caller is already stopping it, or it has ended, stop returns it as is.
func (m *Manager) stop(ctx context.Context, id, final, reason string) (Session, error) {
	ctx, cancel := m.detach(ctx, stopBudget)
	defer cancel()
	// Claimed before the write, so that the stream record of this very
	// write does not look like another process ending the session.
	claimed := m.claim(id, true)
	st := newSteps()
	x, err := m.d.Repo.Transition(ctx, id, []string{StateProvisioning, StateReady}, StateTerminating, reason, nil)
	st.mark("terminating")
	if err != nil && claimed {
		m.claim(id, false)
		if errors.Is(err, ErrState) && (x.InternalStatus == StateTerminating || Terminal(x.InternalStatus)) {
			m.ended(id) // another process is ending it
		}
	}
	if errors.Is(err, ErrState) {
		if x.InternalStatus == StateCreating {
			return x, err
		}
		return x, nil
	}
	if err != nil {
		return Session{}, err
	}
	m.mu.Lock()
	l := m.live[id]
	delete(m.live, id)
	m.mu.Unlock()
	defer st.log(m.log, "wallcrawler: stop steps", id)
	set := map[string]av{}
	if l != nil {
		// The last usage figures go with the final write.
		if cpu, rss, ok := m.finishBrowser(ctx, l, st); ok {
			maps.Copy(set, usageAttrs(cpu, rss))
		}
	}
	set["endedAt"] = ddbitem.S(ddbitem.FormatTime(m.now()))
	x, err = m.d.Repo.Transition(ctx, id, []string{StateTerminating}, final, reason, set)
	st.mark("final")
	if err != nil {
		return x, err
	}
	m.releaseSlot(x.ProjectID)
	st.mark("slot")
	m.countBrowserTime(x)
	st.mark("usage")
	return x, nil
}

// claim marks (or unmarks) the live browser of session id as being
// stopped by this process, and reports whether there is one.
func (m *Manager) claim(id string, stopping bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.live[id]
	if l == nil {
		return false
	}
	l.mu.Lock()
	l.stopping = stopping
	l.mu.Unlock()
	return true
}

// finishBrowser closes a live browser and keeps what outlives it. It
// returns the session's last usage figures (avgCpuUsage, memoryUsage) for
// the caller to write (ok false: none). st, when not nil, times its steps.
func (m *Manager) finishBrowser(ctx context.Context, l *live, st *steps) (cpu float64, rss int64, ok bool) {
	if st == nil {
		st = newSteps()
	}
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	// While the browser still runs: the last usage figures, then the end
	// of the recording with the pages' last picture. Not at the same time:
	// the screencast's frame of the last paint may still be on its way
	// (on a loaded machine, for longer than the recording takes to end),
	// and the inspector's replay should end on it.
	cpu, rss, ok = m.sample(l)
	writeRecording := m.endRecording(l)
	st.mark("usage+recording")
	cctx, cancel := context.WithTimeout(ctx, defaultCloseBudget)
	defer cancel()
	persist := l.persist && l.context != nil
	// Only a profile that is kept needs the graceful close (cookies
	// flushed to disk); the others are killed at once.
	closeBrowser := l.b.Kill
	if persist {
		closeBrowser = l.b.Close
	}
	if err := closeBrowser(cctx); err != nil {
		m.log.Warn("wallcrawler: close browser", "session", l.id, "err", err)
	}
	st.mark("close")
	// What is kept of the session, at the same time: the profile (when
	// its context persists), the recording, the downloads and the log.
	var kept sync.WaitGroup
	if persist {
		kept.Go(func() {
			if err := m.d.Contexts.Persist(ctx, *l.context, l.b.UserDataDir()); err != nil {
				m.log.Error("wallcrawler: persist context", "session", l.id, "context", l.context.ID, "err", err)
			}
		})
	}
	if writeRecording != nil {
		kept.Go(func() { writeRecording(ctx) })
	}
	if m.d.Blobs != nil {
		kept.Go(func() {
			var buf bytes.Buffer
			if n, err := zipDir(&buf, l.b.DownloadDir()); err == nil && n > 0 {
				if err := m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, "downloads.zip"), &buf); err != nil {
					m.log.Warn("wallcrawler: keep downloads", "session", l.id, "err", err)
				}
			}
		})
		kept.Go(func() {
			if entries := l.log.Entries(); len(entries) > 0 {
				data, _ := json.Marshal(entries)
				if err := m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, "logs.json"), bytes.NewReader(data)); err != nil {
					m.log.Warn("wallcrawler: keep logs", "session", l.id, "err", err)
				}
			}
		})
	}
	kept.Wait()
	st.mark("kept")
	m.dropLive(ctx, l)
	return cpu, rss, ok
}

// dropLive kills the browser (when still running) and deletes its files
// in the background: the browser is gone when dropLive returns, and its
// slot may be freed, while the removal of its work dir and profile (a
// few hundred milliseconds on a loaded machine) is not waited for
// (Close waits for it).
func (m *Manager) dropLive(ctx context.Context, l *live) {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	m.stopRecording(l)
	cctx, cancel := context.WithTimeout(ctx, defaultCloseBudget)
	defer cancel()
	if err := l.b.Kill(cctx); err != nil {
		m.log.Warn("wallcrawler: kill browser", "session", l.id, "err", err)
		return // still running: its files stay (the next start removes them)
	}
	m.wg.Go(func() {
		// The restored profile first: Remove gives the browser's user id
		// back, and nothing it wrote may outlive that.
		if l.profileDir != "" {
			_ = os.RemoveAll(l.profileDir)
		}
		if err := l.b.Remove(); err != nil {
			m.log.Warn("wallcrawler: remove browser files", "session", l.id, "err", err)
		}
	})
}

func artifactKey(projectID, sessionID, name string) string {
	return projectID + "/" + sessionID + "/" + name
}

// Resolve implements cdp.Resolver: the signingKey must be valid and for
// this session. When the session's browser runs here, the target is the
// browser; when it runs in another quarry process of the installation,
// the target is that process's CDP endpoint (the session's NodeURL),
// dialled with a node-to-node token: the owner applies the filter and
// counts the bytes. A connection that was itself forwarded (req.NodeToken
// set) must carry a valid node token and is never forwarded again.
func (m *Manager) Resolve(ctx context.Context, req cdp.Request) (cdp.Target, error) {
	sessionID, pageID := req.SessionID, req.PageID
	c, err := m.d.Tokens.Verify(req.SigningKey)
	if err != nil {
		return cdp.Target{}, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
	}
	if c.SessionID != sessionID {
		return cdp.Target{}, fmt.Errorf("%w: token of another session", cdp.ErrUnauthorized)
	}
	if pageID != "" && !validTargetID(pageID) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	if req.NodeToken != "" {
		if _, err := m.d.Tokens.VerifyNode(req.NodeToken, sessionID, pageID); err != nil {
			return cdp.Target{}, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
		}
	}
	m.mu.Lock()
	l := m.live[sessionID]
	m.mu.Unlock()
	if l == nil {
		if req.NodeToken != "" {
			return cdp.Target{}, cdp.ErrNotFound // one hop at most
		}
		return m.forward(ctx, req)
	}
	target := l.b.WebSocketURL()
	if pageID != "" {
		target = "ws://" + l.b.DebugAddr() + "/devtools/page/" + pageID
	}
	return cdp.Target{
		URL:         target,
		DownloadDir: l.b.DownloadDir(),
		Log:         l.log,
		Opened: func() {
			l.mu.Lock()
			l.clients++
			l.mu.Unlock()
		},
		Closed: func() {
			l.mu.Lock()
			l.clients--
			if l.clients == 0 {
				l.idleSince = m.now()
			}
			l.mu.Unlock()
		},
		Count: func(n int64) {
			ctx, cancel := context.WithTimeout(m.base, 5*time.Second)
			defer cancel()
			if err := m.d.Repo.AddProxyBytes(ctx, sessionID, n); err != nil {
				m.log.Warn("wallcrawler: count proxy bytes", "session", sessionID, "err", err)
			}
			if err := m.d.Auth.AddUsage(ctx, l.projectID, 0, n); err != nil {
				m.log.Warn("wallcrawler: count project usage", "project", l.projectID, "err", err)
			}
		},
	}, nil
}

// forward returns the target of a session whose browser runs in another
// process: ErrNotFound unless the session is READY on a node that
// advertises an address other than this process's.
func (m *Manager) forward(ctx context.Context, req cdp.Request) (cdp.Target, error) {
	x, err := m.d.Repo.Get(ctx, req.SessionID)
	if errors.Is(err, ErrNotFound) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	if err != nil {
		return cdp.Target{}, fmt.Errorf("sessions: find the owner of %s: %w", req.SessionID, err)
	}
	if x.InternalStatus != StateReady || x.NodeURL == "" || x.NodeURL == m.o.AdvertiseURL || strings.HasPrefix(x.TaskARN, m.taskPrefix()) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	u, err := url.Parse(x.NodeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cdp.Target{}, fmt.Errorf("sessions: session %s has an unusable nodeUrl %q", req.SessionID, x.NodeURL)
	}
	tok, err := m.d.Tokens.SignNode(m.o.NodeID, req.SessionID, req.PageID)
	if err != nil {
		return cdp.Target{}, err
	}
	path := strings.TrimSuffix(u.Path, "/") + "/wallcrawler/cdp/" + req.SessionID
	if req.PageID != "" {
		path += "/page/" + req.PageID
	}
	scheme := "ws"
	if u.Scheme == "https" {
		scheme = "wss"
	}
	target := url.URL{Scheme: scheme, Host: u.Host, Path: path, RawQuery: url.Values{"signingKey": {req.SigningKey}}.Encode()}
	return cdp.Target{URL: target.String(), Forward: true, Header: http.Header{cdp.NodeTokenHeader: {tok}}}, nil
}

func validTargetID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// Run runs the stream notifier, the reaper, the lease renewal and the
// sweep of other nodes' expired leases until ctx ends.
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

// sample reads the usage of one live browser's process group and folds
// it into l.usage; ok is false when there is nothing to store yet (the
// baseline) or /proc could not be read.
func (m *Manager) sample(l *live) (cpu float64, rss int64, ok bool) {
	return m.sampleWith(l, browser.SampleGroups)
}

// sampleWith is sample with browser.SampleGroups or SampleGroupsCPU.
func (m *Manager) sampleWith(l *live, read func(...int) (map[int]browser.ProcUsage, error)) (cpu float64, rss int64, ok bool) {
	pgid := l.b.PID()
	got, err := read(pgid)
	if err != nil {
		m.log.Debug("wallcrawler: sample usage", "session", l.id, "err", err)
		return 0, 0, false
	}
	u, found := got[pgid]
	if !found {
		return 0, 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage.add(u, m.now())
}

// SampleUsage reads the CPU and memory of every browser running in this
// process (one scan of /proc) and stores avgCpuUsage and memoryUsage on
// their READY sessions. Run calls it every Options.SampleEvery.
func (m *Manager) SampleUsage(ctx context.Context) {
	m.mu.Lock()
	ls := make([]*live, 0, len(m.live))
	pgids := make([]int, 0, len(m.live))
	for _, l := range m.live {
		ls = append(ls, l)
		pgids = append(pgids, l.b.PID())
	}
	m.mu.Unlock()
	if len(ls) == 0 {
		return
	}
	got, err := browser.SampleGroups(pgids...)
	if err != nil {
		m.log.Warn("wallcrawler: sample usage", "err", err)
		return
	}
	now := m.now()
	for _, l := range ls {
		u, found := got[l.b.PID()]
		if !found {
			continue
		}
		l.mu.Lock()
		stopping := l.stopping
		cpu, rss, ok := l.usage.add(u, now)
		l.mu.Unlock()
		if !ok || stopping {
			continue
		}
		if err := m.d.Repo.SetUsage(ctx, l.id, cpu, rss, true); err != nil && !errors.Is(err, ErrState) {
			m.log.Warn("wallcrawler: record usage", "session", l.id, "err", err)
		}
	}
}

// Reap stops the sessions past expiresAt (TIMED_OUT), found through
// status-expiresAt-index, and this process's idle sessions without
// keepAlive (STOPPED).
func (m *Manager) Reap(ctx context.Context) {
	now := m.now()
	ids, err := m.d.Repo.ExpiredRunning(ctx, now)
	if err != nil {
		m.log.Warn("wallcrawler: reaper query", "err", err)
	}
	for _, id := range ids {
		if _, err := m.stop(ctx, id, StateTimedOut, "timeout"); err != nil && !errors.Is(err, ErrNotFound) {
			m.log.Warn("wallcrawler: time out session", "session", id, "err", err)
		}
	}
	var idle []string
	m.mu.Lock()
	for id, l := range m.live {
		l.mu.Lock()
		if !l.keepAlive && l.clients == 0 && now.Sub(l.idleSince) >= m.o.IdleGrace {
			idle = append(idle, id)
		}
		l.mu.Unlock()
	}
	m.mu.Unlock()
	for _, id := range idle {
		if _, err := m.stop(ctx, id, StateStopped, "no CDP client connected"); err != nil {
			m.log.Warn("wallcrawler: stop idle session", "session", id, "err", err)
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

// Usage is a project's consumption.
type Usage struct {
	BrowserMinutes float64
	ProxyBytes     int64
}

// ProjectUsage is the project's counters (ended sessions' browser time,
// all proxied bytes) plus the browser time of its sessions still running.
func (m *Manager) ProjectUsage(ctx context.Context, projectID string) (Usage, error) {
	p, err := m.d.Auth.GetProject(ctx, projectID)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{BrowserMinutes: float64(p.UsageBrowserMs) / 60000, ProxyBytes: p.UsageProxyBytes}
	all, err := m.d.Repo.ListByProject(ctx, projectID, 0)
	if err != nil {
		return Usage{}, err
	}
	now := m.now()
	for _, x := range all {
		if x.Status == StatusRunning && !x.StartedAt.IsZero() && now.After(x.StartedAt) {
			u.BrowserMinutes += now.Sub(x.StartedAt).Minutes()
		}
	}
	return u, nil
}

// Page is one page of a live session, as /debug lists it.
type Page struct {
	ID, URL, Title, FaviconURL string
}

// Pages lists the page targets of a live session's browser.
func (m *Manager) Pages(ctx context.Context, p auth.Principal, id string) (Session, []Page, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return Session{}, nil, err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil || x.InternalStatus != StateReady {
		return x, nil, fmt.Errorf("%w: session %s is not running here", ErrState, id)
	}
	// Target.getTargets sees every page, also those of browser contexts
	// that /json/list leaves out (Playwright's, chromedp's).
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := browser.Call(cctx, l.b.WebSocketURL(), "Target.getTargets", nil)
	if err != nil {
		return x, nil, fmt.Errorf("sessions: list pages: %w", err)
	}
	var reply struct {
		TargetInfos []struct {
			TargetID, Type, Title, URL string
		} `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return x, nil, fmt.Errorf("sessions: list pages: %w", err)
	}
	pages := []Page{}
	for _, t := range reply.TargetInfos {
		if t.Type == "page" {
			pages = append(pages, Page{ID: t.TargetID, URL: t.URL, Title: t.Title})
		}
	}
	return x, pages, nil
}

// Logs returns the CDP command/response pairs of a session: live from the
// proxy while it runs, from the blob store afterwards.
func (m *Manager) Logs(ctx context.Context, p auth.Principal, id string) ([]cdp.Entry, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l != nil {
		return l.log.Entries(), nil
	}
	entries := []cdp.Entry{}
	if m.d.Blobs == nil {
		return entries, nil
	}
	rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, "logs.json"))
	if errors.Is(err, blob.ErrNotFound) {
		return entries, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(&entries); err != nil {
		return nil, fmt.Errorf("sessions: read logs: %w", err)
	}
	return entries, nil
}

// Downloads writes a zip of the files the session's browser downloaded.
func (m *Manager) Downloads(ctx context.Context, p auth.Principal, id string, w io.Writer) error {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l != nil {
		_, err := zipDir(w, l.b.DownloadDir())
		return err
	}
	if m.d.Blobs != nil {
		rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, "downloads.zip"))
		if err == nil {
			defer rc.Close()
			_, err = io.Copy(w, rc)
			return err
		}
		if !errors.Is(err, blob.ErrNotFound) {
			return err
		}
	}
	_, err = zipDir(w, "")
	return err
}

// zipDir writes a zip of the regular files under dir (none when dir is
// "" or missing; Chrome's partial ".crdownload" files are skipped) and
// returns how many it wrote.
func zipDir(w io.Writer, dir string) (int, error) {
	zw := zip.NewWriter(w)
	n := 0
	if dir != "" {
		root, err := os.OpenRoot(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, zw.Close()
		}
		if err != nil {
			return 0, fmt.Errorf("sessions: zip downloads: %w", err)
		}
		defer root.Close()
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() || strings.HasSuffix(path, ".crdownload") {
				return nil
			}
			rel, _ := filepath.Rel(dir, path)
			// Through root: a browser that swaps a file for a symbolic
			// link meanwhile cannot make quarry read outside dir.
			f, err := root.Open(rel)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
				return err
			}
			zf, err := zw.Create(filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			if _, err := io.Copy(zf, f); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("sessions: zip downloads: %w", err)
		}
	}
	return n, zw.Close()
}

// MatchQuery reports whether userMetadata matches a ?q= query. The query
// is Browserbase's metadata filter: user_metadata['key']:'value' (nested
// keys as ['a']['b']); a bare word matches any string value containing
// it.
func MatchQuery(md map[string]any, q string) bool {
	q = strings.TrimSpace(q)
	if rest, ok := strings.CutPrefix(q, "user_metadata"); ok {
		var path []string
		for strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return false
			}
			path = append(path, strings.Trim(rest[1:end], `'"`))
			rest = rest[end+1:]
		}
		val, ok := strings.CutPrefix(rest, ":")
		if !ok || len(path) == 0 {
			return false
		}
		val = strings.Trim(val, `'"`)
		var cur any = md
		for _, k := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			cur = mm[k]
		}
		return fmt.Sprint(cur) == val
	}
	data, _ := json.Marshal(md)
	return q == "" || strings.Contains(strings.ToLower(string(data)), strings.ToLower(q))
}

func connectURL(origin, id, token string) string {
	ws := "ws" + strings.TrimPrefix(origin, "http")
	return ws + "/wallcrawler/cdp/" + id + "?signingKey=" + url.QueryEscape(token)
}

func newID(prefix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}
