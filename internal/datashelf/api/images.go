package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"

	"github.com/quarrydb/quarry/internal/platform/blob"
)

// getImage serves GET /images/{key...} from the blob store. Keys are
// content-addressed, so answers are cached for a year; the ETag is derived
// from the key.
func (s *server) getImage(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if s.opts.Blobs == nil {
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
