// Package blob stores binary objects (images, archives) by key: on local
// disk by default, in an S3-compatible store at scale. Systems depend on the
// Store interface only.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrNotFound is returned for a key that holds no object.
var ErrNotFound = errors.New("blob: not found")

// ErrBadKey is returned for keys that are empty, absolute, or climb out of
// the store with "..".
var ErrBadKey = errors.New("blob: invalid key")

// Store keeps objects by key. Keys are slash-separated relative paths such
// as "images/ab/abcdef.jpg". Implementations are safe for concurrent use.
type Store interface {
	// Put writes the object at key, replacing any previous one. The object
	// becomes visible whole or not at all.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object at key; the caller MUST close it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the object; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Object is one stored object, as List reports it.
type Object struct {
	Key     string
	ModTime time.Time
}

// Lister is a Store that lists its objects (Dir and S3 are).
type Lister interface {
	// List returns, in key order (bytewise), at most limit objects whose
	// keys start with prefix and sort after after ("": from the first).
	// Fewer than limit means there are no more.
	List(ctx context.Context, prefix, after string, limit int) ([]Object, error)
}

// ContentKey returns a content-addressed key for data: prefix, then the
// first two hex digits of its SHA-256, then the whole hash and ext
// ("images/ab/ab12….jpg"). Storing the same bytes twice yields one object.
func ContentKey(prefix string, data []byte, ext string) string {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	return strings.TrimSuffix(prefix, "/") + "/" + h[:2] + "/" + h + ext
}

// Dir is a Store on the local file system under Root.
type Dir struct {
	Root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a Dir store rooted at root, creating it when missing.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Dir{Root: root}, nil
}

// checkKey returns ErrBadKey for keys that are empty, absolute, contain a
// backslash or an empty, "." or ".." segment. Every Store applies it, so a
// key valid for one backend is valid for all.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w: %q", ErrBadKey, key)
		}
	}
	return nil
}

func (d *Dir) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.Root, filepath.FromSlash(key)), nil
}

// Put writes to a temporary file, syncs it and renames it into place.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := io.Copy(f, readerWithContext{ctx, r}); err != nil {
		f.Close()
		return fmt.Errorf("blob: write %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("blob: sync %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}

// Get opens the object's file.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return f, nil
}

// Delete removes the object's file.
func (d *Dir) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}

type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

var _ Lister = (*Dir)(nil)

// List implements Lister: it walks the directories in key order, visiting
// only those that can hold keys after after, and stops at limit. Files
// whose names start with "." (Put's temporary files) are not objects.
func (d *Dir) List(ctx context.Context, prefix, after string, limit int) ([]Object, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []Object
	var walk func(dir, keyPrefix string) error
	walk = func(dir, keyPrefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("blob: list: %w", err)
		}
		// A directory's keys are name + "/" + ...: sorted by that, the
		// walk yields keys in bytewise order.
		sortKey := func(e os.DirEntry) string {
			if e.IsDir() {
				return e.Name() + "/"
			}
			return e.Name()
		}
		slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
		for _, e := range entries {
			if len(out) >= limit {
				return nil
			}
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			key := keyPrefix + e.Name()
			if e.IsDir() {
				sub := key + "/"
				// Every key under sub sorts before after unless after
				// is within sub or sorts before it; none can match a
				// prefix that neither is within sub nor starts with it.
				if sub <= after && !strings.HasPrefix(after, sub) {
					continue
				}
				if !strings.HasPrefix(sub, prefix) && !strings.HasPrefix(prefix, sub) {
					continue
				}
				if err := walk(filepath.Join(dir, e.Name()), sub); err != nil {
					return err
				}
				continue
			}
			if key <= after || !strings.HasPrefix(key, prefix) || !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, Object{Key: key, ModTime: info.ModTime()})
		}
		return nil
	}
	if err := walk(d.Root, ""); err != nil {
		return nil, err
	}
	return out, nil
}
