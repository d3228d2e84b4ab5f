package sessions_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// TestReleaseThroughOtherNodeHoldsSlot releases a session through node B
// while node A runs its browser, in a project of concurrency 1: the slot
// stays taken until A has closed the browser (a create meanwhile answers
// 429), then A writes the final state and frees it, and a create fits.
func TestReleaseThroughOtherNodeHoldsSlot(t *testing.T) {
	st := newStack(t, 1, sessions.Options{NodeID: "node-a"})
	b := sessions.NewManager(sessions.Deps{Repo: st.repo, Auth: st.auth},
		sessions.Options{NodeID: "node-b", WorkDir: t.TempDir(), Now: st.clock.now, Lease: time.Hour, AdvertiseURL: "http://node-b"})
	gate := make(chan struct{})
	st.launched.mu.Lock()
	st.launched.gate = gate
	st.launched.mu.Unlock()
	opened := false
	defer func() {
		if !opened {
			close(gate)
		}
	}()
	s := st.create(t, nil)

	p := auth.Principal{ProjectID: st.project.ID, ProjectIDs: []string{st.project.ID}}
	type result struct {
		x   sessions.Session
		err error
	}
	released := make(chan result, 1)
	go func() {
		x, err := b.Release(context.Background(), p, s.ID)
		released <- result{x, err}
	}()
	// A has seen the release (its record is TERMINATING) and is closing
	// the browser, held by the gate.
	deadline := time.Now().Add(30 * time.Second)
	for {
		x, err := st.repo.Get(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if x.InternalStatus != sessions.StateReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the release through node B did not reach the session")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := st.call(t, "POST", "/v1/sessions", nil, nil); code != http.StatusTooManyRequests {
		t.Fatalf("create while node A still runs the released session's browser: %d, want 429", code)
	}
	select {
	case r := <-released:
		t.Fatalf("the release through node B returned before node A closed the browser: %+v %v", r.x, r.err)
	default:
	}
	close(gate)
	opened = true
	r := <-released
	if r.err != nil || r.x.InternalStatus != sessions.StateStopped {
		t.Fatalf("release through node B: %s %v, want STOPPED", r.x.InternalStatus, r.err)
	}
	// The slot is free once the final state is written.
	st.release(t, st.create(t, nil).ID)
}

// TestCutOffNodeStopsServing cuts a node off the store while its session
// runs: once a whole lease has passed without a successful renewal, the
// node can no longer prove it owns the session (the others may have ended
// it), so it kills the browser and refuses CDP connections to it. When
// the store answers again, it ends the session (ERROR, slot freed).
func TestCutOffNodeStopsServing(t *testing.T) {
	var cut atomic.Bool
	st := newStackWith(t, 1, sessions.Options{NodeID: "node-a", Lease: 1500 * time.Millisecond, LeaseRenew: 250 * time.Millisecond},
		stackOptions{Cut: &cut})
	s := st.create(t, nil)
	pid := browserPID(t, st, s.ID)
	if code := wsStatus(t, s.ConnectURL); code != http.StatusSwitchingProtocols {
		t.Fatalf("CDP connection before the cut: %d", code)
	}

	cut.Store(true)
	deadline := time.Now().Add(60 * time.Second)
	for st.mgr.Live() > 0 || syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the browser of a node cut off from the store for more than its lease still runs (live %d)", st.mgr.Live())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := wsStatus(t, s.ConnectURL); code == http.StatusSwitchingProtocols {
		t.Fatal("a CDP connection to the session of a node cut off from the store was accepted")
	}

	cut.Store(false)
	deadline = time.Now().Add(60 * time.Second)
	for {
		x, err := st.repo.Get(context.Background(), s.ID)
		if err == nil && x.InternalStatus == sessions.StateFailed {
			if !strings.Contains(x.Error, "node-a") {
				t.Errorf("error of the session = %q, want it to name the node", x.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of a node back on the store: %+v %v, want FAILED", x.InternalStatus, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its slot is free.
	st.release(t, st.create(t, nil).ID)
}
