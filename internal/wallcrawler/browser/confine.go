package browser

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DedicatedUser is the account DefaultUser prefers for browsers when it
// exists: create it (e.g. `useradd --system --no-create-home --shell
// /usr/sbin/nologin quarry-browser`) so that no other service shares the
// browsers' uid.
const DedicatedUser = "quarry-browser"

// User is the unprivileged account browsers run as.
type User struct {
	// Name is the account name, or "uid N" when the uid has no entry in
	// the user database.
	Name string
	// UID and GID are the ids the browser processes get; they get no
	// supplementary groups.
	UID, GID uint32
}

// String returns the user as "name (uid:gid)".
func (u User) String() string {
	return fmt.Sprintf("%s (%d:%d)", u.Name, u.UID, u.GID)
}

// LookupUser resolves spec, a user name or a numeric uid[:gid]. Without a
// gid, the user's primary group is used when the uid is in the user
// database, else the gid equal to the uid.
func LookupUser(spec string) (User, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return User{}, errors.New("browser: user: empty")
	}
	idPart, gidPart, hasGID := strings.Cut(spec, ":")
	uid, err := strconv.ParseUint(idPart, 10, 32)
	if err != nil {
		if hasGID {
			return User{}, fmt.Errorf("browser: user %q: want a user name or uid[:gid]", spec)
		}
		u, err := user.Lookup(spec)
		if err != nil {
			return User{}, fmt.Errorf("browser: user %q: %w", spec, err)
		}
		return fromUserEntry(u)
	}
	out := User{Name: "uid " + idPart, UID: uint32(uid), GID: uint32(uid)}
	if u, err := user.LookupId(idPart); err == nil {
		if e, err := fromUserEntry(u); err == nil {
			out = e
		}
	}
	if hasGID {
		gid, err := strconv.ParseUint(gidPart, 10, 32)
		if err != nil {
			return User{}, fmt.Errorf("browser: user %q: gid %q is not a number", spec, gidPart)
		}
		out.GID = uint32(gid)
	}
	return out, nil
}

// fromUserEntry converts a user database entry.
func fromUserEntry(u *user.User) (User, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("browser: user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("browser: user %s: gid %q: %w", u.Username, u.Gid, err)
	}
	return User{Name: u.Username, UID: uint32(uid), GID: uint32(gid)}, nil
}

// DefaultUser returns the account browsers run as when quarry runs as root
// and no user is configured: DedicatedUser when it exists, else nobody.
func DefaultUser() (User, error) {
	if u, err := LookupUser(DedicatedUser); err == nil {
		return u, nil
	}
	u, err := LookupUser("nobody")
	if err != nil {
		return User{}, fmt.Errorf("browser: default user: neither %s nor nobody exists: %w", DedicatedUser, err)
	}
	return u, nil
}

// Confinement describes how a provider's browsers are confined.
type Confinement struct {
	// User is the account the browsers run as.
	User string `json:"browserUser"`
	// UID and GID are its ids.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	// Switched reports that the browsers run as another user than quarry.
	Switched bool `json:"switched"`
	// PerBrowserUIDs is the range of user ids browsers run as, one each
	// ("200000-200999"); empty when they all run as User.
	PerBrowserUIDs string `json:"perBrowserUids,omitempty"`
	// Sandbox reports that Chromium's own sandbox is on (no --no-sandbox).
	Sandbox bool `json:"sandbox"`
	// Netns reports that every browser runs in a network namespace of
	// its own, whose one way out is the egress proxy.
	Netns bool `json:"netns"`
	// Warnings name what is missing for full confinement and what it
	// means; empty when browsers run as an unprivileged user with their
	// sandbox.
	Warnings []string `json:"warnings,omitempty"`
}

// Confinement returns how the provider's browsers are confined, as found
// when the provider was created.
func (c *Chromium) Confinement() Confinement {
	out := c.confinement
	out.Warnings = append([]string(nil), c.confinement.Warnings...)
	return out
}

// runAs returns the credential for the browser's processes, nil when they
// run as quarry's own user.
func (c *Chromium) runAs() *syscall.Credential {
	if !c.confinement.Switched {
		return nil
	}
	return &syscall.Credential{Uid: c.confinement.UID, Gid: c.confinement.GID, Groups: []uint32{}}
}

// credential returns the credential for processes running as u, nil when
// the browsers run as quarry's own user.
func (c *Chromium) credential(u User) *syscall.Credential {
	if !c.confinement.Switched {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// resolveUser returns the user browsers run as for opts: quarry's own when
// opts.User is nil (or names quarry's own uid); another user only when
// quarry runs as root.
func resolveUser(want *User) (u User, switched bool, err error) {
	euid, egid := uint32(os.Geteuid()), uint32(os.Getegid())
	if want == nil || want.UID == euid {
		name := "uid " + strconv.FormatUint(uint64(euid), 10)
		if e, err := user.LookupId(strconv.FormatUint(uint64(euid), 10)); err == nil {
			name = e.Username
		}
		if want != nil {
			return *want, false, nil
		}
		return User{Name: name, UID: euid, GID: egid}, false, nil
	}
	if euid != 0 {
		return User{}, false, fmt.Errorf("running as uid %d, quarry cannot start browsers as %s (only root can switch user)", euid, want)
	}
	return *want, true, nil
}

// prepareWorkDir creates the provider's work dir for browsers running as
// another user: owned by quarry, mode 0711 (the browser user can enter its
// own subdirectory but not list the others), on a path the user can
// traverse.
func prepareWorkDir(dir string, u User) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || sys.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%s is not a directory owned by uid %d", dir, os.Geteuid())
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	return reachable(dir, u)
}

// reachable reports an error naming the first directory on the way to dir
// (dir included) that u cannot enter.
func reachable(dir string, u User) error {
	dir = filepath.Clean(dir)
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		st, err := os.Stat(chain[i])
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		mode := st.Mode().Perm()
		var can bool
		switch {
		case sys.Uid == u.UID:
			can = mode&0o100 != 0
		case sys.Gid == u.GID:
			can = mode&0o010 != 0
		default:
			can = mode&0o001 != 0
		}
		if !can {
			return fmt.Errorf("%s is not reachable by browser user %s: %s (mode %04o, owner %d:%d) denies it search permission; use a directory outside it",
				dir, u, chain[i], mode, sys.Uid, sys.Gid)
		}
	}
	return nil
}

// chownTree hands dir and everything below it to u, without following
// symbolic links.
func chownTree(dir string, u User) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(u.UID), int(u.GID))
	})
}

// homeDirs are the directories of a browser's work dir (its HOME) that
// Chromium writes besides the profile and the downloads: XDG config,
// cache, data and runtime dirs, NSS's ~/.pki and the crash dumps.
var homeDirs = []string{".config", ".cache", ".local", ".pki", ".run", "crashpad"}

// defaultPath is the browser's PATH when quarry has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// browserEnv returns the whole environment of a browser whose work dir is
// workDir: PATH, a HOME and XDG directories inside workDir, LANG and TZ,
// and where crash dumps go. Nothing else of quarry's environment (cloud
// credentials, QUARRY_* settings) reaches the browser.
func browserEnv(workDir string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + workDir,
		"XDG_CONFIG_HOME=" + filepath.Join(workDir, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(workDir, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(workDir, ".local", "share"),
		"XDG_RUNTIME_DIR=" + filepath.Join(workDir, ".run"),
		"LANG=" + lang,
		// Chromium's crashpad handlers leave the process group (they
		// setsid); pointing their database into the work dir puts the
		// work dir on their command line, so Leftovers and Close find
		// them.
		"BREAKPAD_DUMP_LOCATION=" + filepath.Join(workDir, "crashpad"),
	}
	if tz := os.Getenv("TZ"); tz != "" {
		env = append(env, "TZ="+tz)
	}
	return env
}

// userNamespacesOff names why the kernel refuses unprivileged user
// namespaces, which Chromium's sandbox needs; "" when they seem available.
func userNamespacesOff() string {
	if n, err := readSysctl("/proc/sys/user/max_user_namespaces"); err == nil && n == 0 {
		return "user namespaces are disabled (user.max_user_namespaces = 0)"
	}
	if n, err := readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && n == 0 {
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
	}
	return ""
}

// readSysctl reads a numeric /proc/sys file.
func readSysctl(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// probeSandbox reports whether Chromium's sandbox works for the provider's
// browser user: the kernel must allow unprivileged user namespaces, and
// Chromium, started once with its sandbox to print a blank page, must
// succeed. reason says why not.
func (c *Chromium) probeSandbox(ctx context.Context) (ok bool, reason string) {
	if c.confinement.UID == 0 {
		return false, "browsers run as root, where Chromium's sandbox cannot work"
	}
	if why := userNamespacesOff(); why != "" {
		return false, why
	}
	id, err := newID()
	if err != nil {
		return false, err.Error()
	}
	dir := filepath.Join(c.workDir, "sandbox-probe-"+id)
	defer os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return false, fmt.Sprintf("sandbox self-check: %v", err)
	}
	if c.confinement.Switched {
		if err := os.Chown(dir, int(c.confinement.UID), int(c.confinement.GID)); err != nil {
			return false, fmt.Sprintf("sandbox self-check: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	cmd := exec.Command(c.path, "--headless=new", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--no-first-run", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
		"--dump-dom", "about:blank")
	cmd.Env = browserEnv(dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: c.runAs()}
	out := newTailBuffer(2 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return false, fmt.Sprintf("sandbox self-check: start %s: %v", c.path, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-waited
		if err == nil {
			err = ctx.Err()
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if procs, lerr := listProcs(); lerr == nil {
		killProcs(matchProcs(procs, dir+string(filepath.Separator)))
	}
	if err == nil && strings.Contains(out.String(), "<body") {
		return true, ""
	}
	last := strings.TrimSpace(out.String())
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "sandbox") {
			last = strings.TrimSpace(line)
			break
		}
	}
	return false, fmt.Sprintf("Chromium's sandbox self-check as %s failed (%v): %s", c.confinement.User, err, last)
}
