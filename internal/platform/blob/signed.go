package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors returned by Signer.Verify. Callers match them with errors.Is.
var (
	// ErrBadSignature means the signature or expiry parameter is missing,
	// malformed or does not match the method, key and expiry.
	ErrBadSignature = errors.New("blob: bad signature")
	// ErrExpired means the signature is valid but its expiry has passed.
	ErrExpired = errors.New("blob: signed URL expired")
)

// Query parameters of a signed URL.
const (
	paramExpires   = "expires"
	paramSignature = "signature"
)

// Signer issues and verifies expiring, HMAC-signed URLs through which
// clients PUT objects into a Store without other credentials. A URL is bound
// to one HTTP method and one key and carries its expiry (Unix seconds) and
// the hex HMAC-SHA256 of "method\nkey\nexpires" under the secret. It is
// safe for concurrent use.
type Signer struct {
	secret []byte
	prefix string
	now    func() time.Time
}

// NewSigner returns a Signer that signs with secret and issues URLs under
// prefix, the URL path its Handler is mounted at (e.g. "/blobs/"; a missing
// leading or trailing slash is added). now returns the current time; nil
// means time.Now.
func NewSigner(secret []byte, prefix string, now func() time.Time) *Signer {
	if !strings.HasPrefix(prefix, "/") {
		prefix = "/" + prefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{secret: append([]byte(nil), secret...), prefix: prefix, now: now}
}

// URL returns a URL at origin ("http://host:port") through which method may
// be applied to key until ttl from now: origin, the prefix, the escaped key,
// then ?expires=<unix seconds>&signature=<hex>.
func (s *Signer) URL(origin, method, key string, ttl time.Duration) string {
	expires := strconv.FormatInt(s.now().Add(ttl).Unix(), 10)
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	q := url.Values{}
	q.Set(paramExpires, expires)
	q.Set(paramSignature, hex.EncodeToString(s.mac(method, key, expires)))
	return strings.TrimSuffix(origin, "/") + s.prefix + strings.Join(segs, "/") + "?" + q.Encode()
}

// Verify checks that query (a signed URL's query) authorizes method on key
// now. It fails with ErrBadSignature when the signature is missing or does
// not match, and with ErrExpired when it matches but has expired.
func (s *Signer) Verify(method, key string, query url.Values) error {
	expires := query.Get(paramExpires)
	sig, err := hex.DecodeString(query.Get(paramSignature))
	if expires == "" || err != nil || len(sig) != sha256.Size {
		return fmt.Errorf("%w: missing or malformed signature", ErrBadSignature)
	}
	if !hmac.Equal(sig, s.mac(method, key, expires)) {
		return fmt.Errorf("%w: signature does not match", ErrBadSignature)
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed expiry", ErrBadSignature)
	}
	if !s.now().Before(time.Unix(exp, 0)) {
		return fmt.Errorf("%w at %s", ErrExpired, time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

func (s *Signer) mac(method, key, expires string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(method + "\n" + key + "\n" + expires))
	return m.Sum(nil)
}

// HandlerOptions configures a Signer's Handler.
type HandlerOptions struct {
	// MaxBytes bounds an uploaded object; ≤ 0: unlimited.
	MaxBytes int64
	// Allow, when set, decides whether the object at key may (still) be
	// written: the system that issued the URL looks up what owns the key,
	// so that a URL outlives neither its owner nor the owner's deletion.
	// It is asked before the body is read and again once the object is
	// stored. An error matching ErrNotFound refuses the upload with 404
	// (when it comes after the Put, the object just written is deleted
	// again); any other error answers 500 (after the Put, the object is
	// kept: its owner may well exist).
	Allow func(ctx context.Context, key string) error
}

// Handler returns the HTTP handler of the signed URLs, to be mounted at the
// prefix with the prefix still in the request path, e.g.
//
//	mux.Handle("/blobs/", signer.Handler(store, 64<<20))
//
// It is HandlerWith(store, HandlerOptions{MaxBytes: maxBytes}).
func (s *Signer) Handler(store Store, maxBytes int64) http.Handler {
	return s.HandlerWith(store, HandlerOptions{MaxBytes: maxBytes})
}

// HandlerWith returns the HTTP handler of the signed URLs (see Handler).
// A PUT with a valid signature streams its body into store.Put under the
// key named by the rest of the path and answers 200 {"key": key}. A body
// larger than o.MaxBytes is refused with 413 and nothing is stored: the
// Store's Put sees a read error and, by the Store contract, keeps no
// partial object. A missing or bad signature answers 403, an expired one
// 403 saying so, a key o.Allow refuses 404, any other method 405. Error
// bodies are {"error": "..."}.
func (s *Signer) HandlerWith(store Store, o HandlerOptions) http.Handler {
	maxBytes := o.MaxBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			w.Header().Set("Allow", http.MethodPut)
			writeBlobError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use PUT")
			return
		}
		key, ok := strings.CutPrefix(r.URL.Path, s.prefix)
		if !ok || key == "" {
			writeBlobError(w, http.StatusNotFound, "no object key in path")
			return
		}
		if err := s.Verify(r.Method, key, r.URL.Query()); err != nil {
			msg := "invalid or missing signature"
			if errors.Is(err, ErrExpired) {
				msg = "signed URL has expired"
			}
			writeBlobError(w, http.StatusForbidden, msg)
			return
		}
		if o.Allow != nil && refused(w, o.Allow(r.Context(), key)) {
			return
		}
		if maxBytes > 0 && r.ContentLength > maxBytes {
			writeBlobError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("object larger than %d bytes", maxBytes))
			return
		}
		var body io.Reader = r.Body
		lr := &limitedReader{r: r.Body}
		if maxBytes > 0 {
			lr.r = http.MaxBytesReader(w, r.Body, maxBytes)
			body = lr
		}
		err := store.Put(r.Context(), key, body)
		switch {
		case lr.tooLarge:
			writeBlobError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("object larger than %d bytes", maxBytes))
		case errors.Is(err, ErrBadKey):
			writeBlobError(w, http.StatusBadRequest, "invalid object key")
		case err != nil:
			writeBlobError(w, http.StatusInternalServerError, "could not store the object")
		default:
			// The owner may have gone while the body streamed in: then
			// the object must not outlive it.
			if o.Allow != nil {
				ctx := context.WithoutCancel(r.Context())
				aerr := o.Allow(ctx, key)
				if errors.Is(aerr, ErrNotFound) {
					_ = store.Delete(ctx, key)
				}
				if refused(w, aerr) {
					return
				}
			}
			writeBlobJSON(w, http.StatusOK, map[string]string{"key": key})
		}
	})
}

// refused answers an Allow error, 404 for ErrNotFound and 500 for any
// other, and reports whether there was one.
func refused(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNotFound):
		writeBlobError(w, http.StatusNotFound, "the object's owner no longer exists; this upload URL is void")
	default:
		writeBlobError(w, http.StatusInternalServerError, "could not check the upload")
	}
	return true
}

// limitedReader records whether the wrapped http.MaxBytesReader refused to
// read past its limit, whatever the Store does with the error.
type limitedReader struct {
	r        io.Reader
	tooLarge bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		l.tooLarge = true
	}
	return n, err
}

func writeBlobError(w http.ResponseWriter, status int, msg string) {
	writeBlobJSON(w, status, map[string]string{"error": msg})
}

func writeBlobJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Uploader issues URLs through which a client PUTs one object without other
// credentials: a Signer's (served by its Handler) or an S3 presigned URL.
type Uploader interface {
	// UploadURL returns a URL accepting a PUT of the object at key until
	// ttl from now. origin ("http://host:port") is where the caller's own
	// server is reached; implementations that upload elsewhere ignore it.
	UploadURL(ctx context.Context, origin, key string, ttl time.Duration) (string, error)
}

var _ Uploader = (*Signer)(nil)

// UploadURL returns s.URL(origin, "PUT", key, ttl): a PUT URL for the
// Handler mounted at origin. It fails only for an invalid key.
func (s *Signer) UploadURL(_ context.Context, origin, key string, ttl time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return s.URL(origin, http.MethodPut, key, ttl), nil
}
