// Package datashelf is the DataShelf system: a bookshop crawled into
// navigation, categories and products, served by a read API. New opens
// its store and assembles the API; crawls run from the command line
// (quarry datashelf crawl) or the console, through the crawler package.
//
// The parts live in subpackages: store (the PostgreSQL and SQLite
// backends behind one interface), dispatch (the job dispatcher), crawler,
// extract (the site profile), fixture (a generated shop for tests) and
// api.
package datashelf

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/quarrydb/quarry/ddb/sigv4"
	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/crawler"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Deps are what DataShelf takes from the process that runs it.
type Deps struct {
	// DataDir holds the SQLite database when no PostgreSQL is configured.
	DataDir string
	// Blobs holds the mirrored product images.
	Blobs blob.Store
	// Logger logs the system's work (default: discard).
	Logger *slog.Logger
	// Policy is the network policy of the crawls the console and the API
	// start (nil: fetch's default, public addresses only).
	Policy *fetch.Policy
	// Version is quarry's version, in the crawler's user agent.
	Version string
}

// System is a running DataShelf.
type System struct {
	store   store.Store
	blobs   blob.Store
	fetcher *fetch.Fetcher
	runner  *crawler.Runner
	handler http.Handler
}

// OpenStore opens DataShelf's store: PostgreSQL when cfg.DB is set,
// SQLite at <dataDir>/datashelf.db otherwise. The caller closes it.
func OpenStore(ctx context.Context, cfg config.DataShelf, dataDir string) (store.Store, error) {
	if cfg.DB != "" {
		s, err := postgres.Open(ctx, cfg.DB, nil)
		if err != nil {
			return nil, fmt.Errorf("datashelf: %w", err)
		}
		return s, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	s, err := sqlite.Open(ctx, filepath.Join(dataDir, "datashelf.db"), nil)
	if err != nil {
		return nil, fmt.Errorf("datashelf: %w", err)
	}
	return s, nil
}

// New opens DataShelf's store and assembles its API.
func New(ctx context.Context, cfg config.DataShelf, deps Deps) (*System, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	keys := map[string][]byte{}
	if cfg.Keys != "" {
		m, err := sigv4.LoadCredentials(cfg.Keys) // the same "ID SECRET" file format
		if err != nil {
			return nil, fmt.Errorf("datashelf keys: %w", err)
		}
		for id, secret := range m {
			keys[id] = []byte(secret)
		}
	}
	st, err := OpenStore(ctx, cfg, deps.DataDir)
	if err != nil {
		return nil, err
	}
	log = log.With("system", "datashelf")
	// The crawls started from the console or the API run as `quarry
	// datashelf crawl` would (robots.txt, the World of Books profile),
	// under the serve network policy, until Close.
	fo := crawler.FetchOptions(deps.Version)
	fo.Policy = deps.Policy
	f := fetch.New(fo)
	runner := crawler.NewRunner(context.WithoutCancel(ctx), crawler.Options{Store: st, Fetcher: f, Blobs: deps.Blobs, Logger: log})
	h := api.New(api.Options{Store: st, Blobs: deps.Blobs, Keys: keys, Runs: runner, Logger: log})
	return &System{store: st, blobs: deps.Blobs, fetcher: f, runner: runner, handler: http.StripPrefix("/datashelf", h)}, nil
}

// Routes returns the system's handlers by mux pattern: the API at
// /datashelf/.
func (s *System) Routes() map[string]http.Handler {
	return map[string]http.Handler{"/datashelf/": jsonhttp.BoundedIDs(s.handler, errorShape)}
}

// Run returns at once: DataShelf's crawls run where they are started.
func (s *System) Run(context.Context) error { return nil }

// Health returns nil: /healthz says nothing more of DataShelf.
func (s *System) Health() map[string]any { return nil }

// Close stops the crawl running in this process (its run is recorded as
// aborted) and closes the store.
func (s *System) Close(context.Context) error {
	s.runner.Stop()
	s.fetcher.Close()
	return s.store.Close()
}

// Runner returns the runner of the crawls the console and the API start.
func (s *System) Runner() *crawler.Runner { return s.runner }

// Store returns the system's store.
func (s *System) Store() store.Store { return s.store }

// Blobs returns the store of the mirrored images.
func (s *System) Blobs() blob.Store { return s.blobs }

// Ping checks that the database answers.
func (s *System) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// errorShape is DataShelf's error shape, for paths the API never sees.
func errorShape(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "not_found", "message": msg}})
}
