package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/quarrydb/quarry/internal/testenv"
)

// newTestProvider returns a Chromium provider with a temporary work dir, or
// skips the test when no browser is installed. Leftovers are killed and
// reported at cleanup.
func newTestProvider(t *testing.T) (*Chromium, string) {
	t.Helper()
	if _, err := findBrowser(""); err != nil {
		testenv.Missing(t, "no chromium: %v", err)
	}
	workDir := t.TempDir()
	c, err := NewChromium(ChromiumOptions{WorkDir: workDir, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n, err := KillLeftovers(workDir)
		if err != nil {
			t.Errorf("KillLeftovers: %v", err)
		}
		if n > 0 {
			t.Errorf("%d leftover processes killed at cleanup", n)
		}
	})
	return c, workDir
}

// launch launches a browser and registers its Close with t.Cleanup.
func launch(t *testing.T, p Provider, opts LaunchOptions) Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	start := time.Now()
	b, err := p.Launch(ctx, opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Logf("launched %s pid %d in %v", b.ID(), b.PID(), time.Since(start))
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("cleanup Close: %v", err)
		}
	})
	return b
}

// browserCtx returns a chromedp context attached to b.
func browserCtx(t *testing.T, b Browser) context.Context {
	t.Helper()
	actx, cancelA := remote.NewAllocator(t.Context(), devtoolsURL(t, b), remote.NoModifyURL)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 20*time.Second)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
	})
	return ctx
}

// devtoolsURL serves b's DevTools endpoints on a loopback server of the
// test (the browser itself has none) and returns its browser target's
// WebSocket URL there.
func devtoolsURL(t *testing.T, b Browser) string {
	t.Helper()
	srv := httptest.NewServer(b.(*chromiumBrowser).devtools)
	t.Cleanup(srv.Close)
	return strings.Replace(b.WebSocketURL(), "ws://"+devtoolsHost, "ws://"+srv.Listener.Addr().String(), 1)
}

// assertNoLeftovers fails when a process carrying dir is alive.
func assertNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	pids, err := Leftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) > 0 {
		t.Fatalf("leftover processes for %s: %v", dir, pids)
	}
}

// groupAlive reports whether a non-zombie member of process group pgid lives.
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	procs, err := listProcs()
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(procs, func(p procInfo) bool { return p.pgid == pgid })
}

func closeBrowser(t *testing.T, b Browser) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return time.Since(start)
}

func TestLaunchNavigateClose(t *testing.T) {
	c, workDir := newTestProvider(t)
	b := launch(t, c, LaunchOptions{})

	if b.WebSocketURL() != "ws://devtools.invalid/devtools/browser/"+b.ID() {
		t.Errorf("WebSocketURL = %q", b.WebSocketURL())
	}
	if !strings.HasPrefix(b.UserDataDir(), filepath.Join(workDir, b.ID())) || !strings.HasPrefix(b.DownloadDir(), filepath.Join(workDir, b.ID())) {
		t.Errorf("dirs not inside work dir: %q %q", b.UserDataDir(), b.DownloadDir())
	}
	// No DevTools port: the command line asks for the pipe, and the
	// browser's processes listen on no TCP socket.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Split(string(cmdline), "\x00"); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--remote-debugging-port") }) || !slices.Contains(args, "--remote-debugging-pipe") {
		t.Errorf("command line %q: want --remote-debugging-pipe and no --remote-debugging-port", args)
	}
	if ports := listeningPorts(t, b.PID()); len(ports) > 0 {
		t.Errorf("the browser listens on TCP ports %v", ports)
	}
	resp, err := b.HTTPClient().Get("http://" + devtoolsHost + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), b.WebSocketURL()) || !strings.Contains(string(body), "Chrome/") {
		t.Fatalf("/json/version: %s %s", resp.Status, body)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head><title>Hello Wallcrawler</title></head><body>hi</body></html>")
	}))
	t.Cleanup(srv.Close)
	ctx := browserCtx(t, b)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || title != "Hello Wallcrawler" {
		t.Fatalf("title = %q, %v", title, err)
	}
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int]("window.outerWidth"))
	t.Logf("window.outerWidth = %d (%v)", width, err)

	pid := b.PID()
	t.Logf("Close took %v", closeBrowser(t, b))
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if b.Err() != nil {
		t.Errorf("Err after Close = %v", b.Err())
	}
	if groupAlive(t, pid) {
		t.Error("process group alive after Close")
	}
	assertNoLeftovers(t, workDir)
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(workDir, b.ID())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir still there: %v", err)
	}
}

func TestCrash(t *testing.T) {
	c, workDir := newTestProvider(t)
	b := launch(t, c, LaunchOptions{})
	if err := syscall.Kill(b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after kill -9")
	}
	if b.Err() == nil {
		t.Fatal("Err nil after crash")
	}
	t.Logf("Err = %v", b.Err())
	closeBrowser(t, b)
	if groupAlive(t, b.PID()) {
		t.Error("process group alive after Close")
	}
	assertNoLeftovers(t, workDir)
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentClose(t *testing.T) {
	c, workDir := newTestProvider(t)
	b := launch(t, c, LaunchOptions{Width: 800, Height: 600})
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- b.Close(t.Context()) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	assertNoLeftovers(t, workDir)
}

func TestDownload(t *testing.T) {
	c, workDir := newTestProvider(t)
	b := launch(t, c, LaunchOptions{})
	const content = "quarterly numbers\n42\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Disposition", "attachment; filename=report.txt")
		fmt.Fprint(w, content)
	}))
	t.Cleanup(srv.Close)
	ctx := browserCtx(t, b)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/report")); err != nil {
		t.Logf("navigate (download): %v", err) // net::ERR_ABORTED is expected
	}
	file := filepath.Join(b.DownloadDir(), "report.txt")
	deadline := time.Now().Add(15 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil && string(data) == content {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(b.DownloadDir())
			t.Fatalf("download not found: %v; dir: %v", err, entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
	closeBrowser(t, b)
	assertNoLeftovers(t, workDir)
}

// TestDownloadDefaultBehavior: Chromium resets the download behavior to
// "default" when the DevTools session that set it disconnects (Playwright
// sets one on every connectOverCDP); the default is the profile's
// download directory, which Launch points at DownloadDir, and not the
// user's ~/Downloads.
func TestDownloadDefaultBehavior(t *testing.T) {
	c, workDir := newTestProvider(t)
	profile := filepath.Join(t.TempDir(), "profile")
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A restored profile's own default directory does not count.
	if err := os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(`{"download":{"default_directory":"/elsewhere"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = KillLeftovers(profile) })
	b := launch(t, c, LaunchOptions{UserDataDir: profile})
	name := fmt.Sprintf("default-%d.txt", time.Now().UnixNano())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Disposition", "attachment; filename="+name)
		fmt.Fprint(w, "numbers")
	}))
	t.Cleanup(srv.Close)
	ctx := browserCtx(t, b)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.FromContext(ctx).Browser.Call(ctx, "Browser.setDownloadBehavior", map[string]any{"behavior": "default"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/report")); err != nil {
		t.Logf("navigate (download): %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if data, err := os.ReadFile(filepath.Join(b.DownloadDir(), name)); err == nil && string(data) == "numbers" {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(b.DownloadDir())
			t.Fatalf("download not in %s: %v", b.DownloadDir(), entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, "Downloads", name)); err == nil {
			t.Fatalf("download in %s/Downloads", home)
		}
	}
	closeBrowser(t, b)
	assertNoLeftovers(t, workDir)
}

func TestSetDownloadPrefs(t *testing.T) {
	profile := t.TempDir()
	for _, c := range []struct{ name, before, want string }{
		{"new profile", "", `{"download":{"default_directory":"/d","prompt_for_download":false}}`},
		{"kept prefs", `{"download":{"default_directory":"/elsewhere","directory_upgrade":true},"big":12345678901234567890}`,
			`{"big":12345678901234567890,"download":{"default_directory":"/d","directory_upgrade":true,"prompt_for_download":false}}`},
		{"unreadable", `{"download":`, `{"download":{"default_directory":"/d","prompt_for_download":false}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(profile, "Default", "Preferences")
			_ = os.RemoveAll(filepath.Dir(path))
			if c.before != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := setDownloadPrefs(profile, "/d"); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != c.want {
				t.Fatalf("preferences %s (%v), want %s", got, err, c.want)
			}
		})
	}
}

func TestProfilePersistence(t *testing.T) {
	c, workDir := newTestProvider(t)
	profile := filepath.Join(t.TempDir(), "profile")
	t.Cleanup(func() { _, _ = KillLeftovers(profile) })
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/set":
			w.Header().Set("Set-Cookie", "session=s3cr3t; Max-Age=3600; Path=/")
			fmt.Fprint(w, "<title>set</title>")
		default:
			v := ""
			if ck, err := r.Cookie("session"); err == nil {
				v = ck.Value
			}
			got <- v
			fmt.Fprint(w, "<title>check</title>")
		}
	}))
	t.Cleanup(srv.Close)

	b1 := launch(t, c, LaunchOptions{UserDataDir: profile})
	if b1.UserDataDir() != profile {
		t.Fatalf("UserDataDir = %q", b1.UserDataDir())
	}
	ctx1 := browserCtx(t, b1)
	if err := chromedp.Do(ctx1, chromedp.Navigate(srv.URL+"/set")); err != nil {
		t.Fatal(err)
	}
	t.Logf("graceful Close took %v", closeBrowser(t, b1))
	assertNoLeftovers(t, workDir)
	assertNoLeftovers(t, profile)
	if err := b1.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(profile, "Default")); err != nil {
		t.Fatalf("Remove touched caller profile: %v", err)
	}

	b2 := launch(t, c, LaunchOptions{UserDataDir: profile})
	ctx2 := browserCtx(t, b2)
	if err := chromedp.Do(ctx2, chromedp.Navigate(srv.URL+"/check")); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "s3cr3t" {
			t.Fatalf("cookie after relaunch = %q, want s3cr3t", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("check request not seen")
	}
	jsCookie, err := chromedp.Run(ctx2, chromedp.Evaluate[string]("document.cookie"))
	if err != nil || !strings.Contains(jsCookie, "session=s3cr3t") {
		t.Errorf("document.cookie = %q, %v", jsCookie, err)
	}
	closeBrowser(t, b2)
	assertNoLeftovers(t, profile)
}

func TestPool(t *testing.T) {
	c, workDir := newTestProvider(t)
	pool := NewPool(t.Context(), c, 2, nil)
	t.Cleanup(func() { _ = pool.Close(context.Background()) })

	waitReady := func(n int) {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for pool.Ready() < n {
			if time.Now().After(deadline) {
				t.Fatalf("Ready() = %d, want %d", pool.Ready(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	start := time.Now()
	waitReady(2)
	t.Logf("pool warm (2) after %v", time.Since(start))

	entries, err := os.ReadDir(workDir)
	if err != nil {
		t.Fatal(err)
	}
	var warm []string
	for _, e := range entries {
		warm = append(warm, e.Name())
	}

	start = time.Now()
	b, err := pool.Launch(t.Context(), LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pool Launch took %v", time.Since(start))
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	if !slices.Contains(warm, b.ID()) {
		t.Fatalf("Launch returned %s, not a warm browser %v", b.ID(), warm)
	}
	if _, err := Call(t.Context(), b, "Browser.getVersion", nil); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitReady(2)
	t.Logf("refilled after %v", time.Since(start))

	// A browser with an extension is launched for it, never taken warm.
	if entries, err = os.ReadDir(workDir); err != nil {
		t.Fatal(err)
	}
	warm = warm[:0]
	for _, e := range entries {
		warm = append(warm, e.Name())
	}
	withExt, err := pool.Launch(t.Context(), LaunchOptions{Extension: func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version":3,"name":"x","version":"1"}`), 0o600)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(warm, withExt.ID()) || withExt.(*chromiumBrowser).ExtensionID() == "" || pool.Ready() != 2 {
		t.Errorf("Launch with an extension returned %s (warm: %v, extension %q, %d still warm), want a new browser with it",
			withExt.ID(), warm, withExt.(*chromiumBrowser).ExtensionID(), pool.Ready())
	}
	closeBrowser(t, withExt)
	if err := withExt.Remove(); err != nil {
		t.Fatal(err)
	}

	closeBrowser(t, b)
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := pool.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("pool Close took %v", time.Since(start))
	if pool.Ready() != 0 {
		t.Errorf("Ready after Close = %d", pool.Ready())
	}
	assertNoLeftovers(t, workDir)
	if entries, _ := os.ReadDir(workDir); len(entries) != 0 {
		t.Errorf("work dirs left after pool Close: %v", entries)
	}
}

func TestLaunchFailure(t *testing.T) {
	if _, err := exec.LookPath("false"); err != nil {
		t.Skip("no false binary")
	}
	workDir := t.TempDir()
	c, err := NewChromium(ChromiumOptions{Path: "false", WorkDir: workDir, StartTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Launch(t.Context(), LaunchOptions{})
	if err == nil {
		_ = b.Close(context.Background())
		t.Fatal("Launch of /bin/false succeeded")
	}
	t.Logf("Launch error: %v", err)
	assertNoLeftovers(t, workDir)
	if entries, _ := os.ReadDir(workDir); len(entries) != 0 {
		t.Errorf("work dir left after failed launch: %v", entries)
	}
}

func TestStartTimeout(t *testing.T) {
	// A process that never writes DevToolsActivePort: launch must time out
	// and kill its whole group.
	script := filepath.Join(t.TempDir(), "fake-chrome")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 60 &\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	c, err := NewChromium(ChromiumOptions{Path: script, WorkDir: workDir, StartTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Launch(t.Context(), LaunchOptions{}); err == nil {
		t.Fatal("Launch succeeded")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	assertNoLeftovers(t, workDir)
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(8)
	_, _ = tb.Write([]byte("hello"))
	_, _ = tb.Write([]byte("world"))
	if got := tb.String(); got != "lloworld" {
		t.Errorf("got %q", got)
	}
	_, _ = tb.Write([]byte("0123456789"))
	if got := tb.String(); got != "23456789" {
		t.Errorf("got %q", got)
	}
}

// TestLaunchRetriesAStartupCrash starts a "browser" that dies of SIGSEGV
// the first time and is the real Chromium the second: Launch succeeds.
func TestLaunchRetriesAStartupCrash(t *testing.T) {
	real, err := findBrowser("")
	if err != nil {
		testenv.Missing(t, "no chromium: %v", err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "crashed-once")
	script := filepath.Join(dir, "flaky-chrome")
	body := "#!/bin/sh\nif [ ! -e " + marker + " ]; then touch " + marker + "; kill -SEGV $$; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	c, err := NewChromium(ChromiumOptions{Path: script, WorkDir: workDir, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Launch(t.Context(), LaunchOptions{})
	if err != nil {
		t.Fatalf("Launch after one start-up crash: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the first attempt did not run")
	}
	if n := b.LaunchRetries(); n != 1 {
		t.Errorf("LaunchRetries = %d, want 1", n)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = b.Remove()
	assertNoLeftovers(t, workDir)
}
