package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"

	"github.com/quarrydb/quarry/internal/testenv"
)

// crashProc is a live process found in /proc.
type crashProc struct {
	pid     int
	state   byte
	cmdline string
}

func (p crashProc) String() string {
	return fmt.Sprintf("%d [%c]: %s", p.pid, p.state, p.cmdline)
}

// isCrashpad reports whether p is one of Chromium's crash handlers.
func (p crashProc) isCrashpad() bool { return strings.Contains(p.cmdline, "crashpad") }

// procsMentioning scans /proc/*/cmdline for live (non-zombie) processes
// whose command line contains needle, leaving out this test process and
// the pids in except.
func procsMentioning(needle string, except ...int) []crashProc {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []crashProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || slices.Contains(except, pid) {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte(needle)) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		state := stat[i+2]
		if state == 'Z' || state == 'X' || state == 'x' {
			continue
		}
		out = append(out, crashProc{pid: pid, state: state,
			cmdline: strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " ")})
	}
	return out
}

func joinProcs(ps []crashProc) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = "  " + p.String()
	}
	return strings.Join(lines, "\n")
}

// quarryProc is a `quarry serve` child process.
type quarryProc struct {
	cmd     *exec.Cmd
	api     string
	logPath string
	done    chan struct{}
	waitErr error // set before done is closed
}

func (q *quarryProc) logs() string {
	data, _ := os.ReadFile(q.logPath)
	return string(data)
}

func (q *quarryProc) exited() bool {
	select {
	case <-q.done:
		return true
	default:
		return false
	}
}

// asQuarryEnv, set to 1, makes the test binary run quarry's main instead
// of the tests (see TestMain): without the race detector the tests'
// quarry processes are this binary, so that they need no separate build
// of quarry.
const asQuarryEnv = "QUARRY_TEST_AS_QUARRY"

func TestMain(m *testing.M) {
	if os.Getenv(asQuarryEnv) == "1" {
		main()
		return
	}
	for k, v := range testAWSEnv {
		os.Setenv(k, v)
	}
	code := m.Run()
	if childBuild.dir != "" {
		os.RemoveAll(childBuild.dir)
	}
	os.Exit(code)
}

// childBuild is the quarry program the tests run as child processes when
// the test binary has the race detector: chosen, and built, once per test
// binary.
var childBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// maxChildCompiles is how many packages quarryBinary compiles, at most,
// for a build of quarry without the race detector. From a cold build
// cache that build compiles all of quarry's some 600 packages a second
// time (349 s of CPU measured on the 2-core test machine), more than the
// race detector costs the children (about 50 s for the cluster tests);
// with the packages cached it only compiles what changed, and links.
const maxChildCompiles = 40

// quarryBinary returns the program to run as quarry (through
// quarryCommand). Without the race detector that is this test binary.
// With it, that is quarry built once without it, when the build cache
// holds all but maxChildCompiles of its packages: the children (the
// cluster tests' nodes, the crash test's server, the README tour's
// quarry) are black boxes to the tests, which assert what they answer and
// record, and instrumented they cost several times the CPU of the tests'
// own code on a 2-core machine. Otherwise it is this test binary.
func quarryBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !raceEnabled {
		return self
	}
	childBuild.once.Do(func() {
		childBuild.dir, childBuild.err = os.MkdirTemp("", "quarry-test-bin-")
		if childBuild.err != nil {
			return
		}
		bin := filepath.Join(childBuild.dir, "quarry")
		// go test puts its Go's bin directory first in the PATH; -race in
		// GOFLAGS would instrument the children again.
		goBuild := func(args ...string) *exec.Cmd {
			// -w: no DWARF, as make test links the test binaries.
			cmd := exec.Command("go", append([]string{"build", "-ldflags=-w", "-o", bin}, append(args, ".")...)...)
			cmd.Env = append(os.Environ(), "GOFLAGS="+strings.Join(slices.DeleteFunc(strings.Fields(os.Getenv("GOFLAGS")), func(f string) bool {
				return f == "-race" || f == "--race" || f == "-race=true"
			}), " "))
			return cmd
		}
		// -n lists the compilations the build cache cannot spare.
		plan, err := goBuild("-n").CombinedOutput()
		if err != nil {
			childBuild.err = fmt.Errorf("go build -n ./cmd/quarry without -race: %w\n%s", err, plan)
			return
		}
		if n := strings.Count(string(plan), "/compile "); n > maxChildCompiles {
			t.Logf("quarry's child processes run this race-detector test binary: a build without -race would compile %d packages", n)
			childBuild.bin = self
			return
		}
		start := time.Now()
		if out, err := goBuild().CombinedOutput(); err != nil {
			childBuild.err = fmt.Errorf("go build ./cmd/quarry without -race: %w\n%s", err, out)
			return
		}
		childBuild.bin = bin
		t.Logf("quarry for the tests' child processes built without -race in %s", time.Since(start).Round(time.Millisecond))
	})
	if childBuild.err != nil {
		t.Fatal(childBuild.err)
	}
	return childBuild.bin
}

// quarryCommand is exec.Command for quarry (bin from quarryBinary) with args.
func quarryCommand(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), asQuarryEnv+"=1")
	return cmd
}

// startQuarry runs `quarry serve` on dir (with extra arguments) and waits
// for /healthz.
func startQuarry(t *testing.T, bin, dir, api, store, logName string, extra ...string) *quarryProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), logName)
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := quarryCommand(bin, append([]string{"serve", "--data-dir", dir, "--listen", api, "--ddb-listen", store}, extra...)...)
	// An *os.File, not an io.Writer: Wait must not wait for pipe holders.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start quarry serve: %v", err)
	}
	q := &quarryProc{cmd: cmd, api: api, logPath: logPath, done: make(chan struct{})}
	go func() {
		q.waitErr = cmd.Wait()
		close(q.done)
	}()
	t.Cleanup(func() {
		if !q.exited() {
			_ = q.cmd.Process.Kill()
			<-q.done
		}
	})
	start := time.Now()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := start.Add(2 * time.Minute) // a start can take long on a loaded machine
	for {
		if q.exited() {
			t.Fatalf("quarry serve exited during start: %v\n%s", q.waitErr, q.logs())
		}
		resp, err := client.Get("http://" + api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("quarry serve not healthy within 2 minutes (last error %v)\n%s", err, q.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("quarry serve (pid %d) healthy after %s", cmd.Process.Pid, time.Since(start).Round(time.Millisecond))
	return q
}

// crashSession is the part of a Browserbase session the test reads.
type crashSession struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	ProjectID  string `json:"projectId"`
	EndedAt    string `json:"endedAt"`
	ConnectURL string `json:"connectUrl"`
}

// wcRequest sends a Wallcrawler API request and returns the status code
// and body.
func wcRequest(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-BB-API-Key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, data
}

func decodeSession(t *testing.T, what string, data []byte) crashSession {
	t.Helper()
	var s crashSession
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v: %s", what, err, data)
	}
	return s
}

// TestWallcrawlerCrashRecovery SIGKILLs `quarry serve` while a session's
// Chromium runs, and checks that the browser dies with it (Pdeathsig),
// that a restart on the same data directory kills whatever was left,
// marks the session ERROR and frees its concurrency slot, and that a
// SIGTERM afterwards stops quarry cleanly without leaving a browser.
func TestWallcrawlerCrashRecovery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts quarry and Chromium processes; skipped in -short mode")
	}
	testenv.Chromium(t)
	total := time.Now()
	bin := quarryBinary(t)
	dir := t.TempDir()
	// The browsers' directory, outside the 0700 temporary tree so that
	// the browser user (nobody when the test runs as root) can enter it.
	browserRoot, err := os.MkdirTemp("", "quarry-crash-browsers-")
	if err != nil {
		t.Fatal(err)
	}
	browsersDir := filepath.Join(browserRoot, "browsers")
	api, store := freeAddr(t), freeAddr(t)
	base := "http://" + api + "/wallcrawler/v1"

	// Whatever happens, leave no process of the data directory behind.
	t.Cleanup(func() {
		for _, d := range []string{dir, browserRoot} {
			if n, _ := browser.KillLeftovers(d); n > 0 {
				t.Logf("cleanup: killed %d processes of %s", n, d)
			}
		}
		_ = os.RemoveAll(browserRoot)
	})

	q1 := startQuarry(t, bin, dir, api, store, "quarry-1.log", "--wallcrawler-browser-dir", browserRoot)

	cli := func(args ...string) string {
		t.Helper()
		args = append(args, "--data-dir", dir, "--ddb-listen", store)
		cmd := quarryCommand(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("quarry %v: %v\n%s", args, err, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	const project = "project_crash"
	if out := cli("wallcrawler", "project", "create", "--name", "n", "--id", project, "--concurrency", "1"); !strings.Contains(out, project) {
		t.Fatalf("project create: %q", out)
	}
	key := cli("wallcrawler", "key", "create", "--project", project)
	if !strings.HasPrefix(key, "wc_") {
		t.Fatalf("raw key %q", key)
	}

	// 1. A running session with its Chromium.
	start := time.Now()
	code, body := wcRequest(t, http.MethodPost, base+"/sessions", key, `{"userMetadata":{"test":"crash"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create session: %d %s\n%s", code, body, q1.logs())
	}
	sess := decodeSession(t, "create session", body)
	if sess.ID == "" || sess.Status != "RUNNING" {
		t.Fatalf("create session: id %q, status %q", sess.ID, sess.Status)
	}
	t.Logf("session %s RUNNING after %s", sess.ID, time.Since(start).Round(time.Millisecond))

	before := procsMentioning(browserRoot, q1.cmd.Process.Pid)
	var chromiums []crashProc
	for _, p := range before {
		if strings.Contains(p.cmdline, browsersDir) {
			chromiums = append(chromiums, p)
		}
	}
	if len(chromiums) == 0 {
		t.Fatalf("no Chromium process mentions %s; processes of the data directory:\n%s", browsersDir, joinProcs(before))
	}
	t.Logf("%d processes of the data directory besides quarry while the session runs:\n%s", len(before), joinProcs(before))
	if os.Geteuid() == 0 {
		// quarry runs as root; its browsers do not.
		for _, p := range chromiums {
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(status), "\n") {
				if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == "0" {
					t.Errorf("browser process runs as root: %s\n%s", line, p)
				}
			}
		}
	}

	// The only slot is taken.
	if code, body := wcRequest(t, http.MethodPost, base+"/sessions", key, `{}`); code != http.StatusTooManyRequests {
		t.Fatalf("second session with concurrency 1: %d %s, want 429", code, body)
	}

	// 2. SIGKILL quarry: Pdeathsig takes the browser down with it.
	killed := time.Now()
	if err := q1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL quarry: %v", err)
	}
	select {
	case <-q1.done:
	case <-time.After(10 * time.Second):
		t.Fatal("quarry did not die within 10s of SIGKILL")
	}
	var survivors []crashProc
	deadline := killed.Add(10 * time.Second)
	for {
		survivors = procsMentioning(browserRoot)
		if len(survivors) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var crashpads, others []crashProc
	for _, p := range survivors {
		if p.isCrashpad() {
			crashpads = append(crashpads, p)
		} else {
			others = append(others, p)
		}
	}
	if len(survivors) == 0 {
		t.Logf("no process of the data directory alive %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	} else {
		t.Logf("FINDING: %d processes of the data directory still alive %s after SIGKILL of quarry (%d crashpad handlers):\n%s",
			len(survivors), time.Since(killed).Round(time.Millisecond), len(crashpads), joinProcs(survivors))
	}
	if len(others) > 0 {
		t.Errorf("%d processes other than crashpad handlers survived quarry's SIGKILL for 10s:\n%s", len(others), joinProcs(others))
	}

	// 3. Restart on the same data directory.
	q2 := startQuarry(t, bin, dir, api, store, "quarry-2.log", "--wallcrawler-browser-dir", browserRoot)
	var left []crashProc
	deadline = time.Now().Add(5 * time.Second)
	for {
		// Any such process is of the first run: the new quarry has
		// started no browser yet.
		left = procsMentioning(browserRoot, q2.cmd.Process.Pid)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("after the restart, %d processes of the first run are still alive:\n%s\nlogs:\n%s", len(left), joinProcs(left), q2.logs())
	} else if len(survivors) > 0 {
		t.Logf("the restart killed the %d survivors", len(survivors))
	}
	for _, line := range strings.Split(q2.logs(), "\n") {
		if strings.Contains(line, "previous process") {
			t.Logf("restart log: %s", line)
		}
	}

	code, body = wcRequest(t, http.MethodGet, base+"/sessions/"+sess.ID, key, "")
	if code != http.StatusOK {
		t.Fatalf("get session after restart: %d %s", code, body)
	}
	got := decodeSession(t, "get session after restart", body)
	if got.Status != "ERROR" {
		t.Errorf("session after restart: status %q, want ERROR (reconciled)\nlogs:\n%s", got.Status, q2.logs())
	}
	if got.EndedAt == "" {
		t.Errorf("reconciled session has no endedAt: %s", body)
	}
	if got.ConnectURL != "" {
		t.Errorf("reconciled session still offers a connectUrl: %s", body)
	}

	// The slot was freed: a new session starts (concurrency 1).
	start = time.Now()
	code, body = wcRequest(t, http.MethodPost, base+"/sessions", key, `{}`)
	if code != http.StatusCreated {
		t.Fatalf("create session after restart: %d %s\nlogs:\n%s", code, body, q2.logs())
	}
	sess2 := decodeSession(t, "create session after restart", body)
	if sess2.Status != "RUNNING" || sess2.ID == sess.ID {
		t.Fatalf("create session after restart: id %q, status %q", sess2.ID, sess2.Status)
	}
	t.Logf("session %s RUNNING after the restart in %s", sess2.ID, time.Since(start).Round(time.Millisecond))
	if ps := procsMentioning(browsersDir); len(ps) == 0 {
		t.Errorf("the new session has no Chromium under %s", browsersDir)
	}

	code, body = wcRequest(t, http.MethodPost, base+"/sessions/"+sess2.ID, key, `{"status":"REQUEST_RELEASE"}`)
	if code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	if rel := decodeSession(t, "release", body); rel.Status != "COMPLETED" {
		t.Errorf("release answered status %q, want COMPLETED", rel.Status)
	}

	// 4. SIGTERM: a clean stop that leaves nothing behind.
	termed := time.Now()
	if err := q2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM quarry: %v", err)
	}
	select {
	case <-q2.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("quarry did not exit within 20s of SIGTERM\nlogs:\n%s", q2.logs())
	}
	var exitErr *exec.ExitError
	if q2.waitErr != nil {
		if errors.As(q2.waitErr, &exitErr) {
			t.Errorf("quarry exit after SIGTERM: %v (code %d)\nlogs:\n%s", q2.waitErr, exitErr.ExitCode(), q2.logs())
		} else {
			t.Errorf("quarry wait: %v", q2.waitErr)
		}
	}
	t.Logf("quarry exited 0 %s after SIGTERM", time.Since(termed).Round(time.Millisecond))
	deadline = time.Now().Add(5 * time.Second)
	for {
		left = procsMentioning(browserRoot)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("%d processes of the data directory left after SIGTERM:\n%s", len(left), joinProcs(left))
	}
	for _, d := range []string{dir, browserRoot} {
		if pids, err := browser.Leftovers(d); err != nil || len(pids) > 0 {
			t.Errorf("browser.Leftovers(%s) = %v, %v; want none", d, pids, err)
		}
	}
	t.Logf("total %s", time.Since(total).Round(time.Millisecond))
	if t.Failed() {
		t.Logf("first run logs:\n%s\nsecond run logs:\n%s", q1.logs(), q2.logs())
	}
}
