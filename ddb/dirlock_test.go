package ddb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestIsLockErr(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"fcntl refused", syscall.EAGAIN, true},
		{"fcntl refused, wrapped", fmt.Errorf("pebble: %w", syscall.EWOULDBLOCK), true},
		{"lock file not openable", &fs.PathError{Op: "open", Path: "LOCK", Err: syscall.EACCES}, false},
		{"path error with EAGAIN", &fs.PathError{Op: "open", Path: "LOCK", Err: syscall.EAGAIN}, false},
		{"words are not a type", errors.New("lock held by current process"), false},
		{"other errno", syscall.EIO, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isLockErr(tt.err); got != tt.want {
				t.Fatalf("isLockErr(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestOpenTwiceInProcess: a directory open in this process is refused
// with ErrLocked, by any spelling of its path, until the store closes.
func TestOpenTwiceInProcess(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, again := range []string{dir, dir + "/", link, filepath.Join(dir, "x", "..")} {
		if s2, err := Open(again, nil); !errors.Is(err, ErrLocked) {
			if s2 != nil {
				s2.Close()
			}
			t.Fatalf("second Open(%s): %v, want ErrLocked", again, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(link, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}
