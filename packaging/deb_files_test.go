package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// requiredCaps are the capabilities quarry needs to confine browsers: a
// network namespace each (SYS_ADMIN, NET_ADMIN for its loopback), another
// user (SETUID, SETGID), work directories it hands over and removes
// (CHOWN, DAC_OVERRIDE, FOWNER), and stopping them (KILL).
var requiredCaps = []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID",
	"CAP_CHOWN", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER"}

func TestUnitFile(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, readFile(t, "packaging/deb/quarry.service"))

	cmdline := strings.Fields(u.get("Service", "ExecStart"))
	if len(cmdline) < 2 || cmdline[0] != "/usr/bin/quarry" || cmdline[1] != "serve" {
		t.Fatalf("ExecStart=%q: want /usr/bin/quarry serve ...", u.get("Service", "ExecStart"))
	}
	checkServeArgs(t, "quarry.service ExecStart", cmdline[2:])
	args := strings.Join(cmdline[2:], " ")
	for _, want := range []string{"--data-dir /var/lib/quarry", "--wallcrawler-browser-dir /var/lib/quarry-browsers"} {
		if !strings.Contains(args, want) {
			t.Errorf("ExecStart lacks %q", want)
		}
	}

	for key, want := range map[string]string{
		"EnvironmentFile": "-/etc/quarry/quarry.env",
		"Restart":         "on-failure",
		"KillMode":        "mixed",
		"NoNewPrivileges": "yes",
		"ProtectSystem":   "strict",
		"ProtectHome":     "yes",
		"PrivateTmp":      "yes",
	} {
		if got := u.get("Service", key); got != want {
			t.Errorf("%s=%q, want %q", key, got, want)
		}
	}
	rw := strings.Fields(strings.Join(u["Service"]["ReadWritePaths"], " ") + " " + strings.Join(u["Service"]["StateDirectory"], " "))
	for _, dir := range []string{"/var/lib/quarry", "/var/lib/quarry-browsers"} {
		found := false
		for _, p := range rw {
			if p == dir || "/var/lib/"+p == dir {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is not writable under ProtectSystem=strict (ReadWritePaths=%v)", dir, u["Service"]["ReadWritePaths"])
		}
	}
	// What would stop quarry from confining browsers.
	for _, key := range []string{"User", "DynamicUser", "PrivateUsers", "PrivateNetwork",
		"RestrictNamespaces", "MemoryDenyWriteExecute", "SystemCallFilter", "AmbientCapabilities"} {
		if vs, ok := u["Service"][key]; ok {
			t.Errorf("%s=%v set: quarry runs as root with namespaces and Chromium needs a JIT (see the unit's comments)", key, vs)
		}
	}
	for _, set := range u["Service"]["CapabilityBoundingSet"] {
		caps := strings.Fields(set)
		drop := strings.HasPrefix(set, "~")
		if drop {
			caps = strings.Fields(strings.TrimPrefix(set, "~"))
		}
		listed := map[string]bool{}
		for _, c := range caps {
			listed[c] = true
		}
		for _, c := range requiredCaps {
			if drop && listed[c] {
				t.Errorf("CapabilityBoundingSet drops %s, which confining browsers needs", c)
			}
			if !drop && !listed[c] {
				t.Errorf("CapabilityBoundingSet lacks %s, which confining browsers needs", c)
			}
		}
	}
	if got := u.get("Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy=%q, want multi-user.target", got)
	}
}

// TestUnitFileVerifies runs systemd-analyze verify on the unit as
// installed: in a scratch root with an executable /usr/bin/quarry.
func TestUnitFileVerifies(t *testing.T) {
	t.Parallel()
	sysroot := t.TempDir()
	for _, dir := range []string{"lib/systemd/system", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(sysroot, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sysroot, "lib/systemd/system/quarry.service"), []byte(readFile(t, "packaging/deb/quarry.service")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sysroot, "usr/bin/quarry"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, sysroot)
}

// TestEnvFile checks that every QUARRY_* variable the environment file
// names, set or commented out, is a setting of docs/flags.md, and that it
// leaves the directories to the unit.
func TestEnvFile(t *testing.T) {
	t.Parallel()
	text := readFile(t, "packaging/deb/quarry.env")
	env := documentedEnv(t)
	names := regexp.MustCompile(`(?m)^#?(QUARRY_[A-Z0-9_]+)=`).FindAllStringSubmatch(text, -1)
	if len(names) < 10 {
		t.Fatalf("quarry.env names %d settings; want the common ones", len(names))
	}
	for _, m := range names {
		if !env[m[1]] {
			t.Errorf("quarry.env: %s is not a setting of docs/flags.md", m[1])
		}
		if m[1] == "QUARRY_DATA_DIR" || m[1] == "QUARRY_WALLCRAWLER_BROWSER_DIR" {
			t.Errorf("quarry.env sets %s, which the unit's command line overrides", m[1])
		}
	}
	for n, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			t.Errorf("quarry.env line %d: %q is set; the shipped file sets nothing (defaults are quarry's)", n+1, line)
		}
	}
}

// TestNfpmRecipe checks the package's dependencies, its conffile and
// that the files it names exist.
func TestNfpmRecipe(t *testing.T) {
	t.Parallel()
	text := readFile(t, "packaging/nfpm.yaml")
	for _, want := range []string{
		"depends:\n  - chromium\n  - fonts-liberation\n",
		"recommends:\n  - postgresql\n  - chromium-driver\n",
		"  - src: packaging/deb/quarry.env\n    dst: /etc/quarry/quarry.env\n    type: config\n",
		"dst: /usr/bin/quarry\n",
		"dst: /lib/systemd/system/quarry.service\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("nfpm.yaml lacks %q", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:- src|postinstall|preremove|postremove): (packaging/\S+)$`).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("nfpm.yaml names %s: %v", m[1], err)
		}
	}
}

// TestMaintainerScripts checks the scripts' syntax, that postinst makes
// the browser account quarry looks for, and that no script deletes the
// data directory, on removal or purge.
func TestMaintainerScripts(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"postinst", "prerm", "postrm"} {
		rel := "packaging/deb/" + name
		text := readFile(t, rel)
		if out, err := exec.Command("sh", "-n", filepath.Join(root, rel)).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", rel, err, out)
		}
		if st, err := os.Stat(filepath.Join(root, rel)); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", rel)
		}
		if regexp.MustCompile(`rm\s[^\n]*/var/lib/quarry(\s|/|$)`).MatchString(text) {
			t.Errorf("%s deletes /var/lib/quarry: the data stays, even on purge", rel)
		}
	}
	postinst := readFile(t, "packaging/deb/postinst")
	if !strings.Contains(postinst, "useradd --system") || !strings.Contains(postinst, " "+browser.DedicatedUser+"\n") {
		t.Errorf("postinst does not create the %s account", browser.DedicatedUser)
	}
}

// TestDebVersion checks scripts/version.sh's Debian versions and, with
// dpkg, that they sort as the releases they name.
func TestDebVersion(t *testing.T) {
	t.Parallel()
	cases := []struct{ version, deb string }{
		{"1d03768", "0~git20261127154623.1d03768"}, // a hash, not a release
		{"abc1234", "0~git20261127154623.abc1234"},
		{"abc1234-dirty", "0~git20261127154623.abc1234.dirty"},
		{"v1.2.0-rc1", "1.2.0~rc1"},
		{"v1.2.0-rc1-2-g1234abc", "1.2.0~rc1+git2.g1234abc"},
		{"v1.2.0", "1.2.0"},
		{"v1.2.0-dirty", "1.2.0+dirty"},
		{"v1.2.0-3-gabc1234", "1.2.0+git3.gabc1234"},
		{"v1.2.0-3-gabc1234-dirty", "1.2.0+git3.gabc1234.dirty"},
		{"v1.2.1", "1.2.1"},
	}
	var debs []string
	for _, c := range cases {
		cmd := exec.Command("bash", "-c", `eval "$(bash scripts/version.sh)" && printf %s "$DEB_VERSION"`)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION="+c.version, "COMMIT=x", "SOURCE_DATE_EPOCH=1795794383")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("version.sh with VERSION=%s: %v", c.version, err)
		}
		if string(out) != c.deb {
			t.Errorf("VERSION=%s: DEB_VERSION=%s, want %s", c.version, out, c.deb)
		}
		debs = append(debs, c.deb)
	}
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Log("dpkg not found: the versions' order is not checked")
		return
	}
	for i := 1; i < len(debs); i++ {
		if err := exec.Command(dpkg, "--compare-versions", debs[i-1], "lt", debs[i]).Run(); err != nil {
			t.Errorf("dpkg: %s does not sort before %s", debs[i-1], debs[i])
		}
	}
}
