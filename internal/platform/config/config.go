// Package config loads quarry's configuration from flags and QUARRY_*
// environment variables, applies defaults and validates it at start.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/origin"
)

// Config is the configuration of `quarry serve` and `quarry ddb serve`.
type Config struct {
	// Listen is the address of the HTTP API (systems, /healthz, /metrics).
	Listen string
	// PublicURL is the base URL the outside world reaches the HTTP API at
	// (https://browsers.example.com); the URLs quarry hands out
	// (Wallcrawler's connectUrl and upload URLs) are built on it. Empty:
	// each request's Host (see TrustedProxies).
	PublicURL string
	// AdvertiseURL is the base URL at which the other quarry processes of
	// an installation reach this one's HTTP API (for example
	// http://10.0.3.7:8080): Wallcrawler records it on the sessions whose
	// browsers run here, and the other processes forward those sessions'
	// CDP connections to it. Empty: http://<Listen>.
	AdvertiseURL string
	// Emulate makes `quarry ddb serve` answer like another engine where it
	// differs in what quarry's systems need: "alternator" (ScyllaDB
	// Alternator: no transactions, no point-in-time recovery, delayed
	// stream records). Empty: the store as it is.
	Emulate string
	// EmulateStreamDelay is how long after a write its stream record
	// appears under Emulate (Alternator's default window is 10 s).
	EmulateStreamDelay time.Duration
	// NodeID names this process in Wallcrawler's ecsTaskArn
	// ("local:<node>:<browser>"); processes sharing a DynamoDB endpoint
	// need distinct ones. Empty: the host name.
	NodeID string
	// TrustedProxies are comma-separated CIDRs (or addresses) of reverse
	// proxies whose X-Forwarded-Proto and X-Forwarded-Host headers are
	// believed when PublicURL is empty; default none.
	TrustedProxies string
	// DDBListen is the address of the DynamoDB-compatible endpoint; "off"
	// disables it (the systems still use the store in-process).
	DDBListen string
	// DataDir holds all local state: the store under DataDir/ddb.
	DataDir string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
	// Region appears in the store's ARNs.
	Region string
	// ShutdownTimeout bounds graceful shutdown.
	ShutdownTimeout time.Duration
	// TTLInterval is how often the store deletes expired items.
	TTLInterval time.Duration
	// DDBSync makes the store fsync each commit before acknowledging it
	// (default true). Without it an acknowledged write survives a crash of
	// quarry (kill -9) but not a crash of the machine.
	DDBSync bool
	// DDBCacheMB is the size of the store's block cache in MiB.
	DDBCacheMB int
	// DDBSyncInterval is the shortest time between two fsyncs of the
	// store's log: concurrent commits share one fsync.
	DDBSyncInterval time.Duration
	// Credentials is a file of access key ids and secrets; when set, the
	// store's endpoint verifies AWS Signature V4 on every request.
	Credentials string
	// ReadHeaderTimeout bounds reading a request's headers, on both
	// listeners (the HTTP API and the DynamoDB endpoint).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, on both listeners,
	// extended by one second per 64 KiB received: a body slower than that
	// on average is cut off.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long, on both
	// listeners.
	IdleTimeout time.Duration
	// MaxConns caps the connections open at once on the HTTP API; one
	// more is answered 503 and closed.
	MaxConns int
	// DDBMaxConns caps the connections open at once on the DynamoDB
	// endpoint (`quarry ddb serve`'s --listen included).
	DDBMaxConns int
	// DynamoDBEndpoint, when set, points the DynamoDB systems at another
	// DynamoDB endpoint (AWS, ScyllaDB Alternator) instead of the embedded
	// store; credentials and region come from the AWS environment.
	DynamoDBEndpoint string
	// WallcrawlerTablePrefix prefixes Wallcrawler's table names.
	WallcrawlerTablePrefix string
	// WallcrawlerSecret signs Wallcrawler's signingKey JWTs and context
	// upload URLs; empty: a random secret kept in DataDir. Processes
	// sharing one store must share it.
	WallcrawlerSecret string
	// WallcrawlerPool is the number of pre-launched browsers (0: off).
	WallcrawlerPool int
	// WallcrawlerIdleGrace ends a session without keepAlive after this long
	// without a CDP client.
	WallcrawlerIdleGrace time.Duration
	// WallcrawlerContextMaxBytes caps the bytes one context archive may
	// unpack to on disk (default 1 GiB).
	WallcrawlerContextMaxBytes int64
	// WallcrawlerContextMaxEntries caps the entries of one context archive
	// (default 100,000).
	WallcrawlerContextMaxEntries int
	// Chromium is the browser binary; empty: chromium on PATH.
	Chromium string
	// WallcrawlerUser is the account browsers run as when quarry runs as
	// root: a user name or uid[:gid]; empty: quarry-browser when it
	// exists, else nobody. Ignored when quarry is not root.
	WallcrawlerUser string
	// WallcrawlerBrowserDir holds the browsers' work dirs and restored
	// profiles; it must be outside DataDir (which the browser user may
	// not enter). Empty: <os.TempDir()>/quarry-browsers-<hash of the
	// absolute DataDir>.
	WallcrawlerBrowserDir string
	// ChecksTablePrefix prefixes Checks' USER and CHECK tables.
	ChecksTablePrefix string
	// ChecksMinInterval is the shortest period a check may have.
	ChecksMinInterval time.Duration
	// ChecksAllowNetworks is the deprecated name of AllowNetworks (Checks
	// only had the setting before it governed every system).
	ChecksAllowNetworks string
	// AllowNetworks is the one network policy of every outbound connection
	// made for a tenant (Checks targets, webhooks, the DataShelf crawler,
	// Wallcrawler's browsers): "" public addresses only, "all", or
	// comma-separated CIDRs and address:port pairs (fetch.ParsePolicy).
	AllowNetworks string
	// ChecksRetention keeps each run in a check's history this long.
	ChecksRetention time.Duration
	// ChecksFreeLimit and ChecksProLimit are the tiers' checkLimit.
	ChecksFreeLimit, ChecksProLimit int
	// ChecksSMTP (host:port) enables email alerts, sent from ChecksSMTPFrom,
	// authenticated with ChecksSMTPUser/ChecksSMTPPassword when set.
	ChecksSMTP, ChecksSMTPFrom, ChecksSMTPUser, ChecksSMTPPassword string
	// EECARTablePrefix prefixes eecar-parts-table.
	EECARTablePrefix string
	// EECAREmbeddingsURL, when set, is an OpenAI-compatible base URL whose
	// /v1/embeddings makes EECAR's vectors (with EECAREmbeddingsModel,
	// EECAREmbeddingsDim and EECAREmbeddingsKey); empty: the local embedder.
	EECAREmbeddingsURL, EECAREmbeddingsModel, EECAREmbeddingsKey string
	EECAREmbeddingsDim                                           int
	// DataShelfDB selects DataShelf's database: empty for SQLite under
	// DataDir, or a postgres:// URL.
	DataShelfDB string
	// DataShelfKeys is a file of "KEY_ID SECRET" lines for DataShelf's
	// HMAC-signed scraper endpoints.
	DataShelfKeys string
	// BlobS3Bucket, when set, keeps the systems' blobs (Wallcrawler's
	// archives, EECAR's and DataShelf's images) in this bucket of AWS S3 or
	// an S3-compatible service, under "<system>/", instead of under
	// DataDir. Credentials come from the AWS environment.
	BlobS3Bucket string
	// BlobS3Endpoint is the base URL of an S3-compatible service (MinIO,
	// Ceph, R2); empty: AWS S3.
	BlobS3Endpoint string
	// BlobS3Region signs the S3 requests; empty: Region.
	BlobS3Region string
	// BlobS3PathStyle addresses the bucket in the URL path instead of the
	// host name (most S3-compatible services need it).
	BlobS3PathStyle bool
}

// Defaults returns the embedded-defaults configuration.
func Defaults() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		DDBListen:       "127.0.0.1:8000",
		DataDir:         "./data",
		LogLevel:        "info",
		LogFormat:       "text",
		Region:          "us-east-1",
		ShutdownTimeout: 10 * time.Second,
		TTLInterval:     10 * time.Second,
		DDBSync:         true,
		DDBCacheMB:      64,
		DDBSyncInterval: 250 * time.Microsecond,

		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxConns:          1024,
		DDBMaxConns:       1024,

		EmulateStreamDelay: 10 * time.Second,

		WallcrawlerIdleGrace:         120 * time.Second,
		WallcrawlerContextMaxBytes:   1 << 30,
		WallcrawlerContextMaxEntries: 100_000,

		ChecksTablePrefix: "checks-",
		ChecksMinInterval: 10 * time.Second,
		ChecksRetention:   7 * 24 * time.Hour,
		ChecksFreeLimit:   5,
		ChecksProLimit:    100,
	}
}

// field binds one setting to its flag and environment variable.
type field struct {
	flag, env, usage string
	str              *string
	dur              *time.Duration
	num              *int
	boolean          *bool
	size             *int64 // bytes, or a size such as 512MiB (ParseSize)
}

func (c *Config) fields(which []string) []field {
	all := []field{
		{"listen", "QUARRY_LISTEN", "address of the HTTP API", &c.Listen, nil, nil, nil, nil},
		{"public-url", "QUARRY_PUBLIC_URL", "base URL clients reach the HTTP API at, e.g. https://browsers.example.com (default: each request's Host)", &c.PublicURL, nil, nil, nil, nil},
		{flag: "advertise-url", env: "QUARRY_ADVERTISE_URL", usage: "base URL the other quarry processes reach this one's HTTP API at, for forwarding Wallcrawler's CDP connections, e.g. http://10.0.3.7:8080 (default: http://<listen>)", str: &c.AdvertiseURL},
		{flag: "emulate", env: "QUARRY_EMULATE", usage: "ddb serve: answer like another engine where it lacks features quarry uses: alternator (no TransactWriteItems/TransactGetItems, no point-in-time recovery, delayed stream records)", str: &c.Emulate},
		{flag: "emulate-stream-delay", env: "QUARRY_EMULATE_STREAM_DELAY", usage: "ddb serve --emulate: how long a write takes to appear in its table's stream", dur: &c.EmulateStreamDelay},
		{flag: "node-id", env: "QUARRY_NODE_ID", usage: "name of this process among those sharing a DynamoDB endpoint, kept on the sessions its browsers serve (default: the host name)", str: &c.NodeID},
		{"trusted-proxies", "QUARRY_TRUSTED_PROXIES", "comma-separated CIDRs of reverse proxies whose X-Forwarded-Proto/X-Forwarded-Host are believed (default none)", &c.TrustedProxies, nil, nil, nil, nil},
		{"ddb-listen", "QUARRY_DDB_LISTEN", `address of the DynamoDB-compatible endpoint ("off" to disable)`, &c.DDBListen, nil, nil, nil, nil},
		{"data-dir", "QUARRY_DATA_DIR", "directory for local state", &c.DataDir, nil, nil, nil, nil},
		{"log-level", "QUARRY_LOG_LEVEL", "debug, info, warn or error", &c.LogLevel, nil, nil, nil, nil},
		{"log-format", "QUARRY_LOG_FORMAT", "text or json", &c.LogFormat, nil, nil, nil, nil},
		{"region", "QUARRY_REGION", "region named in ARNs", &c.Region, nil, nil, nil, nil},
		{"shutdown-timeout", "QUARRY_SHUTDOWN_TIMEOUT", "graceful shutdown bound", nil, &c.ShutdownTimeout, nil, nil, nil},
		{"ttl-interval", "QUARRY_TTL_INTERVAL", "how often the store deletes expired items", nil, &c.TTLInterval, nil, nil, nil},
		{flag: "ddb-sync", env: "QUARRY_DDB_SYNC", usage: "fsync each store commit before acknowledging it; false: acknowledged writes survive a crash of quarry but not of the machine", boolean: &c.DDBSync},
		{flag: "ddb-sync-interval", env: "QUARRY_DDB_SYNC_INTERVAL", usage: "shortest time between two fsyncs of the store's log; commits arriving meanwhile share the next fsync (0: sync at once)", dur: &c.DDBSyncInterval},
		{flag: "ddb-cache-mb", env: "QUARRY_DDB_CACHE_MB", usage: "store block cache size in MiB", num: &c.DDBCacheMB},
		{"dynamodb-endpoint", "QUARRY_DYNAMODB_ENDPOINT", "DynamoDB endpoint for the systems (e.g. https://dynamodb.eu-west-1.amazonaws.com); empty: the embedded store", &c.DynamoDBEndpoint, nil, nil, nil, nil},
		{"wallcrawler-table-prefix", "QUARRY_WALLCRAWLER_TABLE_PREFIX", "prefix of Wallcrawler's table names", &c.WallcrawlerTablePrefix, nil, nil, nil, nil},
		{"wallcrawler-secret", "QUARRY_WALLCRAWLER_SECRET", "secret signing Wallcrawler's connect tokens and upload URLs (default: random, kept in data-dir)", &c.WallcrawlerSecret, nil, nil, nil, nil},
		{"wallcrawler-pool", "QUARRY_WALLCRAWLER_POOL", "pre-launched browsers kept warm (0: off)", nil, nil, &c.WallcrawlerPool, nil, nil},
		{"wallcrawler-idle-grace", "QUARRY_WALLCRAWLER_IDLE_GRACE", "a session without keepAlive ends after this long without a CDP client", nil, &c.WallcrawlerIdleGrace, nil, nil, nil},
		{flag: "wallcrawler-context-max-bytes", env: "QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES", usage: "most bytes one context archive may unpack to (bytes, or a size like 512MiB, 1GiB)", size: &c.WallcrawlerContextMaxBytes},
		{flag: "wallcrawler-context-max-entries", env: "QUARRY_WALLCRAWLER_CONTEXT_MAX_ENTRIES", usage: "most entries (files, directories, links) one context archive may hold", num: &c.WallcrawlerContextMaxEntries},
		{"chromium", "QUARRY_CHROMIUM", "Chromium binary for Wallcrawler (default: chromium on PATH)", &c.Chromium, nil, nil, nil, nil},
		{flag: "wallcrawler-user", env: "QUARRY_WALLCRAWLER_USER", usage: "user the browsers run as when quarry runs as root: a name or uid[:gid] (default: quarry-browser if it exists, else nobody)", str: &c.WallcrawlerUser},
		{flag: "wallcrawler-browser-dir", env: "QUARRY_WALLCRAWLER_BROWSER_DIR", usage: "directory of the browsers' work dirs and restored profiles, outside data-dir (default: <tmp>/quarry-browsers-<hash of data-dir>)", str: &c.WallcrawlerBrowserDir},
		{"checks-table-prefix", "QUARRY_CHECKS_TABLE_PREFIX", "prefix of Checks' USER and CHECK tables", &c.ChecksTablePrefix, nil, nil, nil, nil},
		{"checks-min-interval", "QUARRY_CHECKS_MIN_INTERVAL", "shortest period (delayMs) a check may have", nil, &c.ChecksMinInterval, nil, nil, nil},
		{"allow-networks", "QUARRY_ALLOW_NETWORKS", `non-public addresses that tenants' fetches, webhooks and browsers may reach: "all", or CIDRs and address:port pairs like 10.0.0.0/8,127.0.0.1:3000 (default none: public addresses only)`, &c.AllowNetworks, nil, nil, nil, nil},
		{"checks-allow-networks", "QUARRY_CHECKS_ALLOW_NETWORKS", "deprecated: use --allow-networks", &c.ChecksAllowNetworks, nil, nil, nil, nil},
		{"checks-retention", "QUARRY_CHECKS_RETENTION", "how long each run stays in a check's history (0: none)", nil, &c.ChecksRetention, nil, nil, nil},
		{"checks-free-limit", "QUARRY_CHECKS_FREE_LIMIT", "checkLimit of the FREE tier", nil, nil, &c.ChecksFreeLimit, nil, nil},
		{"checks-pro-limit", "QUARRY_CHECKS_PRO_LIMIT", "checkLimit of the PRO tier", nil, nil, &c.ChecksProLimit, nil, nil},
		{"checks-smtp", "QUARRY_CHECKS_SMTP", "SMTP server (host:port) for email alerts; empty: no email", &c.ChecksSMTP, nil, nil, nil, nil},
		{"checks-smtp-from", "QUARRY_CHECKS_SMTP_FROM", "sender of email alerts", &c.ChecksSMTPFrom, nil, nil, nil, nil},
		{"checks-smtp-user", "QUARRY_CHECKS_SMTP_USER", "SMTP user (PLAIN auth, over TLS or to localhost)", &c.ChecksSMTPUser, nil, nil, nil, nil},
		{"checks-smtp-password", "QUARRY_CHECKS_SMTP_PASSWORD", "SMTP password", &c.ChecksSMTPPassword, nil, nil, nil, nil},
		{"eecar-table-prefix", "QUARRY_EECAR_TABLE_PREFIX", "prefix of eecar-parts-table", &c.EECARTablePrefix, nil, nil, nil, nil},
		{"eecar-embeddings-url", "QUARRY_EECAR_EMBEDDINGS_URL", "OpenAI-compatible base URL for EECAR's embeddings (default: the local embedder)", &c.EECAREmbeddingsURL, nil, nil, nil, nil},
		{"eecar-embeddings-model", "QUARRY_EECAR_EMBEDDINGS_MODEL", "embedding model name at eecar-embeddings-url", &c.EECAREmbeddingsModel, nil, nil, nil, nil},
		{"eecar-embeddings-key", "QUARRY_EECAR_EMBEDDINGS_KEY", "API key for eecar-embeddings-url", &c.EECAREmbeddingsKey, nil, nil, nil, nil},
		{"eecar-embeddings-dim", "QUARRY_EECAR_EMBEDDINGS_DIM", "dimension of the embeddings at eecar-embeddings-url", nil, nil, &c.EECAREmbeddingsDim, nil, nil},
		{"datashelf-db", "QUARRY_DATASHELF_DB", "DataShelf database: empty for SQLite under data-dir, or a postgres:// URL", &c.DataShelfDB, nil, nil, nil, nil},
		{"datashelf-keys", "QUARRY_DATASHELF_KEYS", "file of \"KEY_ID SECRET\" lines for DataShelf's signed scraper endpoints", &c.DataShelfKeys, nil, nil, nil, nil},
		{"credentials", "QUARRY_CREDENTIALS", "file of \"ACCESS_KEY_ID SECRET\" lines; when set the DynamoDB endpoint requires SigV4-signed requests", &c.Credentials, nil, nil, nil, nil},
		{flag: "read-header-timeout", env: "QUARRY_READ_HEADER_TIMEOUT", usage: "longest time to read a request's headers, on both listeners", dur: &c.ReadHeaderTimeout},
		{flag: "read-timeout", env: "QUARRY_READ_TIMEOUT", usage: "longest time to read a request's body, on both listeners, plus 1s per 64 KiB received (a slower body is cut off)", dur: &c.ReadTimeout},
		{flag: "idle-timeout", env: "QUARRY_IDLE_TIMEOUT", usage: "a keep-alive connection idle this long is closed, on both listeners", dur: &c.IdleTimeout},
		{flag: "max-conns", env: "QUARRY_MAX_CONNS", usage: "most connections open at once on the HTTP API; more are answered 503", num: &c.MaxConns},
		{flag: "ddb-max-conns", env: "QUARRY_DDB_MAX_CONNS", usage: "most connections open at once on the DynamoDB endpoint; more are answered 503", num: &c.DDBMaxConns},
		{"blob-s3-bucket", "QUARRY_BLOB_S3_BUCKET", "S3 bucket for the systems' blobs, under <system>/ (default: none, blobs under data-dir)", &c.BlobS3Bucket, nil, nil, nil, nil},
		{"blob-s3-endpoint", "QUARRY_BLOB_S3_ENDPOINT", "base URL of an S3-compatible service for blob-s3-bucket, e.g. http://127.0.0.1:9000 (default: AWS S3)", &c.BlobS3Endpoint, nil, nil, nil, nil},
		{"blob-s3-region", "QUARRY_BLOB_S3_REGION", "region of blob-s3-bucket (default: region)", &c.BlobS3Region, nil, nil, nil, nil},
		{flag: "blob-s3-path-style", env: "QUARRY_BLOB_S3_PATH_STYLE", usage: "address blob-s3-bucket in the URL path (MinIO, Ceph and most S3-compatible services)", boolean: &c.BlobS3PathStyle},
	}
	if which == nil {
		return all
	}
	var out []field
	for _, f := range all {
		for _, w := range which {
			if f.flag == w {
				out = append(out, f)
			}
		}
	}
	return out
}

// Load builds a Config: defaults, then the environment (QUARRY_*), then
// the flags in args. Only the settings named in which are exposed (nil
// means all). The result is validated.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string, base Config, which []string) (*Config, error) {
	c := base
	fields := c.fields(which)
	var errs []error
	for _, f := range fields {
		v := getenv(f.env)
		if v == "" {
			continue
		}
		if f.str != nil {
			*f.str = v
		} else if f.boolean != nil {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q: want true or false (the environment variable of --%s)", f.env, v, f.flag))
				continue
			}
			*f.boolean = b
		} else if f.num != nil {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q: want a whole number (the environment variable of --%s)", f.env, v, f.flag))
				continue
			}
			*f.num = n
		} else if f.size != nil {
			n, err := ParseSize(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q: %w (the environment variable of --%s)", f.env, v, err, f.flag))
				continue
			}
			*f.size = n
		} else {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q: want a duration such as 10s, 500ms or 2m (the environment variable of --%s)", f.env, v, f.flag))
				continue
			}
			*f.dur = d
		}
	}
	for _, f := range fields {
		usage := fmt.Sprintf("%s (env %s)", f.usage, f.env)
		if f.str != nil {
			fs.StringVar(f.str, f.flag, *f.str, usage)
		} else if f.boolean != nil {
			fs.BoolVar(f.boolean, f.flag, *f.boolean, usage)
		} else if f.num != nil {
			fs.IntVar(f.num, f.flag, *f.num, usage)
		} else if f.size != nil {
			fs.Var((*sizeValue)(f.size), f.flag, usage)
		} else {
			fs.DurationVar(f.dur, f.flag, *f.dur, usage)
		}
	}
	flagErrs, err := parseFlags(fs, args, fields)
	if err != nil {
		return nil, err // -h: the usage is printed
	}
	errs = append(errs, flagErrs...)
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("config: unexpected argument %q: %s takes only flags (--name value or --name=value)", fs.Arg(0), fs.Name()))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

// Validate checks every setting and reports all problems at once.
func (c *Config) Validate() error {
	var errs []error
	checkAddr := func(name, v string, allowOff bool) {
		name = "--" + name
		if allowOff && v == "off" {
			return
		}
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("config: %s %q: want host:port (e.g. 127.0.0.1:8080)", name, v))
		}
	}
	checkAddr("listen", c.Listen, false)
	if _, err := origin.ParsePublicURL(c.PublicURL); err != nil {
		errs = append(errs, fmt.Errorf("config: --public-url %q: want an http:// or https:// URL with a host and no query, e.g. https://browsers.example.com (%w)", c.PublicURL, err))
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("config: --advertise-url %q: want an http:// or https:// URL with a host and no query, e.g. http://10.0.3.7:8080", c.AdvertiseURL))
		}
	}
	if c.Emulate != "" && c.Emulate != "alternator" {
		errs = append(errs, fmt.Errorf("config: --emulate %q: want alternator (or empty)", c.Emulate))
	}
	if c.EmulateStreamDelay < 0 {
		errs = append(errs, fmt.Errorf("config: --emulate-stream-delay %v: must not be negative", c.EmulateStreamDelay))
	}
	if strings.ContainsAny(c.NodeID, ": \t\n/") {
		errs = append(errs, fmt.Errorf("config: --node-id %q: must not contain ':', '/' or spaces", c.NodeID))
	}
	if _, err := origin.ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("config: --trusted-proxies %q: want comma-separated CIDRs like 10.0.0.0/8 (%w)", c.TrustedProxies, err))
	}
	checkAddr("ddb-listen", c.DDBListen, true)
	if c.DataDir == "" {
		errs = append(errs, errors.New("config: --data-dir must not be empty"))
	} else if err := creatableDir(c.DataDir); err != nil {
		errs = append(errs, fmt.Errorf("config: --data-dir %q: %w; choose a directory quarry may create or write (or set QUARRY_DATA_DIR)", c.DataDir, err))
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("config: --log-format %q: want text or json", c.LogFormat))
	}
	if c.Region == "" {
		errs = append(errs, errors.New("config: --region must not be empty"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("config: --shutdown-timeout %v: must be positive", c.ShutdownTimeout))
	}
	if c.Credentials != "" {
		if st, err := os.Stat(c.Credentials); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("config: --credentials %q: not a readable file", c.Credentials))
		}
	}
	if c.DataShelfDB != "" && !strings.HasPrefix(c.DataShelfDB, "postgres://") && !strings.HasPrefix(c.DataShelfDB, "postgresql://") {
		errs = append(errs, fmt.Errorf("config: --datashelf-db %q: want empty (SQLite) or a postgres:// URL", c.DataShelfDB))
	}
	for _, f := range []struct{ name, path string }{{"datashelf-keys", c.DataShelfKeys}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("config: --%s %q: not a readable file", f.name, f.path))
		}
	}
	if c.WallcrawlerPool < 0 || c.WallcrawlerPool > 64 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-pool %d: want 0 to 64", c.WallcrawlerPool))
	}
	if c.WallcrawlerIdleGrace <= 0 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-idle-grace %v: must be positive", c.WallcrawlerIdleGrace))
	}
	if c.WallcrawlerSecret != "" && len(c.WallcrawlerSecret) < 16 {
		errs = append(errs, errors.New("config: --wallcrawler-secret: want at least 16 characters"))
	}
	if c.WallcrawlerUser != "" && !validUserSpec(c.WallcrawlerUser) {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-user %q: want a user name or uid[:gid]", c.WallcrawlerUser))
	}
	if c.WallcrawlerBrowserDir != "" && c.DataDir != "" {
		if inside, err := within(c.WallcrawlerBrowserDir, c.DataDir); err != nil {
			errs = append(errs, fmt.Errorf("config: --wallcrawler-browser-dir: %w", err))
		} else if inside {
			errs = append(errs, fmt.Errorf("config: --wallcrawler-browser-dir %q is inside --data-dir %q, which the browser user must not enter", c.WallcrawlerBrowserDir, c.DataDir))
		}
	}
	if c.WallcrawlerContextMaxBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-context-max-bytes %d: want at least 1MiB (1048576)", c.WallcrawlerContextMaxBytes))
	}
	if c.WallcrawlerContextMaxEntries < 1 {
		errs = append(errs, fmt.Errorf("config: --wallcrawler-context-max-entries %d: must be at least 1", c.WallcrawlerContextMaxEntries))
	}
	if c.ChecksMinInterval < time.Second {
		errs = append(errs, fmt.Errorf("config: --checks-min-interval %v: at least 1s", c.ChecksMinInterval))
	}
	if c.ChecksRetention < 0 {
		errs = append(errs, fmt.Errorf("config: --checks-retention %v: must not be negative", c.ChecksRetention))
	}
	if c.ChecksFreeLimit < 0 || c.ChecksProLimit < 0 {
		errs = append(errs, errors.New("config: --checks-free-limit and --checks-pro-limit must not be negative"))
	}
	if _, err := c.NetworkPolicy(); err != nil {
		errs = append(errs, err)
	}
	if c.ChecksSMTP != "" {
		checkAddr("checks-smtp", c.ChecksSMTP, false)
		if c.ChecksSMTPFrom == "" {
			errs = append(errs, errors.New("config: --checks-smtp needs --checks-smtp-from"))
		}
	}
	if c.EECAREmbeddingsURL != "" && (c.EECAREmbeddingsModel == "" || c.EECAREmbeddingsDim <= 0) {
		errs = append(errs, errors.New("config: --eecar-embeddings-url needs --eecar-embeddings-model and a positive --eecar-embeddings-dim"))
	}
	if c.BlobS3Bucket == "" && (c.BlobS3Endpoint != "" || c.BlobS3Region != "" || c.BlobS3PathStyle) {
		errs = append(errs, errors.New("config: --blob-s3-endpoint, --blob-s3-region and --blob-s3-path-style need --blob-s3-bucket"))
	}
	if c.BlobS3Endpoint != "" {
		if u, err := url.Parse(c.BlobS3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("config: --blob-s3-endpoint %q: want an http:// or https:// URL", c.BlobS3Endpoint))
		}
	}
	if c.DDBSyncInterval < 0 || c.DDBSyncInterval > 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("config: --ddb-sync-interval %v: must be in [0, 100ms]", c.DDBSyncInterval))
	}
	if c.DDBCacheMB < 1 {
		errs = append(errs, fmt.Errorf("config: --ddb-cache-mb %d: must be at least 1", c.DDBCacheMB))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read-header-timeout", c.ReadHeaderTimeout}, {"read-timeout", c.ReadTimeout}, {"idle-timeout", c.IdleTimeout}} {
		if d.v < 100*time.Millisecond || d.v > 24*time.Hour {
			errs = append(errs, fmt.Errorf("config: --%s %v: want 100ms to 24h", d.name, d.v))
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max-conns", c.MaxConns}, {"ddb-max-conns", c.DDBMaxConns}} {
		if n.v < 1 || n.v > 1_000_000 {
			errs = append(errs, fmt.Errorf("config: --%s %d: want 1 to 1000000", n.name, n.v))
		}
	}
	if c.TTLInterval <= 0 {
		errs = append(errs, fmt.Errorf("config: --ttl-interval %v: must be positive", c.TTLInterval))
	}
	return errors.Join(errs...)
}

// NetworkPolicy returns the network policy of AllowNetworks, or of the
// deprecated ChecksAllowNetworks when only that is set (see Deprecations).
// Each call returns a new Policy; quarry serve builds one and shares it.
func (c *Config) NetworkPolicy() (*fetch.Policy, error) {
	spec, name := c.AllowNetworks, "allow-networks"
	if spec == "" && c.ChecksAllowNetworks != "" {
		spec, name = c.ChecksAllowNetworks, "checks-allow-networks"
	}
	p, err := fetch.ParsePolicy(spec)
	if err != nil {
		return nil, fmt.Errorf("config: %s %q: %w", name, spec, err)
	}
	return p, nil
}

// Deprecations returns a warning for each deprecated setting in use.
func (c *Config) Deprecations() []string {
	var w []string
	if c.ChecksAllowNetworks != "" {
		msg := "--checks-allow-networks (QUARRY_CHECKS_ALLOW_NETWORKS) is deprecated: use --allow-networks (QUARRY_ALLOW_NETWORKS), which governs every system"
		if c.AllowNetworks != "" {
			msg += "; ignored because --allow-networks is set"
		}
		w = append(w, msg)
	}
	return w
}

// sizeUnits are the suffixes ParseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
}

// ParseSize parses a byte count: a whole number of bytes ("1048576"), or
// one with a binary unit, case-insensitive ("512MiB", "1GiB", "64k"; K, M,
// G and T are KiB, MiB, GiB and TiB). It refuses negative sizes and sizes
// that overflow int64.
func ParseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<63-1)/mult {
		return 0, fmt.Errorf("not a size: want bytes or a size like 512MiB or 1GiB")
	}
	return n * mult, nil
}

// sizeValue is a flag.Value of a byte count parsed by ParseSize.
type sizeValue int64

func (s *sizeValue) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeValue) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeValue(n)
	return nil
}

// ParseLevel parses a log level name.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("config: --log-level %q: want debug, info, warn or error", s)
}

// validUserSpec reports whether s looks like a user name or uid[:gid].
func validUserSpec(s string) bool {
	id, gid, hasGID := strings.Cut(s, ":")
	if _, err := strconv.ParseUint(id, 10, 32); err == nil {
		if !hasGID {
			return true
		}
		_, err := strconv.ParseUint(gid, 10, 32)
		return err == nil
	}
	if hasGID || s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// within reports whether dir is parent or inside parent, after making
// both absolute.
func within(dir, parent string) (bool, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	p, err := filepath.Abs(parent)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(p, d)
	if err != nil {
		return false, nil
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}
