package console

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Sign-in throttling: after signinMaxFailures failed sign-ins within
// signinWindow from one client address with one kind of credential, that
// address's further sign-ins of that kind are answered 429 with
// Retry-After until the oldest failure leaves the window. A right
// credential does not reset the count: guessing gains nothing from
// interleaving a known token.
const (
	signinMaxFailures = 10
	signinWindow      = time.Minute
	// signinMaxClients bounds the addresses tracked at once; past it the
	// entries whose failures have all left the window are dropped first.
	signinMaxClients = 100_000
)

// signinThrottle counts recent failed sign-ins per client and realm.
type signinThrottle struct {
	mu       sync.Mutex
	failures map[throttleKey][]time.Time // oldest first, within signinWindow
}

type throttleKey struct{ client, realm string }

// wait returns how long client must wait before its next sign-in with
// realm is tried, or 0.
func (s *signinThrottle) wait(client, realm string, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := throttleKey{client, realm}
	recent := s.recentLocked(k, now)
	if len(recent) < signinMaxFailures {
		return 0
	}
	return recent[len(recent)-signinMaxFailures].Add(signinWindow).Sub(now)
}

// fail records a failed sign-in of client with realm at now.
func (s *signinThrottle) fail(client, realm string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures == nil {
		s.failures = map[throttleKey][]time.Time{}
	}
	if len(s.failures) >= signinMaxClients {
		for k := range s.failures {
			s.recentLocked(k, now)
		}
	}
	k := throttleKey{client, realm}
	s.failures[k] = append(s.recentLocked(k, now), now)
}

// recentLocked returns k's failures within the window, forgetting the
// older ones (and k, when none is left).
func (s *signinThrottle) recentLocked(k throttleKey, now time.Time) []time.Time {
	fs := s.failures[k]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= signinWindow {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(s.failures, k)
		return nil
	}
	s.failures[k] = fs
	return fs
}

// clientAddr is the address a request comes from: the last address of
// X-Forwarded-For (the one the trusted proxy saw; the header only reaches
// here from a trusted proxy), else RemoteAddr's host.
func clientAddr(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		parts := strings.Split(xff, ",")
		if last := strings.TrimSpace(parts[len(parts)-1]); last != "" {
			return last
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
