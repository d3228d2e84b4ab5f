// Package datadir keeps quarry's data directory private: mode 0700 and
// the secrets quarry makes in it (mode 0600).
package datadir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
)

// Secure creates the data directory with mode 0700, or takes the
// group's and others' access away from an existing one that quarry owns
// (its files include secrets, and Wallcrawler's browsers run as another
// user who must not enter it). A directory quarry does not own, or a
// shared sticky one such as /tmp, is left alone with a warning.
func Secure(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	perm := st.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid != uint32(os.Geteuid()) || st.Mode()&os.ModeSticky != 0 {
		log.Warn("data directory is open to other users and not quarry's to tighten: its files may be read by them, Wallcrawler's browsers included",
			"dir", dir, "mode", fmt.Sprintf("%04o", perm))
		return nil
	}
	if err := os.Chmod(dir, perm&^0o077); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	log.Warn("data directory was open to other users: tightened", "dir", dir, "from", fmt.Sprintf("%04o", perm), "to", fmt.Sprintf("%04o", perm&^0o077))
	return nil
}

// Key reads the key kept in the file at path (one of the data
// directory's), creating it (32 random bytes, mode 0600) on first use.
func Key(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil && len(key) >= 32 {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return key, nil
}
