package store

import (
	"context"
	"os"
	"path/filepath"
)

// ExportFile writes table in format (Export) to the file at path, created
// atomically: the rows go to a temporary file beside it, synced, then
// renamed over path, so that path holds a whole export or what it held
// before. It returns the number of rows written.
func ExportFile(ctx context.Context, admin Admin, table, format, path string) (int, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := Export(ctx, admin, table, format, f)
	if err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return 0, err
	}
	done = true
	return n, nil
}
