package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestDist builds the release files twice and checks what they hold. It
// runs only with QUARRY_TEST_DIST=1 (make test-dist): the second build
// compiles quarry from an empty Go build cache, minutes of CPU that make
// test does not spend. Only the host's architecture is built; make dist
// builds arm64 too.
func TestDist(t *testing.T) {
	if os.Getenv("QUARRY_TEST_DIST") != "1" {
		t.Skip("builds release files twice (minutes): run with QUARRY_TEST_DIST=1, as make test-dist does")
	}
	for _, tool := range []string{"make", "git", "tar", "gzip", "sha256sum", "dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: make dist and this test need it", tool)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	arch := runtime.GOARCH
	tmp := t.TempDir()

	// The first build: make dist in the repository.
	distA := filepath.Join(tmp, "a")
	run(t, abs, nil, "make", "dist", "DIST_ARCHES="+arch, "DIST_DIR="+distA)
	vars := versionVars(t, abs)

	// The second: the same files copied to another path, no .git (the
	// version given in the environment), an empty Go build cache.
	src := filepath.Join(tmp, "elsewhere", "src")
	copyTree(t, abs, src)
	distB := filepath.Join(tmp, "b")
	env := []string{"ARCHES=" + arch, "DIST_DIR=" + distB, "NFPM=" + filepath.Join(abs, ".cache/bin/nfpm"),
		"GOCACHE=" + filepath.Join(tmp, "gocache"), "PATH=/usr/local/go/bin:" + os.Getenv("PATH")}
	for _, k := range []string{"VERSION", "COMMIT", "SOURCE_DATE_EPOCH"} {
		env = append(env, k+"="+vars[k])
	}
	run(t, src, env, "bash", "scripts/dist.sh")

	sumsA, sumsB := readOut(t, filepath.Join(distA, "SHA256SUMS")), readOut(t, filepath.Join(distB, "SHA256SUMS"))
	if sumsA != sumsB {
		t.Fatalf("two builds of one commit differ:\n%s\n%s", sumsA, sumsB)
	}
	tarName := "quarry_" + vars["FILE_VERSION"] + "_linux_" + arch + ".tar.gz"
	debName := "quarry_" + vars["DEB_VERSION"] + "_" + arch + ".deb"
	for _, name := range []string{tarName, debName} {
		if !strings.Contains(sumsA, "  "+name+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", name, sumsA)
		}
	}
	run(t, distA, nil, "sha256sum", "--check", "--quiet", "SHA256SUMS")
	t.Logf("identical builds:\n%s", sumsA)

	t.Run("archive", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, nil, "tar", "xzf", filepath.Join(distA, tarName))
		top := filepath.Join(dir, strings.TrimSuffix(tarName, ".tar.gz"))
		for _, f := range []string{"quarry", "LICENSE", "README.md", "docs/operations.md", "docs/flags.md"} {
			if _, err := os.Stat(filepath.Join(top, f)); err != nil {
				t.Errorf("archive lacks %s: %v", f, err)
			}
		}
		checkVersion(t, filepath.Join(top, "quarry"), vars)
		listing := run(t, dir, nil, "tar", "tzvf", filepath.Join(distA, tarName))
		for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "0/0" {
				t.Errorf("archive entry not owned by 0/0: %s", line)
			}
		}
	})

	t.Run("deb", func(t *testing.T) {
		deb := filepath.Join(distA, debName)
		info := run(t, distA, nil, "dpkg-deb", "--info", deb)
		for _, want := range []string{"Package: quarry", "Version: " + vars["DEB_VERSION"], "Architecture: " + arch,
			"Depends: chromium, fonts-liberation", "Recommends: postgresql, chromium-driver"} {
			if !strings.Contains(info, "\n "+want+"\n") {
				t.Errorf("dpkg-deb --info lacks %q:\n%s", want, info)
			}
		}
		control := t.TempDir()
		run(t, distA, nil, "dpkg-deb", "--control", deb, control)
		if got := readOut(t, filepath.Join(control, "conffiles")); got != "/etc/quarry/quarry.env\n" {
			t.Errorf("conffiles %q, want /etc/quarry/quarry.env", got)
		}
		for _, s := range []string{"postinst", "prerm", "postrm"} {
			if st, err := os.Stat(filepath.Join(control, s)); err != nil || st.Mode()&0o111 == 0 {
				t.Errorf("maintainer script %s missing or not executable", s)
			}
		}

		sysroot := t.TempDir()
		run(t, distA, nil, "dpkg", "-x", deb, sysroot)
		for f, mode := range map[string]os.FileMode{
			"usr/bin/quarry": 0o755, "lib/systemd/system/quarry.service": 0o644, "etc/quarry/quarry.env": 0o640,
			"usr/share/doc/quarry/copyright": 0o644, "usr/share/doc/quarry/docs/operations.md": 0o644,
		} {
			st, err := os.Stat(filepath.Join(sysroot, f))
			if err != nil || st.Mode().Perm() != mode {
				t.Errorf("%s: %v, mode %v, want %v", f, err, st, mode)
			}
		}
		checkVersion(t, filepath.Join(sysroot, "usr/bin/quarry"), vars)
		verifyUnit(t, sysroot)
	})
}

// checkVersion runs bin version --json and compares it with the stamp.
func checkVersion(t *testing.T, bin string, vars map[string]string) {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("%s version --json: %v", bin, err)
	}
	var b struct{ Version, Commit, Date string }
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("quarry version --json printed %q: %v", out, err)
	}
	if b.Version != vars["VERSION"] || b.Commit != vars["COMMIT"] || b.Date != vars["DATE"] {
		t.Errorf("quarry version --json = %s; want version %s, commit %s, date %s", out, vars["VERSION"], vars["COMMIT"], vars["DATE"])
	}
}

// versionVars returns scripts/version.sh's values for the repository.
func versionVars(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := run(t, dir, nil, "bash", "-c",
		`eval "$(bash scripts/version.sh)" && for v in VERSION COMMIT SOURCE_DATE_EPOCH DATE FILE_VERSION DEB_VERSION; do printf '%s=%s\n' "$v" "${!v}"; done`)
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)=(.*)$`).FindAllStringSubmatch(out, -1) {
		vars[m[1]] = m[2]
	}
	return vars
}

// copyTree copies the repository's files that git tracks or would track
// (tracked and new, not ignored) as they are in the work tree.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	files := run(t, from, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		src := filepath.Join(from, f)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs name args in dir (with env added to the environment) and
// returns its standard output; a failure fails the test with both outputs.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s\n%s", name, strings.Join(args, " "), dir, err, out, stderr.String())
	}
	return string(out)
}

// readOut returns a file's content.
func readOut(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
