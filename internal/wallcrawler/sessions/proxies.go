package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/quarrydb/quarry/internal/platform/egress"
)

// EgressRoutes finds the egress route of a browser: the way its
// connections leave, which a session with proxies points at its
// upstreams.
type EgressRoutes interface {
	// Route returns the route of the browser with the given id (its
	// connections' one listener), creating it when the browser's listener
	// is not served yet.
	Route(browserID string) *egress.Route
	// Drop forgets the route of a browser that has ended.
	Drop(browserID string)
}

// routeSession points the egress route of l's browser at the session's
// upstream proxies. A session without proxies leaves the route as the
// browser started: everything straight out through the policy.
func (m *Manager) routeSession(l *live, ups []egress.Upstream) error {
	if len(ups) == 0 {
		return nil
	}
	if m.d.Egress == nil {
		return fmt.Errorf("%w: proxies need the egress proxy, which this server does not run", ErrInvalid)
	}
	r := m.d.Egress.Route(l.b.ID())
	r.Set(ups)
	l.route = r
	return nil
}

// countRouteBytes adds the bytes l's browser sent and received through
// its session's upstream proxies since the last call to the session's
// proxyBytes and its project's usage.
func (m *Manager) countRouteBytes(ctx context.Context, l *live) {
	if l.route == nil {
		return
	}
	n := l.route.TakeBytes()
	if n <= 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.d.Repo.AddProxyBytes(cctx, l.id, n); err != nil {
		m.log.Warn("wallcrawler: count upstream proxy bytes", "session", l.id, "err", err)
	}
	if err := m.d.Auth.AddUsage(cctx, l.projectID, 0, n); err != nil {
		m.log.Warn("wallcrawler: count project usage", "project", l.projectID, "err", err)
	}
}
