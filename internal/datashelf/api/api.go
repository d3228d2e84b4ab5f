// Package api is DataShelf's HTTP API: public, rate-limited JSON reads of
// navigation, categories and products, image serving from the blob store,
// and HMAC-signed operator endpoints (enqueue, queue status, crawl runs:
// list, read, abort, export).
//
// The handler returned by New expects to be mounted under a prefix (quarry
// mounts it at /datashelf with http.StripPrefix), so it routes paths such as
// /api/products. Every error is JSON: {"error": {"code", "message"}}.
package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/platform/blob"
)

// Defaults applied by Options.EnsureDefaults.
const (
	// DefaultRateLimit is the number of public GET requests a client IP may
	// make per minute.
	DefaultRateLimit = 100
	// SignatureWindow is how far X-Timestamp may be from the server's clock;
	// nonces are remembered for this long after their timestamp.
	SignatureWindow = 5 * time.Minute
	// DefaultKeyRateLimit is the number of signed requests a key may make
	// per minute.
	DefaultKeyRateLimit = 1000
	// DefaultMaxNonces bounds the memory of the replay cache.
	DefaultMaxNonces = 100_000
	// MaxBodyBytes bounds signed request bodies.
	MaxBodyBytes = 1 << 20
)

// Options configures the API handler.
type Options struct {
	// Store is DataShelf's storage. Required.
	Store store.Store
	// Blobs serves GET /images/{key...}. Nil means every image is 404.
	Blobs blob.Store
	// Runs aborts the crawl runs this process runs (POST
	// /api/runs/{id}/abort). Nil answers every abort 409: this server
	// runs no crawls.
	Runs Aborter
	// Keys maps HMAC key ids (the Bearer token) to their secrets. With no
	// keys every signed endpoint answers 401.
	Keys map[string][]byte
	// RateLimit is the number of public GET requests per minute allowed per
	// client IP (token bucket, burst of the same size). 0 means
	// DefaultRateLimit; negative disables the limit.
	RateLimit int
	// KeyRateLimit is the number of signed (scraper) requests per minute
	// allowed per key. 0 means DefaultKeyRateLimit; negative disables it.
	KeyRateLimit int
	// MaxNonces bounds the replay cache; 0 means DefaultMaxNonces. When the
	// cache is full of unexpired nonces signed requests get 503.
	MaxNonces int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives internal errors. Nil discards them.
	Logger *slog.Logger
}

// EnsureDefaults returns a copy of o with every unset field defaulted.
func (o Options) EnsureDefaults() Options {
	if o.RateLimit == 0 {
		o.RateLimit = DefaultRateLimit
	}
	if o.KeyRateLimit == 0 {
		o.KeyRateLimit = DefaultKeyRateLimit
	}
	if o.MaxNonces <= 0 {
		o.MaxNonces = DefaultMaxNonces
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// server holds the handler's dependencies; it has no global state, so
// several can run in one process (and in parallel tests).
type server struct {
	opts    Options
	limiter *rateLimiter // per client IP; nil when disabled
	keys    *rateLimiter // per key id; nil when disabled
	nonces  *nonceCache
}

// New returns DataShelf's API handler. It panics if opts.Store is nil (a
// programming error caught at start).
func New(opts Options) http.Handler {
	if opts.Store == nil {
		panic("api: Options.Store is nil")
	}
	opts = opts.EnsureDefaults()
	s := &server{
		opts:   opts,
		nonces: newNonceCache(opts.MaxNonces),
	}
	if opts.RateLimit > 0 {
		s.limiter = newRateLimiter(opts.RateLimit, time.Minute)
	}
	if opts.KeyRateLimit > 0 {
		s.keys = newRateLimiter(opts.KeyRateLimit, time.Minute)
	}
	mux := http.NewServeMux()
	public := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, s.rateLimit(h))
	}
	public("GET /api/navigation", s.getNavigation)
	public("GET /api/categories", s.listCategories)
	public("GET /api/categories/{id}", s.getCategory)
	public("GET /api/products", s.listProducts)
	public("GET /api/products/{id}", s.getProduct)
	public("GET /images/{key...}", s.getImage)
	mux.Handle("POST /api/scraper/enqueue", s.signed(s.enqueue))
	mux.Handle("GET /api/scraper/status", s.signed(s.status))
	mux.Handle("GET /api/runs", s.signed(s.listRuns))
	mux.Handle("GET /api/runs/{id}", s.signed(s.getRun))
	mux.Handle("POST /api/runs/{id}/abort", s.signed(s.abortRun))
	mux.Handle("GET /api/runs/{id}/products", s.signed(s.exportRun))
	public("GET /{$}", s.index)

	// Method-less patterns catch the other methods so that 405s are JSON.
	for path, allow := range map[string]string{
		"/api/navigation":         "GET, HEAD",
		"/api/categories":         "GET, HEAD",
		"/api/categories/{id}":    "GET, HEAD",
		"/api/products":           "GET, HEAD",
		"/api/products/{id}":      "GET, HEAD",
		"/images/{key...}":        "GET, HEAD",
		"/api/scraper/enqueue":    "POST",
		"/api/scraper/status":     "GET, HEAD",
		"/api/runs":               "GET, HEAD",
		"/api/runs/{id}":          "GET, HEAD",
		"/api/runs/{id}/abort":    "POST",
		"/api/runs/{id}/products": "GET, HEAD",
		"/{$}":                    "GET, HEAD",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
				fmt.Sprintf("method %s is not allowed; use %s", r.Method, allow))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "endpoint not found")
	})
	return s.recoverPanics(mux)
}

// Endpoint is one entry of the API's index: a route and what it answers.
type Endpoint struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	About  string `json:"about"`
}

// Endpoints lists the API's routes, relative to where it is mounted, in
// the order the index shows them.
var Endpoints = []Endpoint{
	{"GET", "/api/navigation", "the navigation tree {items}"},
	{"GET", "/api/categories", "categories (navId, parentId, limit, offset): {items, total, pagination}"},
	{"GET", "/api/categories/{id}", "one category"},
	{"GET", "/api/products", "products (categoryId, q, author, isbn, format, condition, minPrice, maxPrice, available, active, hasSpec, spec.KEY, sort, limit, offset or cursor): {items, total, pagination}"},
	{"GET", "/api/products/{id}", "one product"},
	{"GET", "/images/{key}", "a mirrored product image"},
	{"POST", "/api/scraper/enqueue", "signed: enqueue a crawl job {url, type, priority}"},
	{"GET", "/api/scraper/status", "signed: queue statistics"},
	{"GET", "/api/runs", "signed: crawl runs, newest first (limit, offset): {items, total, pagination}"},
	{"GET", "/api/runs/{id}", "signed: one crawl run with its counters, state and log tail"},
	{"POST", "/api/runs/{id}/abort", "signed: abort a crawl run running on this server"},
	{"GET", "/api/runs/{id}/products", "signed: the products of a crawl run, streamed (format=jsonl or csv)"},
}

// index answers the root of the API with its endpoints, their paths as
// the client addressed them: the mount prefix (such as /datashelf) is the
// part of the request URI that http.StripPrefix took away.
func (s *server) index(w http.ResponseWriter, r *http.Request) {
	prefix := ""
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && strings.HasSuffix(u.Path, r.URL.Path) {
		prefix = strings.TrimSuffix(u.Path, r.URL.Path)
	}
	eps := make([]Endpoint, len(Endpoints))
	for i, e := range Endpoints {
		e.Path = prefix + e.Path
		eps[i] = e
	}
	writeJSON(w, r, http.StatusOK, cachePublic, map[string]any{
		"service":   "datashelf",
		"endpoints": eps,
		"docs":      "docs/datashelf.md#api in quarry's repository",
	})
}

// recoverPanics turns a handler panic into a logged 500 instead of a dropped
// connection.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.opts.Logger.Error("datashelf api: panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
