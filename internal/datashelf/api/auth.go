package api

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of a signed request (besides Authorization: Bearer <key id>).
const (
	HeaderTimestamp = "X-Timestamp"
	HeaderNonce     = "X-Nonce"
	HeaderSignature = "X-Signature"
)

// maxNonceLen bounds X-Nonce.
const maxNonceLen = 128

// Sign signs req for the scraper endpoints: it sets Authorization: Bearer
// keyID, X-Timestamp (now in Unix seconds), X-Nonce and X-Signature, the hex
// HMAC-SHA256 under secret of
//
//	METHOD\nPATH?QUERY\ntimestamp\nnonce\nbody
//
// where PATH?QUERY is req.URL.RequestURI() (the path as sent, with "?" and
// the raw query only when there is one) and body is exactly the bytes sent as
// the request body (nil for none). The path is the full one the client
// requests (including the /datashelf prefix). Each nonce must be unique
// (e.g. 16 random bytes in hex); the server refuses one seen within the
// signature window. Sign returns the signature.
func Sign(keyID string, secret []byte, req *http.Request, body []byte, now time.Time, nonce string) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := signature(secret, req.Method, req.URL.RequestURI(), ts, nonce, body)
	req.Header.Set("Authorization", "Bearer "+keyID)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderSignature, sig)
	return sig
}

func signature(secret []byte, method, requestURI, ts, nonce string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, method+"\n"+requestURI+"\n"+ts+"\n"+nonce+"\n")
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// requestURI is the path?query the client sent, before any StripPrefix.
func requestURI(r *http.Request) string {
	if r.RequestURI == "" {
		return r.URL.RequestURI()
	}
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil { // absolute form
		return u.RequestURI()
	}
	return r.RequestURI
}

// nonceCache remembers accepted nonces until their timestamp leaves the
// signature window, in at most max entries.
type nonceCache struct {
	max int

	mu   sync.Mutex
	seen map[string]time.Time // key id + "\x00" + nonce → expiry
}

func newNonceCache(max int) *nonceCache {
	return &nonceCache{max: max, seen: map[string]time.Time{}}
}

var (
	errReplay    = errors.New("nonce already used")
	errNonceFull = errors.New("nonce cache full")
)

// use records nonce (valid until expiry) and fails if it was already seen.
func (c *nonceCache) use(key string, expiry, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[key]; ok && now.Before(exp) {
		return errReplay
	}
	if len(c.seen) >= c.max {
		for k, exp := range c.seen {
			if !now.Before(exp) {
				delete(c.seen, k)
			}
		}
		if len(c.seen) >= c.max {
			return errNonceFull
		}
	}
	c.seen[key] = expiry
	return nil
}

// tooLarge answers 413 for a body over MaxBodyBytes. The connection is
// closed after the answer, so the rest of the body is never read.
func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large (limit "+strconv.Itoa(MaxBodyBytes)+" bytes)")
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="datashelf"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", msg)
}

// signed verifies the request's HMAC signature (see Sign) and the per-key
// rate limit before calling next with the body, which it reads whole and
// replaces with an in-memory copy. A body over MaxBodyBytes is refused with
// 413 without being read whole: at once when Content-Length announces it,
// otherwise as soon as the limit is passed.
func (s *server) signed(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.opts.Now()
		keyID, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || keyID == "" {
			unauthorized(w, "missing Authorization: Bearer <key id>")
			return
		}
		secret, ok := s.opts.Keys[keyID]
		if !ok || len(secret) == 0 {
			unauthorized(w, "unknown key")
			return
		}
		tsHeader := r.Header.Get(HeaderTimestamp)
		ts, err := strconv.ParseInt(tsHeader, 10, 64)
		if err != nil {
			unauthorized(w, "missing or malformed X-Timestamp")
			return
		}
		at := time.Unix(ts, 0)
		if d := now.Sub(at); d > SignatureWindow || d < -SignatureWindow {
			unauthorized(w, "X-Timestamp is outside the allowed window of ±5 minutes")
			return
		}
		nonce := r.Header.Get(HeaderNonce)
		if nonce == "" || len(nonce) > maxNonceLen || strings.ContainsAny(nonce, "\r\n\x00") {
			unauthorized(w, "missing or malformed X-Nonce")
			return
		}
		got, err := hex.DecodeString(r.Header.Get(HeaderSignature))
		if err != nil || len(got) != sha256.Size {
			unauthorized(w, "missing or malformed X-Signature")
			return
		}
		// A body announced larger than the limit is refused before a byte
		// of it is read; one without Content-Length (chunked) is read
		// through MaxBytesReader, which stops one byte past the limit.
		if r.ContentLength > MaxBodyBytes {
			tooLarge(w)
			return
		}
		var body []byte
		if r.Body != nil {
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					tooLarge(w)
					return
				}
				writeError(w, http.StatusBadRequest, "bad_body", "cannot read request body")
				return
			}
		}
		want, _ := hex.DecodeString(signature(secret, r.Method, requestURI(r), tsHeader, nonce, body))
		if !hmac.Equal(got, want) {
			unauthorized(w, "bad signature")
			return
		}
		switch err := s.nonces.use(keyID+"\x00"+nonce, at.Add(SignatureWindow), now); err {
		case nil:
		case errReplay:
			unauthorized(w, "nonce already used")
			return
		default:
			s.opts.Logger.Warn("datashelf api: nonce cache full")
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "busy", "too many signed requests; retry later")
			return
		}
		if s.keys != nil && !s.admit(w, s.keys, keyID) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r)
	})
}
