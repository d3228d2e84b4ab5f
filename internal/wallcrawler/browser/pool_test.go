package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// waitPoolReady waits until pool holds n warm browsers.
func waitPoolReady(t *testing.T, pool *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for pool.Ready() < n {
		if time.Now().After(deadline) {
			t.Fatalf("Ready() = %d, want %d", pool.Ready(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closePool closes pool at cleanup, failing when that takes long (a
// refill that Close cannot stop).
func closePool(t *testing.T, pool *Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pool.Close(ctx); err != nil {
		t.Errorf("pool Close at cleanup: %v", err)
	}
}

// countingProvider counts the launches it was asked for, as they start.
type countingProvider struct {
	p Provider

	mu      sync.Mutex
	started int
}

func (c *countingProvider) Launch(ctx context.Context, opts LaunchOptions) (Browser, error) {
	c.mu.Lock()
	c.started++
	c.mu.Unlock()
	return c.p.Launch(ctx, opts)
}

func (c *countingProvider) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// manualTimers stands in for time.After: each wait is handed to the test,
// which fires it by sending on the channel.
type manualTimers chan chan time.Time

func (m manualTimers) after(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	m <- ch
	return ch
}

// next returns the next wait the pool started.
func (m manualTimers) next(t *testing.T) chan time.Time {
	t.Helper()
	select {
	case ch := <-m:
		return ch
	case <-time.After(20 * time.Second):
		t.Fatal("the pool did not wait before its refill")
		return nil
	}
}

func TestPoolPacesRefills(t *testing.T) {
	for _, tc := range []struct {
		name            string
		closeDuringWait bool
	}{
		{name: "refill after the wait"},
		{name: "Close during the wait launches nothing", closeDuringWait: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, workDir := newTestProvider(t)
			counted := &countingProvider{p: c}
			timers := make(manualTimers, 4)
			pool := newPool(t.Context(), counted, 1, nil, poolConfig{delay: RefillDelay, after: timers.after})
			t.Cleanup(func() { closePool(t, pool) })
			waitPoolReady(t, pool, 1)

			b, err := pool.Launch(t.Context(), LaunchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(context.Background()) })
			fire := timers.next(t)
			if n := counted.count(); n != 1 {
				t.Fatalf("%d launches once the refill waits, want 1 (the initial fill): the refill did not wait", n)
			}
			if tc.closeDuringWait {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				if err := pool.Close(ctx); err != nil {
					t.Fatalf("Close during the wait: %v", err)
				}
				if n := counted.count(); n != 1 {
					t.Errorf("%d launches after Close, want 1: Close did not stop the waiting refill", n)
				}
				entries, err := os.ReadDir(workDir)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != 1 || entries[0].Name() != b.ID() {
					t.Errorf("work dirs after Close: %v, want only the taken browser's %s", entries, b.ID())
				}
				return
			}
			fire <- time.Now()
			waitPoolReady(t, pool, 1)
			if n := counted.count(); n != 2 {
				t.Errorf("%d launches after the wait, want 2", n)
			}
		})
	}
}

// groupNices returns the niceness of every process in process group pgid
// (of its main thread), by pid.
func groupNices(t *testing.T, pgid int) map[int]int {
	t.Helper()
	procs, err := listProcs()
	if err != nil {
		t.Fatal(err)
	}
	nices := map[int]int{}
	for _, p := range procs {
		if p.pgid != pgid {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
		if err != nil {
			continue // exited meanwhile
		}
		// After the command name: state ppid pgrp session tty_nr tpgid
		// flags minflt cminflt majflt cmajflt utime stime cutime cstime
		// priority nice.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		nice, err := strconv.Atoi(fields[16])
		if err != nil {
			t.Fatalf("/proc/%d/stat: %q", p.pid, stat)
		}
		nices[p.pid] = nice
	}
	if len(nices) == 0 {
		t.Fatalf("no process in group %d", pgid)
	}
	return nices
}

// assertGroupNice fails unless every process of group pgid has niceness want.
func assertGroupNice(t *testing.T, what string, pgid, want int) {
	t.Helper()
	nices := groupNices(t, pgid)
	for pid, n := range nices {
		if n != want {
			t.Errorf("%s: pid %d runs at niceness %d, want %d (group %v)", what, pid, n, want, nices)
		}
	}
	t.Logf("%s: %d processes at niceness %d", what, len(nices), want)
}

func TestPoolPriority(t *testing.T) {
	base, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	if base+poolNice > maxNice {
		t.Skipf("the test runs at niceness %d: no room for +%d", base, poolNice)
	}
	for _, tc := range []struct {
		name      string
		nice      int // the pool's
		permitted bool
		warm      int // the warm browser's niceness
	}{
		{name: "lower while warm, quarry's once handed over", nice: poolNice, permitted: true, warm: base + poolNice},
		{name: "quarry's throughout when it may not be restored", nice: 0, warm: base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.permitted && !canRestorePriority() {
				t.Skip("this process may not raise a priority again (not root, no CAP_SYS_NICE)")
			}
			// As quarry serve runs them as root: as an unprivileged user,
			// which may not lower its own niceness (as root, Chromium sets
			// its processes' priorities itself).
			u := browserUser(t)
			workDir := filepath.Join(reachableTempDir(t), "browsers")
			c, err := NewChromium(ChromiumOptions{WorkDir: workDir, User: &u, StartTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			never := make(manualTimers, 4) // refills after the take never launch
			pool := newPool(t.Context(), c, 1, nil, poolConfig{delay: RefillDelay, after: never.after, nice: tc.nice, baseNice: base})
			t.Cleanup(func() { closePool(t, pool) })
			waitPoolReady(t, pool, 1)

			pool.mu.Lock()
			warm := pool.warm[0].b
			pool.mu.Unlock()
			assertGroupNice(t, "warm", warm.PID(), tc.warm)

			b, err := pool.Launch(t.Context(), LaunchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(context.Background()) })
			if b.ID() != warm.ID() {
				t.Fatalf("Launch returned %s, not the warm browser %s", b.ID(), warm.ID())
			}
			assertGroupNice(t, "handed over", b.PID(), base)

			// A page opened after the hand-over (a renderer forked then)
			// runs at quarry's niceness too.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "<title>priority</title>")
			}))
			t.Cleanup(srv.Close)
			before := len(groupNices(t, b.PID()))
			ctx := browserCtx(t, b)
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
				t.Fatalf("navigate: %v", err)
			}
			if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "priority" {
				t.Fatalf("page: title %q, %v", title, err)
			}
			if after := len(groupNices(t, b.PID())); after <= before {
				t.Logf("no new process for the page (%d before, %d after)", before, after)
			}
			assertGroupNice(t, "with a page", b.PID(), base)

			closeBrowser(t, b)
			if err := b.Remove(); err != nil {
				t.Fatal(err)
			}
			if err := pool.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			assertNoLeftovers(t, workDir)
		})
	}
}
