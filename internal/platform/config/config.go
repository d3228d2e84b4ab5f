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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
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
	// Systems names the systems this `quarry serve` process runs:
	// "all" (the default) or a comma-separated list of datashelf,
	// wallcrawler, checks and eecar (see SystemSet). The others answer 503
	// and show as disabled in /healthz, so that browser nodes and
	// scheduler nodes can be sized apart.
	Systems string
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
	// WriteTimeout bounds sending a response, on both listeners, from its
	// first byte, extended by one second per 64 KiB written: a client that
	// reads slower than that on average, or not at all, is cut off.
	// WebSocket connections are not affected.
	WriteTimeout time.Duration
	// MaxConns caps the ordinary connections open at once on the HTTP
	// API; one more is answered 503 and closed. WebSockets (CDP, live
	// view) leave this pool once upgraded, for MaxUpgradedConns.
	MaxConns int
	// MaxUpgradedConns caps the upgraded (WebSocket) connections open at
	// once on the HTTP API; one more upgrade is answered 503. 0: MaxConns.
	MaxUpgradedConns int
	// MaxConnsPerClient caps the ordinary connections one client address
	// holds at once on the HTTP API (a trusted proxy's excepted); one more
	// is answered 429, so that a flood from one address leaves the rest of
	// MaxConns to the others. 0: no cap per address.
	MaxConnsPerClient int
	// MaxRequestsPerCredential caps the API requests in flight carrying
	// one credential (token or API key); 0: no cap.
	MaxRequestsPerCredential int
	// DDBMaxConns caps the connections open at once on the DynamoDB
	// endpoint (`quarry ddb serve`'s --listen included).
	DDBMaxConns int
	// DynamoDBEndpoint, when set, points the DynamoDB systems at another
	// DynamoDB endpoint (AWS, ScyllaDB Alternator) instead of the embedded
	// store; credentials and region come from the AWS environment.
	DynamoDBEndpoint string
	// ChecksAllowNetworks is the deprecated name of AllowNetworks (Checks
	// only had the setting before it governed every system).
	ChecksAllowNetworks string
	// AllowNetworks is the one network policy of every outbound connection
	// made for a tenant (Checks targets, webhooks, the DataShelf crawler,
	// Wallcrawler's browsers): "" public addresses only, "all", or
	// comma-separated CIDRs and address:port pairs (fetch.ParsePolicy).
	AllowNetworks string
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

	// DataShelf, Wallcrawler, Checks and EECAR are each system's own
	// settings.
	DataShelf   DataShelf
	Wallcrawler Wallcrawler
	Checks      Checks
	EECAR       EECAR
}

// Defaults returns the embedded-defaults configuration.
func Defaults() Config {
	return Config{
		Listen:          "127.0.0.1:8080",
		Systems:         "all",
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

		ReadHeaderTimeout:        10 * time.Second,
		ReadTimeout:              30 * time.Second,
		IdleTimeout:              120 * time.Second,
		WriteTimeout:             30 * time.Second,
		MaxConns:                 1024,
		MaxConnsPerClient:        256,
		MaxRequestsPerCredential: 64,
		DDBMaxConns:              1024,

		EmulateStreamDelay: 10 * time.Second,

		Wallcrawler: wallcrawlerDefaults(),
		Checks:      checksDefaults(),
		EECAR:       eecarDefaults(),
	}
}

// field binds one setting to its flag and, through the flag's name, its
// environment variable (EnvName).
type field struct {
	group       string // one of Groups
	flag, usage string
	str         *string
	dur         *time.Duration
	num         *int
	boolean     *bool
	size        *int64 // bytes, or a size such as 512MiB (ParseSize)
}

// The groups of settings, in the order usage and docs/flags.md list them.
const (
	GroupServer      = "Server"
	GroupNetwork     = "Network policy"
	GroupStore       = "DynamoDB store"
	GroupBlobs       = "Blobs"
	GroupDataShelf   = "DataShelf"
	GroupWallcrawler = "Wallcrawler"
	GroupChecks      = "Checks"
	GroupEECAR       = "EECAR"
)

// Groups lists the groups of settings in order.
var Groups = []string{GroupServer, GroupNetwork, GroupStore, GroupBlobs, GroupDataShelf, GroupWallcrawler, GroupChecks, GroupEECAR}

// group sets the group of each of fs.
func group(name string, fs []field) []field {
	for i := range fs {
		fs[i].group = name
	}
	return fs
}

// fields returns the settings of c named in which (nil: all of them), in
// the order of Groups; each field points into c.
func (c *Config) fields(which []string) []field {
	var all []field
	all = append(all, group(GroupServer, []field{
		{flag: "listen", usage: "address of the HTTP API", str: &c.Listen},
		{flag: "public-url", usage: "base URL clients reach the HTTP API at, e.g. https://browsers.example.com (default: each request's Host)", str: &c.PublicURL},
		{flag: "advertise-url", usage: "base URL the other quarry processes reach this one's HTTP API at, for forwarding Wallcrawler's CDP connections, e.g. http://10.0.3.7:8080 (default: http://<listen>)", str: &c.AdvertiseURL},
		{flag: "systems", usage: "systems this process runs: all, or a comma-separated list of " + strings.Join(SystemNames, ", ") + " (the others answer 503)", str: &c.Systems},
		{flag: "node-id", usage: "name of this process among those sharing a DynamoDB endpoint, kept on the sessions its browsers serve (default: the host name and a hash of data-dir)", str: &c.NodeID},
		{flag: "trusted-proxies", usage: "comma-separated CIDRs of reverse proxies whose X-Forwarded-Proto/X-Forwarded-Host are believed (default none)", str: &c.TrustedProxies},
		{flag: "data-dir", usage: "directory for local state", str: &c.DataDir},
		{flag: "log-level", usage: "debug, info, warn or error", str: &c.LogLevel},
		{flag: "log-format", usage: "text or json", str: &c.LogFormat},
		{flag: "shutdown-timeout", usage: "graceful shutdown bound", dur: &c.ShutdownTimeout},
		{flag: "read-header-timeout", usage: "longest time to read a request's headers, on both listeners", dur: &c.ReadHeaderTimeout},
		{flag: "read-timeout", usage: "longest time to read a request's body, on both listeners, plus 1s per 64 KiB received (a slower body is cut off)", dur: &c.ReadTimeout},
		{flag: "idle-timeout", usage: "a keep-alive connection idle this long is closed, on both listeners", dur: &c.IdleTimeout},
		{flag: "write-timeout", usage: "longest time to send a response, on both listeners, plus 1s per 64 KiB sent (a client reading slower is cut off; WebSockets are not affected)", dur: &c.WriteTimeout},
		{flag: "max-conns", usage: "most ordinary connections open at once on the HTTP API; more are answered 503 (WebSockets leave this pool once upgraded, see max-upgraded-conns)", num: &c.MaxConns},
		{flag: "max-conns-per-client", usage: "most ordinary connections one client address may hold at once on the HTTP API; more are answered 429 (a --trusted-proxies address is not bounded; 0: no cap per address)", num: &c.MaxConnsPerClient},
		{flag: "max-requests-per-credential", usage: "most HTTP API requests in flight carrying one credential (an Authorization token or X-BB-API-Key), from any address; more are answered 429 (0: no cap)", num: &c.MaxRequestsPerCredential},
		{flag: "max-upgraded-conns", usage: "most WebSocket connections (CDP, live view) open at once on the HTTP API, apart from max-conns; more upgrades are answered 503 (0: as many as max-conns)", num: &c.MaxUpgradedConns},
	})...)
	all = append(all, group(GroupNetwork, []field{
		{flag: "allow-networks", usage: `non-public addresses that tenants' fetches, webhooks and browsers may reach: "all", or CIDRs and address:port pairs like 10.0.0.0/8,127.0.0.1:3000 (default none: public addresses only)`, str: &c.AllowNetworks},
		{flag: "checks-allow-networks", usage: "deprecated: use --allow-networks", str: &c.ChecksAllowNetworks},
	})...)
	all = append(all, group(GroupStore, []field{
		{flag: "emulate", usage: "ddb serve: answer like another engine where it lacks features quarry uses: alternator (no TransactWriteItems/TransactGetItems, no point-in-time recovery, delayed stream records)", str: &c.Emulate},
		{flag: "emulate-stream-delay", usage: "ddb serve --emulate: how long a write takes to appear in its table's stream", dur: &c.EmulateStreamDelay},
		{flag: "ddb-listen", usage: `address of the DynamoDB-compatible endpoint ("off" to disable)`, str: &c.DDBListen},
		{flag: "region", usage: "region named in ARNs", str: &c.Region},
		{flag: "ttl-interval", usage: "how often the store deletes expired items", dur: &c.TTLInterval},
		{flag: "ddb-sync", usage: "fsync each store commit before acknowledging it; false: acknowledged writes survive a crash of quarry but not of the machine", boolean: &c.DDBSync},
		{flag: "ddb-sync-interval", usage: "shortest time between two fsyncs of the store's log; commits arriving meanwhile share the next fsync (0: sync at once)", dur: &c.DDBSyncInterval},
		{flag: "ddb-cache-mb", usage: "store block cache size in MiB", num: &c.DDBCacheMB},
		{flag: "dynamodb-endpoint", usage: "DynamoDB endpoint for the systems (e.g. https://dynamodb.eu-west-1.amazonaws.com); empty: the embedded store", str: &c.DynamoDBEndpoint},
		{flag: "credentials", usage: "file of \"ACCESS_KEY_ID SECRET\" lines; when set the DynamoDB endpoint requires SigV4-signed requests", str: &c.Credentials},
		{flag: "ddb-max-conns", usage: "most connections open at once on the DynamoDB endpoint; more are answered 503", num: &c.DDBMaxConns},
	})...)
	all = append(all, group(GroupBlobs, []field{
		{flag: "blob-s3-bucket", usage: "S3 bucket for the systems' blobs, under <system>/ (default: none, blobs under data-dir)", str: &c.BlobS3Bucket},
		{flag: "blob-s3-endpoint", usage: "base URL of an S3-compatible service for blob-s3-bucket, e.g. http://127.0.0.1:9000 (default: AWS S3)", str: &c.BlobS3Endpoint},
		{flag: "blob-s3-region", usage: "region of blob-s3-bucket (default: region)", str: &c.BlobS3Region},
		{flag: "blob-s3-path-style", usage: "address blob-s3-bucket in the URL path (MinIO, Ceph and most S3-compatible services)", boolean: &c.BlobS3PathStyle},
	})...)
	all = append(all, c.DataShelf.fields()...)
	all = append(all, c.Wallcrawler.fields()...)
	all = append(all, c.Checks.fields()...)
	all = append(all, c.EECAR.fields()...)
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

// EnvPrefix begins the name of every setting's environment variable.
const EnvPrefix = "QUARRY_"

// EnvName returns the environment variable of the flag named flagName:
// QUARRY_ and the name in upper case, with '_' for '-'
// (wallcrawler-pool: QUARRY_WALLCRAWLER_POOL).
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Load builds a Config: defaults, then the environment (QUARRY_*), then
// the flags in args. Only the settings named in which are exposed (nil
// means all). An environment variable is applied through its flag, so it
// is parsed and checked as the flag is. The result is validated.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string, base Config, which []string) (*Config, error) {
	c := base
	fields := c.fields(which)
	for _, f := range fields {
		usage := fmt.Sprintf("%s (env %s)", f.usage, EnvName(f.flag))
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
	errs := applyEnv(fs, fields, getenv)
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

// applyEnv sets each field's flag in fs from its environment variable,
// when set, and explains each value its flag refuses.
func applyEnv(fs *flag.FlagSet, fields []field, getenv func(string) string) []error {
	var errs []error
	for _, f := range fields {
		env := EnvName(f.flag)
		v := getenv(env)
		if v == "" {
			continue
		}
		err := fs.Set(f.flag, v)
		if err == nil {
			continue
		}
		fl := fs.Lookup(f.flag)
		// Some flag.Values store their zero on a failed Set: put the
		// default back.
		_ = fl.Value.Set(fl.DefValue)
		why := err.Error()
		if f.size == nil {
			why = "want " + valueForm(fl, why)
		}
		errs = append(errs, fmt.Errorf("config: %s=%q: %s (the environment variable of --%s)", env, v, why, f.flag))
	}
	return errs
}

// UnknownEnv returns a warning for each QUARRY_* variable of environ
// (os.Environ's "NAME=value" form) that is no setting's, naming the
// closest setting when one is near enough to be the intended one: a
// misspelt variable is otherwise silently ignored.
func UnknownEnv(environ []string) []string {
	known := map[string]bool{}
	var names []string // without the prefix, which every one shares
	for _, f := range (&Config{}).fields(nil) {
		known[EnvName(f.flag)] = true
		names = append(names, strings.TrimPrefix(EnvName(f.flag), EnvPrefix))
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || known[name] {
			continue
		}
		w := fmt.Sprintf("config: unknown environment variable %s is ignored", name)
		if near := closest(strings.TrimPrefix(name, EnvPrefix), names); near != "" {
			w += "; did you mean " + EnvPrefix + near + "?"
		}
		warnings = append(warnings, w)
	}
	sort.Strings(warnings)
	return warnings
}

// Validate checks every setting and reports all problems at once.
func (c *Config) Validate() error {
	var errs []error
	if err := checkAddr("listen", c.Listen, false); err != nil {
		errs = append(errs, err)
	}
	if _, err := origin.ParsePublicURL(c.PublicURL); err != nil {
		errs = append(errs, fmt.Errorf("config: --public-url %q: want an http:// or https:// URL with a host and no query, e.g. https://browsers.example.com (%w)", c.PublicURL, err))
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("config: --advertise-url %q: want an http:// or https:// URL with a host and no query, e.g. http://10.0.3.7:8080", c.AdvertiseURL))
		}
	}
	if _, err := c.SystemSet(); err != nil {
		errs = append(errs, err)
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
	if err := checkAddr("ddb-listen", c.DDBListen, true); err != nil {
		errs = append(errs, err)
	}
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
	if _, err := c.NetworkPolicy(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.DataShelf.validate()...)
	errs = append(errs, c.Wallcrawler.validate(c.DataDir)...)
	errs = append(errs, c.Checks.validate()...)
	errs = append(errs, c.EECAR.validate()...)
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
	}{{"read-header-timeout", c.ReadHeaderTimeout}, {"read-timeout", c.ReadTimeout}, {"idle-timeout", c.IdleTimeout}, {"write-timeout", c.WriteTimeout}} {
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
	if c.MaxRequestsPerCredential < 0 || c.MaxRequestsPerCredential > 1_000_000 {
		errs = append(errs, fmt.Errorf("config: --max-requests-per-credential %d: want 0 (no cap) to 1000000", c.MaxRequestsPerCredential))
	}
	if c.MaxConnsPerClient < 0 || c.MaxConnsPerClient > 1_000_000 {
		errs = append(errs, fmt.Errorf("config: --max-conns-per-client %d: want 0 (no cap per address) to 1000000", c.MaxConnsPerClient))
	}
	if c.MaxUpgradedConns < 0 || c.MaxUpgradedConns > 1_000_000 {
		errs = append(errs, fmt.Errorf("config: --max-upgraded-conns %d: want 0 (as many as --max-conns) to 1000000", c.MaxUpgradedConns))
	}
	if c.TTLInterval <= 0 {
		errs = append(errs, fmt.Errorf("config: --ttl-interval %v: must be positive", c.TTLInterval))
	}
	return errors.Join(errs...)
}

// checkAddr returns an error when v, the value of --name, is not
// host:port (or "off", when allowOff).
func checkAddr(name, v string, allowOff bool) error {
	if allowOff && v == "off" {
		return nil
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return fmt.Errorf("config: --%s %q: want host:port (e.g. 127.0.0.1:8080)", name, v)
	}
	return nil
}

// Blobs returns where the systems' blobs live (--blob-s3-*; the
// bucket's region defaults to --region).
func (c *Config) Blobs() blob.Settings {
	region := c.BlobS3Region
	if region == "" {
		region = c.Region
	}
	return blob.Settings{Bucket: c.BlobS3Bucket, Endpoint: c.BlobS3Endpoint, Region: region, PathStyle: c.BlobS3PathStyle}
}

// SystemNames are the systems `quarry serve` can run, in the order the
// banner and --systems list them.
var SystemNames = []string{"datashelf", "wallcrawler", "checks", "eecar"}

// SystemSet returns the systems Systems names (each of SystemNames, or
// all of them for "all"), or an error listing the valid names.
func (c *Config) SystemSet() (map[string]bool, error) {
	set := map[string]bool{}
	if strings.TrimSpace(c.Systems) == "all" {
		for _, n := range SystemNames {
			set[n] = true
		}
		return set, nil
	}
	var unknown []string
	for _, part := range strings.Split(c.Systems, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		found := false
		for _, n := range SystemNames {
			if n == name {
				found = true
			}
		}
		if !found {
			unknown = append(unknown, strconv.Quote(strings.TrimSpace(part)))
			continue
		}
		set[name] = true
	}
	want := "want all, or one or more of " + strings.Join(SystemNames, ", ") + " separated by commas"
	if len(unknown) > 0 {
		return nil, fmt.Errorf("config: --systems (%s) %q: unknown system %s: %s", EnvName("systems"), c.Systems, strings.Join(unknown, ", "), want)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("config: --systems (%s) %q names no system: %s", EnvName("systems"), c.Systems, want)
	}
	return set, nil
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
