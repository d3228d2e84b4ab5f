package browser

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ErrUploadTooLarge is returned by StoreUpload when the file passes its
// byte limit; nothing of it is kept.
var ErrUploadTooLarge = errors.New("browser: upload too large")

// ErrUploadName is returned by StoreUpload for a file name that cannot be
// one file of the upload directory.
var ErrUploadName = errors.New("browser: invalid upload file name")

// uploadTempPrefix starts the names of files being written; client names
// may not start with it.
const uploadTempPrefix = ".quarry-upload-"

// UploadName returns the name a client's file name takes in the upload
// directory: its last path element (either slash separates), or an error
// wrapping ErrUploadName when nothing usable is left.
func UploadName(name string) (string, error) {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case name == "" || name == "." || name == "..":
		return "", fmt.Errorf("%w: empty", ErrUploadName)
	case len(name) > 255:
		return "", fmt.Errorf("%w: longer than 255 bytes", ErrUploadName)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("%w: control characters or invalid UTF-8", ErrUploadName)
	case strings.HasPrefix(name, uploadTempPrefix):
		return "", fmt.Errorf("%w: reserved prefix %s", ErrUploadName, uploadTempPrefix)
	}
	return name, nil
}

// UploadDir implements Browser.
func (b *chromiumBrowser) UploadDir() string { return b.uploadDir }

// StoreUpload implements Browser. The upload directory is quarry's (the
// browser user may enter it, not write it), so nothing the browser does
// can plant a link there; the file is written through an os.Root under a
// temporary name, handed to the browser user with mode 0400 and renamed
// into place, so that a page never sees a partial file.
func (b *chromiumBrowser) StoreUpload(name string, src io.Reader, limit int64) (string, int64, error) {
	name, err := UploadName(name)
	if err != nil {
		return "", 0, err
	}
	root, err := os.OpenRoot(b.uploadDir)
	if err != nil {
		return "", 0, fmt.Errorf("browser: upload: %w", err)
	}
	defer root.Close()
	tmpID, err := newID()
	if err != nil {
		return "", 0, fmt.Errorf("browser: upload: %w", err)
	}
	tmp := uploadTempPrefix + tmpID
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, fmt.Errorf("browser: upload: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = root.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, io.LimitReader(src, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return "", n, fmt.Errorf("browser: upload: %w", err)
	case n > limit:
		return "", n, fmt.Errorf("%w: more than %d bytes", ErrUploadTooLarge, limit)
	}
	if b.switched {
		if err := root.Chown(tmp, int(b.user.UID), int(b.user.GID)); err != nil {
			return "", n, fmt.Errorf("browser: upload: %w", err)
		}
	}
	if err := root.Chmod(tmp, 0o400); err != nil {
		return "", n, fmt.Errorf("browser: upload: %w", err)
	}
	if err := root.Rename(tmp, name); err != nil {
		return "", n, fmt.Errorf("browser: upload: %w", err)
	}
	keep = true
	return filepath.Join(b.uploadDir, name), n, nil
}
