package httpserver

import (
	"crypto/sha256"
	"net/http"
	"sync"
)

// credentialHeaders are the headers that carry a client's credential on
// quarry's APIs: a bearer token (Checks, EECAR, DataShelf admin) or a
// Browserbase API key (Wallcrawler).
var credentialHeaders = []string{"Authorization", "X-BB-API-Key"}

// credentialKey names the credential r carries, hashed (a valid and an
// invalid credential alike: a flood of wrong tokens is bounded too); ""
// when it carries none.
func credentialKey(r *http.Request) string {
	for _, h := range credentialHeaders {
		if v := r.Header.Get(h); v != "" {
			sum := sha256.Sum256([]byte(h + "\x00" + v))
			return string(sum[:16])
		}
	}
	return ""
}

// tooManyForCredential is the answer to a request over
// Limits.MaxRequestsPerCredential.
var tooManyForCredential = []byte(`{"error":"too many requests in flight with this credential; wait for some to finish (--max-requests-per-credential)"}`)

// perCredential bounds the requests in flight per credential, so that one
// API key or token cannot hold every connection slot of the listener with
// slow requests while other tenants wait: its request over max is answered
// 429 at once. Requests without a credential are not counted (the
// per-address cap bounds them); upgraded connections have caps of their
// own (per session and project in Wallcrawler).
type perCredential struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func (p *perCredential) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := credentialKey(r)
		if k == "" || r.Header.Get("Upgrade") != "" {
			h.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		if p.n[k] >= p.max {
			p.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(tooManyForCredential)
			return
		}
		p.n[k]++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			if p.n[k]--; p.n[k] == 0 {
				delete(p.n, k)
			}
			p.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}
