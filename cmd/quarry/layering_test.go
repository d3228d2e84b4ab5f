package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps DESIGN.md's dependency rules: ddb imports nothing of
// internal/; internal/platform imports no system; a system never imports
// another system; only cmd/quarry (and the console, which shows them all)
// knows every system.
func TestLayering(t *testing.T) {
	t.Parallel()
	const mod = "github.com/quarrydb/quarry/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"ddb/...", mod+"internal/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	systems := []string{"checks", "datashelf", "eecar", "wallcrawler"}
	systemOf := func(pkg string) string {
		for _, s := range systems {
			if p := mod + "internal/" + s; pkg == p || strings.HasPrefix(pkg, p+"/") {
				return s
			}
		}
		return ""
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		checked++
		for _, imp := range imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			switch {
			case strings.HasPrefix(pkg, mod+"ddb") && strings.HasPrefix(imp, mod+"internal/"):
				t.Errorf("%s imports %s: ddb imports nothing of internal/", pkg, imp)
			case strings.HasPrefix(pkg, mod+"internal/platform/") && systemOf(imp) != "":
				t.Errorf("%s imports %s: platform imports no system", pkg, imp)
			case systemOf(pkg) != "" && systemOf(imp) != "" && systemOf(pkg) != systemOf(imp):
				t.Errorf("%s imports %s: a system never imports another", pkg, imp)
			case systemOf(pkg) != "" && strings.HasPrefix(imp, mod+"internal/console"):
				t.Errorf("%s imports %s: a system does not depend on the console", pkg, imp)
			}
		}
	}
	if checked < 40 {
		t.Fatalf("go list listed %d packages: the pattern is wrong", checked)
	}
}
