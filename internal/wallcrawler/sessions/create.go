package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
)

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
	// Proxies are the session's upstream proxies by host pattern (none:
	// every connection goes straight out through the policy). They stay
	// in this process's memory: never written to the session's item.
	Proxies []egress.Upstream
	// ExtensionID names an extension of the session's project to load
	// into its browser ("": none).
	ExtensionID string

	// extension is the record ExtensionID names, read by Create.
	extension *extensions.Extension
}

// Create starts a session and returns it once READY. origin is the
// scheme and host clients reach quarry at ("http://127.0.0.1:8080"); the
// connectUrl is built from it.
//
// Every refusal that needs no resources (project, timeout, region,
// viewport, context, extension) is made before the concurrency slot is taken; a
// later failure gives the slot back and leaves no restored profile.
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
	in, project, ctxRec, err := m.validateCreate(ctx, p, in)
	if err != nil {
		return Session{}, err
	}
	if in.extension, err = m.lookupExtension(ctx, project.ID, in.ExtensionID); err != nil {
		return Session{}, err
	}
	id, err := newID("sess_")
	if err != nil {
		return Session{}, err
	}
	st.mark("lookup")
	if err := m.d.Auth.AcquireSlot(ctx, project.ID); err != nil {
		return Session{}, err
	}
	st.mark("slot")
	// One cleanup gives back what Create holds (the slot, the restored
	// profile) on every failure, until provision takes both over.
	var profileDir string
	handedOver := false
	defer func() {
		if handedOver {
			return
		}
		if profileDir != "" {
			_ = os.RemoveAll(profileDir)
		}
		m.releaseSlot(project.ID)
	}()
	if ctxRec != nil {
		if profileDir, err = m.restoreProfile(ctx, deadline, *ctxRec, id); err != nil {
			return Session{}, err
		}
		st.mark("restore")
	}
	x, err := m.provisioningItem(id, project.ID, in, ctxRec, origin)
	if err != nil {
		return Session{}, err
	}
	// The item is written PROVISIONING at once (its history records the
	// CREATING step), and the browser launches while it is written. From
	// here on provision owns the slot and the profile: when the write
	// fails, it drops the browser and the profile, then frees the slot.
	inserted := make(chan error, 1)
	done := make(chan launchResult, 1)
	m.wg.Add(1)
	go m.provision(x, ctxRec, profileDir, in, inserted, done)
	handedOver = true
	defer st.log(m.log, "wallcrawler: create steps", id)
	err = m.d.Repo.Insert(ctx, x)
	inserted <- err
	st.mark("insert")
	if err != nil {
		return Session{}, err
	}
	return m.awaitReady(ctx, x, deadline, done, st)
}

// validateCreate checks in against the principal and the project it
// names, and returns it with its defaults filled in, the project, and the
// context to restore (nil without one). It takes no resources.
func (m *Manager) validateCreate(ctx context.Context, p auth.Principal, in CreateInput) (CreateInput, auth.Project, *contexts.Context, error) {
	project := p.Project
	if in.ProjectID != "" && in.ProjectID != p.ProjectID {
		if !p.CanUse(in.ProjectID) {
			return in, project, nil, fmt.Errorf("%w: project %s", ErrNotFound, in.ProjectID)
		}
		var err error
		if project, err = m.d.Auth.GetProject(ctx, in.ProjectID); err != nil {
			return in, project, nil, err
		}
		if project.Status != auth.StatusActive {
			return in, project, nil, fmt.Errorf("%w: project %s is not active", auth.ErrForbidden, project.ID)
		}
	}
	if in.Timeout == 0 {
		in.Timeout = project.DefaultTimeout
		if in.Timeout <= 0 {
			in.Timeout = auth.DefaultSessionTimeout
		}
	}
	if in.Timeout < MinTimeout || in.Timeout > MaxTimeout {
		return in, project, nil, fmt.Errorf("%w: timeout must be between %d and %d seconds", ErrInvalid, MinTimeout, MaxTimeout)
	}
	if in.Region == "" {
		in.Region = DefaultRegion
	}
	if !slices.Contains(Regions, in.Region) {
		return in, project, nil, fmt.Errorf("%w: region must be one of %s", ErrInvalid, strings.Join(Regions, ", "))
	}
	if len(in.Proxies) > 0 && m.d.Egress == nil {
		return in, project, nil, fmt.Errorf("%w: proxies need the egress proxy, which this server does not run", ErrInvalid)
	}
	if in.Width < 0 || in.Height < 0 || in.Width > 7680 || in.Height > 4320 {
		return in, project, nil, fmt.Errorf("%w: viewport must be at most 7680x4320", ErrInvalid)
	}
	if in.ContextID == "" {
		return in, project, nil, nil
	}
	if m.d.Contexts == nil {
		return in, project, nil, fmt.Errorf("%w: contexts are not enabled", ErrInvalid)
	}
	c, err := m.d.Contexts.Get(ctx, project.ID, in.ContextID)
	if err == nil && c.Deleting() {
		err = contexts.ErrNotFound
	}
	if errors.Is(err, contexts.ErrNotFound) {
		return in, project, nil, fmt.Errorf("%w: context %s not found", ErrInvalid, in.ContextID)
	}
	if err != nil {
		return in, project, nil, err
	}
	return in, project, &c, nil
}

// restoreProfile restores c's archive into the profile directory of
// session id, <WorkDir>/profiles/<id>, and returns that directory. On
// error nothing of the profile is left and the directory is "".
func (m *Manager) restoreProfile(ctx context.Context, deadline time.Time, c contexts.Context, id string) (string, error) {
	profiles := filepath.Join(m.o.WorkDir, "profiles")
	err := os.MkdirAll(profiles, 0o711)
	if err == nil {
		err = os.Chmod(profiles, 0o711) // enterable, not listable, by the browser user
	}
	if err != nil {
		return "", fmt.Errorf("sessions: profiles dir: %w", err)
	}
	dir := filepath.Join(profiles, id)
	if err := m.restore(ctx, deadline, c, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// provisioningItem returns the PROVISIONING item of a new session: its
// expiry counted from now, its signingKey and connectUrl.
func (m *Manager) provisioningItem(id, projectID string, in CreateInput, ctxRec *contexts.Context, origin string) (Session, error) {
	now := m.now()
	expires := now.Add(time.Duration(in.Timeout) * time.Second).Truncate(time.Second)
	token, err := m.d.Tokens.Sign(id, projectID, expires)
	if err != nil {
		return Session{}, err
	}
	x := Session{
		ID: id, ProjectID: projectID, InternalStatus: StateProvisioning,
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
	return x, nil
}

// awaitReady waits until deadline for provision's outcome (done) for the
// recorded session x. provision reports the READY item (the answer of its
// conditional write) or why there is none: no stream or table read on the
// way. A session not READY by the deadline, or whose client went away,
// is marked FAILED (its slot freed), unless its READY write just landed.
func (m *Manager) awaitReady(ctx context.Context, x Session, deadline time.Time, done <-chan launchResult, st *steps) (Session, error) {
	timer := time.NewTimer(max(time.Until(deadline), time.Millisecond))
	defer timer.Stop()
	var reason string
	select {
	case r := <-done:
		st.mark("ready")
		if r.err == nil {
			return r.x, nil
		}
		cur, err := m.d.Repo.Get(context.WithoutCancel(ctx), x.ID)
		if err == nil && cur.Error != "" {
			return cur, fmt.Errorf("%w: %s", ErrUnavailable, cur.Error)
		}
		if err == nil {
			return cur, fmt.Errorf("%w: session %s is %s", ErrUnavailable, x.ID, cur.InternalStatus)
		}
		return Session{}, fmt.Errorf("%w: %w", ErrUnavailable, r.err)
	case <-timer.C:
		reason = fmt.Sprintf("browser not ready within %s", m.o.ReadyWait)
	case <-ctx.Done():
		reason = "client went away before the browser was ready"
	}
	// The READY write may just have landed.
	if cur, err := m.d.Repo.Get(context.WithoutCancel(ctx), x.ID); err == nil && cur.InternalStatus == StateReady {
		return cur, nil
	}
	m.fail(x.ID, x.ProjectID, []string{StateProvisioning}, reason)
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
	m.withExtension(ctx, &opts, in.extension)
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
		m.fail(x.ID, x.ProjectID, []string{StateProvisioning, StateTerminating}, "launch browser: "+err.Error())
		done <- launchResult{err: err}
		return
	}
	l.b = b
	if err := m.routeSession(l, in.Proxies); err != nil {
		m.dropLive(ctx, l)
		m.fail(x.ID, x.ProjectID, []string{StateProvisioning, StateTerminating}, "route the browser's egress: "+err.Error())
		done <- launchResult{err: err}
		return
	}
	ready, err := m.markReady(ctx, l)
	st.mark("ready")
	if err != nil {
		done <- launchResult{err: err}
		return
	}
	m.startRecording(ctx, l)
	done <- launchResult{x: ready}
	// After the answer: the baseline of avgCpuUsage (its CPU time only).
	m.sampleWith(l, browser.SampleGroupsCPU)
	st.mark("sample")
	m.wg.Add(1)
	go m.watchCrash(l)
}

// markReady registers the launched browser of l as running here and
// writes its session READY. When the session moved on meanwhile
// (released, timed out or failed), nobody wants the browser: it is
// dropped, unless a stopper took it first (the stopper cleans up then).
func (m *Manager) markReady(ctx context.Context, l *live) (Session, error) {
	l.idleSince = m.now()
	m.mu.Lock()
	m.live[l.id] = l
	m.mu.Unlock()
	ready, err := m.d.Repo.Transition(ctx, l.id, []string{StateProvisioning}, StateReady, "browser answers CDP", map[string]av{
		"startedAt":  ddbitem.S(ddbitem.FormatTime(m.now())),
		"publicIP":   ddbitem.S("127.0.0.1"),
		"ecsTaskArn": ddbitem.S(m.taskPrefix() + l.b.ID()),
		"retryCount": ddbitem.N(int64(l.b.LaunchRetries())),
	})
	if err == nil {
		return ready, nil
	}
	m.log.Info("wallcrawler: browser launched for a session that moved on", "session", l.id, "err", err)
	m.mu.Lock()
	mine := m.live[l.id] == l
	if mine {
		delete(m.live, l.id)
	}
	m.mu.Unlock()
	if mine {
		m.dropLive(ctx, l)
		// Released through another node while the browser launched:
		// with the browser gone, its final state and slot are this
		// process's to write and free.
		m.completeStop(ctx, l.id, map[string]av{})
	}
	return Session{}, err
}

// connectURL returns the connectUrl of session id: origin's WebSocket
// scheme and host, the CDP path and the signingKey.
func connectURL(origin, id, token string) string {
	ws := "ws" + strings.TrimPrefix(origin, "http")
	return ws + "/wallcrawler/cdp/" + id + "?signingKey=" + url.QueryEscape(token)
}
