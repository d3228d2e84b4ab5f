package config

import (
	"os"
	"strings"
	"testing"
)

// TestFlagsDocFresh fails when docs/flags.md is not what the settings
// table generates: run make flags and commit the result.
func TestFlagsDocFresh(t *testing.T) {
	got, err := os.ReadFile("../../../docs/flags.md")
	if err != nil {
		t.Fatalf("docs/flags.md: %v (make flags writes it)", err)
	}
	if want := FlagsMarkdown(); string(got) != want {
		t.Fatal("docs/flags.md is stale: run make flags (go generate ./internal/platform/config) and commit it")
	}
}

// TestFlagsDocListsEverySetting checks the generated reference itself:
// every setting appears once, with its environment variable, under a
// group.
func TestFlagsDocListsEverySetting(t *testing.T) {
	doc := FlagsMarkdown()
	for _, f := range (&Config{}).fields(nil) {
		row := "| `--" + f.flag + "` | `" + EnvName(f.flag) + "` |"
		if n := strings.Count(doc, row); n != 1 {
			t.Errorf("--%s: %d rows in the reference, want 1", f.flag, n)
		}
		if f.group == "" {
			t.Errorf("--%s has no group", f.flag)
		}
	}
	for _, want := range []string{"| `--checks-retention` | `QUARRY_CHECKS_RETENTION` | `168h` |", "| `--wallcrawler-context-max-bytes` | `QUARRY_WALLCRAWLER_CONTEXT_MAX_BYTES` | `1GiB` |", "| `--ddb-sync` | `QUARRY_DDB_SYNC` | `true` |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the reference lacks the row %q", want)
		}
	}
}
