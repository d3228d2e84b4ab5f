package sessions

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// blobSegment reports whether s can be one segment of a blob key as quarry
// makes them (letters, digits, '_' and '-'): a hand-written item's odd id
// must not make removeArtifacts reach outside its session's folder.
func blobSegment(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// artifactNames are the blobs kept beside a session's item under
// <projectId>/<sessionId>/: its CDP log, downloads and the inspector's
// recording.
var artifactNames = []string{"logs.json", "downloads.zip", recordingBlob, replayBlob}

// removeArtifacts deletes what is kept of session id of projectID once its
// item is gone (its TTL passed, so the API cannot reach them), so that
// they do not pile up for ever. Every node following the stream does it;
// deleting a missing blob is not an error.
func (m *Manager) removeArtifacts(projectID, id string) {
	if m.d.Blobs == nil || !blobSegment(id) || !blobSegment(projectID) {
		return // not an id quarry made: nothing of it is kept
	}
	ctx, cancel := context.WithTimeout(m.base, 30*time.Second)
	defer cancel()
	for _, name := range artifactNames {
		if err := m.d.Blobs.Delete(ctx, artifactKey(projectID, id, name)); err != nil {
			m.log.Warn("session artifact not removed", "session", id, "blob", name, "err", err)
		}
	}
}

func artifactKey(projectID, sessionID, name string) string {
	return projectID + "/" + sessionID + "/" + name
}

// keepDownloads writes the files the browser of l downloaded, as a zip,
// beside its item (downloads.zip) when there is any. m.d.Blobs must be
// set.
func (m *Manager) keepDownloads(ctx context.Context, l *live) {
	var buf bytes.Buffer
	if n, err := zipDir(&buf, l.b.DownloadDir()); err == nil && n > 0 {
		if err := m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, "downloads.zip"), &buf); err != nil {
			m.log.Warn("wallcrawler: keep downloads", "session", l.id, "err", err)
		}
	}
}

// keepLog writes the CDP log of l beside its item (logs.json) when it
// holds any entry. m.d.Blobs must be set.
func (m *Manager) keepLog(ctx context.Context, l *live) {
	if entries := l.log.Entries(); len(entries) > 0 {
		data, _ := json.Marshal(entries)
		if err := m.d.Blobs.Put(ctx, artifactKey(l.projectID, l.id, "logs.json"), bytes.NewReader(data)); err != nil {
			m.log.Warn("wallcrawler: keep logs", "session", l.id, "err", err)
		}
	}
}

// Logs returns the CDP command/response pairs of a session: live from the
// proxy while it runs, from the blob store afterwards.
func (m *Manager) Logs(ctx context.Context, p auth.Principal, id string) ([]cdp.Entry, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l != nil {
		return l.log.Entries(), nil
	}
	entries := []cdp.Entry{}
	if m.d.Blobs == nil {
		return entries, nil
	}
	rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, "logs.json"))
	if errors.Is(err, blob.ErrNotFound) {
		return entries, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(&entries); err != nil {
		return nil, fmt.Errorf("sessions: read logs: %w", err)
	}
	return entries, nil
}

// Downloads writes a zip of the files the session's browser downloaded.
func (m *Manager) Downloads(ctx context.Context, p auth.Principal, id string, w io.Writer) error {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l != nil {
		_, err := zipDir(w, l.b.DownloadDir())
		return err
	}
	if m.d.Blobs != nil {
		rc, err := m.d.Blobs.Get(ctx, artifactKey(x.ProjectID, id, "downloads.zip"))
		if err == nil {
			defer rc.Close()
			_, err = io.Copy(w, rc)
			return err
		}
		if !errors.Is(err, blob.ErrNotFound) {
			return err
		}
	}
	_, err = zipDir(w, "")
	return err
}

// zipDir writes a zip of the regular files under dir (none when dir is
// "" or missing; Chrome's partial ".crdownload" files are skipped) and
// returns how many it wrote.
func zipDir(w io.Writer, dir string) (int, error) {
	zw := zip.NewWriter(w)
	n := 0
	if dir != "" {
		root, err := os.OpenRoot(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, zw.Close()
		}
		if err != nil {
			return 0, fmt.Errorf("sessions: zip downloads: %w", err)
		}
		defer root.Close()
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() || strings.HasSuffix(path, ".crdownload") {
				return nil
			}
			rel, _ := filepath.Rel(dir, path)
			// Through root: a browser that swaps a file for a symbolic
			// link meanwhile cannot make quarry read outside dir.
			f, err := root.Open(rel)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
				return err
			}
			zf, err := zw.Create(filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			if _, err := io.Copy(zf, f); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("sessions: zip downloads: %w", err)
		}
	}
	return n, zw.Close()
}

// Artifact sweep defaults.
const (
	// DefaultArtifactSweepEvery is how often each node sweeps a page of
	// the blob store for the artifacts of removed sessions.
	DefaultArtifactSweepEvery = 10 * time.Minute
	// DefaultArtifactGrace is how old an artifact must be before a sweep
	// may delete it.
	DefaultArtifactGrace = time.Hour
	// artifactSweepPage bounds the blobs one sweep lists.
	artifactSweepPage = 1000
)

// SweepArtifacts deletes the artifacts (artifactNames) of sessions whose
// item is gone, which removeArtifacts missed because no node followed the
// stream when the item was deleted. One call lists at most one page of
// the blob store, from where the previous call stopped (wrapping around at
// the end), and deletes only blobs older than Options.ArtifactGrace whose
// session item a consistent read does not find: any number of nodes may
// sweep at once (a deletion is idempotent), and a session's artifacts are
// written while its item exists. It returns how many blobs it deleted; a
// blob store that cannot list (not a blob.Lister) is not swept.
func (m *Manager) SweepArtifacts(ctx context.Context) (int, error) {
	lister, ok := m.d.Blobs.(blob.Lister)
	if !ok {
		return 0, nil
	}
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	objs, err := lister.List(ctx, "", m.sweepAfter, artifactSweepPage)
	if err != nil {
		return 0, fmt.Errorf("sessions: list blobs for the artifact sweep: %w", err)
	}
	if len(objs) < artifactSweepPage {
		m.sweepAfter = ""
	} else {
		m.sweepAfter = objs[len(objs)-1].Key
	}
	old := m.now().Add(-m.o.ArtifactGrace)
	bySession := map[string][]string{}
	var order []string
	for _, o := range objs {
		parts := strings.Split(o.Key, "/")
		if len(parts) != 3 || !blobSegment(parts[0]) || !strings.HasPrefix(parts[1], "sess_") || !blobSegment(parts[1]) ||
			!slices.Contains(artifactNames, parts[2]) || !o.ModTime.Before(old) {
			continue
		}
		id := parts[1]
		if bySession[id] == nil {
			order = append(order, id)
		}
		bySession[id] = append(bySession[id], o.Key)
	}
	n := 0
	for _, id := range order {
		if _, err := m.d.Repo.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			if err != nil {
				return n, err
			}
			continue // the session is there: its artifacts are served
		}
		for _, k := range bySession[id] {
			if err := m.d.Blobs.Delete(ctx, k); err != nil {
				return n, fmt.Errorf("sessions: delete an orphaned artifact: %w", err)
			}
			n++
		}
		m.log.Info("wallcrawler: deleted the artifacts of a removed session", "session", id, "blobs", len(bySession[id]))
	}
	return n, nil
}
