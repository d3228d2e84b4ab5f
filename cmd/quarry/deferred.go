package main

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
// that waiting cannot heal: the start fails as before.

// systemRetry paces a waiting system's start attempts.
var systemRetry = backoff.Policy{Base: time.Second, Max: 15 * time.Second, Jitter: 0.2}

// errNotYet is a start attempt's answer when something it needs (another
// system) is itself still waiting: it is retried like an unreachable
// backend.
var errNotYet = errors.New("waiting for another system")

// unreachable reports whether err says a backend could not be reached, so
// that a later attempt may succeed: no connection (refused, reset, timed
// out) or a 5xx answer. An answer of another kind (a 4xx such as
// NoSuchBucket or an unrecognised key, a PostgreSQL error) is not.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errNotYet) {
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

// disabledError is a start attempt's answer when the system cannot run on
// this backend at all (a missing DynamoDB feature): it is not retried.
type disabledError struct{ reason string }

func (e disabledError) Error() string { return e.reason }

// systemStart starts one system under sub (which owns what it starts) and
// returns its routes (mux pattern → handler) and its /healthz status.
type systemStart func(ctx context.Context, sub *lifecycle) (routes map[string]http.Handler, status map[string]any, err error)

// slot is one system as the mux and /healthz see it: its routes once it
// has started; until then (or when it cannot run) they answer 503 with
// the reason.
type slot struct {
	name string

	mu      sync.Mutex
	routes  map[string]http.Handler
	status  map[string]any
	waiting bool
}

func newSlot(name string) *slot {
	return &slot{name: name, status: map[string]any{"status": "starting"}}
}

// route returns the handler the mux mounts at pattern.
func (s *slot) route(pattern string) http.Handler {
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

func (s *slot) publish(routes map[string]http.Handler, status map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes, s.status, s.waiting = routes, status, false
}

func (s *slot) disable(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.waiting = map[string]any{"status": "disabled", "reason": reason}, false
}

func (s *slot) wait(err error, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = map[string]any{"status": "waiting", "reason": s.name + " is waiting for its backend: " + err.Error(),
		"since": since.UTC().Format(time.RFC3339)}
	s.waiting = true
}

// health returns a copy of the slot's /healthz status.
func (s *slot) health() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.status)
}

// isWaiting reports whether the system waits for its backend.
func (s *slot) isWaiting() bool {
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

// waitingOf returns the names of the slots that wait, or nil.
func waitingOf(slots []*slot) error {
	var names []string
	for _, s := range slots {
		if s.isWaiting() {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return waitingSystems(names)
}

// startSystem starts the system of s now. When the attempt fails because
// a backend does not answer, what it had started is stopped, the system
// waits (its routes answer 503, /healthz says why) and further attempts
// run in the background with backoff until one succeeds or lc stops. An
// attempt refused with a disabledError disables the system; any other
// failure of the first attempt is returned (the node does not start).
// What a successful attempt started is stopped at shutdown in this
// system's place of lc's order.
func startSystem(lc *lifecycle, s *slot, log *slog.Logger, start systemStart) error {
	sub := systemLifecycle(lc.Context(), log)
	routes, status, err := start(sub.Context(), sub)
	if err == nil {
		lc.onStop(s.name, sub.shutdown)
		lc.group.Go(sub.group.Wait) // a failing part of the system stops the process
		s.publish(routes, status)
		return nil
	}
	undo(sub)
	var dis disabledError
	if errors.As(err, &dis) {
		log.Error(dis.reason, "system", s.name)
		s.disable(dis.reason)
		return nil
	}
	if !unreachable(err) {
		return err
	}
	since := time.Now()
	s.wait(err, since)
	log.Warn("backend unreachable: the system starts when it answers", "system", s.name, "err", err)

	ctx, cancel := context.WithCancel(lc.Context())
	done := make(chan struct{})
	var mu sync.Mutex
	var started *lifecycle
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
			if dis := (disabledError{}); errors.As(err, &dis) {
				log.Error(dis.reason, "system", s.name)
				s.disable(dis.reason)
				return nil
			}
			if !unreachable(err) {
				// The backend answers but refuses: keep trying (an
				// operator may fix it), and say so.
				log.Error("system start failed; retrying", "system", s.name, "err", err)
			} else {
				log.Debug("backend still unreachable", "system", s.name, "err", err)
			}
			s.wait(err, since)
		}
	})
	lc.onStop(s.name+" (started late)", func(sctx context.Context) error {
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
		return started.shutdown(sctx)
	})
	return nil
}

// undo stops what a failed start attempt had started.
// systemLifecycle returns the lifecycle of one system: its context lives
// until the system is stopped (or a part of it fails), also when the
// system runs no goroutine of its own (an errgroup's context ends as soon
// as its Wait returns, which for an empty group is at once: DataShelf's
// console crawls found theirs cancelled before they started).
func systemLifecycle(ctx context.Context, log *slog.Logger) *lifecycle {
	sub := newLifecycle(ctx, log)
	stopped := make(chan struct{})
	sub.group.Go(func() error {
		select {
		case <-stopped:
		case <-sub.ctx.Done():
		}
		return nil
	})
	// The first part recorded, so the last stopped.
	sub.onStop("system lifetime", func(context.Context) error { close(stopped); return nil })
	return sub
}

func undo(sub *lifecycle) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = sub.shutdown(ctx)
}
