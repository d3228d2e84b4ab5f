package sessions

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token claims of a signingKey: iss "wallcrawler", aud "cdp-access",
// sub = sessionId, exp = the session's expiry.
const (
	tokenIssuer   = "wallcrawler"
	tokenAudience = "cdp-access"
)

// ErrBadToken means a signingKey is missing, malformed, wrongly signed,
// expired or for another audience.
var ErrBadToken = errors.New("sessions: invalid signing key")

// Claims are the claims of a signingKey JWT.
type Claims struct {
	SessionID string `json:"sessionId"`
	ProjectID string `json:"projectId"`
	jwt.RegisteredClaims
}

// Tokens signs and verifies signingKeys with an HS256 secret.
type Tokens struct {
	secret []byte
	now    func() time.Time
}

// NewTokens returns Tokens using secret (at least 32 bytes recommended).
// now nil means time.Now.
func NewTokens(secret []byte, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{secret: secret, now: now}
}

// Sign returns the signingKey of a session.
func (t *Tokens) Sign(sessionID, projectID string, expires time.Time) (string, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	now := t.now()
	c := Claims{
		SessionID: sessionID,
		ProjectID: projectID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   sessionID,
			Audience:  jwt.ClaimStrings{tokenAudience},
			ExpiresAt: jwt.NewNumericDate(expires),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        hex.EncodeToString(nonce[:]),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sessions: sign token: %w", err)
	}
	return tok, nil
}

// Verify checks a signingKey and returns its claims. Only HS256 is
// accepted; issuer, audience and expiry are checked.
func (t *Tokens) Verify(token string) (Claims, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithAudience(tokenAudience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if c.SessionID == "" || c.Subject != c.SessionID {
		return Claims{}, fmt.Errorf("%w: no session", ErrBadToken)
	}
	return c, nil
}
