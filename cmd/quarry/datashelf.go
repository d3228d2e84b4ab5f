package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/quarrydb/quarry/ddb/sigv4"
	"github.com/quarrydb/quarry/internal/datashelf/api"
	"github.com/quarrydb/quarry/internal/datashelf/store"
	"github.com/quarrydb/quarry/internal/datashelf/store/postgres"
	"github.com/quarrydb/quarry/internal/datashelf/store/sqlite"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
)

// openDataShelf opens DataShelf's store (SQLite under the data directory,
// or PostgreSQL) and its blob store.
func openDataShelf(ctx context.Context, c *config.Config) (store.Store, blob.Store, error) {
	blobs, err := blob.NewDir(filepath.Join(c.DataDir, "blobs"))
	if err != nil {
		return nil, nil, err
	}
	if c.DataShelfDB != "" {
		s, err := postgres.Open(ctx, c.DataShelfDB, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("datashelf: %w", err)
		}
		return s, blobs, nil
	}
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return nil, nil, err
	}
	s, err := sqlite.Open(ctx, filepath.Join(c.DataDir, "datashelf.db"), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("datashelf: %w", err)
	}
	return s, blobs, nil
}

// dataShelfHandler returns the DataShelf API, to be mounted at /datashelf.
func dataShelfHandler(c *config.Config, st store.Store, blobs blob.Store, log *slog.Logger) (http.Handler, error) {
	keys := map[string][]byte{}
	if c.DataShelfKeys != "" {
		m, err := sigv4.LoadCredentials(c.DataShelfKeys) // the same "ID SECRET" file format
		if err != nil {
			return nil, fmt.Errorf("datashelf keys: %w", err)
		}
		for id, secret := range m {
			keys[id] = []byte(secret)
		}
	}
	h := api.New(api.Options{Store: st, Blobs: blobs, Keys: keys, Logger: log.With("system", "datashelf")})
	return http.StripPrefix("/datashelf", h), nil
}
