package sessions

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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

// Node-to-node credentials: a quarry process that forwards a client's CDP
// connection to the process owning the session's browser proves it is a
// node of the same installation with a JWT signed by a key derived from
// the shared secret (HMAC-SHA256(secret, nodeKeyLabel)), so that no
// signingKey a tenant holds is ever valid as one, and with its own
// audience. It names the session and page and lives NodeTokenTTL.
const (
	nodeKeyLabel  = "quarry node-to-node cdp v1"
	nodeAudience  = "quarry-node-cdp"
	nodeSubPrefix = "node-cdp:"
	// NodeTokenTTL is how long a node-to-node token is accepted: long
	// enough for one dial, short enough that a leaked one is soon useless.
	NodeTokenTTL = 30 * time.Second
)

// nodeKey is the key of node-to-node tokens.
func (t *Tokens) nodeKey() []byte {
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(nodeKeyLabel))
	return mac.Sum(nil)
}

// SignNode returns a node-to-node token for one connection to session
// sessionID's page pageID ("" for the browser target), issued by node.
func (t *Tokens) SignNode(node, sessionID, pageID string) (string, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	now := t.now()
	c := jwt.RegisteredClaims{
		Issuer:    node,
		Subject:   nodeSubPrefix + sessionID + "/" + pageID,
		Audience:  jwt.ClaimStrings{nodeAudience},
		ExpiresAt: jwt.NewNumericDate(now.Add(NodeTokenTTL)),
		IssuedAt:  jwt.NewNumericDate(now),
		ID:        hex.EncodeToString(nonce[:]),
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.nodeKey())
	if err != nil {
		return "", fmt.Errorf("sessions: sign node token: %w", err)
	}
	return tok, nil
}

// VerifyNode checks a node-to-node token for session sessionID's page
// pageID and returns the node that issued it.
func (t *Tokens) VerifyNode(token, sessionID, pageID string) (string, error) {
	var c jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.nodeKey(), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(nodeAudience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(t.now),
	)
	if err != nil {
		return "", fmt.Errorf("%w: node token: %v", ErrBadToken, err)
	}
	if c.Subject != nodeSubPrefix+sessionID+"/"+pageID {
		return "", fmt.Errorf("%w: node token of another session", ErrBadToken)
	}
	if c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > NodeTokenTTL {
		return "", fmt.Errorf("%w: node token lives too long", ErrBadToken)
	}
	return c.Issuer, nil
}
