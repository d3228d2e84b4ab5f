package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Cache-Control values.
const (
	cachePublic = "public, max-age=60"
	cacheImage  = "public, max-age=31536000, immutable"
	cacheNone   = "no-store"
)

// errorBody is the JSON shape of every error.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// paramError is a bad query or body parameter; it answers 400 and names the
// parameter.
type paramError struct {
	Param  string
	Reason string
}

func (e *paramError) Error() string { return "invalid parameter " + e.Param + ": " + e.Reason }

func badParam(param, reason string) error { return &paramError{Param: param, Reason: reason} }

// writeError writes the JSON error body with status. Errors are never cached.
func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(errorBody{Error: errorDetail{Code: code, Message: message}})
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", cacheNone)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeParamError answers 400 for a paramError.
func writeParamError(w http.ResponseWriter, e *paramError) {
	writeError(w, http.StatusBadRequest, "invalid_parameter", e.Param+": "+e.Reason)
}

// fail maps err to a response: paramError and store.ErrInvalid → 400,
// store.ErrNotFound → 404, anything else → a logged 500.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var pe *paramError
	switch {
	case errors.As(err, &pe):
		writeParamError(w, pe)
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "not found")
	case errors.Is(err, store.ErrInvalid):
		writeError(w, http.StatusBadRequest, "invalid_parameter", strings.TrimPrefix(err.Error(), "store: "))
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		writeError(w, http.StatusServiceUnavailable, "canceled", "request canceled")
	default:
		s.opts.Logger.Error("datashelf api: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
	}
}

// writeJSON writes v as JSON with status. Successful GET/HEAD answers carry
// an ETag (a hash of the body) and cacheControl, and If-None-Match matching
// the ETag yields 304 without a body.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, cacheControl string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", cacheControl)
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusOK && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		sum := sha256.Sum256(b)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if etagMatch(r.Header.Get("If-None-Match"), etag) {
			h.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// etagMatch reports whether an If-None-Match header matches etag, using the
// weak comparison RFC 9110 prescribes for If-None-Match.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
