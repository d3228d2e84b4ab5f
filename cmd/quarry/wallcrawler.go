package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/config"
	"github.com/quarrydb/quarry/internal/platform/egress"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/origin"
	wcapi "github.com/quarrydb/quarry/internal/wallcrawler/api"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

const wallcrawlerUsage = `usage:
  quarry wallcrawler project create --name N [--concurrency C] [--id ID] [--timeout SECONDS] [--owner O] [--tier T]
  quarry wallcrawler project update --id ID [--name N] [--concurrency C] [--timeout SECONDS] [--owner O] [--tier T] [--status ACTIVE|INACTIVE]
  quarry wallcrawler key create --project P [--also P2,P3] [--name LABEL]
  quarry wallcrawler key revoke (--key RAW | --project P --id KEY_ID)
`

// cmdWallcrawler runs Wallcrawler's administration commands.
func cmdWallcrawler(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	}
	what := args[0] + " " + args[1]
	fs := flag.NewFlagSet("quarry wallcrawler "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "project name, or key label")
	concurrency := fs.Int("concurrency", 0, "maximum concurrent sessions of the project (default 1)")
	id := fs.String("id", "", "project id (create, update), or key id (revoke)")
	owner := fs.String("owner", "", "the project's ownerId, an external owner identifier (update: \"\" removes it)")
	tier := fs.String("tier", "", "the project's billingTier (update: \"\" removes it)")
	status := fs.String("status", "", "the project's status: ACTIVE, or INACTIVE (no new sessions)")
	timeout := fs.Int("timeout", 0, "default session timeout in seconds (default 3600)")
	project := fs.String("project", "", "project id")
	also := fs.String("also", "", "comma-separated further projects the key may use")
	rawKey := fs.String("key", "", "the raw API key to revoke")
	c, err := config.Load(fs, args[2:], getenv, config.Defaults(),
		[]string{"data-dir", "ddb-listen", "dynamodb-endpoint", "wallcrawler-table-prefix", "region", "log-level", "log-format"})
	if err != nil {
		return err
	}
	// Required flags are checked before the store is opened, and named as
	// the command line spells them.
	switch {
	case what != "project create" && what != "project update" && what != "key create" && what != "key revoke":
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	case what == "project create" && *name == "":
		return errors.New("wallcrawler project create: --name is required (e.g. --name Acme)")
	case what == "project update" && *id == "":
		return errors.New("wallcrawler project update: --id is required: the id of the project to change (e.g. --id project_acme)")
	case what == "project create" && *status != "":
		return errors.New("wallcrawler project create: a new project is ACTIVE; use project update --status to change it")
	case what == "key create" && *project == "":
		return errors.New("wallcrawler key create: --project is required: the id of the project the key may use (e.g. --project project_acme)")
	case what == "key revoke" && *rawKey == "" && (*project == "" || *id == ""):
		return errors.New("wallcrawler key revoke: --key RAW_KEY is required, or --project P with --id KEY_ID")
	}
	log := newLogger(c, stderr)
	client, _, closeFn, err := dynamoClient(ctx, c, log, true)
	if err != nil {
		return err
	}
	defer closeFn()
	names, err := tables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
	if err != nil {
		return err
	}
	st := auth.New(client, names, nil)
	switch what {
	case "project create":
		p, err := st.CreateProject(ctx, auth.CreateProjectInput{ID: *id, Name: *name, Concurrency: *concurrency, DefaultTimeout: *timeout,
			OwnerID: *owner, BillingTier: *tier})
		if err != nil {
			return err
		}
		printProject(stdout, p)
	case "project update":
		// Only the flags given on the command line change the project.
		var in auth.UpdateProjectInput
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "name":
				in.Name = name
			case "owner":
				in.OwnerID = owner
			case "tier":
				in.BillingTier = tier
			case "status":
				up := strings.ToUpper(*status)
				in.Status = &up
			case "concurrency":
				in.Concurrency = concurrency
			case "timeout":
				in.DefaultTimeout = timeout
			}
		})
		p, err := st.UpdateProject(ctx, *id, in)
		if err != nil {
			return fmt.Errorf("wallcrawler project update: %w", err)
		}
		printProject(stdout, p)
	case "key create":
		var extra []string
		for _, p := range strings.Split(*also, ",") {
			if p = strings.TrimSpace(p); p != "" {
				extra = append(extra, p)
			}
		}
		raw, k, err := st.CreateKey(ctx, auth.CreateKeyInput{ProjectID: *project, ProjectIDs: extra, Name: *name})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "key %s for project %s; only its SHA-256 hash is stored, so this is the only time the key is shown:\n", k.ID, k.ProjectID)
		fmt.Fprintln(stdout, raw)
	case "key revoke":
		switch {
		case *rawKey != "":
			err = st.RevokeKey(ctx, *rawKey)
		case *project != "" && *id != "":
			err = st.RevokeKeyByID(ctx, *project, *id)
		default:
			fmt.Fprint(stderr, wallcrawlerUsage)
			return errUsage
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked")
	default:
		fmt.Fprint(stderr, wallcrawlerUsage)
		return errUsage
	}
	return nil
}

// printProject writes the one-line summary project create and update print.
func printProject(w io.Writer, p auth.Project) {
	fmt.Fprintf(w, "project %s (%s): %s, concurrency %d, default timeout %ds", p.ID, p.Name, p.Status, p.Concurrency, p.DefaultTimeout)
	if p.OwnerID != "" {
		fmt.Fprintf(w, ", owner %s", p.OwnerID)
	}
	if p.BillingTier != "" {
		fmt.Fprintf(w, ", billing tier %s", p.BillingTier)
	}
	fmt.Fprintln(w)
}

// wallcrawler is the running Wallcrawler system.
type wallcrawler struct {
	handler http.Handler // mounted at /wallcrawler/
	uploads http.Handler // mounted at /wallcrawler/uploads/
	manager *sessions.Manager
	// auth and contexts serve the console's session inspector.
	auth     *auth.Store
	contexts *contexts.Store
	pool     *browser.Pool
	egress   *egress.Proxy
	// browserRoot holds the browsers' work dirs and restored profiles;
	// ownRoot: it is the default one, removed at stop when empty.
	browserRoot string
	ownRoot     bool
	confinement map[string]any // what /healthz reports
	// For the start banner: the Chromium binary and its confinement, or
	// why there is no browser.
	browserPath string
	browserCf   browser.Confinement
	browserErr  error
}

// uploadPrefix is where signed context upload URLs point.
const uploadPrefix = "/wallcrawler/uploads/"

// startWallcrawler creates Wallcrawler's tables when missing, kills the
// browsers and reconciles the sessions a previous process left, and
// returns the system ready to mount. run starts its background work.
// What it starts, it hands to lc as it starts it, so that lc stops it
// when startWallcrawler (or a later part of serve) fails, and at
// shutdown: in that (reverse) order, the sessions (each ends with a final
// write: before the store closes), the warm pool's browsers, the egress
// proxy, and the browsers' files.
func startWallcrawler(ctx context.Context, lc *lifecycle, c *config.Config, client *dynamodb.Client, streams *dynamodbstreams.Client, embedded bool, policy *fetch.Policy, log *slog.Logger) (*wallcrawler, error) {
	log = log.With("system", "wallcrawler")
	names, err := tables.EnsureTables(ctx, client, c.WallcrawlerTablePrefix)
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	root := filepath.Join(c.DataDir, "wallcrawler")
	secret, err := loadSecret(c.WallcrawlerSecret, filepath.Join(root, "secret"))
	if err != nil {
		return nil, err
	}
	blobs, uploader, err := openBlobs(ctx, c, "wallcrawler", filepath.Join(root, "blobs"))
	if err != nil {
		return nil, err
	}
	w := &wallcrawler{}
	if w.browserRoot, w.ownRoot, err = browserRoot(c); err != nil {
		return nil, err
	}
	lc.onStop("wallcrawler browser files", func(context.Context) error {
		w.removeFiles()
		return nil
	})
	workDir := filepath.Join(w.browserRoot, "browsers")
	// Browsers of a previous process: in the browser root, and where
	// versions before it kept them (<data-dir>/wallcrawler/browsers).
	for _, dir := range []string{workDir, filepath.Join(w.browserRoot, "profiles"), filepath.Join(root, "browsers")} {
		if n, err := browser.KillLeftovers(dir); err != nil {
			log.Warn("look for leftover browsers", "err", err)
		} else if n > 0 {
			log.Warn("killed browsers left by a previous process", "count", n, "dir", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("wallcrawler: clear %s: %w", dir, err)
		}
	}
	runAs, uids, err := browserUser(c, log)
	if err != nil {
		return nil, err
	}
	// Every connection of every browser leaves through the egress proxy,
	// under the one network policy.
	var proxyURL string
	if w.egress, proxyURL, err = startEgress(ctx, lc, policy, log); err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	chromium, err := browser.NewChromium(browser.ChromiumOptions{Path: c.Chromium, WorkDir: workDir, User: runAs, UIDs: uids, Logger: log, ProxyServer: proxyURL, Listeners: policy})
	if err != nil {
		// Sessions cannot start, but projects, keys and contexts work.
		log.Warn("no browser: sessions will fail to start", "err", err)
		w.confinement = map[string]any{"browser": "unavailable", "error": err.Error()}
		w.browserErr = err
	} else {
		cf := chromium.Confinement()
		w.browserPath, w.browserCf = chromium.Path(), cf
		w.confinement = map[string]any{"browserUser": cf.User, "uid": cf.UID, "gid": cf.GID, "switched": cf.Switched, "sandbox": cf.Sandbox}
		if len(cf.Warnings) > 0 {
			w.confinement["warnings"] = cf.Warnings
		}
	}
	var provider browser.Provider = missingBrowser{err}
	if chromium != nil {
		provider = chromium
		if c.WallcrawlerPool > 0 {
			w.pool = browser.NewPool(ctx, chromium, c.WallcrawlerPool, log)
			provider = w.pool
			lc.onStop("wallcrawler warm pool", w.pool.Close)
		}
	}
	authStore := auth.New(client, names, nil)
	ctxStore := contexts.New(client, names, blobs, &contexts.Options{
		MaxUnpackBytes: c.WallcrawlerContextMaxBytes, MaxUnpackEntries: c.WallcrawlerContextMaxEntries,
	})
	if host, _, _ := net.SplitHostPort(c.Listen); c.DynamoDBEndpoint != "" && c.AdvertiseURL == "" && (host == "" || net.ParseIP(host).IsUnspecified()) {
		log.Warn("--listen is a wildcard address: set --advertise-url so that the other processes can forward CDP connections here", "listen", c.Listen)
	}
	repo := sessions.NewRepo(client, names, nil)
	// The stream tells this process of the sessions other processes end;
	// creates do not wait on it.
	poll := 250 * time.Millisecond
	w.manager = sessions.NewManager(sessions.Deps{
		Repo: repo, Auth: authStore, Contexts: ctxStore, Blobs: blobs, Browsers: provider,
		Tokens:   sessions.NewTokens(secret, nil),
		Notifier: sessions.NewNotifier(client, streams, names.Sessions, poll, func(err error) { log.Warn("sessions stream", "err", err) }),
	}, sessions.Options{WorkDir: w.browserRoot, IdleGrace: c.WallcrawlerIdleGrace, Logger: log,
		NodeID: nodeID(c), AdvertiseURL: advertiseURL(c), Lease: c.WallcrawlerLease, LeaseRenew: c.WallcrawlerLeaseRenew})
	lc.onStop("wallcrawler sessions", func(ctx context.Context) error {
		// At least a second for the final writes, even when the
		// listeners' drain took the whole shutdown timeout.
		deadline := time.Now().Add(time.Second)
		if d, ok := ctx.Deadline(); ok {
			deadline = later(d, deadline)
		}
		sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		w.manager.Close(sctx)
		return nil
	})
	if n, err := w.manager.Reconcile(ctx); err != nil {
		return nil, fmt.Errorf("wallcrawler: reconcile sessions: %w", err)
	} else if n > 0 {
		log.Warn("sessions of a previous process marked FAILED", "count", n)
	}
	// Context archives are uploaded through quarry's own signed URLs, or
	// straight to the bucket through presigned ones when blobs are in S3
	// (the signed-URL handler stays mounted either way). quarry refuses a
	// signed upload once its context is deleted; a presigned one it cannot
	// stop, so those expire after blob.DefaultMaxUploadTTL (5 minutes).
	signer := blob.NewSigner(secret, uploadPrefix, nil)
	w.uploads = signer.HandlerWith(blobs, blob.HandlerOptions{
		MaxBytes: min(maxContextArchive, ctxStore.MaxArchiveBytes()),
		Allow:    ctxStore.AllowUpload, // an upload URL dies with its context
	})
	if uploader == nil {
		uploader = signer
	}
	// Validated with the configuration: cannot fail here.
	orig, err := origin.Parse(c.PublicURL, c.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("wallcrawler: %w", err)
	}
	h := wcapi.New(authStore, &wcapi.Options{
		Logger: log, Contexts: ctxStore, Uploads: uploader, Sessions: w.manager,
		CDP: cdp.NewProxy(w.manager, log), Origin: orig, LiveFrameAncestors: c.WallcrawlerLiveFrameAncestors,
	})
	w.handler = http.StripPrefix("/wallcrawler", h)
	w.auth, w.contexts = authStore, ctxStore
	return w, nil
}

// advertiseURL is the base URL the other processes reach this one's API
// at: --advertise-url, else http://<--listen>.
func advertiseURL(c *config.Config) string {
	if c.AdvertiseURL != "" {
		return strings.TrimSuffix(c.AdvertiseURL, "/")
	}
	return "http://" + c.Listen
}

// maxContextArchive bounds an uploaded profile archive (compressed), or
// the contexts store's MaxArchiveBytes when smaller: an archive whose
// compressed size passes its uncompressed bound could never be restored.
const maxContextArchive = 512 << 20

// run runs the session reaper and stream notifier until ctx ends.
func (w *wallcrawler) run(ctx context.Context, log *slog.Logger) {
	if err := w.manager.Run(ctx); err != nil {
		log.Error("wallcrawler: sessions stopped working", "err", err)
	}
}

// removeFiles removes the browsers' files, and the browser root when it
// is the default one and empty.
func (w *wallcrawler) removeFiles() {
	for _, dir := range []string{"browsers", "profiles"} {
		_ = os.RemoveAll(filepath.Join(w.browserRoot, dir))
	}
	if w.ownRoot {
		_ = os.Remove(w.browserRoot) // only when empty
	}
}

// health returns how the browsers are confined, for /healthz.
func (w *wallcrawler) health() map[string]any { return w.confinement }

// browserRoot returns the directory of the browsers' work dirs
// (<root>/browsers) and restored profiles (<root>/profiles), created
// owned by quarry with mode 0711: the browser user can enter the
// directories quarry hands it there, but not list them, and never needs
// to enter the data directory (mode 0700). Default:
// <os.TempDir()>/quarry-browsers-<first 12 hex digits of the SHA-256 of
// the absolute data directory>, so that each data directory has its own,
// found again after a crash. def reports that the default was used.
func browserRoot(c *config.Config) (dir string, def bool, err error) {
	dir = c.WallcrawlerBrowserDir
	if dir == "" {
		if dir, err = defaultBrowserRoot(c.DataDir); err != nil {
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

// nodeID is --node-id, or when it is not set the host name and the first
// 6 hex digits of the SHA-256 of the absolute data directory: distinct for
// two processes on one machine (which would otherwise take each other's
// lease and sessions for their own), the same for a restart of the same
// process (which then ends what its previous run left at once).
func nodeID(c *config.Config) string {
	if c.NodeID != "" {
		return c.NodeID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		data = c.DataDir
	}
	sum := sha256.Sum256([]byte(data))
	return host + "-" + hex.EncodeToString(sum[:3])
}

// defaultBrowserRoot returns the browser dir of dataDir when none is
// configured: <os.TempDir()>/quarry-browsers-<first 12 hex digits of the
// SHA-256 of the absolute data directory>.
func defaultBrowserRoot(dataDir string) (string, error) {
	data, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("wallcrawler: data dir: %w", err)
	}
	sum := sha256.Sum256([]byte(data))
	return filepath.Join(os.TempDir(), "quarry-browsers-"+hex.EncodeToString(sum[:6])), nil
}

// browserUser returns the user the browsers run as: nil (quarry's own)
// unless quarry runs as root, where it is --wallcrawler-user,
// browser.DefaultUser, or, with --wallcrawler-uids, an id of the range per
// browser (uids).
func browserUser(c *config.Config, log *slog.Logger) (u *browser.User, uids *browser.UIDRange, err error) {
	if os.Geteuid() != 0 {
		if c.WallcrawlerUser != "" || c.WallcrawlerUIDs != "" {
			log.Warn("quarry is not root: browsers run as its own user, wallcrawler-user and wallcrawler-uids are ignored", "wallcrawler_user", c.WallcrawlerUser, "wallcrawler_uids", c.WallcrawlerUIDs)
		}
		return nil, nil, nil
	}
	if c.WallcrawlerUIDs != "" {
		r, err := browser.ParseUIDRange(c.WallcrawlerUIDs)
		if err != nil {
			return nil, nil, fmt.Errorf("wallcrawler: wallcrawler-uids: %w", err)
		}
		return nil, &r, nil
	}
	if c.WallcrawlerUser != "" {
		u, err := browser.LookupUser(c.WallcrawlerUser)
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
