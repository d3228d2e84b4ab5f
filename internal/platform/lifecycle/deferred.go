package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarrydb/quarry/internal/platform/backoff"
)

// A system whose backend (the DynamoDB endpoint, PostgreSQL, the S3
// bucket) does not answer when `quarry serve` starts is not a reason to
// stop the whole node: that system waits, in the background, and starts
// by itself once its backend answers, while the others serve and /healthz
// names what is missing. A backend that answers with a refusal (a missing
// bucket, wrong credentials, a PostgreSQL error) is a configuration error
// that waiting cannot heal: the start fails.

// systemRetry paces a waiting system's start attempts.
var systemRetry = backoff.Policy{Base: time.Second, Max: 15 * time.Second, Jitter: 0.2}

// ErrNotYet is a start attempt's answer when something it needs (another
// system) is itself still waiting: it is retried like an Unreachable
// backend.
var ErrNotYet = errors.New("waiting for another system")

// Unreachable reports whether err says a backend could not be reached, so
// that a later attempt may succeed: no connection (refused, reset, timed
// out) or a 5xx answer. An answer of another kind (a 4xx such as
// NoSuchBucket or an unrecognised key, a PostgreSQL error) is not.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNotYet) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return false
	}
	// The SDK wraps a failed send in a ResponseError of status 0.
	var send *smithyhttp.RequestSendError
	var ne net.Error
	if errors.As(err, &send) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() >= 500
}

// Disabled is a start attempt's answer when the system cannot run on
// this backend at all (a missing DynamoDB feature): it is not retried.
type Disabled struct{ Reason string }

func (e Disabled) Error() string { return e.Reason }

// StartFunc starts one system under sub (which owns what it starts) and
// returns its routes (mux pattern → handler) and its /healthz status.
type StartFunc func(ctx context.Context, sub *Lifecycle) (routes map[string]http.Handler, status map[string]any, err error)

// Slot is one system as the mux and /healthz see it: its routes once it
// has started; until then (or when it cannot run) they answer 503 with
// the reason.
type Slot struct {
	name string

	mu      sync.Mutex
	routes  map[string]http.Handler
	status  map[string]any
	waiting bool
}

// NewSlot returns the slot of the system called name, starting.
func NewSlot(name string) *Slot {
	return &Slot{name: name, status: map[string]any{"status": "starting"}}
}

// Route returns the handler the mux mounts at pattern.
func (s *Slot) Route(pattern string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.routes[pattern]
		reason, _ := s.status["reason"].(string)
		waiting := s.waiting
		s.mu.Unlock()
		if h != nil {
			h.ServeHTTP(w, r)
			return
		}
		if waiting {
			unavailable(w, reason, 5)
			return
		}
		unavailable(w, reason, 3600)
	})
}

// unavailable answers 503 with a JSON error and Retry-After.
func unavailable(w http.ResponseWriter, reason string, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": reason})
}

func (s *Slot) publish(routes map[string]http.Handler, status map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes, s.status, s.waiting = routes, status, false
}

// Disable marks the system as not running here, for reason.
func (s *Slot) Disable(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.waiting = map[string]any{"status": "disabled", "reason": reason}, false
}

func (s *Slot) wait(err error, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = map[string]any{"status": "waiting", "reason": s.name + " is waiting for its backend: " + err.Error(),
		"since": since.UTC().Format(time.RFC3339)}
	s.waiting = true
}

// Name returns the system's name.
func (s *Slot) Name() string { return s.name }

// Health returns a copy of the Slot's /healthz status.
func (s *Slot) Health() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.status)
}

// IsWaiting reports whether the system waits for its backend.
func (s *Slot) IsWaiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// waitingSystems is /healthz's failure while systems wait for their
// backends: the node is degraded, not down.
type waitingSystems []string

func (w waitingSystems) Error() string {
	return "waiting for their backends: " + strings.Join(w, ", ")
}

// Degraded marks the failure as partial (httpserver.HealthDetails).
func (w waitingSystems) Degraded() bool { return true }

// Waiting returns the names of the slots that wait, or nil.
func Waiting(slots []*Slot) error {
	var names []string
	for _, s := range slots {
		if s.IsWaiting() {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return waitingSystems(names)
}

// StartSystem starts the system of s now. When the attempt fails because
// a backend does not answer, what it had started is stopped, the system
// waits (its routes answer 503, /healthz says why) and further attempts
// run in the background with backoff until one succeeds or lc stops. An
// attempt refused with a Disabled disables the system; any other
// failure of the first attempt is returned (the node does not start).
// What a successful attempt started is stopped at shutdown in this
// system's place of lc's order.
func StartSystem(lc *Lifecycle, s *Slot, log *slog.Logger, start StartFunc) error {
	sub := systemLifecycle(lc.Context(), log)
	routes, status, err := start(sub.Context(), sub)
	if err == nil {
		lc.OnStop(s.name, sub.Shutdown)
		lc.group.Go(sub.group.Wait) // a failing part of the system stops the process
		s.publish(routes, status)
		return nil
	}
	undo(sub)
	var dis Disabled
	if errors.As(err, &dis) {
		log.Error(dis.Reason, "system", s.name)
		s.Disable(dis.Reason)
		return nil
	}
	if !Unreachable(err) {
		return err
	}
	since := time.Now()
	s.wait(err, since)
	log.Warn("backend Unreachable: the system starts when it answers", "system", s.name, "err", err)

	ctx, cancel := context.WithCancel(lc.Context())
	done := make(chan struct{})
	var mu sync.Mutex
	var started *Lifecycle
	lc.group.Go(func() error {
		defer close(done)
		b := systemRetry.Start()
		for {
			if b.Wait(ctx) != nil {
				return nil
			}
			sub := systemLifecycle(ctx, log)
			routes, status, err := start(sub.Context(), sub)
			if err == nil {
				mu.Lock()
				started = sub
				mu.Unlock()
				lc.group.Go(sub.group.Wait)
				s.publish(routes, status)
				log.Info("backend answers: system started", "system", s.name, "waited", time.Since(since).Round(time.Millisecond))
				return nil
			}
			undo(sub)
			if ctx.Err() != nil {
				return nil
			}
			if dis := (Disabled{}); errors.As(err, &dis) {
				log.Error(dis.Reason, "system", s.name)
				s.Disable(dis.Reason)
				return nil
			}
			if !Unreachable(err) {
				// The backend answers but refuses: keep trying (an
				// operator may fix it), and say so.
				log.Error("system start failed; retrying", "system", s.name, "err", err)
			} else {
				log.Debug("backend still Unreachable", "system", s.name, "err", err)
			}
			s.wait(err, since)
		}
	})
	lc.OnStop(s.name+" (started late)", func(sctx context.Context) error {
		cancel()
		select {
		case <-done:
		case <-sctx.Done():
			return fmt.Errorf("start attempt still running: %w", sctx.Err())
		}
		mu.Lock()
		defer mu.Unlock()
		if started == nil {
			return nil
		}
		return started.Shutdown(sctx)
	})
	return nil
}

// systemLifecycle returns the Lifecycle of one system: its context lives
// until the system is stopped (or a part of it fails), also when the
// system runs no goroutine of its own (an errgroup's context ends as soon
// as its Wait returns, which for an empty group is at once: DataShelf's
// console crawls found theirs cancelled before they started).
func systemLifecycle(ctx context.Context, log *slog.Logger) *Lifecycle {
	sub := New(ctx, log)
	stopped := make(chan struct{})
	sub.group.Go(func() error {
		select {
		case <-stopped:
		case <-sub.ctx.Done():
		}
		return nil
	})
	// The first part recorded, so the last stopped.
	sub.OnStop("system lifetime", func(context.Context) error { close(stopped); return nil })
	return sub
}

// undo stops what a failed start attempt had started.
func undo(sub *Lifecycle) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = sub.Shutdown(ctx)
}
