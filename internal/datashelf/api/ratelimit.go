package api

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// maxBuckets bounds the rate limiter's memory; beyond it full (idle)
// buckets are dropped, which changes nothing for their clients.
const maxBuckets = 100_000

// rateLimiter is a per-key token bucket: capacity limit, refilled at limit
// tokens per period.
type rateLimiter struct {
	limit  float64
	period time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(limit int, period time.Duration) *rateLimiter {
	return &rateLimiter{limit: float64(limit), period: period, buckets: map[string]*bucket{}}
}

// rate is tokens per second.
func (l *rateLimiter) rate() float64 { return l.limit / l.period.Seconds() }

// allow takes a token for key at now. It returns whether the request is
// allowed, the tokens left, when the bucket will be full again and, when
// refused, how long until a token is available.
func (l *rateLimiter) allow(key string, now time.Time) (ok bool, remaining int, reset time.Time, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.sweepLocked(now)
		}
		b = &bucket{tokens: l.limit, last: now}
		l.buckets[key] = b
	}
	l.refillLocked(b, now)
	if b.tokens >= 1 {
		b.tokens--
		ok = true
	} else {
		retryAfter = time.Duration((1 - b.tokens) / l.rate() * float64(time.Second))
	}
	remaining = int(math.Floor(b.tokens))
	reset = now.Add(time.Duration((l.limit - b.tokens) / l.rate() * float64(time.Second)))
	return ok, remaining, reset, retryAfter
}

func (l *rateLimiter) refillLocked(b *bucket, now time.Time) {
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(l.limit, b.tokens+el*l.rate())
		b.last = now
	}
}

// sweepLocked drops full buckets, then arbitrary ones if still too many.
func (l *rateLimiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		l.refillLocked(b, now)
		if b.tokens >= l.limit {
			delete(l.buckets, k)
		}
	}
	for k := range l.buckets {
		if len(l.buckets) < maxBuckets {
			break
		}
		delete(l.buckets, k)
	}
}

// clientIP is the request's peer address without the port. Forwarding
// headers are not trusted: a proxy in front must be configured to pass the
// client's address as RemoteAddr.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateLimit enforces the per-IP limit on public GETs.
func (s *server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.admit(w, s.limiter, clientIP(r)) {
			next.ServeHTTP(w, r)
		}
	})
}

// admit takes a token of key from l and sets the X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds when the bucket
// is full again) headers. When refused it answers 429 with Retry-After
// (seconds) and returns false.
func (s *server) admit(w http.ResponseWriter, l *rateLimiter, key string) bool {
	ok, remaining, reset, retry := l.allow(key, s.opts.Now())
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(int(l.limit)))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixNano())/1e9)), 10))
	if ok {
		return true
	}
	secs := int(math.Ceil(retry.Seconds()))
	if secs < 1 {
		secs = 1
	}
	h.Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, "rate_limited",
		"rate limit of "+strconv.Itoa(int(l.limit))+" requests per minute exceeded; retry in "+strconv.Itoa(secs)+" s")
	return false
}
