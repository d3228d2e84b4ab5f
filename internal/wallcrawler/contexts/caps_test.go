package contexts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts/contextstest"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// capsEnv is a contexts store with the given caps.
func capsEnv(t *testing.T, opts *contexts.Options) (*contexts.Store, *blob.Dir) {
	t.Helper()
	s, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := ddb.NewClient(s)
	names, err := tables.EnsureTables(context.Background(), client, "")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return contexts.New(client, names, blobs, opts), blobs
}

// diskUsage sums the sizes of the regular files under dir and counts its
// entries (dir itself excluded).
func diskUsage(t *testing.T, dir string) (bytes int64, entries int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if p == dir {
			return nil
		}
		entries++
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			bytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, entries
}

func TestRestoreCaps(t *testing.T) {
	t.Parallel()
	small := &contexts.Options{MaxUnpackBytes: 10 << 20, MaxUnpackEntries: 1000}
	tests := []struct {
		name    string
		opts    *contexts.Options
		write   func(io.Writer) error
		want    error
		what    string // LimitError.What when want is ErrArchiveTooLarge
		maxLeft int64  // bytes the failed restore may leave (none: dir removed)
	}{
		{"2 GiB bomb, default caps", nil, contextstest.Bomb{Name: "Default/bomb", Size: 2 << 30}.Write, contexts.ErrArchiveTooLarge, "unpacked bytes", 0},
		{"50 MiB zeros, 10 MiB cap", small, contextstest.Bomb{Name: "zeros", Size: 50 << 20}.Write, contexts.ErrArchiveTooLarge, "unpacked bytes", 0},
		{"files adding up past the cap", small, func(w io.Writer) error { return manyFiles(w, 3, 4<<20) }, contexts.ErrArchiveTooLarge, "unpacked bytes", 0},
		{"200k entries, default caps", nil, func(w io.Writer) error { return contextstest.Entries(w, 200_000, true) }, contexts.ErrArchiveTooLarge, "entries", 0},
		{"2000 files, 1000-entry cap", small, func(w io.Writer) error { return contextstest.Entries(w, 2000, false) }, contexts.ErrArchiveTooLarge, "entries", 0},
		{"skipped data past the stream bound", small, contextstest.Bomb{Name: "odd", Size: 100 << 20, Type: 'Z'}.Write, contexts.ErrArchiveTooLarge, "uncompressed archive bytes", 0},
		{"header shorter than its data", nil, func(w io.Writer) error { return contextstest.ShortHeader(w, "short", 10, 4<<20) }, contexts.ErrCorruptArchive, "", 0},
		{"header longer than its data", nil, func(w io.Writer) error { return truncated(w) }, contexts.ErrCorruptArchive, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, blobs := capsEnv(t, tt.opts)
			c, err := store.Create(context.Background(), "proj_a", "")
			if err != nil {
				t.Fatal(err)
			}
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(tt.write(pw)) }()
			if err := blobs.Put(context.Background(), c.StorageKey, pr); err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "profile")
			start := time.Now()
			ok, err := store.Restore(context.Background(), c, dir)
			took := time.Since(start)
			if ok || !errors.Is(err, tt.want) {
				t.Fatalf("Restore = %v, %v; want %v", ok, err, tt.want)
			}
			if tt.what != "" {
				var le *contexts.LimitError
				if !errors.As(err, &le) || le.What != tt.what {
					t.Fatalf("error %v, want a LimitError on %s", err, tt.what)
				}
			}
			if n, entries := diskUsage(t, parent); n > tt.maxLeft || entries != 0 {
				t.Fatalf("left %d bytes in %d entries under the parent dir", n, entries)
			}
			t.Logf("refused in %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// A restore within the caps still works, at exactly the caps.
func TestRestoreAtCaps(t *testing.T) {
	t.Parallel()
	store, blobs := capsEnv(t, &contexts.Options{MaxUnpackBytes: 4 << 20, MaxUnpackEntries: 4})
	c, err := store.Create(context.Background(), "proj_a", "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := manyFiles(&buf, 4, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(context.Background(), c.StorageKey, &buf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "profile")
	if ok, err := store.Restore(context.Background(), c, dir); !ok || err != nil {
		t.Fatalf("Restore = %v, %v", ok, err)
	}
	if n, entries := diskUsage(t, dir); n != 4<<20 || entries != 4 {
		t.Fatalf("restored %d bytes in %d entries", n, entries)
	}
	if got := store.MaxArchiveBytes(); got != 4<<20+4*4096+1<<20 {
		t.Fatalf("MaxArchiveBytes = %d", got)
	}
}

// A cancelled context stops a restore in the middle of a large entry.
func TestRestoreCancelled(t *testing.T) {
	t.Parallel()
	store, blobs := capsEnv(t, nil)
	c, err := store.Create(context.Background(), "proj_a", "")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(contextstest.Bomb{Name: "zeros", Size: 512 << 20}.Write(pw)) }()
	if err := blobs.Put(context.Background(), c.StorageKey, pr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "profile")
	if _, err := store.Restore(ctx, c, dir); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Restore = %v, want DeadlineExceeded", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("profile dir left: %v", err)
	}
}

// manyFiles writes a tar.gz of n files of size bytes (of 'x') each.
func manyFiles(w io.Writer, n int, size int64) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	data := bytes.Repeat([]byte{'x'}, int(size))
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("f%d", i), Mode: 0o600, Size: size}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// truncated writes a tar.gz whose one entry announces 1 MiB but whose
// stream ends after 1 KiB of it.
func truncated(w io.Writer) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "cut", Mode: 0o600, Size: 1 << 20}); err != nil {
		return err
	}
	if _, err := tw.Write(make([]byte, 1024)); err != nil {
		return err
	}
	tw.Flush() //nolint:errcheck // fails on purpose: the entry is short
	return gz.Close()
}

func TestAllowUpload(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	live := e.create(t, "proj_a")
	gone := e.create(t, "proj_a")
	if err := e.store.Delete(ctx, "proj_a", gone.ID); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, key string
		ok        bool
	}{
		{"live context", live.StorageKey, true},
		{"deleted context", gone.StorageKey, false},
		{"other project", contexts.StorageKey("proj_b", live.ID), false},
		{"unknown context", contexts.StorageKey("proj_a", "ctx_0123"), false},
		{"other file of the context", "proj_a/" + live.ID + "/other.tar.gz", false},
		{"not a context key", "proj_a/" + live.ID, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := e.store.AllowUpload(ctx, tt.key)
			if tt.ok && err != nil || !tt.ok && (!errors.Is(err, blob.ErrNotFound) || !errors.Is(err, contexts.ErrNotFound)) {
				t.Fatalf("AllowUpload(%q) = %v", tt.key, err)
			}
		})
	}
}
