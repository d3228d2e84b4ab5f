package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("quarry version: exit %d, stderr %q", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[0] != "quarry "+version ||
		!strings.HasPrefix(lines[1], "commit ") || !strings.HasPrefix(lines[2], "built ") || !strings.HasPrefix(lines[3], "go ") {
		t.Fatalf("quarry version printed %q; want quarry <version>, then commit, built and go lines", out.String())
	}

	out.Reset()
	if code := run(context.Background(), []string{"version", "--json"}, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("quarry version --json: exit %d, stderr %q", code, errb.String())
	}
	var b buildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil {
		t.Fatalf("quarry version --json printed %q: %v", out.String(), err)
	}
	if b.Version != version || b.Commit == "" || b.Date == "" || !strings.HasPrefix(b.Go, "go") || !strings.Contains(b.Platform, "/") {
		t.Fatalf("quarry version --json = %+v; want every field set", b)
	}

	if code := run(context.Background(), []string{"version", "extra"}, func(string) string { return "" }, &out, &errb); code != 2 {
		t.Fatalf("quarry version extra: exit %d, want 2", code)
	}
}
