package config

import (
	"errors"
	"fmt"
	"time"
)

// Wallcrawler is the configuration of the remote-browser system.
type Wallcrawler struct {
	// TablePrefix prefixes Wallcrawler's table names.
	TablePrefix string
	// Secret signs Wallcrawler's signingKey JWTs and context upload URLs;
	// empty: a random secret kept in the data directory. Processes sharing
	// one store must share it.
	Secret string
	// Pool is the number of pre-launched browsers (0: off).
	Pool int
	// IdleGrace ends a session without keepAlive after this long without
	// a CDP client.
	IdleGrace time.Duration
	// Lease is how long a process may go without renewing its lease before
	// the other processes sharing the store end its sessions (ERROR) and
	// free their slots.
	Lease time.Duration
	// LeaseRenew is how often the lease is renewed (0: a third of Lease).
	LeaseRenew time.Duration
	// ContextMaxBytes caps the bytes one context archive may unpack to on
	// disk (default 1 GiB).
	ContextMaxBytes int64
	// ContextMaxEntries caps the entries of one context archive (default
	// 100,000).
	ContextMaxEntries int
	// UploadMaxBytes caps one file uploaded to a session (POST
	// /v1/sessions/{id}/uploads; default 50 MiB).
	UploadMaxBytes int64
	// UploadQuota caps the files uploaded to one session, all together
	// (default 200 MiB).
	UploadQuota int64
	// Chromium is the browser binary; empty: chromium on PATH.
	Chromium string
	// User is the account browsers run as when quarry runs as root: a user
	// name or uid[:gid]; empty: quarry-browser when it exists, else
	// nobody. Ignored when quarry is not root.
	User string
	// UIDs is a range of user ids ("200000-200999"), one per browser, when
	// quarry runs as root: browsers of different sessions then cannot read
	// each other's files even past Chromium's sandbox. Exclusive with
	// User; empty: one user for every browser.
	UIDs string
	// BrowserDir holds the browsers' work dirs and restored profiles; it
	// must be outside the data directory (which the browser user may not
	// enter). Empty: <os.TempDir()>/quarry-browsers-<hash of the absolute
	// data directory>.
	BrowserDir string
	// LiveFrameAncestors is the CSP frame-ancestors source list of the
	// live view page (who may embed it in an iframe): empty or "*" any
	// site, "'none'" no one, or origins such as "https://app.example".
	LiveFrameAncestors string
	// MaxCDPClients caps the CDP connections open at once to one session
	// (its pages' included, and those forwarded from other processes);
	// one more is answered 429 (default 32).
	MaxCDPClients int
	// MaxConnsPerProject caps the WebSocket connections (CDP clients and
	// live viewers) one project holds at once in this process, all its
	// sessions together; one more is answered 429, so that the other
	// projects keep the rest of the upgraded pool. 0: half of it, as
	// Config.WallcrawlerConnsPerProject resolves it (what quarry serve
	// hands Wallcrawler, which takes 0 as no cap).
	MaxConnsPerProject int
}

func wallcrawlerDefaults() Wallcrawler {
	return Wallcrawler{
		IdleGrace:         120 * time.Second,
		Lease:             15 * time.Second,
		ContextMaxBytes:   1 << 30,
		ContextMaxEntries: 100_000,
		UploadMaxBytes:    50 << 20,
		UploadQuota:       200 << 20,
		MaxCDPClients:     32,
	}
}

func (w *Wallcrawler) fields() []field {
	return group(GroupWallcrawler, []field{
		{flag: "wallcrawler-table-prefix", usage: "prefix of Wallcrawler's table names", str: &w.TablePrefix},
		{flag: "wallcrawler-secret", usage: "secret signing Wallcrawler's connect tokens and upload URLs (default: random, kept in data-dir)", str: &w.Secret},
		{flag: "wallcrawler-pool", usage: "pre-launched browsers kept warm (0: off)", num: &w.Pool},
		{flag: "wallcrawler-idle-grace", usage: "a session without keepAlive ends after this long without a CDP client", dur: &w.IdleGrace},
		{flag: "wallcrawler-lease", usage: "a process that has not renewed its lease for this long is taken for dead by the others sharing the store: its sessions become ERROR and their slots are freed, and the process itself kills their browsers", dur: &w.Lease},
		{flag: "wallcrawler-lease-renew", usage: "how often a process renews its lease (0: a third of wallcrawler-lease)", dur: &w.LeaseRenew},
		{flag: "wallcrawler-context-max-bytes", usage: "most bytes one context archive may unpack to (bytes, or a size like 512MiB, 1GiB)", size: &w.ContextMaxBytes},
		{flag: "wallcrawler-context-max-entries", usage: "most entries (files, directories, links) one context archive may hold", num: &w.ContextMaxEntries},
		{flag: "wallcrawler-upload-max-bytes", usage: "most bytes of one file uploaded to a session (bytes, or a size like 50MiB); a bigger one is answered 413", size: &w.UploadMaxBytes},
		{flag: "wallcrawler-upload-quota", usage: "most bytes of the files uploaded to one session, all together (bytes, or a size like 200MiB); past it an upload is answered 413", size: &w.UploadQuota},
		{flag: "wallcrawler-max-cdp-clients", usage: "most CDP connections open at once to one session (its pages' included); one more is answered 429, so that one tenant cannot take the listener's connections", num: &w.MaxCDPClients},
		{flag: "wallcrawler-max-conns-per-project", usage: "most WebSocket connections (CDP and live view) one project may hold at once, all its sessions together; one more is answered 429, so that other projects keep the rest of max-upgraded-conns (0: half of max-upgraded-conns)", num: &w.MaxConnsPerProject},
		{flag: "chromium", usage: "Chromium binary for Wallcrawler (default: chromium on PATH)", str: &w.Chromium},
		{flag: "wallcrawler-user", usage: "user the browsers run as when quarry runs as root: a name or uid[:gid] (default: quarry-browser if it exists, else nobody)", str: &w.User},
		{flag: "wallcrawler-uids", usage: "range of user ids, one per browser, when quarry runs as root (e.g. 200000-200999): sessions' browsers cannot read each other's files (default: one user for all, see wallcrawler-user)", str: &w.UIDs},
		{flag: "wallcrawler-browser-dir", usage: "directory of the browsers' work dirs and restored profiles, outside data-dir (default: <tmp>/quarry-browsers-<hash of data-dir>)", str: &w.BrowserDir},
		{flag: "wallcrawler-live-frame-ancestors", usage: `sites that may embed the live view in an iframe (CSP frame-ancestors): "*" any (default), "'none'", or space-separated origins like "'self' https://app.example.com"`, str: &w.LiveFrameAncestors},
	})
}

// validate reports the problems of w; dataDir is the data directory the
// browsers' directory must stay out of.
func (w *Wallcrawler) validate(dataDir string) []error {
	var errs []error
	if w.Pool < 0 || w.Pool > 64 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-pool %d: want 0 to 64", w.Pool))
	}
	if w.IdleGrace <= 0 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-idle-grace %v: must be positive", w.IdleGrace))
	}
	if w.Lease < time.Second {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-lease %v: want at least 1s", w.Lease))
	}
	if w.LeaseRenew < 0 || w.LeaseRenew >= w.Lease {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-lease-renew %v: want 0 (a third of the lease) or less than --wallcrawler-lease %v", w.LeaseRenew, w.Lease))
	}
	if w.Secret != "" && len(w.Secret) < 16 {
		errs = append(errs, errors.New("config: --wallcrawler-secret: want at least 16 characters"))
	}
	if w.User != "" && w.UIDs != "" {
		errs = append(errs, errors.New("config: --wallcrawler-user and --wallcrawler-uids are exclusive: one user for every browser, or one id each"))
	}
	if w.User != "" && !validUserSpec(w.User) {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-user %q: want a user name or uid[:gid]", w.User))
	}
	if w.BrowserDir != "" && dataDir != "" {
		if inside, err := within(w.BrowserDir, dataDir); err != nil {
			errs = append(errs, fmt.Errorf("config: --wallcrawler-browser-dir: %w", err))
		} else if inside {
			errs = append(errs, fmt.Errorf("config: --wallcrawler-browser-dir %q is inside --data-dir %q, which the browser user must not enter", w.BrowserDir, dataDir))
		}
	}
	if err := checkFrameAncestors(w.LiveFrameAncestors); err != nil {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-live-frame-ancestors %q: %w", w.LiveFrameAncestors, err))
	}
	if w.ContextMaxBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-context-max-bytes %d: want at least 1MiB (1048576)", w.ContextMaxBytes))
	}
	if w.ContextMaxEntries < 1 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-context-max-entries %d: must be at least 1", w.ContextMaxEntries))
	}
	if w.UploadMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-upload-max-bytes %d: must be at least 1", w.UploadMaxBytes))
	}
	if w.UploadQuota < w.UploadMaxBytes {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-upload-quota %d: want at least --wallcrawler-upload-max-bytes %d", w.UploadQuota, w.UploadMaxBytes))
	}
	if w.MaxCDPClients < 1 || w.MaxCDPClients > 1024 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-max-cdp-clients %d: want 1 to 1024", w.MaxCDPClients))
	}
	if w.MaxConnsPerProject < 0 || w.MaxConnsPerProject > 1_000_000 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-max-conns-per-project %d: want 0 (half of --max-upgraded-conns) to 1000000", w.MaxConnsPerProject))
	}
	return errs
}

// WallcrawlerConnsPerProject returns the cap on one project's WebSocket
// connections: Wallcrawler.MaxConnsPerProject, or when that is 0 half of
// the upgraded pool (MaxUpgradedConns, or MaxConns when that is 0), and
// at least 1.
func (c *Config) WallcrawlerConnsPerProject() int {
	if c.Wallcrawler.MaxConnsPerProject > 0 {
		return c.Wallcrawler.MaxConnsPerProject
	}
	pool := c.MaxUpgradedConns
	if pool <= 0 {
		pool = c.MaxConns
	}
	return max(1, pool/2)
}
