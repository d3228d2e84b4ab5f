package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// getImage serves GET /images/{key...} from the blob store. Keys are
// content-addressed, so answers are cached for a year; the ETag is derived
// from the key.
func (s *server) getImage(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if s.opts.Blobs == nil || !plausibleImageKey(key) {
		writeError(w, http.StatusNotFound, "not_found", "image not found")
		return
	}
	sum := sha256.Sum256([]byte(key))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	rc, err := s.opts.Blobs.Get(r.Context(), key)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "image not found")
		return
	case errors.Is(err, blob.ErrBadKey):
		writeError(w, http.StatusBadRequest, "invalid_parameter", "key: invalid image key")
		return
	case namesNothing(err):
		// The key's path cannot exist on disk (a segment is a file, or a
		// name the file system refuses): no image has it.
		writeError(w, http.StatusNotFound, "not_found", "image not found")
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Cache-Control", cacheImage)
	h.Set("ETag", etag)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	ct := mime.TypeByExtension(path.Ext(key))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		if _, err := io.Copy(w, rc); err != nil {
			s.opts.Logger.Warn("datashelf api: image copy", "key", key, "err", err)
		}
	}
}

// Bounds on image keys. The keys the crawler writes are short
// ("images/ab/<64 hex digits>.jpg"); a longer segment is over the file
// system's name limit and a longer key over S3's key limit, so such a key
// names no image.
const (
	maxImageKeyBytes     = 1024
	maxImageSegmentBytes = 255
)

// plausibleImageKey reports whether key could name a stored image: valid
// UTF-8, no NUL or other control byte, at most maxImageKeyBytes, and no
// segment over maxImageSegmentBytes. Keys failing it answer 404 without
// reaching the blob store.
func plausibleImageKey(key string) bool {
	if key == "" || len(key) > maxImageKeyBytes || !utf8.ValidString(key) {
		return false
	}
	if strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if len(seg) > maxImageSegmentBytes {
			return false
		}
	}
	return true
}

// namesNothing reports whether a blob store error means that the key
// cannot name an object on this file system: a segment of its path is a
// regular file, or a name is too long or invalid.
func namesNothing(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG) ||
		errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EILSEQ)
}
