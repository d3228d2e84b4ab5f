package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/testenv"
)

// runServe runs quarry serve in-process with args until the test ends,
// and returns its log once the API listens.
func runServe(t *testing.T, api string, args ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", api}, args...), func(string) string { return "" }, &logs, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d:\n%s", code, logs.String())
		}
	})
	waitFor(t, "the API listener", func() bool { return strings.Contains(logs.String(), "listening on "+api) })
	return &logs
}

// TestServeBanner checks the one banner quarry serve prints once it is
// ready: every listener, each system's backends, the browsers'
// confinement, the network policy and where to look next; as a block of
// text with the text log format, as one JSON record with the JSON one.
func TestServeBanner(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		chromium := testenv.Chromium(t)
		// As root, quarry gives every browser a network namespace.
		netFacts := `host network \(confinement degraded\)`
		if os.Geteuid() == 0 {
			netFacts = `own network each`
		}
		api, ddbAddr := freeAddr(t), freeAddr(t)
		dataDir := t.TempDir()
		out := runServe(t, api, "--ddb-listen", ddbAddr, "--data-dir", dataDir).String()
		if n := strings.Count(out, "quarry serve is ready"); n != 1 {
			t.Fatalf("%d banners, want 1:\n%s", n, out)
		}
		banner := out[strings.Index(out, "quarry serve is ready"):]
		banner = banner[:strings.Index(banner, "\n\n")]
		want := []string{
			`^  version +` + regexp.QuoteMeta(version) + `$`,
			`^  data directory +` + regexp.QuoteMeta(dataDir) + `$`,
			`^    API +http://` + regexp.QuoteMeta(api) + `  \(.*/healthz`,
			`^    DynamoDB +http://` + regexp.QuoteMeta(ddbAddr) + `  \(AWS CLI and SDKs: --endpoint-url http://` + regexp.QuoteMeta(ddbAddr),
			`^      requests +UNAUTHENTICATED: any account that can connect reads and writes every table.*  \(--credentials FILE requires SigV4`,
			`^    admin channel +` + regexp.QuoteMeta(filepath.Join(dataDir, "admin.sock")) + `  `,
			`^    store +embedded .* in ` + regexp.QuoteMeta(filepath.Join(dataDir, "ddb")) + `$`,
			`^    DataShelf +SQLite ` + regexp.QuoteMeta(filepath.Join(dataDir, "datashelf.db")) + `; blobs in ` + regexp.QuoteMeta(filepath.Join(dataDir, "blobs")) + `$`,
			`^    Wallcrawler +tables in the embedded store; blobs in ` + regexp.QuoteMeta(filepath.Join(dataDir, "wallcrawler", "blobs")) + `$`,
			`^      browsers +` + regexp.QuoteMeta(chromium) + ` as .*\(uid \d+\), Chromium sandbox (on|OFF), ` + netFacts,
			`^    EECAR +tables in the embedded store; blobs in .*; built-in local embedder$`,
			`^    Checks +tables in the embedded store; email alerts off`,
			`^  network policy +public addresses only  \(--allow-networks`,
			`^  health +http://` + regexp.QuoteMeta(api) + `/healthz$`,
			`^  docs +README.md`,
		}
		for _, re := range want {
			if !regexp.MustCompile("(?m)" + re).MatchString(banner) {
				t.Errorf("banner lacks a line matching %s:\n%s", re, banner)
			}
		}
		if os.Geteuid() == 0 && !strings.Contains(banner, "as nobody (uid 65534)") && !strings.Contains(banner, "warning") {
			t.Errorf("quarry runs as root: the banner should name the unprivileged browser user:\n%s", banner)
		}
		// The banner comes before the listeners' logs, once all are bound.
		if strings.Index(out, "quarry serve is ready") > strings.Index(out, "listening on ") {
			t.Errorf("banner after the listeners' logs:\n%s", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		api := freeAddr(t)
		dataDir := t.TempDir()
		logs := runServe(t, api, "--ddb-listen", "off", "--data-dir", dataDir, "--log-format", "json",
			"--chromium", filepath.Join(dataDir, "no-such-chromium"), "--allow-networks", "127.0.0.1:3000")
		var banner map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("a line of the JSON log is not JSON (%v): %q", err, line)
			}
			if rec["msg"] == "quarry serving" {
				if banner != nil {
					t.Fatalf("two banner records:\n%s", logs.String())
				}
				banner = rec
			}
		}
		if banner == nil {
			t.Fatalf("no banner record:\n%s", logs.String())
		}
		for key, want := range map[string]string{
			"version":        version,
			"data_dir":       dataDir,
			"api":            "http://" + api,
			"ddb":            "off (--ddb-listen off)",
			"admin_socket":   filepath.Join(dataDir, "admin.sock"),
			"network_policy": "public addresses and --allow-networks 127.0.0.1:3000",
			"healthz":        "http://" + api + "/healthz",
		} {
			if banner[key] != want {
				t.Errorf("banner %s = %v, want %q", key, banner[key], want)
			}
		}
		if b, _ := banner["browsers"].(string); !strings.HasPrefix(b, "DEGRADED, sessions cannot start: ") || !strings.Contains(b, "no-such-chromium") {
			t.Errorf("banner browsers = %q, want why Wallcrawler is degraded", b)
		}
		for _, key := range []string{"store", "datashelf", "wallcrawler", "eecar", "checks", "docs"} {
			if s, _ := banner[key].(string); s == "" {
				t.Errorf("banner lacks %s: %v", key, banner)
			}
		}
	})
}
