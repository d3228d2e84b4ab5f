package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Cookie names.
const (
	sessionCookie = "quarry_console"
	preCookie     = "quarry_console_pre" // the sign-in form's CSRF nonce
)

// session is what the signed session cookie holds.
type session struct {
	Realm   string `json:"r"`           // Realm.Kind
	Subject string `json:"s"`           // the principal's id in its realm
	Check   string `json:"k,omitempty"` // Principal.Check
	Name    string `json:"n"`           // shown in the header
	Expires int64  `json:"e"`           // Unix seconds
	Nonce   string `json:"c"`           // the CSRF token derives from it
}

// sessions signs and checks session cookies with an HMAC key.
type sessions struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

func (s *sessions) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// encode returns the cookie value of ss: payload.signature, both base64url.
func (s *sessions) encode(ss session) string {
	b, _ := json.Marshal(ss)
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac("session", p))
}

var errNoSession = errors.New("console: no valid session")

// decode checks a cookie value's signature and expiry.
func (s *sessions) decode(v string) (session, error) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return session{}, errNoSession
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("session", p)) {
		return session{}, errNoSession
	}
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return session{}, errNoSession
	}
	var ss session
	if err := json.Unmarshal(b, &ss); err != nil || s.now().Unix() >= ss.Expires || ss.Nonce == "" {
		return session{}, errNoSession
	}
	return ss, nil
}

// csrf is the CSRF token of a session: forms carry it, and a state-changing
// request is accepted only when it matches the session cookie's.
func (s *sessions) csrf(ss session) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", ss.Nonce))
}

// checkCSRF compares a submitted token with the session's.
func (s *sessions) checkCSRF(ss session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf(ss))) == 1
}

// randomToken returns 32 random bytes in base64url.
func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("console: crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
