// Package jsonhttp writes and reads the JSON bodies of quarry's REST APIs
// (Checks, EECAR): responses as JSON, errors as {"error": "..."}, request
// bodies bounded and decoded with clear 400/413 answers.
package jsonhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Write answers status with v as JSON.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Error answers status with {"error": msg}.
func Error(w http.ResponseWriter, status int, msg string) {
	Write(w, status, map[string]string{"error": msg})
}

// Decode reads a JSON body of at most limit bytes into v. An empty body
// leaves v as it is. With strict, unknown fields are refused. On failure
// it answers 413 (too large) or 400 (malformed) and returns false.
func Decode(w http.ResponseWriter, r *http.Request, v any, limit int64, strict bool) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body too large (at most %d bytes)", limit))
		} else {
			Error(w, http.StatusBadRequest, "could not read the body: "+err.Error())
		}
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		Error(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}
