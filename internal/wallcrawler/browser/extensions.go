package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// extensionDirName is the directory of a browser's work dir that holds
// its unpacked extension.
const extensionDirName = "extension"

// unsafeExtensionDebugging is the switch under which Chromium documents
// CDP's Extensions.loadUnpacked (with --remote-debugging-pipe). Tenants
// never reach the Extensions domain: the CDP filter refuses all of it.
const unsafeExtensionDebugging = "--enable-unsafe-extension-debugging"

// ExtensionID returns the id Chromium gives an unpacked extension loaded
// from dir, an absolute path with symbolic links resolved: the first 128
// bits of the SHA-256 of the path, each hex digit written as a letter
// from a to p.
func ExtensionID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	h := hex.EncodeToString(sum[:16])
	id := make([]byte, len(h))
	for i := range len(h) {
		d := h[i] - '0'
		if h[i] >= 'a' {
			d = h[i] - 'a' + 10
		}
		id[i] = 'a' + d
	}
	return string(id)
}

// ErrExtensionNeedsNetns refuses an extension to a browser that would
// share the host's network namespace while an egress proxy enforces the
// network policy: an extension's proxy settings (chrome.proxy) replace
// --proxy-server, and only the namespace, whose one way out is the
// proxy, keeps the policy then.
var ErrExtensionNeedsNetns = errors.New("browser: extensions need the browser in a network namespace of its own, and quarry could not make one (it lacks CAP_SYS_ADMIN: run it as root or grant the capability); sessions without extensionId work")

// prepareExtension unpacks b's extension with unpack into
// <work dir>/extension, hands it to the browser's user read-only
// (files 0400, directories 0500, or 0700 when the browser runs as quarry's
// own user, which must remove them; nobody else may read them), and records
// in the profile's preferences that the extension has no access to
// file:// URLs. Chromium grants that access to unpacked extensions
// unless the preference says otherwise, and it must be in place before
// the extension loads: its service worker could read host files at once.
func (c *Chromium) prepareExtension(b *chromiumBrowser, unpack func(dir string) error) error {
	dir := filepath.Join(b.workDir, extensionDirName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("extension dir: %w", err)
	}
	if err := unpack(dir); err != nil {
		return fmt.Errorf("unpack extension: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("extension dir: %w", err)
	}
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: a symbolic link", p)
		case c.confinement.Switched:
			if err := os.Lchown(p, int(b.user.UID), int(b.user.GID)); err != nil {
				return err
			}
		}
		mode := fs.FileMode(0o400)
		switch {
		case d.IsDir() && c.confinement.Switched:
			mode = 0o500 // quarry, root, still removes it with the work dir
		case d.IsDir():
			mode = 0o700 // quarry's own user must be able to remove it
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		return fmt.Errorf("hand the extension to %s: %w", b.user, err)
	}
	b.extensionDir, b.extensionID = real, ExtensionID(real)
	return updatePrefs(b.userDataDir, func(prefs map[string]any) {
		ext := subMap(prefs, "extensions")
		settings := subMap(ext, "settings")
		own := subMap(settings, b.extensionID)
		own["newAllowFileAccess"] = false
	})
}

// loadExtension loads b's unpacked extension on quarry's own DevTools
// session and checks that Chromium gave it the id whose preferences
// prepareExtension wrote (any other id would run with file access).
func (b *chromiumBrowser) loadExtension(ctx context.Context) error {
	res, err := b.call(ctx, "Extensions.loadUnpacked", map[string]any{"path": b.extensionDir})
	if err != nil {
		return fmt.Errorf("load extension: %w", err)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return fmt.Errorf("load extension: %w", err)
	}
	if out.ID != b.extensionID {
		return fmt.Errorf("load extension: Chromium gave it the id %q, not %q: its file access could not be turned off", out.ID, b.extensionID)
	}
	b.logger.Info("extension loaded", "extension", out.ID)
	return nil
}

// ExtensionID returns the Chromium id of the extension loaded into b, ""
// without one.
func (b *chromiumBrowser) ExtensionID() string { return b.extensionID }

// subMap returns m[key] as a map, creating it (or replacing a value of
// another type) when needed.
func subMap(m map[string]any, key string) map[string]any {
	sub, ok := m[key].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[key] = sub
	}
	return sub
}
