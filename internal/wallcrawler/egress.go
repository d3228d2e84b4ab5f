package wallcrawler

import (
	"context"
	"net"
	"sync"

	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// routes holds the egress route of every running browser, by browser id:
// each browser has a listener of its own on the egress proxy (in its
// network namespace, or on the host's loopback without one), and the
// route served there is how its session's connections leave (sessions
// with proxies point it at their upstreams).
type routes struct {
	mu sync.Mutex
	m  map[string]*egress.Route
}

// Route implements sessions.EgressRoutes.
func (r *routes) Route(browserID string) *egress.Route {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*egress.Route{}
	}
	rt := r.m[browserID]
	if rt == nil {
		rt = &egress.Route{}
		r.m[browserID] = rt
	}
	return rt
}

// Drop implements sessions.EgressRoutes.
func (r *routes) Drop(browserID string) {
	r.mu.Lock()
	delete(r.m, browserID)
	r.mu.Unlock()
}

// serveBrowserEgress returns the browser provider's ServeEgress: it
// serves a browser's own listener with that browser's route until the
// listener closes (the browser ended). A listener on the host's loopback
// (no network namespace) is reserved in the policy while served, so that
// no browser reaches another's way out (and its session's upstreams)
// through the egress proxy.
func (s *System) serveBrowserEgress(policy *fetch.Policy) func(net.Listener, browser.EgressListener) error {
	return func(l net.Listener, el browser.EgressListener) error {
		if el.HostNetwork {
			addr := l.Addr().String()
			if err := policy.Reserve(context.Background(), "a browser's egress port", addr); err != nil {
				_ = l.Close()
				return err
			}
			defer policy.Unreserve(addr)
		}
		defer s.routes.Drop(el.Browser)
		return s.egress.ServeRoute(l, s.routes.Route(el.Browser))
	}
}
