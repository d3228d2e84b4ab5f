package sessions

import (
	"context"
	"errors"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

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
		if !stopping {
			m.countRouteBytes(ctx, l)
		}
		if !ok || stopping {
			continue
		}
		if err := m.d.Repo.SetUsage(ctx, l.id, cpu, rss, true); err != nil && !errors.Is(err, ErrState) {
			m.log.Warn("wallcrawler: record usage", "session", l.id, "err", err)
		}
	}
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
