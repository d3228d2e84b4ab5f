package main

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// maxPathSegmentBytes bounds one segment of a system's URL path (an ID,
// once percent-decoded). The IDs quarry issues are far shorter; a longer
// one names nothing, and passed on it would make a store key over
// DynamoDB's limits (partition key 2048 bytes, sort key 1024), which the
// systems would answer with a 500.
const maxPathSegmentBytes = 512

// errorShape writes a system's 404 in its own error shape.
type errorShape func(w http.ResponseWriter, status int, msg string)

// browserbaseError is Wallcrawler's error shape (Browserbase's).
func browserbaseError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg})
}

// dataShelfError is DataShelf's error shape.
func dataShelfError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "not_found", "message": msg}})
}

// plainError is the {"error": "..."} shape of Checks, EECAR and the rest.
var plainError errorShape = jsonhttp.Error

// boundedIDs answers 404, in shape, to a request whose path has a segment
// longer than maxPathSegmentBytes or a NUL byte (which no ID, and no file
// name of a blob, may hold), before h sees it.
func boundedIDs(h http.Handler, shape errorShape) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.IndexByte(r.URL.Path, 0) >= 0 {
			shape(w, http.StatusNotFound, "not found: an ID holds no NUL byte")
			return
		}
		if len(r.URL.Path) > maxPathSegmentBytes {
			for seg := range strings.SplitSeq(r.URL.Path, "/") {
				if len(seg) > maxPathSegmentBytes {
					shape(w, http.StatusNotFound, "not found: an ID is at most 512 bytes")
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}
