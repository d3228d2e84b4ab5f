package config

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*Config) bool
		wantErr string
	}{
		{name: "defaults", check: func(c *Config) bool { return c.Listen == "127.0.0.1:8080" && c.DataDir == "./data" }},
		{name: "env", env: map[string]string{"QUARRY_LISTEN": "0.0.0.0:9000", "QUARRY_SHUTDOWN_TIMEOUT": "3s"},
			check: func(c *Config) bool { return c.Listen == "0.0.0.0:9000" && c.ShutdownTimeout == 3*time.Second }},
		{name: "flag beats env", args: []string{"--listen", "127.0.0.1:1"}, env: map[string]string{"QUARRY_LISTEN": "0.0.0.0:9000"},
			check: func(c *Config) bool { return c.Listen == "127.0.0.1:1" }},
		{name: "ddb off", args: []string{"--ddb-listen", "off"}, check: func(c *Config) bool { return c.DDBListen == "off" }},
		{name: "bad listen", args: []string{"--listen", "nonsense"}, wantErr: `listen "nonsense": want host:port`},
		{name: "bad level and format reported together", env: map[string]string{"QUARRY_LOG_LEVEL": "loud", "QUARRY_LOG_FORMAT": "xml"},
			wantErr: "log-level \"loud\""},
		{name: "bad duration", env: map[string]string{"QUARRY_SHUTDOWN_TIMEOUT": "soon"}, wantErr: "want a duration such as 10s"},
		{name: "blob s3 from env", env: map[string]string{"QUARRY_BLOB_S3_BUCKET": "b", "QUARRY_BLOB_S3_ENDPOINT": "http://127.0.0.1:9000", "QUARRY_BLOB_S3_PATH_STYLE": "true"},
			check: func(c *Config) bool {
				return c.BlobS3Bucket == "b" && c.BlobS3Endpoint == "http://127.0.0.1:9000" && c.BlobS3PathStyle && c.BlobS3Region == ""
			}},
		{name: "blob s3 path style flag", args: []string{"--blob-s3-bucket", "b", "--blob-s3-path-style", "--blob-s3-region", "eu-west-1"},
			env:   map[string]string{"QUARRY_BLOB_S3_PATH_STYLE": "false"},
			check: func(c *Config) bool { return c.BlobS3PathStyle && c.BlobS3Region == "eu-west-1" }},
		{name: "blob s3 path style off by flag", args: []string{"--blob-s3-bucket", "b", "--blob-s3-path-style=false"},
			env:   map[string]string{"QUARRY_BLOB_S3_PATH_STYLE": "1"},
			check: func(c *Config) bool { return !c.BlobS3PathStyle }},
		{name: "bad bool", env: map[string]string{"QUARRY_BLOB_S3_BUCKET": "b", "QUARRY_BLOB_S3_PATH_STYLE": "yes"}, wantErr: "want true or false"},
		{name: "blob s3 endpoint without bucket", args: []string{"--blob-s3-endpoint", "http://127.0.0.1:9000"}, wantErr: "need --blob-s3-bucket"},
		{name: "bad blob s3 endpoint", args: []string{"--blob-s3-bucket", "b", "--blob-s3-endpoint", "127.0.0.1:9000"}, wantErr: "want an http:// or https:// URL"},
		{name: "store durability and cache", args: []string{"--ddb-sync=false", "--ddb-cache-mb", "256"},
			check: func(c *Config) bool { return !c.DDBSync && c.DDBCacheMB == 256 }},
		{name: "store syncs by default", check: func(c *Config) bool {
			return c.DDBSync && c.DDBCacheMB == 64 && c.DDBSyncInterval == 250*time.Microsecond
		}},
		{name: "sync interval", env: map[string]string{"QUARRY_DDB_SYNC_INTERVAL": "0s"}, check: func(c *Config) bool { return c.DDBSyncInterval == 0 }},
		{name: "bad sync interval", args: []string{"--ddb-sync-interval", "1s"}, wantErr: "ddb-sync-interval 1s: must be in [0, 100ms]"},
		{name: "bad store cache", env: map[string]string{"QUARRY_DDB_CACHE_MB": "0"}, wantErr: "ddb-cache-mb 0: must be at least 1"},
		{name: "lease default", check: func(c *Config) bool { return c.Wallcrawler.Lease == 15*time.Second && c.Wallcrawler.LeaseRenew == 0 }},
		{name: "lease from env", env: map[string]string{"QUARRY_WALLCRAWLER_LEASE": "4s", "QUARRY_WALLCRAWLER_LEASE_RENEW": "1s"},
			check: func(c *Config) bool {
				return c.Wallcrawler.Lease == 4*time.Second && c.Wallcrawler.LeaseRenew == time.Second
			}},
		{name: "lease too short", args: []string{"--wallcrawler-lease", "500ms"}, wantErr: "--wallcrawler-lease 500ms: want at least 1s"},
		{name: "lease renew not shorter than the lease", args: []string{"--wallcrawler-lease", "4s", "--wallcrawler-lease-renew", "4s"},
			wantErr: "--wallcrawler-lease-renew 4s: want 0 (a third of the lease) or less than --wallcrawler-lease 4s"},
		{name: "context caps default", check: func(c *Config) bool {
			return c.Wallcrawler.ContextMaxBytes == 1<<30 && c.Wallcrawler.ContextMaxEntries == 100_000
		}},
		{name: "context caps from env", env: map[string]string{"QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES": "512MiB", "QUARRY_WALLCRAWLER_CONTEXT_MAX_ENTRIES": "5000"},
			check: func(c *Config) bool {
				return c.Wallcrawler.ContextMaxBytes == 512<<20 && c.Wallcrawler.ContextMaxEntries == 5000
			}},
		{name: "context max bytes flag in bytes", args: []string{"--wallcrawler-context-max-bytes", "2097152"}, env: map[string]string{"QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES": "1GiB"},
			check: func(c *Config) bool { return c.Wallcrawler.ContextMaxBytes == 2<<20 }},
		{name: "context max bytes flag with unit", args: []string{"--wallcrawler-context-max-bytes=2g"},
			check: func(c *Config) bool { return c.Wallcrawler.ContextMaxBytes == 2<<30 }},
		{name: "bad context max bytes", env: map[string]string{"QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES": "lots"}, wantErr: `QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES="lots": not a size`},
		{name: "bad context max bytes flag", args: []string{"--wallcrawler-context-max-bytes", "-5"}, wantErr: `--wallcrawler-context-max-bytes "-5": want bytes or a size`},
		{name: "context max bytes too small", args: []string{"--wallcrawler-context-max-bytes", "1000"}, wantErr: "wallcrawler-context-max-bytes 1000: want at least 1MiB"},
		{name: "context max entries zero", env: map[string]string{"QUARRY_WALLCRAWLER_CONTEXT_MAX_ENTRIES": "0"}, wantErr: "wallcrawler-context-max-entries 0: must be at least 1"},
		{name: "max upgraded conns default", check: func(c *Config) bool { return c.MaxUpgradedConns == 0 }},
		{name: "max upgraded conns negative", args: []string{"--max-upgraded-conns", "-1"}, wantErr: "--max-upgraded-conns -1: want 0"},
		{name: "max CDP clients default", check: func(c *Config) bool { return c.Wallcrawler.MaxCDPClients == 32 }},
		{name: "max CDP clients from env", env: map[string]string{"QUARRY_WALLCRAWLER_MAX_CDP_CLIENTS": "4"}, check: func(c *Config) bool { return c.Wallcrawler.MaxCDPClients == 4 }},
		{name: "max CDP clients zero", args: []string{"--wallcrawler-max-cdp-clients", "0"}, wantErr: "--wallcrawler-max-cdp-clients 0: want 1 to 1024"},
		{name: "conns per project default: half of max-conns", check: func(c *Config) bool {
			return c.Wallcrawler.MaxConnsPerProject == 0 && c.WallcrawlerConnsPerProject() == 512
		}},
		{name: "conns per project default: half of max-upgraded-conns", args: []string{"--max-upgraded-conns", "81"},
			check: func(c *Config) bool { return c.WallcrawlerConnsPerProject() == 40 }},
		{name: "conns per project default: at least 1", args: []string{"--max-upgraded-conns", "1"},
			check: func(c *Config) bool { return c.WallcrawlerConnsPerProject() == 1 }},
		{name: "conns per project set", env: map[string]string{"QUARRY_WALLCRAWLER_MAX_CONNS_PER_PROJECT": "7"},
			check: func(c *Config) bool { return c.WallcrawlerConnsPerProject() == 7 }},
		{name: "conns per project negative", args: []string{"--wallcrawler-max-conns-per-project", "-1"}, wantErr: "--wallcrawler-max-conns-per-project -1: want 0"},
		{name: "public URL and trusted proxies", args: []string{"--public-url", "https://browsers.example.com"}, env: map[string]string{"QUARRY_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"},
			check: func(c *Config) bool {
				return c.PublicURL == "https://browsers.example.com" && c.TrustedProxies == "10.0.0.0/8, 127.0.0.1"
			}},
		{name: "no public URL nor trusted proxies by default", check: func(c *Config) bool { return c.PublicURL == "" && c.TrustedProxies == "" }},
		{name: "public URL without scheme", args: []string{"--public-url", "browsers.example.com"}, wantErr: `public-url "browsers.example.com": want an http:// or https:// URL with a host and no query`},
		{name: "public URL with query", env: map[string]string{"QUARRY_PUBLIC_URL": "https://b.example.com/?x=1"}, wantErr: "must not carry a query"},
		{name: "public URL without host", args: []string{"--public-url", "https:///path"}, wantErr: "no host"},
		{name: "bad trusted proxy", env: map[string]string{"QUARRY_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}, wantErr: `trusted-proxies "10.0.0.0/8,proxy.internal": want comma-separated CIDRs`},
		{name: "stray argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "browser user and dir from env", env: map[string]string{"QUARRY_WALLCRAWLER_USER": "65534:65534", "QUARRY_WALLCRAWLER_BROWSER_DIR": "/var/tmp/qb"},
			check: func(c *Config) bool {
				return c.Wallcrawler.User == "65534:65534" && c.Wallcrawler.BrowserDir == "/var/tmp/qb"
			}},
		{name: "browser user by name", args: []string{"--wallcrawler-user", "quarry-browser"}, check: func(c *Config) bool { return c.Wallcrawler.User == "quarry-browser" }},
		{name: "browser ids from env", env: map[string]string{"QUARRY_WALLCRAWLER_UIDS": "200000-200999"}, check: func(c *Config) bool { return c.Wallcrawler.UIDs == "200000-200999" }},
		{name: "browser user and ids", args: []string{"--wallcrawler-user", "nobody", "--wallcrawler-uids", "200000-200999"}, wantErr: "--wallcrawler-user and --wallcrawler-uids are exclusive"},
		{name: "write timeout", args: []string{"--write-timeout", "1m"}, check: func(c *Config) bool { return c.WriteTimeout == time.Minute }},
		{name: "bad write timeout", args: []string{"--write-timeout", "10ms"}, wantErr: "write-timeout 10ms: want 100ms to 24h"},
		{name: "bad browser user", args: []string{"--wallcrawler-user", "nobody:x"}, wantErr: "wallcrawler-user \"nobody:x\": want a user name or uid[:gid]"},
		{name: "browser dir inside data dir", args: []string{"--data-dir", "/srv/q", "--wallcrawler-browser-dir", "/srv/q/browsers"}, wantErr: "is inside --data-dir"},
		{name: "browser dir is data dir", args: []string{"--data-dir", "/srv/q", "--wallcrawler-browser-dir", "/srv/q/"}, wantErr: "is inside --data-dir"},
		{name: "listener limits default", check: func(c *Config) bool {
			return c.ReadHeaderTimeout == 10*time.Second && c.ReadTimeout == 30*time.Second && c.IdleTimeout == 120*time.Second && c.MaxConns == 1024 && c.DDBMaxConns == 1024
		}},
		{name: "listener limits from env and flags", args: []string{"--max-conns", "50", "--read-timeout", "5s"},
			env: map[string]string{"QUARRY_DDB_MAX_CONNS": "200", "QUARRY_IDLE_TIMEOUT": "1m", "QUARRY_READ_HEADER_TIMEOUT": "2s", "QUARRY_MAX_CONNS": "9"},
			check: func(c *Config) bool {
				return c.MaxConns == 50 && c.DDBMaxConns == 200 && c.ReadTimeout == 5*time.Second && c.IdleTimeout == time.Minute && c.ReadHeaderTimeout == 2*time.Second
			}},
		{name: "bad max conns", args: []string{"--ddb-max-conns", "0"}, wantErr: "ddb-max-conns 0: want 1 to 1000000"},
		{name: "bad read timeout", env: map[string]string{"QUARRY_READ_TIMEOUT": "1ms"}, wantErr: "read-timeout 1ms: want 100ms to 24h"},
		{name: "bad idle timeout", args: []string{"--idle-timeout", "0s"}, wantErr: "idle-timeout 0s: want 100ms to 24h"},
		{name: "browser dir beside data dir", args: []string{"--data-dir", "/srv/q", "--wallcrawler-browser-dir", "/srv/q-browsers"}, check: func(c *Config) bool { return c.Wallcrawler.BrowserDir == "/srv/q-browsers" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := Load(fs, tt.args, func(k string) string { return tt.env[k] }, Defaults(), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
	// Both problems appear in one error.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	_, err := Load(fs, nil, func(k string) string {
		return map[string]string{"QUARRY_LOG_LEVEL": "loud", "QUARRY_LOG_FORMAT": "xml"}[k]
	}, Defaults(), nil)
	if err == nil || !strings.Contains(err.Error(), "log-format") || !strings.Contains(err.Error(), "log-level") {
		t.Fatalf("want both errors, got %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1048576", 1 << 20, true}, {"512MiB", 512 << 20, true}, {"1GiB", 1 << 30, true},
		{"1gib", 1 << 30, true}, {"64k", 64 << 10, true}, {"3 M", 3 << 20, true}, {"2T", 2 << 40, true}, {"10b", 10, true},
		{"", 0, false}, {"MiB", 0, false}, {"1.5GiB", 0, false}, {"-1", 0, false}, {"1PiB", 0, false}, {"9999999999T", 0, false},
	} {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestNetworkPolicy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		want       string // the policy, rendered
		deprecated string // substring of the one deprecation warning, "" for none
		wantErr    string
	}{
		{name: "default: public only", want: ""},
		{name: "flag", args: []string{"--allow-networks", "127.0.0.1:3000,10.0.0.0/8"}, want: "10.0.0.0/8,127.0.0.1:3000"},
		{name: "env", env: map[string]string{"QUARRY_ALLOW_NETWORKS": "all"}, want: "all"},
		{name: "deprecated alias alone", args: []string{"--checks-allow-networks", "10.0.0.0/8"}, want: "10.0.0.0/8", deprecated: "use --allow-networks"},
		{name: "deprecated alias ignored beside the flag", env: map[string]string{"QUARRY_CHECKS_ALLOW_NETWORKS": "all"}, args: []string{"--allow-networks", "192.168.0.0/16"},
			want: "192.168.0.0/16", deprecated: "ignored because --allow-networks is set"},
		{name: "bad entry", args: []string{"--allow-networks", "example.com:80"}, wantErr: `allow-networks "example.com:80"`},
		{name: "bad alias entry", args: []string{"--checks-allow-networks", "nope"}, wantErr: `checks-allow-networks "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := Load(fs, tc.args, func(k string) string { return tc.env[k] }, Defaults(), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.NetworkPolicy()
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != tc.want {
				t.Errorf("policy %q, want %q", p, tc.want)
			}
			dep := c.Deprecations()
			if tc.deprecated == "" && len(dep) != 0 || tc.deprecated != "" && (len(dep) != 1 || !strings.Contains(dep[0], tc.deprecated)) {
				t.Errorf("deprecations %q, want one containing %q", dep, tc.deprecated)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	tests := []struct{ flag, want string }{
		{"listen", "QUARRY_LISTEN"},
		{"wallcrawler-pool", "QUARRY_WALLCRAWLER_POOL"},
		{"wallcrawler-context-max-bytes", "QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES"},
		{"blob-s3-path-style", "QUARRY_BLOB_S3_PATH_STYLE"},
	}
	for _, tt := range tests {
		if got := EnvName(tt.flag); got != tt.want {
			t.Errorf("EnvName(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
	// Every setting's variable is the one its usage names.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if _, err := Load(fs, nil, func(string) string { return "" }, Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasSuffix(f.Usage, "(env "+EnvName(f.Name)+")") {
			t.Errorf("--%s: usage %q does not name %s", f.Name, f.Usage, EnvName(f.Name))
		}
	})
}

// TestEnvThroughFlags checks that a variable is parsed as its flag is:
// the flag's own forms are accepted, and a refused value is explained
// once, naming the variable and the flag.
func TestEnvThroughFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(*Config) bool
		wantErr string
	}{
		{name: "int in the flag's forms", env: map[string]string{"QUARRY_WALLCRAWLER_POOL": "0x2"}, check: func(c *Config) bool { return c.Wallcrawler.Pool == 2 }},
		{name: "bool", env: map[string]string{"QUARRY_DDB_SYNC": "false"}, check: func(c *Config) bool { return !c.DDBSync }},
		{name: "size", env: map[string]string{"QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES": "2MiB"}, check: func(c *Config) bool { return c.Wallcrawler.ContextMaxBytes == 2<<20 }},
		{name: "flag wins", env: map[string]string{"QUARRY_WALLCRAWLER_POOL": "3"}, args: []string{"--wallcrawler-pool", "1"}, check: func(c *Config) bool { return c.Wallcrawler.Pool == 1 }},
		{name: "bad int", env: map[string]string{"QUARRY_WALLCRAWLER_POOL": "many"}, wantErr: `config: QUARRY_WALLCRAWLER_POOL="many": want a whole number (the environment variable of --wallcrawler-pool)`},
		{name: "bad duration", env: map[string]string{"QUARRY_TTL_INTERVAL": "often"}, wantErr: `QUARRY_TTL_INTERVAL="often": want a duration such as 10s, 500ms or 2m`},
		{name: "bad env, good flag: still an error", env: map[string]string{"QUARRY_DDB_SYNC": "maybe"}, args: []string{"--ddb-sync=true"}, wantErr: `QUARRY_DDB_SYNC="maybe": want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := Load(fs, tt.args, func(k string) string { return tt.env[k] }, Defaults(), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
					t.Fatalf("%d errors, want 1: %v", n, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{name: "known and foreign variables", environ: []string{"QUARRY_LISTEN=:1", "HOME=/root", "QUARRYX=1", "GOGC=200"}},
		{name: "typo", environ: []string{"QUARRY_WALCRAWLER_POOL=2"},
			want: []string{"config: unknown environment variable QUARRY_WALCRAWLER_POOL is ignored; did you mean QUARRY_WALLCRAWLER_POOL?"}},
		{name: "old spelling with dashes' place", environ: []string{"QUARRY_DDBLISTEN=off"},
			want: []string{"config: unknown environment variable QUARRY_DDBLISTEN is ignored; did you mean QUARRY_DDB_LISTEN?"}},
		{name: "a longer name beats the prefix it extends", environ: []string{"QUARRY_DDB_SYNC_INTERVALL=1ms"},
			want: []string{"config: unknown environment variable QUARRY_DDB_SYNC_INTERVALL is ignored; did you mean QUARRY_DDB_SYNC_INTERVAL?"}},
		{name: "nothing near", environ: []string{"QUARRY_FROBNICATE_EVERYTHING=1"},
			want: []string{"config: unknown environment variable QUARRY_FROBNICATE_EVERYTHING is ignored"}},
		{name: "sorted", environ: []string{"QUARRY_ZZZZZZZZZZZZ=1", "QUARRY_LISTN=:1"},
			want: []string{"config: unknown environment variable QUARRY_LISTN is ignored; did you mean QUARRY_LISTEN?",
				"config: unknown environment variable QUARRY_ZZZZZZZZZZZZ is ignored"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UnknownEnv(tt.environ)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("UnknownEnv = %q, want %q", got, tt.want)
			}
		})
	}
}
