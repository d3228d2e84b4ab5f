package jsonhttp

import (
	"net/http"
	"strings"
)

// maxPathSegmentBytes bounds one segment of a system's URL path (an ID,
// once percent-decoded). The IDs quarry issues are far shorter; a longer
// one names nothing, and passed on it would make a store key over
// DynamoDB's limits (partition key 2048 bytes, sort key 1024), which the
// systems would answer with a 500.
const maxPathSegmentBytes = 512

// ErrorShape writes a system's error in its own shape (Error is the
// plain {"error": "..."} one).
type ErrorShape func(w http.ResponseWriter, status int, msg string)

// BoundedIDs answers 404, in shape, to a request whose path has a segment
// longer than maxPathSegmentBytes or a NUL byte (which no ID, and no file
// name of a blob, may hold), before h sees it.
func BoundedIDs(h http.Handler, shape ErrorShape) http.Handler {
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
