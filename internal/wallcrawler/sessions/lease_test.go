package sessions_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// TestLeaseSweep runs four Managers on one embedded store without
// browsers: "dead" takes its lease and never renews it, "alive" renews,
// and "b" and "c" sweep at the same time. dead's sessions (READY,
// TERMINATING, CREATING) become ERROR, each ended by exactly one sweeper,
// and their slots are freed exactly once; alive's session is untouched;
// dead's lease leaves the registry, and comes back when dead renews
// again (it finds its lease lost).
func TestLeaseSweep(t *testing.T) {
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
	project, err := au.CreateProject(ctx, auth.CreateProjectInput{Name: "lease", Concurrency: 10})
	if err != nil {
		t.Fatal(err)
	}
	repo := sessions.NewRepo(client, names, nil)
	// dead's lease is short; the others' are long, so that a slow loop
	// on a loaded machine cannot make them look dead (each observer
	// waits for the lease the observed node declared).
	const lease, long = 300 * time.Millisecond, time.Hour
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	manager := func(node string, lease time.Duration, log *slog.Logger) *sessions.Manager {
		return sessions.NewManager(sessions.Deps{Repo: repo, Auth: au},
			sessions.Options{NodeID: node, WorkDir: t.TempDir(), Lease: lease, Logger: log, AdvertiseURL: "http://" + node})
	}
	var aliveLog syncBuf
	dead, b, c := manager("dead", lease, log), manager("b", long, log), manager("c", long, log)
	alive := manager("alive", long, slog.New(slog.NewTextHandler(&aliveLog, nil)))
	for _, m := range []*sessions.Manager{dead, alive, b, c} {
		if _, err := m.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	insert := func(id, node, state string) {
		t.Helper()
		if err := au.AcquireSlot(ctx, project.ID); err != nil {
			t.Fatal(err)
		}
		x := sessions.Session{ID: id, ProjectID: project.ID, InternalStatus: state, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), TaskARN: "local:" + node + ":b1", StartedAt: now}
		if err := repo.Insert(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	insert("sess_dead_ready", "dead", sessions.StateReady)
	insert("sess_dead_terminating", "dead", sessions.StateTerminating)
	insert("sess_dead_creating", "dead", sessions.StateCreating)
	insert("sess_alive", "alive", sessions.StateReady)
	// A node id that is a prefix of another must not match it.
	insert("sess_deadly", "deadly", sessions.StateReady)

	// Before a whole lease has been observed, nothing is swept.
	if n, err := b.SweepLeases(ctx); err != nil || n != 0 {
		t.Fatalf("first sweep = %d, %v; want 0: a lease must be seen unrenewed for its duration", n, err)
	}

	var ended atomic.Int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := alive.RenewLease(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range []*sessions.Manager{b, c} {
			if err := m.RenewLease(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, m := range []*sessions.Manager{b, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := m.SweepLeases(ctx)
				if err != nil {
					t.Error(err)
				}
				ended.Add(int64(n))
			}()
		}
		wg.Wait()
		leases, err := repo.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := leases["dead"]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead's lease still registered after 20s; %d sessions ended", ended.Load())
		}
		time.Sleep(lease / 5)
	}
	if got := ended.Load(); got != 3 {
		t.Errorf("sweepers ended %d sessions, want exactly 3", got)
	}
	for id, want := range map[string]string{
		"sess_dead_ready": sessions.StatusError, "sess_dead_terminating": sessions.StatusError, "sess_dead_creating": sessions.StatusError,
		"sess_alive": sessions.StatusRunning, "sess_deadly": sessions.StatusRunning,
	} {
		x, err := repo.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if x.Status != want {
			t.Errorf("%s: %s, want %s", id, x.Status, want)
		}
		if want == sessions.StatusError && (x.Error == "" || x.EndedAt.IsZero()) {
			t.Errorf("%s: error %q, endedAt %v: want both", id, x.Error, x.EndedAt)
		}
	}
	p, err := au.GetProject(ctx, project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.ActiveSessions != 2 {
		t.Errorf("activeSessions %d, want 2 (alive's and deadly's): each dead session's slot freed exactly once", p.ActiveSessions)
	}

	// dead comes back (it was only cut off): its conditional renewal
	// fails, it registers again.
	if err := dead.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	leases, err := repo.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := leases["dead"]; !ok || l.Lease != lease || l.NodeURL != "http://dead" {
		t.Errorf("dead's lease after its return: %+v, %v", l, ok)
	}
	for _, node := range []string{"alive", "b", "c"} {
		if _, ok := leases[node]; !ok {
			t.Errorf("%s's lease is missing", node)
		}
	}
	// A renewal of alive's that landed although alive saw it fail (a
	// timeout) is not a lost lease: alive renews after it.
	landed := leases["alive"]
	landed.Seq++
	if err := repo.RenewLease(ctx, "alive", landed, nil); err != nil {
		t.Fatal(err)
	}
	if err := alive.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if leases, err = repo.Leases(ctx); err != nil {
		t.Fatal(err)
	}
	if got := leases["alive"]; got.Inc != landed.Inc || got.Seq != landed.Seq+1 {
		t.Errorf("alive's lease after a renewal that landed unseen: %+v, want inc %s seq %d", got, landed.Inc, landed.Seq+1)
	}
	if strings.Contains(aliveLog.String(), "taken over") {
		t.Errorf("alive took its own landed renewal for a lost lease:\n%s", aliveLog.String())
	}
	// A clean Close removes a node's lease.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b.Close(cctx)
	if leases, err = repo.Leases(ctx); err != nil {
		t.Fatal(err)
	} else if _, ok := leases["b"]; ok {
		t.Error("b's lease is still registered after a clean Close")
	}
	// The registry is no session: no index lists it.
	list, err := repo.ListByProject(ctx, project.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Errorf("project lists %d sessions, want 5", len(list))
	}
	ids, err := repo.Running(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if id == sessions.NodeRegistryID {
			t.Error("the node registry is listed as a running session")
		}
	}
}

// syncBuf is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
