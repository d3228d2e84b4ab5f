package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrydb/quarry/internal/testenv"
)

func TestLookupUser(t *testing.T) {
	if _, err := LookupUser("nobody"); err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	for _, tc := range []struct {
		spec     string
		want     User
		wantName string // checked when want.Name is empty
		wantErr  string
	}{
		{spec: "nobody", want: User{Name: "nobody", UID: 65534, GID: 65534}},
		{spec: "65534", want: User{Name: "nobody", UID: 65534, GID: 65534}},
		{spec: "65534:1234", want: User{Name: "nobody", UID: 65534, GID: 1234}},
		{spec: "54321:54322", want: User{Name: "uid 54321", UID: 54321, GID: 54322}},
		{spec: "54321", want: User{Name: "uid 54321", UID: 54321, GID: 54321}},
		{spec: "", wantErr: "empty"},
		{spec: "nobody:12", wantErr: "uid[:gid]"},
		{spec: "12:x", wantErr: "not a number"},
		{spec: "no-such-user-quarry", wantErr: "no-such-user-quarry"},
	} {
		got, err := LookupUser(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LookupUser(%q) = %v, %v; want error containing %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("LookupUser(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
}

// browserUser returns the default browser user, skipping the test unless it
// runs as root with chromium installed.
func browserUser(t *testing.T) User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch the browsers' user")
	}
	if _, err := findBrowser(""); err != nil {
		testenv.Missing(t, "no chromium: %v", err)
	}
	u, err := DefaultUser()
	if err != nil {
		t.Skip(err)
	}
	return u
}

// reachableTempDir returns a new directory under os.TempDir() that users
// other than root can traverse (t.TempDir() is 0700), removed at cleanup
// after killing what runs there.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "quarry-confine-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := reachable(dir, User{Name: "other", UID: 65534, GID: 65534}); err != nil {
		t.Skipf("temporary directory not reachable by other users: %v", err)
	}
	t.Cleanup(func() {
		_, _ = KillLeftovers(dir)
		_ = os.RemoveAll(dir)
	})
	return dir
}

// userNamespacesWork reports whether u can create a user namespace, using
// unshare(1) as u (the test's independent check of the provider's probe).
func userNamespacesWork(t *testing.T, u User) (bool, bool) {
	t.Helper()
	path, err := exec.LookPath("unshare")
	if err != nil {
		return false, false
	}
	cmd := exec.Command(path, "-U", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("unshare -U true as %s: %v %s", u, err, strings.TrimSpace(string(out)))
	return err == nil, true
}

func TestConfinedWorkDirMustBeReachable(t *testing.T) {
	u := browserUser(t)
	_, err := NewChromium(ChromiumOptions{WorkDir: filepath.Join(t.TempDir(), "browsers"), User: &u})
	if err == nil || !strings.Contains(err.Error(), "not reachable by browser user") {
		t.Fatalf("NewChromium with a work dir under a 0700 root dir: %v; want a not-reachable error", err)
	}
	t.Logf("error: %v", err)
}

// procStatusIDs returns the Uid and Gid lines of /proc/<pid>/status.
func procStatusIDs(pid int) (uid, gid []string, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Gid:"); ok {
			gid = strings.Fields(v)
		}
	}
	return uid, gid, nil
}

// pageWS returns the CDP endpoint of one page target of b, from
// /json/list: the raw access a tenant has, below any command filter.
func pageWS(t *testing.T, b Browser) string {
	t.Helper()
	resp, err := b.HTTPClient().Get("http://" + devtoolsHost + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			return tg.WS
		}
	}
	t.Fatalf("no page target: %+v", targets)
	return ""
}

// readThroughPage navigates the page at ws to url with raw CDP and returns
// the page's text once it has some (an error page has text too).
func readThroughPage(t *testing.T, b Browser, ws, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := CallURL(ctx, b.HTTPClient(), ws, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		t.Fatalf("Page.navigate %s: %v", url, err)
	}
	t.Logf("Page.navigate %s: %s", url, res)
	var text string
	for ctx.Err() == nil {
		res, err := CallURL(ctx, b.HTTPClient(), ws, "Runtime.evaluate", map[string]any{
			"expression":    "document.URL + '\\n' + (document.body ? document.body.innerText : '')",
			"returnByValue": true,
		})
		if err == nil {
			var r struct {
				Result struct {
					Value string `json:"value"`
				} `json:"result"`
			}
			_ = json.Unmarshal(res, &r)
			text = r.Result.Value
			if u, body, _ := strings.Cut(text, "\n"); u != "about:blank" && strings.TrimSpace(body) != "" {
				return text
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no page text after navigating to %s (last %q)", url, text)
	return ""
}

// TestConfinedBrowser launches a real Chromium as the default browser user
// and plays a tenant who drives it with raw CDP: the browser and all its
// processes run with a non-zero uid, with Chromium's sandbox whenever user
// namespaces work, without quarry's environment, and cannot read root's
// files, while its own profile stays readable.
func TestConfinedBrowser(t *testing.T) {
	u := browserUser(t)
	root := reachableTempDir(t)
	workDir := filepath.Join(root, "browsers")
	t.Setenv("QUARRY_WALLCRAWLER_SECRET", "quarry-env-secret-0123456789")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-env-secret-0123456789")

	c, err := NewChromium(ChromiumOptions{WorkDir: workDir, User: &u, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cf := c.Confinement()
	t.Logf("confinement: %+v", cf)
	if !cf.Switched || cf.UID == 0 || cf.UID != u.UID || cf.User != u.Name {
		t.Fatalf("Confinement = %+v, want browsers switched to %s", cf, u)
	}
	if st, err := os.Stat(workDir); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("work dir %s: %v %v, want mode 0711", workDir, st.Mode(), err)
	}
	usernsOK, checked := userNamespacesWork(t, u)
	if checked && cf.Sandbox != usernsOK {
		t.Errorf("Confinement.Sandbox = %v, but user namespaces as %s work: %v", cf.Sandbox, u, usernsOK)
	}
	if !cf.Sandbox && len(cf.Warnings) == 0 {
		t.Errorf("sandbox off without a warning: %+v", cf)
	}

	b := launch(t, c, LaunchOptions{})

	// The main process and every child run as the browser user.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(string(cmdline), "--no-sandbox"); got == cf.Sandbox {
		t.Errorf("--no-sandbox on the command line: %v, sandbox: %v\n%s", got, cf.Sandbox, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	pids, err := Leftovers(workDir)
	if err != nil || len(pids) < 2 {
		t.Fatalf("processes of the browser: %v %v; want the browser and its children", pids, err)
	}
	want := fmt.Sprint(u.UID)
	for _, pid := range pids {
		uid, gid, err := procStatusIDs(pid)
		if err != nil {
			continue // exited meanwhile
		}
		for _, id := range uid {
			if id != want {
				t.Errorf("pid %d runs with Uid %v, want %s everywhere", pid, uid, want)
				break
			}
		}
		if len(gid) > 0 && gid[0] == "0" {
			t.Errorf("pid %d runs with Gid %v", pid, gid)
		}
	}
	t.Logf("%d browser processes, all uid %s", len(pids), want)

	// Quarry's environment does not reach the browser.
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", b.PID()))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"QUARRY_", "AWS_", "env-secret"} {
		if strings.Contains(string(environ), leak) {
			t.Errorf("browser environment contains %q: %s", leak, strings.ReplaceAll(string(environ), "\x00", " "))
		}
	}
	if !strings.Contains(string(environ), "HOME="+filepath.Join(workDir, b.ID())+"\x00") {
		t.Errorf("HOME is not the browser's work dir: %s", strings.ReplaceAll(string(environ), "\x00", " "))
	}

	// The attacker: root's files, as in quarry's 0700 data directory.
	secretDir, err := os.MkdirTemp("", "quarry-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(secretDir) })
	const secret = "TOP-SECRET-7f3a9c"
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"secret", 0o600}, {"table.db", 0o644}} {
		if err := os.WriteFile(filepath.Join(secretDir, f.name), []byte(secret+" in "+f.name), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	// The control: a file the browser user may read, in its own profile.
	const canary = "CANARY-in-profile-51b2"
	if err := os.WriteFile(filepath.Join(b.UserDataDir(), "canary.txt"), []byte(canary), 0o644); err != nil {
		t.Fatal(err)
	}

	ws := pageWS(t, b)
	if text := readThroughPage(t, b, ws, "file://"+filepath.Join(b.UserDataDir(), "canary.txt")); !strings.Contains(text, canary) {
		t.Fatalf("own profile file not readable through the page (the test would prove nothing): %q", text)
	}
	for _, name := range []string{"secret", "table.db"} {
		text := readThroughPage(t, b, ws, "file://"+filepath.Join(secretDir, name))
		if strings.Contains(text, secret) {
			t.Errorf("the browser read root's %s: %q", name, text)
		} else {
			t.Logf("file://…/%s shows: %q", name, text)
		}
	}
	closeBrowser(t, b)
	assertNoLeftovers(t, workDir)
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
}

// TestConfinedDownloadAndProfile checks that a browser running as the
// browser user still saves downloads where quarry collects them and keeps a
// caller-provided profile (unpacked by root, as a restored context is)
// across a relaunch.
func TestConfinedDownloadAndProfile(t *testing.T) {
	u := browserUser(t)
	root := reachableTempDir(t)
	workDir := filepath.Join(root, "browsers")
	c, err := NewChromium(ChromiumOptions{WorkDir: workDir, User: &u, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(root, "profiles")
	if err := os.Mkdir(profiles, 0o711); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(profiles, "restored")
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profile, "Default", "restored.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	const content = "quarterly numbers\n42\n"
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/report":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Disposition", "attachment; filename=report.txt")
			fmt.Fprint(w, content)
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
	st, err := os.Stat(filepath.Join(profile, "Default", "restored.txt"))
	if err != nil || st.Sys().(*syscall.Stat_t).Uid != u.UID {
		t.Fatalf("restored profile file not handed to %s: %v %v", u, st, err)
	}
	ctx1 := browserCtx(t, b1)
	if err := chromedp.Do(ctx1, chromedp.Navigate(srv.URL+"/set")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx1, chromedp.Navigate(srv.URL+"/report")); err != nil {
		t.Logf("navigate (download): %v", err) // net::ERR_ABORTED is expected
	}
	file := filepath.Join(b1.DownloadDir(), "report.txt")
	deadline := time.Now().Add(15 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil && string(data) == content {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(b1.DownloadDir())
			t.Fatalf("download not found: %v; dir: %v", err, entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
	closeBrowser(t, b1)
	assertNoLeftovers(t, workDir)
	assertNoLeftovers(t, profile)
	if err := b1.Remove(); err != nil {
		t.Fatal(err)
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
	closeBrowser(t, b2)
	assertNoLeftovers(t, profile)
	if err := b2.Remove(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(workDir); len(entries) != 0 {
		t.Errorf("work dir not empty after Remove: %v", entries)
	}
}
