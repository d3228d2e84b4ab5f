// Package extensions holds Wallcrawler's browser extensions: zip archives
// of Manifest V3 extensions uploaded by a project (POST /v1/extensions)
// and loaded unpacked into the browsers of its sessions that name them.
//
// An extension is two objects of the blob store, under
// <projectId>/extensions/<extensionId>/: extension.zip, the archive as
// uploaded, and extension.json, its record (written last, removed first:
// an extension exists exactly when its record does). Every archive is
// checked on upload and again before it is unpacked: caps on its size,
// entries and unpacked bytes, entry names that stay inside the extension's
// directory, regular files and directories only, and a manifest within the
// permission allowlist (manifest.go).
package extensions

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// Errors returned by the package. Callers match them with errors.Is; the
// returned errors wrap them with a message saying what to fix.
var (
	// ErrNotFound means the extension does not exist or belongs to a
	// project the caller did not name (the two are indistinguishable on
	// purpose).
	ErrNotFound = errors.New("extensions: not found")
	// ErrInvalid means the archive is not a zip of a Manifest V3
	// extension Wallcrawler accepts.
	ErrInvalid = errors.New("extensions: invalid extension")
	// ErrTooLarge means the archive passes one of the caps; the error is
	// a *LimitError naming it.
	ErrTooLarge = errors.New("extensions: archive too large")
	// ErrQuota means the project holds MaxPerProject extensions already.
	ErrQuota = errors.New("extensions: the project has the most extensions allowed")
)

// Default caps of an extension archive.
const (
	DefaultMaxZipBytes    = 32 << 20  // the archive as uploaded
	DefaultMaxUnpackBytes = 128 << 20 // written to disk when unpacked
	DefaultMaxEntries     = 10_000    // files and directories
	// DefaultMaxPerProject caps a project's extensions, so that one
	// tenant's uploads cannot fill the blob store (at most 50 × 32 MiB).
	DefaultMaxPerProject = 50
)

// LimitError reports which cap an archive passed. It matches ErrTooLarge
// with errors.Is.
type LimitError struct {
	// What names the capped quantity: "archive bytes", "unpacked bytes"
	// or "entries".
	What string
	// Limit is the cap.
	Limit int64
}

// Error names the cap.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: more than %d %s", ErrTooLarge, e.Limit, e.What)
}

// Is reports whether target is ErrTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// Extension is an uploaded extension's record.
type Extension struct {
	ID        string    `json:"id"` // "ext_" + 32 hex digits
	ProjectID string    `json:"projectId"`
	FileName  string    `json:"fileName"` // the uploaded file's name
	Name      string    `json:"name"`     // the manifest's name
	Version   string    `json:"version"`  // the manifest's version
	Size      int64     `json:"size"`     // bytes of the archive
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Options configures a Store. The zero value of each field means its
// default.
type Options struct {
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// Rand is the source of identifiers; default crypto/rand.Reader.
	Rand io.Reader
	// MaxZipBytes caps an archive as uploaded; default
	// DefaultMaxZipBytes.
	MaxZipBytes int64
	// MaxUnpackBytes caps the bytes of an archive's files, declared and
	// written; default DefaultMaxUnpackBytes.
	MaxUnpackBytes int64
	// MaxEntries caps an archive's entries; default DefaultMaxEntries.
	MaxEntries int
	// MaxPerProject caps a project's extensions; default
	// DefaultMaxPerProject.
	MaxPerProject int
	// TempDir holds archives while they are checked; default
	// os.TempDir().
	TempDir string
}

// Store reads and writes extensions. It is safe for concurrent use and
// holds no state beyond its configuration.
type Store struct {
	blobs blob.Store
	opts  Options
}

// New returns a Store keeping extensions in blobs. opts may be nil.
func New(blobs blob.Store, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.MaxZipBytes <= 0 {
		o.MaxZipBytes = DefaultMaxZipBytes
	}
	if o.MaxUnpackBytes <= 0 {
		o.MaxUnpackBytes = DefaultMaxUnpackBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxPerProject <= 0 {
		o.MaxPerProject = DefaultMaxPerProject
	}
	return &Store{blobs: blobs, opts: o}
}

// MaxZipBytes returns the cap on an uploaded archive.
func (s *Store) MaxZipBytes() int64 { return s.opts.MaxZipBytes }

// prefix returns the blob prefix of extension id of project projectID.
func prefix(projectID, id string) string { return projectID + "/extensions/" + id + "/" }

// archiveKey and recordKey are the blob keys of an extension's archive
// and record.
func archiveKey(projectID, id string) string { return prefix(projectID, id) + "extension.zip" }
func recordKey(projectID, id string) string  { return prefix(projectID, id) + "extension.json" }

// validID reports whether id has the form of an extension id: "ext_" and
// 32 lower-case hex digits. Any other id names no extension (and never
// reaches a blob key).
func validID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "ext_")
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validProject reports whether projectID can be one segment of a blob key.
func validProject(projectID string) bool {
	return projectID != "" && projectID != "." && projectID != ".." && !strings.ContainsAny(projectID, `/\`)
}

// Create checks the zip archive read from src and stores it as a new
// extension of project projectID. fileName is the uploaded file's name,
// kept for display. An archive past a cap is a *LimitError (ErrTooLarge);
// one that is not a valid extension is ErrInvalid with what to fix; a
// project that holds MaxPerProject extensions is refused with ErrQuota
// (uploads at the same moment may each pass the count, so the cap can be
// passed by as many).
func (s *Store) Create(ctx context.Context, projectID, fileName string, src io.Reader) (Extension, error) {
	if !validProject(projectID) {
		return Extension{}, fmt.Errorf("extensions: create: invalid project id %q", projectID)
	}
	if n, err := s.count(ctx, projectID); err != nil {
		return Extension{}, err
	} else if n >= s.opts.MaxPerProject {
		return Extension{}, fmt.Errorf("%w: %d", ErrQuota, s.opts.MaxPerProject)
	}
	f, size, cleanup, err := s.spool(src, s.opts.MaxZipBytes)
	if err != nil {
		return Extension{}, err
	}
	defer cleanup()
	_, l, err := s.openZip(f, size)
	if err != nil {
		return Extension{}, err
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(s.opts.Rand, b); err != nil {
		return Extension{}, fmt.Errorf("extensions: random: %w", err)
	}
	now := s.opts.Now().UTC().Truncate(time.Millisecond)
	e := Extension{
		ID: "ext_" + hex.EncodeToString(b), ProjectID: projectID, FileName: fileName,
		Name: l.manifest.Name, Version: l.manifest.Version, Size: size,
		CreatedAt: now, UpdatedAt: now,
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Extension{}, fmt.Errorf("extensions: create: %w", err)
	}
	if err := s.blobs.Put(ctx, archiveKey(projectID, e.ID), f); err != nil {
		return Extension{}, fmt.Errorf("extensions: create: store archive: %w", err)
	}
	rec, err := json.Marshal(e)
	if err != nil {
		return Extension{}, fmt.Errorf("extensions: create: %w", err)
	}
	if err := s.blobs.Put(ctx, recordKey(projectID, e.ID), bytes.NewReader(rec)); err != nil {
		_ = s.blobs.Delete(context.WithoutCancel(ctx), archiveKey(projectID, e.ID))
		return Extension{}, fmt.Errorf("extensions: create: store record: %w", err)
	}
	return e, nil
}

// MaxPerProject returns the cap on a project's extensions.
func (s *Store) MaxPerProject() int { return s.opts.MaxPerProject }

// count returns how many extension records project projectID holds, up
// to MaxPerProject, from the blob store's listing (no record is read).
func (s *Store) count(ctx context.Context, projectID string) (int, error) {
	l, ok := s.blobs.(blob.Lister)
	if !ok {
		return 0, errors.New("extensions: create: the blob store cannot list its objects")
	}
	under := projectID + "/extensions/"
	n, after := 0, ""
	for n < s.opts.MaxPerProject {
		objs, err := l.List(ctx, under, after, 256)
		if err != nil {
			return 0, fmt.Errorf("extensions: count: %w", err)
		}
		for _, o := range objs {
			if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, under), "/extension.json"); ok && validID(id) {
				n++
			}
		}
		if len(objs) < 256 {
			break
		}
		after = objs[len(objs)-1].Key
	}
	return n, nil
}

// MaxList bounds how many extensions List returns.
const MaxList = 1000

// List returns project projectID's extensions in id order, at most
// MaxList. It needs a blob store that lists its objects (the disk and S3
// stores do).
func (s *Store) List(ctx context.Context, projectID string) ([]Extension, error) {
	if !validProject(projectID) {
		return nil, fmt.Errorf("extensions: list: invalid project id %q", projectID)
	}
	l, ok := s.blobs.(blob.Lister)
	if !ok {
		return nil, errors.New("extensions: list: the blob store cannot list its objects")
	}
	out := []Extension{}
	under := projectID + "/extensions/"
	after := ""
	for len(out) < MaxList {
		objs, err := l.List(ctx, under, after, 256)
		if err != nil {
			return nil, fmt.Errorf("extensions: list: %w", err)
		}
		for _, o := range objs {
			id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, under), "/extension.json")
			if !ok || !validID(id) {
				continue
			}
			e, err := s.read(ctx, projectID, id)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, err
			}
			if out = append(out, e); len(out) == MaxList {
				break
			}
		}
		if len(objs) < 256 {
			break
		}
		after = objs[len(objs)-1].Key
	}
	return out, nil
}

// Get reads extension id of project projectID; ErrNotFound when it does
// not exist or belongs to another project.
func (s *Store) Get(ctx context.Context, projectID, id string) (Extension, error) {
	return s.GetIn(ctx, []string{projectID}, id)
}

// GetIn reads extension id when it belongs to one of projectIDs (for API
// keys that may use several projects); otherwise ErrNotFound.
func (s *Store) GetIn(ctx context.Context, projectIDs []string, id string) (Extension, error) {
	if !validID(id) {
		return Extension{}, fmt.Errorf("%w: extension %.80q", ErrNotFound, id)
	}
	for _, p := range projectIDs {
		if !validProject(p) {
			continue
		}
		e, err := s.read(ctx, p, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		return e, err
	}
	return Extension{}, fmt.Errorf("%w: extension %s", ErrNotFound, id)
}

// read reads the record of extension id of project projectID.
func (s *Store) read(ctx context.Context, projectID, id string) (Extension, error) {
	rc, err := s.blobs.Get(ctx, recordKey(projectID, id))
	if errors.Is(err, blob.ErrNotFound) {
		return Extension{}, fmt.Errorf("%w: extension %s", ErrNotFound, id)
	}
	if err != nil {
		return Extension{}, fmt.Errorf("extensions: get %s: %w", id, err)
	}
	defer rc.Close()
	var e Extension
	if err := json.NewDecoder(io.LimitReader(rc, 64<<10)).Decode(&e); err != nil {
		return Extension{}, fmt.Errorf("extensions: get %s: record: %w", id, err)
	}
	if e.ID != id || e.ProjectID != projectID {
		return Extension{}, fmt.Errorf("extensions: get %s: the record names %s of %s", id, e.ID, e.ProjectID)
	}
	return e, nil
}

// Delete removes extension id of project projectID: its record first (from
// then on it does not exist), then its archive. A session already running
// with it keeps its unpacked copy. ErrNotFound when it does not exist or
// belongs to another project.
func (s *Store) Delete(ctx context.Context, projectID, id string) error {
	if _, err := s.Get(ctx, projectID, id); err != nil {
		return err
	}
	if err := s.blobs.Delete(ctx, recordKey(projectID, id)); err != nil {
		return fmt.Errorf("extensions: delete %s: %w", id, err)
	}
	if err := s.blobs.Delete(ctx, archiveKey(projectID, id)); err != nil {
		return fmt.Errorf("extensions: delete %s archive: %w", id, err)
	}
	return nil
}

// Unpack writes extension e's files into dir, which must exist and be
// empty: the archive is checked again as on upload (the blob store may
// have been written by something else), then its files are written
// through an os.Root (directories 0700, files 0600) within the caps.
// ErrNotFound when the archive is gone. On error dir may hold part of the
// extension; the caller removes it.
func (s *Store) Unpack(ctx context.Context, e Extension, dir string) error {
	rc, err := s.blobs.Get(ctx, archiveKey(e.ProjectID, e.ID))
	if errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("%w: extension %s", ErrNotFound, e.ID)
	}
	if err != nil {
		return fmt.Errorf("extensions: unpack %s: %w", e.ID, err)
	}
	f, size, cleanup, err := s.spool(rc, s.opts.MaxZipBytes)
	rc.Close()
	if err != nil {
		return err
	}
	defer cleanup()
	zr, l, err := s.openZip(f, size)
	if err != nil {
		return fmt.Errorf("extensions: unpack %s: %w", e.ID, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("extensions: unpack %s: %w", e.ID, err)
	}
	defer root.Close()
	if err := s.extract(ctx, root, zr, l); err != nil {
		return fmt.Errorf("extensions: unpack %s: %w", e.ID, err)
	}
	return nil
}
