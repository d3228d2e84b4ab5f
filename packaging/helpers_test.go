package packaging

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/testenv"
)

// root is the repository's root, relative to this package.
const root = ".."

// readFile returns a file of the repository as a string.
func readFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var flagRow = regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| `(QUARRY_[A-Z0-9_]+)` \\|")

// documentedSettings returns the flags of docs/flags.md and their QUARRY_*
// variables: flag name (without dashes) to variable.
func documentedSettings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range flagRow.FindAllStringSubmatch(readFile(t, "docs/flags.md"), -1) {
		out[m[1]] = m[2]
	}
	if len(out) < 20 {
		t.Fatalf("docs/flags.md: found %d flag rows; the table's format changed?", len(out))
	}
	return out
}

// documentedEnv returns the QUARRY_* variables of docs/flags.md.
func documentedEnv(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, env := range documentedSettings(t) {
		out[env] = true
	}
	return out
}

// checkServeArgs fails for each --flag of args (a quarry serve command
// line) that docs/flags.md does not list.
func checkServeArgs(t *testing.T, where string, args []string) {
	t.Helper()
	flags := documentedSettings(t)
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := flags[name]; !ok {
			t.Errorf("%s: quarry serve flag --%s is not in docs/flags.md", where, name)
		}
	}
}

// unit is a parsed systemd unit file: section, key, values in order.
type unit map[string]map[string][]string

// parseUnit reads a systemd unit file (comments, sections, Key=Value; no
// line continuations, which the unit does not use).
func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, "\\"):
			t.Fatalf("line %d: continuation lines are not parsed here", n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("line %d: %q is not Key=Value in a section", n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// get returns the last value of key in section ("" when unset).
func (u unit) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// verifyUnit runs systemd-analyze verify on quarry.service in the file
// tree at sysroot (where /lib/systemd/system/quarry.service and
// /usr/bin/quarry must be), with the host's own units copied beside it for
// the targets it names. Any message fails the test: systemd-analyze warns
// about unknown keys and bad values on stderr but still exits 0.
func verifyUnit(t *testing.T, sysroot string) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.Missing(t, "systemd-analyze not found (Debian package systemd): the unit file is not verified")
		return
	}
	unitDir := filepath.Join(sysroot, "lib/systemd/system")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/lib/systemd/system", "/usr/lib/systemd/system"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Name() == "quarry.service" || !strings.Contains(e.Name(), ".target") {
				continue
			}
			dst := filepath.Join(unitDir, e.Name())
			if _, err := os.Lstat(dst); err == nil {
				continue
			}
			if out, err := exec.Command("cp", "-a", filepath.Join(dir, e.Name()), dst).CombinedOutput(); err != nil {
				t.Fatalf("copy %s: %v\n%s", e.Name(), err, out)
			}
		}
	}
	out, err := exec.Command(sa, "verify", "--root="+sysroot, "quarry.service").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify quarry.service: %v\n%s", err, out)
	}
}
