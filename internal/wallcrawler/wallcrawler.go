// Package wallcrawler is the Wallcrawler system: multi-tenant remote
// browsers behind a Browserbase-compatible API. New assembles its parts
// (tables, projects and keys, contexts, sessions, the browsers, their
// egress proxy, the API) from the configuration; the caller mounts
// Routes, runs Run (the session reaper, the lease and the stream notifier)
// until it stops, then calls Close, which ends the sessions with their
// final writes before the store may close.
//
// The parts live in subpackages: tables, auth (projects and hashed API
// keys), sessions (create, release, routing, usage, artifacts, owner
// leases), browser (Chromium, the warm pool, confinement), cdp (the proxy
// and its filter), live (the live view), webdriver (the sessions'
// Selenium endpoints), contexts (persisted profiles) and api.
package wallcrawler

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrydb/quarry/ddb/consumer"
	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
	"github.com/quarrydb/quarry/internal/platform/metrics"
	"github.com/quarrydb/quarry/internal/platform/origin"
	"github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
	"github.com/quarrydb/quarry/internal/wallcrawler/webdriver"
)

// UploadPrefix is where signed context upload URLs point.
const UploadPrefix = "/wallcrawler/uploads/"

// maxContextArchive bounds an uploaded profile archive (compressed), or
// the contexts store's MaxArchiveBytes when smaller: an archive whose
// compressed size passes its uncompressed bound could never be restored.
const maxContextArchive = 512 << 20

// Deps are what Wallcrawler takes from the process that runs it.
type Deps struct {
	// DynamoDB and Streams are the clients of the store holding
	// Wallcrawler's tables and of their streams.
	DynamoDB *dynamodb.Client
	Streams  *dynamodbstreams.Client
	// StreamChanges, set when the store runs in this process
	// ((*ddb.Store).StreamChanges), wakes the sessions stream's reader
	// when the table changes, so an idle stream is read only every
	// consumer.ChangesPollInterval; nil: it is polled every 250ms.
	StreamChanges func(streamArn string) <-chan struct{}
	// Blobs holds the context archives; Uploader, when not nil, hands out
	// presigned upload URLs of the blob store itself (S3), else quarry's
	// own signed URLs are handed out.
	Blobs    blob.Store
	Uploader blob.Uploader
	// DataDir holds the system's secret under <DataDir>/wallcrawler.
	DataDir string
	// NodeID names this process in the sessions its browsers serve and in
	// its lease; AdvertiseURL is where the other processes reach its API
	// to forward CDP connections.
	NodeID, AdvertiseURL string
	// Origin builds the URLs handed to clients (connectUrl, upload URLs).
	Origin *origin.Resolver
	// Policy is the one network policy: every connection of every browser
	// leaves through an egress proxy under it.
	Policy *fetch.Policy
	// Logger logs the system's work (default: discard).
	Logger *slog.Logger
}

// System is a running Wallcrawler.
type System struct {
	handler http.Handler
	uploads http.Handler
	manager *sessions.Manager
	// webdriver runs the sessions' chromedrivers (seleniumRemoteUrl).
	webdriver *webdriver.Service
	auth      *auth.Store
	contexts  *contexts.Store
	pool      *browser.Pool
	egress    *egress.Proxy
	// egressDone is closed when the egress proxy's Serve has returned;
	// egressLn is its listener.
	egressDone chan struct{}
	egressLn   net.Listener
	// routes are the browsers' egress routes (their sessions' proxies).
	routes routes
	// browserRoot holds the browsers' work dirs and restored profiles;
	// ownRoot: it is the default one, removed at Close when empty.
	browserRoot string
	ownRoot     bool
	confinement map[string]any // what /healthz reports
	// The Chromium binary and its confinement, or why there is no browser.
	browserPath string
	browserCf   browser.Confinement
	browserErr  error
	log         *slog.Logger

	// extensions are the projects' uploaded browser extensions.
	extensions *extensions.Store
}

// New creates Wallcrawler's tables when missing, kills the browsers and
// reconciles the sessions a previous process left, starts the browsers'
// egress proxy (and the warm pool), and assembles the API. When New fails,
// what it had started is stopped before it returns.
func New(ctx context.Context, cfg config.Wallcrawler, deps Deps) (_ *System, err error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("system", "wallcrawler")
	names, err := tables.EnsureTables(ctx, deps.DynamoDB, cfg.TablePrefix)
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	root := filepath.Join(deps.DataDir, "wallcrawler")
	secret, err := loadSecret(cfg.Secret, filepath.Join(root, "secret"))
	if err != nil {
		return nil, err
	}
	s := &System{log: log}
	if s.browserRoot, s.ownRoot, err = browserRoot(cfg.BrowserDir, deps.DataDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = s.Close(cctx)
		}
	}()
	workDir := filepath.Join(s.browserRoot, "browsers")
	// Browsers of a previous process: in the browser root, and in
	// <data-dir>/wallcrawler/browsers, where older versions kept them.
	for _, dir := range []string{workDir, filepath.Join(s.browserRoot, "profiles"), filepath.Join(root, "browsers")} {
		if n, err := browser.KillLeftovers(dir); err != nil {
			log.Warn("look for leftover browsers", "err", err)
		} else if n > 0 {
			log.Warn("killed browsers left by a previous process", "count", n, "dir", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("wallcrawler: clear %s: %w", dir, err)
		}
	}
	runAs, uids, err := browserUser(cfg, log)
	if err != nil {
		return nil, err
	}
	proxyURL, err := s.startEgress(ctx, deps.Policy)
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	chromium, err := browser.NewChromium(browser.ChromiumOptions{Path: cfg.Chromium, WorkDir: workDir, User: runAs, UIDs: uids, Logger: log, ProxyServer: proxyURL, ServeEgress: s.serveBrowserEgress(deps.Policy)})
	if err != nil {
		// Sessions cannot start, but projects, keys and contexts work.
		log.Warn("no browser: sessions will fail to start", "err", err)
		s.confinement = map[string]any{"browser": "unavailable", "error": err.Error()}
		s.browserErr = err
		err = nil
	} else {
		cf := chromium.Confinement()
		s.browserPath, s.browserCf = chromium.Path(), cf
		s.confinement = map[string]any{"browserUser": cf.User, "uid": cf.UID, "gid": cf.GID, "switched": cf.Switched, "sandbox": cf.Sandbox, "netns": cf.Netns}
		if len(cf.Warnings) > 0 {
			s.confinement["warnings"] = cf.Warnings
		}
	}
	var provider browser.Provider = missingBrowser{s.browserErr}
	if chromium != nil {
		provider = chromium
		if cfg.Pool > 0 {
			// The pool lives until Close, not as long as ctx.
			s.pool = browser.NewPool(context.WithoutCancel(ctx), chromium, cfg.Pool, log)
			provider = s.pool
		}
	}
	s.auth = auth.New(deps.DynamoDB, names, nil)
	s.contexts = contexts.New(deps.DynamoDB, names, deps.Blobs, &contexts.Options{
		MaxUnpackBytes: cfg.ContextMaxBytes, MaxUnpackEntries: cfg.ContextMaxEntries,
	})
	s.extensions = extensions.New(deps.Blobs, nil)
	repo := sessions.NewRepo(deps.DynamoDB, names, nil)
	// The stream tells this process of the sessions other processes end;
	// creates do not wait on it.
	poll := 250 * time.Millisecond
	if deps.StreamChanges != nil {
		poll = consumer.ChangesPollInterval
	}
	s.manager = sessions.NewManager(sessions.Deps{
		Repo: repo, Auth: s.auth, Contexts: s.contexts, Blobs: deps.Blobs, Browsers: provider,
		Tokens: sessions.NewTokens(secret, nil), Egress: &s.routes, Extensions: s.extensions,
		Notifier: sessions.NewNotifier(deps.DynamoDB, deps.Streams, names.Sessions, poll, deps.StreamChanges, func(err error) { log.Warn("sessions stream", "err", err) }),
	}, sessions.Options{WorkDir: s.browserRoot, IdleGrace: cfg.IdleGrace, Logger: log,
		NodeID: deps.NodeID, AdvertiseURL: deps.AdvertiseURL, Lease: cfg.Lease, LeaseRenew: cfg.LeaseRenew,
		UploadMaxBytes: cfg.UploadMaxBytes, UploadQuota: cfg.UploadQuota})
	if n, err := s.manager.Reconcile(ctx); err != nil {
		return nil, fmt.Errorf("wallcrawler: reconcile sessions: %w", err)
	} else if n > 0 {
		log.Warn("sessions of a previous process marked FAILED", "count", n)
	}
	// Context archives are uploaded through quarry's own signed URLs, or
	// straight to the bucket through presigned ones when blobs are in S3
	// (the signed-URL handler stays mounted either way). quarry refuses a
	// signed upload once its context is deleted; a presigned one it cannot
	// stop, so those expire after blob.DefaultMaxUploadTTL (5 minutes).
	signer := blob.NewSigner(secret, UploadPrefix, nil)
	s.uploads = signer.HandlerWith(deps.Blobs, blob.HandlerOptions{
		MaxBytes: min(maxContextArchive, s.contexts.MaxArchiveBytes()),
		Allow:    s.contexts.AllowUpload, // an upload URL dies with its context
	})
	uploader := deps.Uploader
	if uploader == nil {
		uploader = signer
	}
	// One count per project for its CDP clients and its live viewers;
	// cfg.MaxConnsPerProject 0 caps nothing (quarry serve resolves the
	// setting's default before it gets here).
	projects := cdp.NewProjectConns(cfg.MaxConnsPerProject)
	proxy := cdp.NewProxyWith(s.manager, cdp.ProxyOptions{Logger: log, MaxClients: cfg.MaxCDPClients, Projects: projects})
	s.webdriver = webdriver.New(s.manager, webdriver.Options{CDP: proxy, Logger: log.With("component", "webdriver")})
	if err := s.webdriver.Available(); err != nil {
		log.Warn("no chromedriver: sessions' seleniumRemoteUrl answers 503", "err", err)
	}
	h := api.New(s.auth, &api.Options{
		Logger: log, Contexts: s.contexts, Extensions: s.extensions, Uploads: uploader, Sessions: s.manager,
		CDP: proxy, WebDriver: s.webdriver,
		Origin: deps.Origin, LiveFrameAncestors: cfg.LiveFrameAncestors, Projects: projects,
	})
	s.handler = http.StripPrefix("/wallcrawler", h)
	return s, nil
}

// Routes returns the system's handlers by mux pattern: the API at
// /wallcrawler/ and the signed context uploads at UploadPrefix.
func (s *System) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"/wallcrawler/": jsonhttp.BoundedIDs(s.handler, browserbaseError),
		UploadPrefix:    jsonhttp.BoundedIDs(s.uploads, jsonhttp.Error),
	}
}

// Run runs the session reaper, the lease and the stream notifier until
// ctx ends.
func (s *System) Run(ctx context.Context) error {
	if err := s.manager.Run(ctx); err != nil {
		s.log.Error("wallcrawler: sessions stopped working", "err", err)
	}
	return nil
}

// Close stops, in this order, the sessions (each ends with a final write,
// given at least a second even when ctx has less), their WebDriver
// servers, the warm pool's
// browsers, the egress proxy (its port closes) and the browsers' files.
// It stops what New had started when New failed part way.
func (s *System) Close(ctx context.Context) error {
	var errs []error
	if s.manager != nil {
		deadline := time.Now().Add(time.Second)
		if d, ok := ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
		sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		s.manager.Close(sctx)
		cancel()
	}
	if s.webdriver != nil {
		s.webdriver.Close() // the sessions' browsers are gone: their drivers too
	}
	if s.pool != nil {
		errs = append(errs, s.pool.Close(ctx))
	}
	if s.egress != nil {
		errs = append(errs, s.stopEgress(ctx))
	}
	s.removeFiles()
	return errors.Join(errs...)
}

// Health returns how the browsers are confined, for /healthz.
func (s *System) Health() map[string]any { return s.confinement }

// Browser returns the Chromium binary and its confinement, or why no
// browser can start (sessions then fail, the rest of the API works).
func (s *System) Browser() (path string, cf browser.Confinement, err error) {
	return s.browserPath, s.browserCf, s.browserErr
}

// Sessions returns the session manager.
func (s *System) Sessions() *sessions.Manager { return s.manager }

// Auth returns the projects and API keys.
func (s *System) Auth() *auth.Store { return s.auth }

// Contexts returns the persisted browser contexts.
func (s *System) Contexts() *contexts.Store { return s.contexts }

// Egress returns the browsers' egress proxy.
func (s *System) Egress() *egress.Proxy { return s.egress }

// startEgress starts the egress proxy of the browsers on a loopback port
// of its own, reserved in the policy so that no browser can reach it as a
// destination, and returns its URL.
func (s *System) startEgress(ctx context.Context, policy *fetch.Policy) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("egress: listen: %w", err)
	}
	if err := policy.Reserve(ctx, "quarry's egress proxy", ln.Addr().String()); err != nil {
		ln.Close()
		return "", err
	}
	p, err := egress.New(egress.Options{Dialer: &fetch.Dialer{Policy: policy}, Logger: s.log.With("component", "egress")})
	if err != nil {
		ln.Close()
		return "", err
	}
	s.egress, s.egressLn, s.egressDone = p, ln, make(chan struct{})
	go func() {
		defer close(s.egressDone)
		if err := p.Serve(ln); err != nil {
			// Browsers lose the network; the rest of the process serves on.
			s.log.Error("egress proxy stopped", "err", err)
		}
	}()
	s.log.Debug("egress proxy", "addr", ln.Addr().String())
	return "http://" + ln.Addr().String(), nil
}

// stopEgress closes the egress proxy and its port and waits for it.
func (s *System) stopEgress(ctx context.Context) error {
	err := s.egress.Close()
	// Serve closes the listener when it returns, or, when Close came
	// first, as soon as it starts; closing it here as well makes the
	// port's release not wait for that.
	_ = s.egressLn.Close()
	select {
	case <-s.egressDone:
		return err
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("egress proxy still running: %w", ctx.Err()))
	}
}

// removeFiles removes the browsers' files, and the browser root when it
// is the default one and empty.
func (s *System) removeFiles() {
	if s.browserRoot == "" {
		return
	}
	for _, dir := range []string{"browsers", "profiles"} {
		_ = os.RemoveAll(filepath.Join(s.browserRoot, dir))
	}
	if s.ownRoot {
		_ = os.Remove(s.browserRoot) // only when empty
	}
}

// browserRoot returns the directory of the browsers' work dirs
// (<root>/browsers) and restored profiles (<root>/profiles), created
// owned by quarry with mode 0711: the browser user can enter the
// directories quarry hands it there, but not list them, and never needs
// to enter the data directory (mode 0700). configured empty: the default,
// DefaultBrowserRoot(dataDir), so that each data directory has its own,
// found again after a crash; def reports that the default was used.
func browserRoot(configured, dataDir string) (dir string, def bool, err error) {
	dir = configured
	if dir == "" {
		if dir, err = DefaultBrowserRoot(dataDir); err != nil {
			return "", false, err
		}
		def = true
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false, fmt.Errorf("wallcrawler: browser dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", false, fmt.Errorf("wallcrawler: browser dir: %w", err)
	}
	// In a shared directory such as /tmp, someone else may have created
	// it (or a symbolic link) first.
	st, err := os.Lstat(dir)
	if err != nil {
		return "", false, fmt.Errorf("wallcrawler: browser dir: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.IsDir() || !ok || sys.Uid != uint32(os.Geteuid()) {
		return "", false, fmt.Errorf("wallcrawler: browser dir %s is not a directory owned by uid %d: remove it or choose another with --wallcrawler-browser-dir", dir, os.Geteuid())
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", false, fmt.Errorf("wallcrawler: browser dir: %w", err)
	}
	return dir, def, nil
}

// DefaultBrowserRoot returns the browser dir of dataDir when none is
// configured: <os.TempDir()>/quarry-browsers-<first 12 hex digits of the
// SHA-256 of the absolute data directory>.
func DefaultBrowserRoot(dataDir string) (string, error) {
	data, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("wallcrawler: data dir: %w", err)
	}
	sum := sha256.Sum256([]byte(data))
	return filepath.Join(os.TempDir(), "quarry-browsers-"+hex.EncodeToString(sum[:6])), nil
}

// browserUser returns the user the browsers run as: nil (quarry's own)
// unless quarry runs as root, where it is cfg.User, browser.DefaultUser,
// or, with cfg.UIDs, an id of the range per browser (uids).
func browserUser(cfg config.Wallcrawler, log *slog.Logger) (u *browser.User, uids *browser.UIDRange, err error) {
	if os.Geteuid() != 0 {
		if cfg.User != "" || cfg.UIDs != "" {
			log.Warn("quarry is not root: browsers run as its own user, wallcrawler-user and wallcrawler-uids are ignored", "wallcrawler_user", cfg.User, "wallcrawler_uids", cfg.UIDs)
		}
		return nil, nil, nil
	}
	if cfg.UIDs != "" {
		r, err := browser.ParseUIDRange(cfg.UIDs)
		if err != nil {
			return nil, nil, fmt.Errorf("wallcrawler: wallcrawler-uids: %w", err)
		}
		return nil, &r, nil
	}
	if cfg.User != "" {
		u, err := browser.LookupUser(cfg.User)
		if err != nil {
			return nil, nil, fmt.Errorf("wallcrawler: wallcrawler-user: %w", err)
		}
		return &u, nil, nil
	}
	du, err := browser.DefaultUser()
	if err != nil {
		log.Warn("no unprivileged user for the browsers: they run as root", "err", err)
		return nil, nil, nil
	}
	return &du, nil, nil
}

// missingBrowser is the provider when no Chromium was found.
type missingBrowser struct{ err error }

func (m missingBrowser) Launch(context.Context, browser.LaunchOptions) (browser.Browser, error) {
	return nil, m.err
}

// loadSecret returns the configured secret, or the one kept in path,
// creating it (32 random bytes, hex, mode 0600) on first use.
func loadSecret(configured, path string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	if data, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(data)) >= 32 {
		return bytes.TrimSpace(data), nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	secret := []byte(hex.EncodeToString(b[:]))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("wallcrawler: secret: %w", err)
	}
	if err := os.WriteFile(path, secret, 0o600); err != nil {
		return nil, fmt.Errorf("wallcrawler: secret: %w", err)
	}
	return secret, nil
}

// browserbaseError is Wallcrawler's error shape (Browserbase's), for
// paths the API never sees.
func browserbaseError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg})
}

// RegisterLeaseMetrics adds Wallcrawler's lease figures to reg: how long
// ago this process renewed its lease, and how many sessions of dead
// processes it ended. sys returns the running system, or nil (zeros).
func RegisterLeaseMetrics(reg *metrics.Registry, sys func() *System) {
	reg.Gauge("wallcrawler_lease_age_seconds", "Seconds since this process last renewed its Wallcrawler lease; past --wallcrawler-lease the other processes end its sessions.", func() float64 {
		if s := sys(); s != nil {
			return s.manager.LeaseStatus().Age.Seconds()
		}
		return 0
	})
	reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "quarry_wallcrawler_orphaned_sessions_ended_total",
		Help: "Sessions of other processes whose lease expired that this process ended (ERROR, slot freed)."}, func() float64 {
		if s := sys(); s != nil {
			return float64(s.manager.LeaseStatus().OrphansEnded)
		}
		return 0
	}))
}
