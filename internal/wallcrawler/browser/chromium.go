package browser

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Timing constants of the browser lifecycle.
const (
	defaultStartTimeout = 20 * time.Second
	gracefulTimeout     = 5 * time.Second
	termTimeout         = 2 * time.Second
	killTimeout         = 10 * time.Second
	pollInterval        = 20 * time.Millisecond
	stderrTail          = 8 << 10
)

// ChromiumOptions configures a Chromium provider.
type ChromiumOptions struct {
	// Path is the Chromium binary. Default: the first of chromium,
	// chromium-browser and google-chrome found on PATH.
	Path string
	// WorkDir is the root of the per-browser work dirs (<WorkDir>/<id>/...).
	// Required. With User set, the provider makes it mode 0711 and the
	// browser user must be able to traverse every directory above it.
	WorkDir string
	// User, when set and quarry runs as root, is the unprivileged account
	// the browsers run as (no supplementary groups): each browser's work
	// dir and profile are handed to it. nil, or quarry's own uid: the
	// browsers run as quarry's user. A user other than quarry's own when
	// quarry is not root is an error.
	User *User
	// UIDs, when set and quarry runs as root, gives every browser a user id
	// of its own from the range, instead of one User for all (the two are
	// exclusive): each browser's work dir and profile are handed to its id,
	// and the id returns to the range only once no process runs as it.
	UIDs *UIDRange
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// ProxyServer, when set, is the egress point every connection of the
	// browser goes through (for example "http://127.0.0.1:41234"): the
	// browser is started with it as its only proxy, without Chromium's
	// implicit loopback bypass, and with WebRTC limited to proxied
	// transports, so that no page, service worker or WebRTC peer connects
	// anywhere on its own. Empty: the browser connects directly (tests and
	// library use; quarry serve always sets it).
	ProxyServer string
	// ServeEgress, when set, serves the egress proxy of ProxyServer on
	// another listener, one per browser, until that listener is closed
	// (when the browser ends): every browser gets a way out of its own, so
	// that the egress knows whose connection it serves (a session's
	// upstream proxies, egress.Proxy.ServeRoute). When quarry has
	// CAP_SYS_ADMIN, every browser runs in a network namespace of its own
	// whose only interface is its loopback, and the listener is opened
	// there: the browser's one way out. Without the privilege, browsers
	// share the host's network (Confinement says so) and the listener is a
	// port of the host's loopback (EgressListener.HostNetwork), reachable
	// by any local process.
	ServeEgress func(net.Listener, EgressListener) error
	// StartTimeout bounds a launch: it fails when CDP does not answer in time
	// (and the process group is killed). Default 20s.
	StartTimeout time.Duration
	// Logger receives lifecycle logs. Default: discard.
	Logger *slog.Logger
}

// EgressListener says whose way out a listener handed to
// ChromiumOptions.ServeEgress is.
type EgressListener struct {
	// Browser is the id of the browser (Browser.ID) whose connections
	// arrive there.
	Browser string
	// HostNetwork: the listener is a port of the host's loopback (no
	// network namespace), which any local process can reach; the server
	// should refuse it as a destination (fetch.Policy.Reserve) while it
	// serves.
	HostNetwork bool
}

// Chromium is a Provider that launches local headless Chromium processes.
type Chromium struct {
	path         string
	workDir      string
	extraArgs    []string
	proxyServer  string
	serveEgress  func(net.Listener, EgressListener) error
	startTimeout time.Duration
	logger       *slog.Logger
	confinement  Confinement
	uids         *uidPool // nil: every browser runs as confinement's user
}

var _ Provider = (*Chromium)(nil)

// NewChromium returns a Chromium provider. It creates opts.WorkDir when
// missing, resolves the browser binary, and finds out how the browsers
// will be confined (see Confinement): which user they run as and whether
// Chromium's sandbox works, which it checks by starting Chromium once when
// the browsers do not run as root. What is missing is logged as a warning.
func NewChromium(opts ChromiumOptions) (*Chromium, error) {
	if opts.WorkDir == "" {
		return nil, errors.New("browser: chromium: WorkDir is required")
	}
	workDir, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("browser: chromium: work dir: %w", err)
	}
	want := opts.User
	if opts.UIDs != nil {
		if opts.User != nil {
			return nil, errors.New("browser: chromium: User and UIDs are exclusive: one user for every browser, or one id each")
		}
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("browser: chromium: running as uid %d, quarry cannot start browsers as the ids %s (only root can switch user)", os.Geteuid(), opts.UIDs)
		}
		// The range's first id stands for all of them where one is
		// needed before any browser runs (the work dir's reachability,
		// the sandbox self-check).
		want = &User{Name: "uids " + opts.UIDs.String(), UID: opts.UIDs.First, GID: opts.UIDs.First}
	}
	runAs, switched, err := resolveUser(want)
	if err != nil {
		return nil, fmt.Errorf("browser: chromium: %w", err)
	}
	if switched {
		err = prepareWorkDir(workDir, runAs)
	} else {
		err = os.MkdirAll(workDir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("browser: chromium: work dir: %w", err)
	}
	path, err := findBrowser(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("browser: chromium: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = defaultStartTimeout
	}
	c := &Chromium{
		path:         path,
		workDir:      workDir,
		extraArgs:    append([]string(nil), opts.ExtraArgs...),
		proxyServer:  opts.ProxyServer,
		serveEgress:  opts.ServeEgress,
		startTimeout: timeout,
		logger:       logger,
		confinement:  Confinement{User: runAs.Name, UID: runAs.UID, GID: runAs.GID, Switched: switched},
	}
	if opts.UIDs != nil {
		c.uids = newUIDPool(*opts.UIDs)
		c.confinement.PerBrowserUIDs = opts.UIDs.String()
	}
	c.confine()
	return c, nil
}

// confine completes c.confinement: it probes Chromium's sandbox and logs
// what is missing for full confinement.
func (c *Chromium) confine() {
	cf := &c.confinement
	if cf.UID == 0 {
		cf.Warnings = append(cf.Warnings, "browsers run as root: a tenant who breaks out of Chromium's renderer has root's access to this machine (run quarry as root with a browser user, or as an unprivileged user)")
	}
	if c.serveEgress != nil && c.proxyServer != "" {
		ok, reason := probeNetns()
		cf.Netns = ok
		if !ok {
			cf.Warnings = append(cf.Warnings, "browsers share the host's network namespace: "+reason+"; a browser taken over beyond Chromium's sandbox can connect to every address of this machine the egress proxy would refuse it (quarry's API and DynamoDB endpoint, local services)")
		}
	}
	ok, reason := c.probeSandbox(context.Background())
	cf.Sandbox = ok
	if !ok {
		cf.Warnings = append(cf.Warnings, "Chromium's sandbox is off (--no-sandbox): "+reason+"; a compromised renderer runs with the full rights of "+cf.User)
	}
	for _, w := range cf.Warnings {
		c.logger.Warn("browser confinement: "+w, "browser_user", cf.User, "uid", cf.UID, "sandbox", cf.Sandbox)
	}
	if len(cf.Warnings) == 0 {
		c.logger.Info("browsers confined", "browser_user", cf.User, "uid", cf.UID, "gid", cf.GID, "switched", cf.Switched, "sandbox", cf.Sandbox, "netns", cf.Netns)
	}
}

// findBrowser resolves path, or the first known Chromium binary on PATH when
// path is empty.
func findBrowser(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("browser binary %q: %w", path, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on PATH")
}

// Path returns the browser binary the provider runs.
func (c *Chromium) Path() string { return c.path }

// WorkDir returns the root of the per-browser work dirs.
func (c *Chromium) WorkDir() string { return c.workDir }

// newID returns a random 32-character hex id.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// errExitedAtStart marks a browser that died before answering CDP.
var errExitedAtStart = errors.New("exited during start-up")

// launchAttempts is how many times Launch starts Chromium when it dies
// during start-up (it occasionally crashes there, e.g. a segmentation
// fault on a loaded machine); other failures are not retried.
const launchAttempts = 2

// Launch starts a headless Chromium and returns once its CDP endpoint
// answers and downloads are routed into the browser's download dir. On
// failure the process group is killed and the work dir removed; a browser
// that dies during start-up is started once more.
func (c *Chromium) Launch(ctx context.Context, opts LaunchOptions) (Browser, error) {
	var err error
	for attempt := 1; attempt <= launchAttempts; attempt++ {
		var b *chromiumBrowser
		if b, err = c.launch(ctx, opts); err == nil {
			b.retries = attempt - 1
			return b, nil
		}
		if !errors.Is(err, errExitedAtStart) || ctx.Err() != nil {
			break
		}
		c.logger.Warn("browser died during start-up", "attempt", attempt, "err", err)
	}
	return nil, err
}

// launch makes one attempt of Launch.
func (c *Chromium) launch(ctx context.Context, opts LaunchOptions) (*chromiumBrowser, error) {
	id, err := newID()
	if err != nil {
		return nil, fmt.Errorf("browser: launch: %w", err)
	}
	b := &chromiumBrowser{
		id:          id,
		workDir:     filepath.Join(c.workDir, id),
		downloadDir: filepath.Join(c.workDir, id, "downloads"),
		uploadDir:   filepath.Join(c.workDir, id, "uploads"),
		userDataDir: opts.UserDataDir,
		logger:      c.logger.With("browser", id),
		output:      newTailBuffer(stderrTail),
		done:        make(chan struct{}),
		closeSem:    make(chan struct{}, 1),
	}
	if b.userDataDir == "" {
		b.userDataDir = filepath.Join(b.workDir, "profile")
	} else if b.userDataDir, err = filepath.Abs(b.userDataDir); err != nil {
		return nil, fmt.Errorf("browser: launch: user data dir: %w", err)
	}
	b.user = User{Name: c.confinement.User, UID: c.confinement.UID, GID: c.confinement.GID}
	b.switched = c.confinement.Switched
	if c.uids != nil {
		if b.user, err = c.uids.take(); err != nil {
			return nil, fmt.Errorf("browser: launch: %w", err)
		}
		b.uids = c.uids
	}
	start := time.Now()
	if err := c.start(ctx, b, opts); err != nil {
		b.abort()
		if out := strings.TrimSpace(b.output.String()); out != "" {
			err = fmt.Errorf("%w\nchromium output (tail):\n%s", err, out)
		}
		return nil, fmt.Errorf("browser: launch %s: %w", id, err)
	}
	b.logger.Info("browser launched", "pid", b.pid, "netns", b.netns != nil, "user_data_dir", b.userDataDir, "elapsed", time.Since(start))
	return b, nil
}

// start runs the launch steps of b; the caller cleans up on error.
func (c *Chromium) start(ctx context.Context, b *chromiumBrowser, opts LaunchOptions) error {
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()

	dirs := []string{b.workDir, b.downloadDir, b.uploadDir, b.userDataDir}
	for _, d := range homeDirs {
		dirs = append(dirs, filepath.Join(b.workDir, d))
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create dir: %w", err)
		}
	}
	// Singleton* files of a profile restored from another host make
	// Chromium refuse to start ("profile in use by another process").
	for _, name := range []string{"DevToolsActivePort", "SingletonLock", "SingletonSocket", "SingletonCookie"} {
		if err := os.Remove(filepath.Join(b.userDataDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", name, err)
		}
	}
	// Before handOver: the preferences file must become the browser
	// user's with the rest of the profile.
	if err := setDownloadPrefs(b.userDataDir, b.downloadDir); err != nil {
		return err
	}
	if opts.Extension != nil {
		if (c.serveEgress != nil || c.proxyServer != "") && !c.confinement.Netns {
			return ErrExtensionNeedsNetns
		}
		if err := c.prepareExtension(b, opts.Extension); err != nil {
			return err
		}
	}
	if c.confinement.Switched {
		if err := c.handOver(b); err != nil {
			return err
		}
	}

	width, height := opts.size()
	args := []string{
		"--headless=new",
		// DevTools over two pipes (fds 3 and 4), never a TCP port: no
		// other process of the host, and no page, can reach it.
		"--remote-debugging-pipe",
		"--user-data-dir=" + b.userDataDir,
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--metrics-recording-only",
		"--mute-audio",
		"--disable-gpu",
		"--disable-dev-shm-usage",
		"--password-store=basic",
		"--use-mock-keychain",
		fmt.Sprintf("--window-size=%d,%d", width, height),
	}
	if !c.confinement.Sandbox {
		args = append(args, "--no-sandbox")
	}
	proxy := c.proxyServer
	switch {
	case c.serveEgress != nil && c.confinement.Netns:
		ns, err := newNetns()
		if err != nil {
			return err
		}
		b.netns = ns
		go func() { _ = c.serveEgress(ns.egress, EgressListener{Browser: b.id}) }()
		proxy = "http://" + ns.egress.Addr().String()
	case c.serveEgress != nil:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("egress listener: %w", err)
		}
		b.egressLn = ln
		go func() { _ = c.serveEgress(ln, EgressListener{Browser: b.id, HostNetwork: true}) }()
		proxy = "http://" + ln.Addr().String()
	}
	args = append(args, egressArgs(proxy)...)
	if opts.Extension != nil {
		args = append(args, unsafeExtensionDebugging)
	}
	args = append(args, c.extraArgs...)
	args = append(args, "about:blank")

	cmd := exec.Command(c.path, args...)
	cmd.Env = browserEnv(b.workDir)
	cmd.Dir = b.workDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: c.credential(b.user)}
	// Chromium reads DevTools commands from fd 3 and writes to fd 4.
	cmdIn, toBrowser, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	fromBrowser, cmdOut, err := os.Pipe()
	if err != nil {
		_ = cmdIn.Close()
		_ = toBrowser.Close()
		return fmt.Errorf("pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{cmdIn, cmdOut}
	// Own pipe rather than an io.Writer: exec.Cmd.Wait would otherwise also
	// wait for every child that inherited stderr.
	pr, pw, err := os.Pipe()
	if err != nil {
		closeAll(cmdIn, cmdOut, toBrowser, fromBrowser)
		return fmt.Errorf("pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	startCmd := cmd.Start
	if opts.Nice > 0 {
		startCmd = func() error { return startNicer(cmd, opts.Nice) }
	}
	switch {
	case b.netns != nil:
		err = b.netns.run(startCmd)
	case opts.Nice > 0:
		err = onOwnThread(startCmd)
	default:
		err = cmd.Start()
	}
	closeAll(pw, cmdIn, cmdOut)
	if err != nil {
		closeAll(pr, toBrowser, fromBrowser)
		return fmt.Errorf("start %s: %w", c.path, err)
	}
	go func() {
		_, _ = io.Copy(b.output, pr)
		_ = pr.Close()
	}()
	b.cmd = cmd
	b.pid = cmd.Process.Pid
	b.devtools = newDevtools(b.id, toBrowser, fromBrowser, b.logger)
	b.serveDevtools()
	go b.wait()

	if _, err := b.call(ctx, "Browser.getVersion", nil); err != nil {
		return err
	}
	b.wsURL = "ws://" + devtoolsHost + b.devtools.browserPath()
	// quarry's own root session never detaches, so the download
	// behavior it sets lasts as long as the browser.
	if _, err := b.call(ctx, "Browser.setDownloadBehavior", map[string]any{
		"behavior":      "allow",
		"downloadPath":  b.downloadDir,
		"eventsEnabled": false,
	}); err != nil {
		return fmt.Errorf("set download behavior: %w", err)
	}
	if opts.Extension != nil {
		return b.loadExtension(ctx)
	}
	return nil
}

// closeAll closes files, ignoring errors.
func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// handOver gives the browser user what it writes: the work dir itself
// stays quarry's, mode 0711, so that the browser cannot swap its
// downloads or profile dir for a symbolic link quarry would then follow,
// while the download dir, the HOME subdirectories and the profile (which
// must be reachable by the user; a restored one was unpacked by quarry)
// become the user's, recursively. The upload dir stays quarry's too, mode
// 0711: the browser user opens the files quarry hands it there (each its
// own, mode 0400) but can neither list nor write the directory.
func (c *Chromium) handOver(b *chromiumBrowser) error {
	u := b.user
	if err := os.Chmod(b.workDir, 0o711); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	if err := os.Chmod(b.uploadDir, 0o711); err != nil {
		return fmt.Errorf("upload dir: %w", err)
	}
	mine := []string{b.downloadDir}
	for _, d := range homeDirs {
		mine = append(mine, filepath.Join(b.workDir, d))
	}
	for _, dir := range mine {
		if err := chownTree(dir, u); err != nil {
			return fmt.Errorf("hand %s to %s: %w", dir, u, err)
		}
	}
	if err := reachable(filepath.Dir(b.userDataDir), u); err != nil {
		return fmt.Errorf("user data dir: %w", err)
	}
	if err := chownTree(b.userDataDir, u); err != nil {
		return fmt.Errorf("hand %s to %s: %w", b.userDataDir, u, err)
	}
	if err := os.Chmod(b.userDataDir, 0o700); err != nil {
		return fmt.Errorf("user data dir: %w", err)
	}
	return nil
}

// setDownloadPrefs makes downloadDir the profile's default download
// directory. Chromium falls back to that default (download behavior
// "default") whenever a DevTools session that set another behavior
// disconnects, which would otherwise save into the browser user's
// ~/Downloads, shared by every session and outside the work dir. Other
// preferences of the profile (a restored context) are kept.
func setDownloadPrefs(userDataDir, downloadDir string) error {
	return updatePrefs(userDataDir, func(prefs map[string]any) {
		download := subMap(prefs, "download")
		download["default_directory"] = downloadDir
		download["prompt_for_download"] = false
	})
}

// updatePrefs applies change to the preferences of the profile in
// userDataDir (an unreadable file counts as empty, as Chromium would reset
// it too) and writes them back, keeping every other preference.
func updatePrefs(userDataDir string, change func(prefs map[string]any)) error {
	path := filepath.Join(userDataDir, "Default", "Preferences")
	prefs := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // keep large integers as they are
		if dec.Decode(&prefs) != nil || prefs == nil {
			prefs = map[string]any{} // unreadable: Chromium would reset it too
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read preferences: %w", err)
	}
	change(prefs)
	if data, err = json.Marshal(prefs); err != nil {
		return fmt.Errorf("encode preferences: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("preferences dir: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	return nil
}

// egressArgs returns the switches that send every connection of the browser
// through proxy: "<-loopback>" removes Chromium's implicit bypass of
// localhost, so loopback goes through the proxy (and its policy) too;
// WebRTC may use only proxied transports (no UDP of its own); QUIC is off
// (it cannot be proxied through an HTTP proxy). Empty proxy: none.
func egressArgs(proxy string) []string {
	if proxy == "" {
		return nil
	}
	return []string{
		"--proxy-server=" + proxy,
		"--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--disable-quic",
	}
}

// chromiumBrowser is a running Chromium process.
type chromiumBrowser struct {
	id          string
	workDir     string
	userDataDir string
	downloadDir string
	uploadDir   string // files uploaded for the session (StoreUpload)
	wsURL       string
	pid         int
	user        User     // the user its processes run as
	switched    bool     // user is not quarry's own: files are handed to it
	uids        *uidPool // where user came from; nil: the provider's one user
	retries     int      // launch attempts that failed before this one
	cmd         *exec.Cmd
	logger      *slog.Logger
	output      *tailBuffer
	devtools    *devtools    // the DevTools connection over the pipes
	netns       *netns       // its network namespace; nil: the host's
	egressLn    net.Listener // its way out on the host's loopback, without netns
	listener    *memListener // where HTTPClient's connections arrive
	client      *http.Client // reaches the DevTools endpoints

	done           chan struct{}
	err            error // written before done is closed
	closeRequested atomic.Bool

	closeSem chan struct{} // serializes Close
	closed   bool          // guarded by closeSem

	// extensionDir is the unpacked extension (symbolic links resolved)
	// and extensionID its Chromium id; "" without one.
	extensionDir, extensionID string
}

var _ Browser = (*chromiumBrowser)(nil)

// ID implements Browser.
func (b *chromiumBrowser) ID() string { return b.id }

// WebSocketURL implements Browser.
func (b *chromiumBrowser) WebSocketURL() string { return b.wsURL }

// PageWebSocketURL implements Browser.
func (b *chromiumBrowser) PageWebSocketURL(targetID string) string {
	return "ws://" + devtoolsHost + "/devtools/page/" + targetID
}

// HTTPClient implements Browser.
func (b *chromiumBrowser) HTTPClient() *http.Client { return b.client }

// serveDevtools serves the DevTools endpoints to HTTPClient's
// connections until the browser exits.
func (b *chromiumBrowser) serveDevtools() {
	b.listener = newMemListener()
	b.client = &http.Client{Transport: &http.Transport{DialContext: b.listener.dial, DisableKeepAlives: true, Proxy: nil}}
	srv := &http.Server{Handler: b.devtools, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(b.logger.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(b.listener) }()
	go func() {
		select {
		case <-b.done:
		case <-b.devtools.done:
		}
		_ = srv.Close()
		<-b.done
		_ = b.devtools.Close()
	}()
}

// call sends a command to the browser on quarry's own DevTools session.
// A browser that exits meanwhile fails it with errExitedAtStart.
func (b *chromiumBrowser) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	res, err := b.devtools.call(ctx, method, params)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	// The pipe closes as the process exits: report the exit.
	select {
	case <-b.done:
		return nil, fmt.Errorf("%w: %w", errExitedAtStart, b.exitErr())
	case <-time.After(time.Second):
		return nil, err
	}
}

// PID implements Browser.
func (b *chromiumBrowser) PID() int { return b.pid }

// LaunchRetries implements Browser.
func (b *chromiumBrowser) LaunchRetries() int { return b.retries }

// UserDataDir implements Browser.
func (b *chromiumBrowser) UserDataDir() string { return b.userDataDir }

// DownloadDir implements Browser.
func (b *chromiumBrowser) DownloadDir() string { return b.downloadDir }

// Done implements Browser.
func (b *chromiumBrowser) Done() <-chan struct{} { return b.done }

// Err implements Browser.
func (b *chromiumBrowser) Err() error {
	select {
	case <-b.done:
		return b.err
	default:
		return nil
	}
}

// exited reports whether the main process has exited.
func (b *chromiumBrowser) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// wait reaps the main process and closes done.
func (b *chromiumBrowser) wait() {
	err := b.cmd.Wait()
	if !b.closeRequested.Load() {
		if err == nil {
			err = errors.New("exited on its own with status 0")
		}
		b.err = fmt.Errorf("browser %s (pid %d) exited: %w", b.id, b.pid, err)
		b.logger.Warn("browser exited unexpectedly", "pid", b.pid, "err", err, "output", b.output.String())
	}
	if b.netns != nil {
		b.netns.Close() // its way out ends with the browser
	}
	if b.egressLn != nil {
		_ = b.egressLn.Close()
	}
	close(b.done)
}

// exitErr returns the error of an exited process, never nil.
func (b *chromiumBrowser) exitErr() error {
	if b.err != nil {
		return b.err
	}
	return errors.New("process exited")
}

// abort kills a browser whose launch failed and removes its work dir.
func (b *chromiumBrowser) abort() {
	if b.cmd == nil && b.netns != nil {
		b.netns.Close()
	}
	if b.cmd == nil && b.egressLn != nil {
		_ = b.egressLn.Close()
	}
	if b.cmd != nil {
		b.closeRequested.Store(true)
		_ = syscall.Kill(-b.pid, syscall.SIGKILL)
		select {
		case <-b.done:
		case <-time.After(killTimeout):
			b.logger.Error("browser did not exit after SIGKILL", "pid", b.pid)
		}
		ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
		defer cancel()
		if err := b.reap(ctx, false); err != nil {
			b.logger.Error("browser cleanup after failed launch", "err", err)
			// Something may still run as the id: it is not given back.
			_ = os.RemoveAll(b.workDir)
			return
		}
	}
	if err := os.RemoveAll(b.workDir); err != nil {
		b.logger.Error("remove work dir after failed launch", "err", err)
		return // files of the id remain: it is not given back
	}
	b.releaseUID()
}

// Close implements Browser.
func (b *chromiumBrowser) Close(ctx context.Context) error { return b.stop(ctx, true) }

// Kill implements Browser.
func (b *chromiumBrowser) Kill(ctx context.Context) error { return b.stop(ctx, false) }

// stop is Close (graceful) or Kill.
func (b *chromiumBrowser) stop(ctx context.Context, graceful bool) error {
	// A free semaphore is taken even when ctx has ended: an ended ctx
	// then means "kill it now", not "do nothing".
	select {
	case b.closeSem <- struct{}{}:
	default:
		select {
		case b.closeSem <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("browser %s: close: %w", b.id, ctx.Err())
		}
	}
	defer func() { <-b.closeSem }()
	if b.closed {
		return nil
	}
	b.closeRequested.Store(true)
	start := time.Now()
	how := "exited before close"

	if graceful && !b.exited() && ctx.Err() == nil {
		// Graceful: Browser.close makes Chromium flush cookies and other
		// profile state to disk.
		how = "Browser.close"
		gctx, cancel := context.WithTimeout(ctx, gracefulTimeout)
		if _, err := b.devtools.call(gctx, "Browser.close", nil); err != nil {
			b.logger.Debug("graceful close failed", "err", err)
		}
		select {
		case <-b.done:
		case <-gctx.Done():
		}
		cancel()
	}
	if graceful && !b.exited() && ctx.Err() == nil {
		how = "SIGTERM"
		_ = syscall.Kill(-b.pid, syscall.SIGTERM)
		select {
		case <-b.done:
		case <-ctx.Done():
		case <-time.After(termTimeout):
		}
	}
	if !b.exited() {
		how = "SIGKILL"
		_ = syscall.Kill(-b.pid, syscall.SIGKILL)
		// Waiting for a SIGKILLed process is bounded by the kernel, not by
		// ctx: return only once it is gone.
		select {
		case <-b.done:
		case <-time.After(killTimeout):
			return fmt.Errorf("browser %s: close: pid %d did not exit after SIGKILL", b.id, b.pid)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if err := b.reap(rctx, graceful); err != nil {
		return fmt.Errorf("browser %s: close: %w", b.id, err)
	}
	// The user id goes back to the range in Remove, once the files this
	// browser wrote as it are gone: a next browser given the id could
	// read them.
	b.closed = true
	b.logger.Info("browser closed", "pid", b.pid, "how", how, "elapsed", time.Since(start))
	return nil
}

// reap kills what is left of the browser after its main process exited: the
// members of its process group, processes that carry its work dir on the
// command line (crashpad handlers) and, with a user id of its own, every
// process running as that id. It returns once none is alive. patient
// gives processes that are shutting down on their own (after
// Browser.close) a moment before they are killed.
func (b *chromiumBrowser) reap(ctx context.Context, patient bool) error {
	needle := b.workDir + string(filepath.Separator)
	for first := true; ; first = false {
		procs, err := listProcs()
		if err != nil {
			return err
		}
		var left []procInfo
		for _, p := range procs {
			if p.pgid == b.pid || strings.Contains(p.cmdline, needle) {
				left = append(left, p)
			}
		}
		if b.uids != nil {
			left = append(left, procsOfUID(procs, b.user.UID)...)
		}
		if len(left) == 0 {
			return nil
		}
		if first && patient {
			// Give processes that are already shutting down (after
			// Browser.close) a moment before killing them.
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-ctx.Done():
			}
		}
		killProcs(left)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d processes still alive: %w", len(left), ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// releaseUID gives the browser's own user id back to its range, once reap
// found no process running as it and its files are deleted.
func (b *chromiumBrowser) releaseUID() {
	if b.uids != nil {
		b.uids.give(b.user.UID)
		b.uids = nil
	}
}

// Remove implements Browser.
func (b *chromiumBrowser) Remove() error {
	if !b.exited() {
		return fmt.Errorf("browser %s: remove: still running", b.id)
	}
	// The work dir holds the provider-created profile, the downloads and
	// crash dumps; a caller-provided UserDataDir lives elsewhere, unless the
	// caller put it inside the work dir, in which case it is kept.
	if rel, err := filepath.Rel(b.workDir, b.userDataDir); err == nil && rel != "profile" && !strings.HasPrefix(rel, "..") {
		if rel == "." {
			return nil
		}
		entries, err := os.ReadDir(b.workDir)
		if err != nil {
			return fmt.Errorf("browser %s: remove: %w", b.id, err)
		}
		top := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		for _, e := range entries {
			if e.Name() == top {
				continue
			}
			if err := os.RemoveAll(filepath.Join(b.workDir, e.Name())); err != nil {
				return fmt.Errorf("browser %s: remove: %w", b.id, err)
			}
		}
		return nil
	}
	if err := os.RemoveAll(b.workDir); err != nil {
		return fmt.Errorf("browser %s: remove: %w", b.id, err)
	}
	b.releaseUID()
	return nil
}
