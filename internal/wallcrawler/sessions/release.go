package sessions

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
)

// Release ends a session on the client's request (REQUEST_RELEASE): it is
// idempotent, and returns the session as it stands afterwards.
func (m *Manager) Release(ctx context.Context, p auth.Principal, id string) (Session, error) {
	if _, err := m.Get(ctx, p, id); err != nil {
		return Session{}, err
	}
	x, err := m.stop(ctx, id, StateStopped, "REQUEST_RELEASE")
	if err == nil && x.InternalStatus == StateTerminating && !m.runsHere(x) {
		// Another node closes the browser and writes the final state:
		// the answer waits for it.
		ctx, cancel := m.detach(ctx, handOverWait)
		defer cancel()
		x = m.awaitEnd(ctx, x)
	}
	return x, err
}

// runsHere reports whether session x's browser runs (or is being
// launched) by this node.
func (m *Manager) runsHere(x Session) bool {
	node := browserNode(x.TaskARN)
	return node == "" || node == m.o.NodeID
}

// stop ends a session: TERMINATING, browser closed, profile archived when
// the context persists, downloads and logs kept, then final (STOPPED,
// TIMED_OUT or FAILED) with endedAt, and its slot freed. When another
// caller is already stopping it, or it has ended, stop returns it as is.
//
// When the browser runs on another node, stop writes TERMINATING only,
// with the final state it asks for (stopAs): that node sees the record,
// closes the browser, writes the final state and frees the slot
// (completeStop), so that the project's concurrency counts the browser
// until it is gone; if that node dies first, the lease sweep ends the
// session and frees the slot. stop then returns the TERMINATING session
// (Release waits for the final state).
func (m *Manager) stop(ctx context.Context, id, final, reason string) (Session, error) {
	ctx, cancel := m.detach(ctx, stopBudget)
	defer cancel()
	// Claimed before the write, so that the stream record of this very
	// write does not look like another process ending the session.
	claimed := m.claim(id, true)
	st := newSteps()
	x, err := m.d.Repo.Transition(ctx, id, []string{StateProvisioning, StateReady}, StateTerminating, reason,
		map[string]av{"stopAs": ddbitem.S(final)})
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
	if l == nil && !m.runsHere(x) {
		return x, nil
	}
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

// handOverWait bounds how long a release through a node without the
// session's browser waits for the node running it to write the final
// state.
const handOverWait = 2 * defaultCloseBudget

// browserNode returns the node named by a session's ecsTaskArn
// ("local:<node>:<browser id>", or "local:<node>:" before the browser
// is up), "" when it names none.
func browserNode(taskARN string) string {
	rest, ok := strings.CutPrefix(taskARN, "local:")
	if !ok {
		return ""
	}
	node, _, ok := strings.Cut(rest, ":")
	if !ok {
		return ""
	}
	return node
}

// awaitEnd waits, until ctx ends, for session x (TERMINATING, handed
// over to the node running its browser) to reach a final state, and
// returns it as it last read it.
func (m *Manager) awaitEnd(ctx context.Context, x Session) Session {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !Terminal(x.InternalStatus) {
		select {
		case <-ctx.Done():
			return x
		case <-tick.C:
		}
		cur, err := m.d.Repo.Get(ctx, x.ID)
		if err != nil {
			continue
		}
		x = cur
	}
	return x
}

// completeStop writes the final state of session id when it is
// TERMINATING, asked for by a process without its browser, once this
// process has closed the browser (set: further attributes of that
// write), then frees its slot and counts its browser time. It reports
// whether it wrote it: false when the session was not TERMINATING (its
// final state is written already) or another process wrote it first.
func (m *Manager) completeStop(ctx context.Context, id string, set map[string]av) bool {
	x, err := m.d.Repo.Get(ctx, id)
	if err != nil || x.InternalStatus != StateTerminating {
		return false
	}
	final := x.StopAs
	if !Terminal(final) {
		final = StateStopped
	}
	reason := "released through another node"
	for _, e := range x.Events {
		if e.To == StateTerminating {
			reason = e.Reason
		}
	}
	set["endedAt"] = ddbitem.S(ddbitem.FormatTime(m.now()))
	x, err = m.d.Repo.Transition(ctx, id, []string{StateTerminating}, final, reason, set)
	if err != nil {
		if !errors.Is(err, ErrState) && !errors.Is(err, ErrNotFound) {
			m.log.Warn("wallcrawler: write the final state of a session ended through another node", "session", id, "err", err)
		}
		return false
	}
	m.releaseSlot(x.ProjectID)
	m.countBrowserTime(x)
	return true
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
		// With the browser closed, the final state the other process
		// asked for is written here, with the last usage figures, and
		// the slot freed; when the other process wrote the final state
		// itself, the usage figures are written on their own.
		cpu, rss, ok := m.finishBrowser(ctx, l, nil)
		set := map[string]av{}
		if ok {
			maps.Copy(set, usageAttrs(cpu, rss))
		}
		if !m.completeStop(ctx, l.id, set) && ok {
			if err := m.d.Repo.SetUsage(ctx, l.id, cpu, rss, false); err != nil {
				m.log.Warn("wallcrawler: record usage", "session", l.id, "err", err)
			}
		}
	}()
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
	m.countRouteBytes(ctx, l)
	m.keep(ctx, l, persist, writeRecording)
	st.mark("kept")
	m.dropLive(ctx, l)
	return cpu, rss, ok
}

// keep writes what outlives the closed browser of l, all at once: the
// profile (when persist, its context persists), the recording (when
// writeRecording is not nil), the downloads and the CDP log. It returns
// when every write ended; failures are logged.
func (m *Manager) keep(ctx context.Context, l *live, persist bool, writeRecording func(context.Context)) {
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
		kept.Go(func() { m.keepDownloads(ctx, l) })
		kept.Go(func() { m.keepLog(ctx, l) })
	}
	kept.Wait()
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
	if l.route != nil {
		m.d.Egress.Drop(l.b.ID())
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

func (m *Manager) releaseSlot(projectID string) {
	ctx, cancel := context.WithTimeout(m.base, defaultCloseBudget)
	defer cancel()
	if err := m.d.Auth.ReleaseSlot(ctx, projectID); err != nil {
		m.log.Warn("wallcrawler: release concurrency slot", "project", projectID, "err", err)
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
