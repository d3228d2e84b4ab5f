package console

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Unavailable answers in place of a console that could not start:
// 503 with the reason at the console's paths, a JSON 404 elsewhere.
func Unavailable(err error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, msg := http.StatusServiceUnavailable, "console unavailable: "+err.Error()
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/console/") {
			status, msg = http.StatusNotFound, "not found: "+r.URL.Path
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	})
}
