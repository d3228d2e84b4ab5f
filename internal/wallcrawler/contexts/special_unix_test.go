//go:build unix

package contexts_test

import (
	"path/filepath"
	"syscall"
	"testing"
)

// mkSpecial adds a FIFO to dir; Persist must leave it out (and not block
// reading it).
func mkSpecial(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
}
