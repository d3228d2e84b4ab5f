package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/quarrydb/quarry/internal/platform/config"
)

// TestFlagsDocCoversServe: every flag `quarry serve -h` prints has its
// row, with its QUARRY_* variable, in docs/flags.md.
func TestFlagsDocCoversServe(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("serve -h: exit %d\n%s", code, stderr.String())
	}
	doc, err := os.ReadFile("../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(stderr.String(), -1)
	if len(flags) < 50 {
		t.Fatalf("serve -h printed %d flags; the parse of its usage is wrong:\n%s", len(flags), stderr.String())
	}
	for _, m := range flags {
		row := "| `--" + m[1] + "` | `" + config.EnvName(m[1]) + "` |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/flags.md has no row for --%s (%s): run make flags", m[1], config.EnvName(m[1]))
		}
	}
}
