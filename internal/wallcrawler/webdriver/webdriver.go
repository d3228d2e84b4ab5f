// Package webdriver serves the W3C WebDriver (Selenium) endpoint of each
// Wallcrawler session, the session's seleniumRemoteUrl:
// /webdriver/{sessionId}/..., authenticated by the session's signingKey.
//
// Behind it runs one chromedriver per session, started on first use and
// stopped with the session's browser. It runs inside the browser's own
// confinement (its network namespace, its user) and attaches to the
// browser that is already running through a DevTools endpoint quarry
// serves on the namespace's loopback: that endpoint hands the driver's
// connection to the CDP proxy, so the driver's commands pass the same
// filter, egress policy, connection caps and byte counts as any CDP
// client's. A client cannot choose what the driver launches: its new
// session's capabilities are cut to the standard ones, and the only
// goog:chromeOptions is the attach to the session's browser. A request
// for a session whose browser runs in another process is relayed there
// with a node-to-node token, as CDP connections are.
//
// Without a network namespace (quarry lacks CAP_SYS_ADMIN) the endpoint
// answers 503: chromedriver's port would be on the host's loopback, where
// any local process could drive the session's browser through it, or
// have chromedriver start programs, without the signingKey.
package webdriver

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// SigningKeyHeader is the request header that carries the session's
// signingKey, as Browserbase's Selenium integration sends it. The key is
// also accepted as "Authorization: Bearer <key>" or as the password of
// HTTP Basic authentication (user info in the remote URL).
const SigningKeyHeader = "X-BB-Signing-Key"

// Limits of a client's requests.
const (
	maxNewSessionBody = 1 << 20
	maxBody           = 64 << 20 // element screenshots and file uploads pass here
	defaultStart      = 20 * time.Second
)

// Resolver finds the browser of a session for a client holding its
// signingKey.
type Resolver interface {
	// WebDriverBrowser returns the session's browser when signingKey is a
	// valid signingKey of that session; errors wrap cdp.ErrUnauthorized
	// (bad key, or another session's) or cdp.ErrNotFound (no browser of
	// the session runs in this process).
	WebDriverBrowser(ctx context.Context, sessionID, signingKey string) (browser.Browser, error)
	// WebDriverOwner returns, for a session whose browser runs in another
	// process, that process's WebDriver endpoint of the session and a
	// node-to-node token for one request to it (sent in
	// cdp.NodeTokenHeader); cdp.ErrNotFound, wrapped, when no other
	// process runs it.
	WebDriverOwner(ctx context.Context, sessionID string) (endpoint, nodeToken string, err error)
	// VerifyWebDriverNode checks the node-to-node token of a request
	// another process forwarded for the session (cdp.ErrUnauthorized,
	// wrapped, when it is not valid).
	VerifyWebDriverNode(nodeToken, sessionID string) error
}

// Options configures a Service. Zero values mean defaults.
type Options struct {
	// Driver is the chromedriver binary; default "chromedriver" on PATH
	// (Debian's chromium-driver). When it cannot be found, every request
	// is answered 503 saying so.
	Driver string
	// CDP is the CDP proxy, serving /cdp/{sessionId} and
	// /cdp/{sessionId}/page/{targetId} with the signingKey in an
	// "Authorization: Bearer" header: the driver's DevTools connections
	// go through it. Required.
	CDP http.Handler
	// StartTimeout bounds a driver's start. Default 20s.
	StartTimeout time.Duration
	// Logger receives the drivers' lifecycle and refusals. Default:
	// discard.
	Logger *slog.Logger
}

// Service serves the WebDriver endpoints and runs their drivers.
type Service struct {
	res     Resolver
	o       Options
	path    string // the chromedriver binary
	pathErr error  // why there is none
	log     *slog.Logger
	nodes   http.RoundTripper // to the other processes (forwarded requests)

	mu      sync.Mutex
	drivers map[string]*driver // by session id
	closed  bool
}

// New returns a Service finding sessions through res.
func New(res Resolver, o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultStart
	}
	s := &Service{res: res, o: o, log: o.Logger, drivers: map[string]*driver{},
		nodes: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}}
	name := o.Driver
	if name == "" {
		name = "chromedriver"
	}
	if s.path, s.pathErr = exec.LookPath(name); s.pathErr != nil {
		s.pathErr = fmt.Errorf("webdriver: no chromedriver on this quarry host (%s: %w); install Debian's chromium-driver", name, s.pathErr)
	}
	return s
}

// Available reports why the endpoints cannot run drivers (nil: they can,
// as far as the binary goes).
func (s *Service) Available() error { return s.pathErr }

// ServeHTTP serves /webdriver/{sessionId}/status and
// /webdriver/{sessionId}/session[/...]: it authenticates the signingKey,
// starts the session's driver when it is not running, rewrites a New
// Session request's capabilities, and relays the request to the driver.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := r.URL.Path[strings.Index(r.URL.Path, "/webdriver/")+len("/webdriver/"):]
	id, cmd, _ := strings.Cut(rest, "/")
	cmd = "/" + cmd
	if !validID(id) {
		writeError(w, http.StatusNotFound, "invalid session id", "wallcrawler: no such session")
		return
	}
	// Only clean paths: the New Session request, whose capabilities are
	// rewritten, has exactly one spelling.
	if cmd != path.Clean(cmd) || cmd != "/status" && cmd != "/session" && !strings.HasPrefix(cmd, "/session/") {
		writeError(w, http.StatusNotFound, "unknown command", "wallcrawler: unknown WebDriver command "+r.Method+" "+cmd)
		return
	}
	// A request another process forwarded must prove it, and is never
	// forwarded again.
	nodeToken := r.Header.Get(cdp.NodeTokenHeader)
	if nodeToken != "" {
		if err := s.res.VerifyWebDriverNode(nodeToken, id); err != nil {
			s.log.InfoContext(r.Context(), "webdriver: forwarded request refused", "session", id, "err", err)
			writeError(w, http.StatusUnauthorized, "unknown error", "wallcrawler: invalid node-to-node credential")
			return
		}
	}
	b, err := s.res.WebDriverBrowser(r.Context(), id, signingKey(r))
	if errors.Is(err, cdp.ErrNotFound) && nodeToken == "" && s.forward(w, r, id, cmd) {
		return
	}
	switch {
	case errors.Is(err, cdp.ErrUnauthorized):
		writeError(w, http.StatusUnauthorized, "unknown error", "wallcrawler: invalid or expired signingKey for this session: send the session's signingKey in the "+SigningKeyHeader+" header, as a Bearer token, or as the password of the URL's user info")
		return
	case errors.Is(err, cdp.ErrNotFound):
		writeError(w, http.StatusNotFound, "invalid session id", "wallcrawler: the session is not running (on this node)")
		return
	case err != nil:
		s.log.ErrorContext(r.Context(), "webdriver: resolve", "session", id, "err", err)
		writeError(w, http.StatusInternalServerError, "unknown error", "wallcrawler: internal server error")
		return
	}
	if s.pathErr != nil {
		writeError(w, http.StatusServiceUnavailable, "session not created", s.pathErr.Error())
		return
	}
	d, err := s.driver(r.Context(), id, signingKey(r), b)
	if errors.Is(err, errNoNetns) {
		writeError(w, http.StatusServiceUnavailable, "session not created", err.Error())
		return
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "webdriver: start chromedriver", "session", id, "err", err)
		writeError(w, http.StatusBadGateway, "session not created", "wallcrawler: the session's WebDriver server failed to start")
		return
	}
	out := r.Clone(r.Context())
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery = cmd, "", ""
	out.RequestURI = ""
	// The driver needs none of the client's credentials.
	for _, h := range []string{SigningKeyHeader, "Authorization", "Cookie"} {
		out.Header.Del(h)
	}
	if r.Method == http.MethodPost && cmd == "/session" {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxNewSessionBody))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid argument", fmt.Sprintf("wallcrawler: a New Session body is at most %d bytes", maxNewSessionBody))
			return
		}
		if body, err = newSessionBody(body, d.debugAddr); err != nil {
			writeError(w, http.StatusBadRequest, "invalid argument", err.Error())
			return
		}
		out.Body, out.ContentLength = io.NopCloser(strings.NewReader(string(body))), int64(len(body))
		out.Header.Set("Content-Type", "application/json; charset=utf-8")
		out.Header.Del("Content-Length")
	} else if r.Body != nil {
		out.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	d.proxy.ServeHTTP(w, out)
}

// forward relays a request for session id whose browser runs in another
// process to that process, which authenticates it; false when no other
// process runs the session (nothing was written).
func (s *Service) forward(w http.ResponseWriter, r *http.Request, id, cmd string) bool {
	endpoint, token, err := s.res.WebDriverOwner(r.Context(), id)
	if errors.Is(err, cdp.ErrNotFound) {
		return false
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "webdriver: find the session's node", "session", id, "err", err)
		writeError(w, http.StatusInternalServerError, "unknown error", "wallcrawler: internal server error")
		return true
	}
	target, err := url.Parse(endpoint + cmd)
	if err != nil {
		s.log.ErrorContext(r.Context(), "webdriver: the session's node", "session", id, "err", err)
		writeError(w, http.StatusInternalServerError, "unknown error", "wallcrawler: internal server error")
		return true
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *target
			pr.Out.URL, pr.Out.Host = &u, u.Host
			pr.Out.Header.Set(cdp.NodeTokenHeader, token)
		},
		Transport: s.nodes,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "webdriver: the session's node is unreachable", "session", id, "err", err)
			writeError(w, http.StatusBadGateway, "unknown error", "wallcrawler: the node running the session is unreachable")
		},
	}
	out := r.Clone(r.Context())
	if r.Body != nil {
		out.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	rp.ServeHTTP(w, out)
	return true
}

// Close stops every driver.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	ds := make([]*driver, 0, len(s.drivers))
	for _, d := range s.drivers {
		ds = append(ds, d)
	}
	s.mu.Unlock()
	for _, d := range ds {
		<-d.ready
		d.stop()
	}
}

// errNoNetns refuses a driver for a browser that shares the host's
// network.
var errNoNetns = errors.New("wallcrawler: Selenium needs the session's browser in a network namespace of its own, and quarry could not make one (it lacks CAP_SYS_ADMIN: run it as root or grant the capability); connectUrl (CDP) works without")

// driver is the chromedriver of one session's browser.
type driver struct {
	b     browser.Browser
	ready chan struct{} // closed once started (err says how)
	err   error

	cmd       *exec.Cmd
	exited    chan struct{} // closed when chromedriver has exited
	debugLn   net.Listener  // the DevTools endpoint chromedriver attaches to
	debugAddr string
	proxy     *httputil.ReverseProxy // to chromedriver
	stopOnce  sync.Once
}

// driver returns the running driver of session id, whose browser is b,
// starting it when there is none (or the one there was ended).
func (s *Service) driver(ctx context.Context, id, key string, b browser.Browser) (*driver, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("webdriver: shutting down")
	}
	d := s.drivers[id]
	if d != nil && d.b == b && !d.dead() {
		s.mu.Unlock()
		select {
		case <-d.ready:
			return d, d.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d = &driver{b: b, ready: make(chan struct{}), exited: make(chan struct{})}
	s.drivers[id] = d
	s.mu.Unlock()

	// Started on behalf of whoever comes next too: not bound to this
	// request.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.StartTimeout)
	d.err = s.start(sctx, d, id, key)
	cancel()
	close(d.ready)
	if d.err != nil {
		d.stop()
		s.forget(id, d)
		return nil, d.err
	}
	go func() {
		select {
		case <-b.Done():
		case <-d.exited:
			s.log.Warn("webdriver: chromedriver exited", "session", id)
		}
		d.stop()
		s.forget(id, d)
	}()
	return d, nil
}

// forget removes d from the running drivers.
func (s *Service) forget(id string, d *driver) {
	s.mu.Lock()
	if s.drivers[id] == d {
		delete(s.drivers, id)
	}
	s.mu.Unlock()
}

// start serves the DevTools endpoint in the browser's network and starts
// chromedriver there, returning once it listens.
func (s *Service) start(ctx context.Context, d *driver, id, key string) error {
	sc, ok := d.b.(browser.Sidecars)
	if !ok || !sc.IsolatedNetwork() {
		return errNoNetns
	}
	ln, err := sc.ListenLoopback()
	if err != nil {
		return err
	}
	d.debugLn, d.debugAddr = ln, ln.Addr().String()
	dbg := &debugger{session: id, key: key, addr: d.debugAddr, b: d.b, cdp: s.o.CDP}
	srv := &http.Server{Handler: dbg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()

	// A free port of the namespace, where only the browser's processes
	// could take it meanwhile.
	probe, err := sc.ListenLoopback()
	if err != nil {
		return err
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	// The log path puts the browser's work dir on the command line: the
	// browser's Close finds and kills the driver by it.
	d.cmd = exec.Command(s.path, "--port="+strconv.Itoa(port), "--log-level=WARNING",
		"--log-path="+filepath.Join(sc.SidecarDir(), "chromedriver.log"))
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := sc.StartSidecar(d.cmd); err != nil {
		return fmt.Errorf("webdriver: start %s: %w", s.path, err)
	}
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), "started successfully") {
				ok = true
				started <- true
			}
		}
		if !ok {
			started <- false
		}
	}()
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	select {
	case ok := <-started:
		if !ok {
			return fmt.Errorf("webdriver: chromedriver exited during start-up")
		}
	case <-ctx.Done():
		return fmt.Errorf("webdriver: chromedriver did not start: %w", ctx.Err())
	}
	d.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", addr, addr
		},
		Transport: &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return sc.DialLoopback(ctx, addr) },
			Proxy:               nil,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "webdriver: chromedriver unreachable", "session", id, "err", err)
			writeError(w, http.StatusBadGateway, "unknown error", "wallcrawler: the session's WebDriver server is unreachable")
		},
	}
	s.log.Info("webdriver: chromedriver started", "session", id, "pid", d.cmd.Process.Pid)
	return nil
}

// dead reports whether d started and its chromedriver has exited since.
func (d *driver) dead() bool {
	select {
	case <-d.ready:
	default:
		return false
	}
	if d.err != nil {
		return true
	}
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// stop kills chromedriver's process group and closes the DevTools
// endpoint; it returns once chromedriver has exited.
func (d *driver) stop() {
	d.stopOnce.Do(func() {
		if d.cmd != nil && d.cmd.Process != nil {
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
		if d.debugLn != nil {
			_ = d.debugLn.Close()
		}
	})
}

// signingKey returns the key a request carries: SigningKeyHeader, a
// Bearer token, or the password of Basic authentication.
func signingKey(r *http.Request) string {
	if k := r.Header.Get(SigningKeyHeader); k != "" {
		return k
	}
	a := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(a, "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	if raw, ok := strings.CutPrefix(a, "Basic "); ok {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw)); err == nil {
			if _, pw, ok := strings.Cut(string(b), ":"); ok {
				return pw
			}
		}
	}
	return ""
}

// validID reports whether id can be a session id.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// writeError writes a W3C WebDriver error: status, its error code and a
// message saying what to fix.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"value": map[string]any{"error": code, "message": msg, "stacktrace": ""}})
}
