package contexts

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// skippedFile reports whether base names one of Chrome's lock, socket and
// runtime files: meaningless (or harmful: a stale SingletonLock stops Chrome
// from starting) in another browser instance.
func skippedFile(base string) bool {
	switch base {
	case "SingletonLock", "SingletonSocket", "SingletonCookie",
		"DevToolsActivePort", "RunningChromeVersion":
		return true
	}
	return false
}

// skippedDir reports whether base names one of Chrome's cache or crash dump
// directories: large and rebuilt on demand.
func skippedDir(base string) bool {
	switch base {
	case "Cache", "Code Cache", "GPUCache", "ShaderCache", "GrShaderCache",
		"GraphiteDawnCache", "component_crx_cache", "Crashpad":
		return true
	}
	return false
}

// storageKey returns c's archive key, derived from its ids when c does not
// carry one.
func storageKey(c Context) string {
	if c.StorageKey != "" {
		return c.StorageKey
	}
	return StorageKey(c.ProjectID, c.ID)
}

// Restore unpacks c's profile archive into dir, creating dir when missing,
// and reports whether there was an archive: (false, nil) when none has been
// stored yet. It creates regular files and directories only, with the
// archived permission bits, and refuses (ErrUnsafeArchive) any entry whose
// name or link target would leave dir: absolute paths, "..", and symbolic
// or hard links pointing outside. Links pointing inside dir, devices and
// FIFOs are skipped.
//
// Unpacking is capped (see Options): it stops with a *LimitError
// (ErrArchiveTooLarge) before writing the byte that would pass
// MaxUnpackBytes, at the entry past MaxUnpackEntries, or once the
// uncompressed tar stream passes MaxArchiveBytes (so that data the tar
// reader skips cannot make it decompress for long). Bytes are counted as
// written, whatever the headers claim. A malformed archive fails with
// ErrCorruptArchive; ctx ends the work between reads.
//
// On error, Restore removes dir when it created it; a dir that existed
// before may hold part of the archive.
func (s *Store) Restore(ctx context.Context, c Context, dir string) (bool, error) {
	rc, err := s.blobs.Get(ctx, storageKey(c))
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("contexts: restore %s: %w", c.ID, err)
	}
	defer rc.Close()
	_, statErr := os.Lstat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("contexts: restore %s: %w", c.ID, err)
	}
	err = s.extractInto(ctx, dir, rc)
	if err != nil {
		if created {
			_ = os.RemoveAll(dir)
		}
		return false, fmt.Errorf("contexts: restore %s: %w", c.ID, err)
	}
	return true, nil
}

// extractInto opens dir as a root and unpacks the archive read from r
// under it, within the Store's caps.
func (s *Store) extractInto(ctx context.Context, dir string, r io.Reader) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return extract(ctx, root, r, s.limits())
}

// limits are the unpack caps of one archive.
type limits struct {
	bytes   int64 // written to disk
	entries int   // tar entries of any type
	stream  int64 // uncompressed tar stream
}

func (s *Store) limits() limits {
	return limits{bytes: s.opts.MaxUnpackBytes, entries: s.opts.MaxUnpackEntries, stream: s.MaxArchiveBytes()}
}

// streamReader reads the uncompressed tar stream: it fails with a
// *LimitError past max bytes and with ctx's error once ctx ends.
type streamReader struct {
	ctx  context.Context
	r    io.Reader
	read int64
	max  int64
}

func (s *streamReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	if s.read > s.max {
		return 0, &LimitError{What: "uncompressed archive bytes", Limit: s.max}
	}
	if rest := s.max - s.read + 1; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	if s.read > s.max {
		return n, &LimitError{What: "uncompressed archive bytes", Limit: s.max}
	}
	return n, err
}

// readError classifies an error met while reading the archive: cap and
// context errors pass as they are, anything else is ErrCorruptArchive.
func readError(err error) error {
	if errors.Is(err, ErrArchiveTooLarge) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorruptArchive, err)
}

// unpacker holds the state of one extract: the caps and what was used.
type unpacker struct {
	lim     limits
	written int64
	entries int
	buf     []byte
}

// extract unpacks the tar.gz read from r under root within lim.
func extract(ctx context.Context, root *os.Root, r io.Reader, lim limits) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return readError(err)
	}
	defer gz.Close()
	tr := tar.NewReader(&streamReader{ctx: ctx, r: gz, max: lim.stream})
	u := &unpacker{lim: lim, buf: make([]byte, 32<<10)}
	type dirMode struct {
		name string
		mode fs.FileMode
	}
	var dirs []dirMode
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("%w: %q", ErrUnsafeArchive, hdr.Name)
		}
		if err != nil {
			return readError(err)
		}
		if u.entries++; u.entries > lim.entries {
			return &LimitError{What: "entries", Limit: int64(lim.entries)}
		}
		name, err := localName(hdr.Name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name == "." {
				continue
			}
			if err := root.MkdirAll(name, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{name, mode})
		case tar.TypeReg:
			if name == "." {
				return fmt.Errorf("%w: file entry %q", ErrUnsafeArchive, hdr.Name)
			}
			// Refuse at once an entry whose announced size passes the
			// cap (the bytes are counted as written all the same).
			if hdr.Size > lim.bytes-u.written {
				return &LimitError{What: "unpacked bytes", Limit: lim.bytes}
			}
			if err := u.writeFile(root, name, mode, hdr, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := hdr.Linkname
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(name), target)
			}
			if _, err := localName(target); err != nil || target == "" {
				return fmt.Errorf("%w: symlink %q -> %q", ErrUnsafeArchive, hdr.Name, hdr.Linkname)
			}
		case tar.TypeLink:
			if _, err := localName(hdr.Linkname); err != nil {
				return fmt.Errorf("%w: hard link %q -> %q", ErrUnsafeArchive, hdr.Name, hdr.Linkname)
			}
		}
	}
	// Directory permissions last, deepest first, so that a read-only
	// directory does not stop its contents from being written.
	slices.SortStableFunc(dirs, func(a, b dirMode) int {
		return strings.Count(b.name, "/") - strings.Count(a.name, "/")
	})
	for _, d := range dirs {
		if err := root.Chmod(d.name, d.mode); err != nil {
			return err
		}
	}
	return nil
}

// localName returns the cleaned, slash-separated form of an archive entry
// name, or ErrUnsafeArchive when it is empty, absolute or climbs out.
func localName(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) {
		return "", fmt.Errorf("%w: %q", ErrUnsafeArchive, name)
	}
	clean := path.Clean(name)
	if clean != "." && !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", fmt.Errorf("%w: %q", ErrUnsafeArchive, name)
	}
	return clean, nil
}

// writeFile creates (or replaces) the regular file name under root with the
// entry's contents, permission bits and modification time. It counts the
// bytes it writes and stops before the one that would pass the cap.
func (u *unpacker) writeFile(root *os.Root, name string, mode fs.FileMode, hdr *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	// Replace whatever is there that is not a regular file (a symbolic link
	// would otherwise redirect the write).
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := u.copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !hdr.ModTime.IsZero() {
		if err := root.Chtimes(name, hdr.ModTime, hdr.ModTime); err != nil {
			return err
		}
	}
	return nil
}

// copy copies r to w, counting the bytes against the cap before writing
// them.
func (u *unpacker) copy(w io.Writer, r io.Reader) error {
	for {
		n, rerr := r.Read(u.buf)
		if n > 0 {
			if u.written += int64(n); u.written > u.lim.bytes {
				return &LimitError{What: "unpacked bytes", Limit: u.lim.bytes}
			}
			if _, err := w.Write(u.buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return readError(rerr)
		}
	}
}

// Persist packs the Chrome profile in dir into a tar.gz, stores it as c's
// archive (replacing any previous one) and sets c's updatedAt. It keeps
// regular files and directories with their permission bits, and leaves out
// Chrome's lock and runtime files (SingletonLock, SingletonSocket,
// SingletonCookie, DevToolsActivePort, RunningChromeVersion), its cache
// directories (Cache, Code Cache, GPUCache, ShaderCache, GrShaderCache,
// GraphiteDawnCache, component_crx_cache, Crashpad) at any depth, and
// symbolic links, sockets, FIFOs and devices. The archive is streamed to the
// blob store; a failure leaves the previous archive in place. Persist fails
// with ErrNotFound when c no longer exists or is being deleted (and then
// removes the archive it stored, see Delete).
func (s *Store) Persist(ctx context.Context, c Context, dir string) error {
	cur, err := s.Get(ctx, c.ProjectID, c.ID)
	if err != nil {
		return err
	}
	if cur.Deleting() {
		return fmt.Errorf("%w: context %s is being deleted", ErrNotFound, c.ID)
	}
	key := storageKey(cur)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("contexts: persist %s: %w", c.ID, err)
	}
	defer root.Close()

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := pack(ctx, root, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	perr := s.blobs.Put(ctx, key, pr)
	pr.Close() // unblocks pack when Put gave up early
	werr := <-done
	switch {
	case werr != nil && (perr == nil || !errors.Is(werr, io.ErrClosedPipe)):
		return fmt.Errorf("contexts: persist %s: %w", c.ID, werr)
	case perr != nil:
		return fmt.Errorf("contexts: persist %s: %w", c.ID, perr)
	}
	if _, err := s.Touch(ctx, cur.ProjectID, cur.ID); err != nil {
		if errors.Is(err, ErrNotFound) {
			// Deleted meanwhile: do not leave the archive behind.
			_ = s.blobs.Delete(ctx, key)
		}
		return err
	}
	return nil
}

// pack writes the profile under root as a tar.gz to w.
func pack(ctx context.Context, root *os.Root, w io.Writer) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && name != "." {
				return nil // vanished while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		base := path.Base(name)
		switch {
		case d.IsDir():
			if skippedDir(base) {
				return fs.SkipDir
			}
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{
				Typeflag: tar.TypeDir,
				Name:     name + "/",
				Mode:     int64(fi.Mode().Perm()),
				ModTime:  fi.ModTime(),
			})
		case d.Type().IsRegular():
			if skippedFile(base) {
				return nil
			}
			return packFile(root, name, tw)
		default: // symbolic links, sockets, FIFOs, devices
			return nil
		}
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// packFile appends the regular file name to tw.
func packFile(root *os.Root, name string, tw *tar.Writer) error {
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // vanished while walking
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil // replaced while walking
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     int64(fi.Mode().Perm()),
		Size:     fi.Size(),
		ModTime:  fi.ModTime(),
	}); err != nil {
		return err
	}
	// Copy exactly the announced size: a file that grew is cut at its size
	// when opened; one that shrank fails the write.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
