package sessions_test

import (
	"context"
	"net/http"
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
