// Package testenv is shared by tests that need a program from outside the
// module (Chromium, PostgreSQL, node and the npm peers): they skip when it
// is missing, unless QUARRY_REQUIRE_PEERS=1 (which `make test` sets), where
// a missing peer fails the test instead of hiding it behind a skip.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequirePeers reports whether QUARRY_REQUIRE_PEERS=1: every peer must be
// present and no test may skip for want of one.
func RequirePeers() bool { return os.Getenv("QUARRY_REQUIRE_PEERS") == "1" }

// Missing reports a missing peer: it fails t when RequirePeers, else skips
// it. The message should say what is missing; the remedy is appended.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequirePeers() {
		t.Fatalf("%s (QUARRY_REQUIRE_PEERS=1: `make test` installs it, or run scripts/test-deps.sh as root)", msg)
	}
	t.Skipf("%s (`make test` installs it; set QUARRY_REQUIRE_PEERS=1 to fail instead)", msg)
}

// Chromium returns the Chromium binary the tests use: $QUARRY_CHROMIUM when
// set, else the first of chromium, chromium-browser and google-chrome on
// PATH. When there is none it calls Missing.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("QUARRY_CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			Missing(t, "QUARRY_CHROMIUM=%s: %v", p, err)
		}
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "no chromium, chromium-browser or google-chrome on PATH")
	return ""
}

// Chromedriver returns the chromedriver binary on PATH (Debian's
// chromium-driver), which Wallcrawler's WebDriver endpoints run. When
// there is none it calls Missing.
func Chromedriver(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("chromedriver")
	if err != nil {
		Missing(t, "no chromedriver on PATH (Debian package chromium-driver)")
	}
	return p
}

// PostgresURL returns QUARRY_TEST_POSTGRES_URL, the PostgreSQL server the
// tests may create databases in (`make test` starts one with
// scripts/pg-start.sh). When it is unset it calls Missing.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("QUARRY_TEST_POSTGRES_URL")
	if u == "" {
		Missing(t, "QUARRY_TEST_POSTGRES_URL is not set: PostgreSQL tests need a server (scripts/pg-start.sh starts one)")
	}
	return u
}
