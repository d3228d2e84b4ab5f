package extensions

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxManifestBytes bounds manifest.json.
const maxManifestBytes = 1 << 20

// manifestName is the manifest's file name.
const manifestName = "manifest.json"

// layout is what inspect found in a valid archive.
type layout struct {
	// root is the prefix of every entry that the extension's directory
	// stands for: "" when manifest.json is at the top, or "<dir>/" when
	// every entry is inside one directory holding manifest.json.
	root     string
	manifest Manifest
}

// inspect checks a zip archive without unpacking it: at most MaxEntries
// entries, regular files and directories only, every name relative and
// inside the archive, no name twice, declared sizes within
// MaxUnpackBytes, and a valid manifest.json at the top or in the one
// top-level directory.
func (s *Store) inspect(zr *zip.Reader) (layout, error) {
	if len(zr.File) > s.opts.MaxEntries {
		return layout{}, &LimitError{What: "entries", Limit: int64(s.opts.MaxEntries)}
	}
	seen := make(map[string]bool, len(zr.File))
	var total uint64
	tops := map[string]bool{}
	for _, f := range zr.File {
		name, isDir, err := entryName(f)
		if err != nil {
			return layout{}, err
		}
		if seen[name] {
			return layout{}, fmt.Errorf("%w: the archive holds %q twice", ErrInvalid, name)
		}
		seen[name] = true
		top, _, nested := strings.Cut(name, "/")
		if nested || isDir {
			tops[top+"/"] = true
		} else {
			tops[top] = true
		}
		if total += f.UncompressedSize64; total > uint64(s.opts.MaxUnpackBytes) {
			return layout{}, &LimitError{What: "unpacked bytes", Limit: s.opts.MaxUnpackBytes}
		}
	}
	var l layout
	switch {
	case seen[manifestName]:
	case len(tops) == 1:
		for top := range tops {
			l.root = top
		}
		if !seen[l.root+manifestName] {
			return layout{}, fmt.Errorf("%w: no manifest.json at the top of the archive or of its one directory", ErrInvalid)
		}
	default:
		return layout{}, fmt.Errorf("%w: no manifest.json at the top of the archive", ErrInvalid)
	}
	data, err := readEntry(zr, l.root+manifestName)
	if err != nil {
		return layout{}, err
	}
	if l.manifest, err = parseManifest(data); err != nil {
		return layout{}, err
	}
	return l, nil
}

// entryName returns the cleaned name of a zip entry and whether it is a
// directory, or ErrInvalid for an entry that could leave the extension's
// directory (absolute, "..", backslashes) or is not a regular file or a
// directory (symbolic links, devices).
func entryName(f *zip.File) (string, bool, error) {
	raw := f.Name
	isDir := strings.HasSuffix(raw, "/")
	name := strings.TrimSuffix(raw, "/")
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || strings.ContainsRune(name, 0) {
		return "", false, fmt.Errorf("%w: entry %q is not a relative path", ErrInvalid, raw)
	}
	clean := path.Clean(name)
	if clean != name || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", false, fmt.Errorf("%w: entry %q leaves the extension's directory", ErrInvalid, raw)
	}
	mode := f.Mode()
	switch {
	case isDir || mode.IsDir():
		return clean, true, nil
	case !mode.IsRegular():
		return "", false, fmt.Errorf("%w: entry %q is not a regular file or directory (%s)", ErrInvalid, raw, mode.Type())
	}
	return clean, false, nil
}

// readEntry reads the file name of zr, at most maxManifestBytes.
func readEntry(zr *zip.Reader, name string) ([]byte, error) {
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, name, maxManifestBytes)
	}
	return data, nil
}

// spool copies src into a new temporary file, at most max bytes (more is
// a *LimitError), and returns it open with its size; the caller MUST call
// the returned cleanup.
func (s *Store) spool(src io.Reader, limit int64) (*os.File, int64, func(), error) {
	f, err := os.CreateTemp(s.opts.TempDir, "quarry-extension-*.zip")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("extensions: spool: %w", err)
	}
	cleanup := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	n, err := io.Copy(f, io.LimitReader(src, limit+1))
	if err != nil {
		cleanup()
		return nil, n, nil, fmt.Errorf("extensions: spool: %w", err)
	}
	if n > limit {
		cleanup()
		return nil, n, nil, &LimitError{What: "archive bytes", Limit: limit}
	}
	return f, n, cleanup, nil
}

// openZip reads the zip archive in f (size bytes) and inspects it.
func (s *Store) openZip(f *os.File, size int64) (*zip.Reader, layout, error) {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return nil, layout{}, fmt.Errorf("%w: not a zip archive: %w", ErrInvalid, err)
	}
	l, err := s.inspect(zr)
	return zr, l, err
}

// extract writes the entries of zr under l.root into root: directories
// mode 0700, files 0600, whatever the archive says. Bytes are counted as
// written, and the one that would pass MaxUnpackBytes stops it with a
// *LimitError; ctx ends it between entries and reads.
func (s *Store) extract(ctx context.Context, root *os.Root, zr *zip.Reader, l layout) error {
	var written int64
	buf := make([]byte, 32<<10)
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		name, isDir, err := entryName(f)
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(name, l.root)
		if !ok || rel == "" {
			continue // the root directory itself
		}
		if isDir {
			if err := root.MkdirAll(rel, 0o700); err != nil {
				return fmt.Errorf("extensions: unpack %s: %w", rel, err)
			}
			continue
		}
		if dir := path.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("extensions: unpack %s: %w", rel, err)
			}
		}
		if err := s.extractFile(ctx, root, f, rel, buf, &written); err != nil {
			return err
		}
	}
	return nil
}

// extractFile writes the entry f as rel under root, adding its bytes to
// *written.
func (s *Store) extractFile(ctx context.Context, root *os.Root, f *zip.File, rel string, buf []byte, written *int64) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, f.Name, err)
	}
	defer rc.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("extensions: unpack %s: %w", rel, err)
	}
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := rc.Read(buf)
		if n > 0 {
			if *written += int64(n); *written > s.opts.MaxUnpackBytes {
				out.Close()
				return &LimitError{What: "unpacked bytes", Limit: s.opts.MaxUnpackBytes}
			}
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return fmt.Errorf("extensions: unpack %s: %w", rel, err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			out.Close()
			return fmt.Errorf("%w: %s: %w", ErrInvalid, f.Name, rerr)
		}
	}
	return out.Close()
}
