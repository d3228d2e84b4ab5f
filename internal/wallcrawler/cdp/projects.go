package cdp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// MaxConnsPerProjectSetting names the setting of the cap on one
// project's connections in its 429 message.
const MaxConnsPerProjectSetting = "--wallcrawler-max-conns-per-project"

// ProjectConns caps the WebSocket connections one project holds at once
// in this process, its CDP clients and live viewers together, so that one
// tenant cannot take the listener's whole pool of upgraded connections:
// the other projects keep the rest. A nil *ProjectConns caps nothing.
// Connections forwarded from another process count here too, on the
// process that owns the session's browser, as they hold its connections.
type ProjectConns struct {
	max    int
	warned atomic.Int64 // unix seconds of the last refusal logged

	mu sync.Mutex
	n  map[string]int // project id → connections being set up or open
}

// NewProjectConns returns a cap of max connections per project; nil (no
// cap) when max is not positive.
func NewProjectConns(max int) *ProjectConns {
	if max <= 0 {
		return nil
	}
	return &ProjectConns{max: max, n: map[string]int{}}
}

// Max returns the cap (0 for none).
func (p *ProjectConns) Max() int {
	if p == nil {
		return 0
	}
	return p.max
}

// Acquire takes one of project's connections; false when it holds them
// all. Each true must be matched by one Release.
func (p *ProjectConns) Acquire(project string) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[project] >= p.max {
		return false
	}
	p.n[project]++
	return true
}

// Release gives back a connection Acquire took.
func (p *ProjectConns) Release(project string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[project]--; p.n[project] <= 0 {
		delete(p.n, project)
	}
}

// message is the 429's message.
func (p *ProjectConns) message() string {
	return fmt.Sprintf("Too many WebSocket connections (CDP and live view) for this project: at most %d at once (%s)", p.max, MaxConnsPerProjectSetting)
}

// Refuse answers a connection over project's cap: 429 in Browserbase's
// error shape, with Retry-After, before any upgrade. It logs the refusal
// at most once a second, so that a flood does not flood the log too.
func (p *ProjectConns) Refuse(ctx context.Context, w http.ResponseWriter, log *slog.Logger, project string) {
	if now := time.Now().Unix(); p.warned.Swap(now) != now {
		log.WarnContext(ctx, "wallcrawler: too many connections for one project", "project", project, "max", p.max)
	}
	w.Header().Set("Retry-After", "1")
	httpError(w, http.StatusTooManyRequests, p.message())
}
