package sessions_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// TestSweepArtifacts leaves artifacts in the blob store as sessions
// removed while no node followed the stream do: two nodes sweeping at
// once delete those of a session whose item is gone and that are older
// than the grace period, once, and keep a live session's, a too recent
// orphan's and blobs that are not session artifacts.
func TestSweepArtifacts(t *testing.T) {
	ctx := context.Background()
	store, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	client := ddb.NewClient(store)
	names, err := tables.EnsureTables(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	au := auth.New(client, names, nil)
	project, err := au.CreateProject(ctx, auth.CreateProjectInput{Name: "sweep", Concurrency: 10})
	if err != nil {
		t.Fatal(err)
	}
	repo := sessions.NewRepo(client, names, nil)
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := repo.Insert(ctx, sessions.Session{ID: "sess_live", ProjectID: project.ID, InternalStatus: sessions.StateStopped,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	p := project.ID
	old := []string{p + "/sess_live/logs.json", p + "/sess_gone/logs.json", p + "/sess_gone/downloads.zip",
		p + "/sess_gone/recording.json", p + "/sess_gone/replay.jpg", p + "/sess_gone/notes.txt", p + "/ctx_gone/profile.tar.gz"}
	fresh := []string{p + "/sess_recent/logs.json"}
	for _, k := range append(old, fresh...) {
		if err := blobs.Put(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range old {
		at := now.Add(-2 * time.Hour)
		if err := os.Chtimes(filepath.Join(blobs.Root, k), at, at); err != nil {
			t.Fatal(err)
		}
	}
	manager := func(node string) *sessions.Manager {
		return sessions.NewManager(sessions.Deps{Repo: repo, Auth: au, Blobs: blobs},
			sessions.Options{NodeID: node, WorkDir: t.TempDir(), ArtifactGrace: time.Hour,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	a, b := manager("a"), manager("b")
	results := make(chan int, 2)
	for _, m := range []*sessions.Manager{a, b} {
		go func() {
			n, err := m.SweepArtifacts(ctx)
			if err != nil {
				t.Error(err)
			}
			results <- n
		}()
	}
	total := <-results + <-results
	if total < 4 || total > 8 {
		t.Errorf("the two sweeps deleted %d blobs, want the 4 artifacts of sess_gone (each at most twice)", total)
	}
	exists := func(k string) bool {
		rc, err := blobs.Get(ctx, k)
		if err == nil {
			rc.Close()
			return true
		}
		if !errors.Is(err, blob.ErrNotFound) {
			t.Fatal(err)
		}
		return false
	}
	for _, k := range []string{p + "/sess_gone/logs.json", p + "/sess_gone/downloads.zip", p + "/sess_gone/recording.json", p + "/sess_gone/replay.jpg"} {
		if exists(k) {
			t.Errorf("%s of a removed session is still there", k)
		}
	}
	for _, k := range []string{p + "/sess_live/logs.json", p + "/sess_gone/notes.txt", p + "/ctx_gone/profile.tar.gz", p + "/sess_recent/logs.json"} {
		if !exists(k) {
			t.Errorf("%s was deleted", k)
		}
	}
}
