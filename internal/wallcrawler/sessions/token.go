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

// Live-view tokens authorize one viewer of a session's page in the URL of
// the live view (see package live): a JWT signed by a key derived from the
// shared secret (HMAC-SHA256(secret, liveKeyLabel)) with its own audience,
// so that it is never valid as a signingKey or a node token, nor the
// other way round. It names the session, the page ("" for the session's
// first page) and the mode, and lives at most LiveTokenTTL.
const (
	liveKeyLabel  = "quarry live view v1"
	liveAudience  = "live-view"
	liveSubPrefix = "live:"
	// LiveTokenTTL is the longest a live-view token is accepted; it never
	// outlives its session.
	LiveTokenTTL = time.Hour
)

// LiveClaims are the claims of a live-view token.
type LiveClaims struct {
	SessionID string `json:"sessionId"`
	PageID    string `json:"pageId,omitempty"`
	// ViewOnly marks a token whose viewer's input is ignored.
	ViewOnly bool `json:"viewOnly,omitempty"`
	jwt.RegisteredClaims
}

func (t *Tokens) liveKey() []byte {
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(liveKeyLabel))
	return mac.Sum(nil)
}

// SignLive returns a live-view token for session sessionID's page pageID
// ("" for its first page), expiring at the earlier of expires and
// LiveTokenTTL from now.
func (t *Tokens) SignLive(sessionID, pageID string, viewOnly bool, expires time.Time) (string, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	now := t.now()
	if limit := now.Add(LiveTokenTTL); expires.IsZero() || expires.After(limit) {
		expires = limit
	}
	c := LiveClaims{
		SessionID: sessionID, PageID: pageID, ViewOnly: viewOnly,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   liveSubPrefix + sessionID + "/" + pageID,
			Audience:  jwt.ClaimStrings{liveAudience},
			ExpiresAt: jwt.NewNumericDate(expires),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        hex.EncodeToString(nonce[:]),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.liveKey())
	if err != nil {
		return "", fmt.Errorf("sessions: sign live-view token: %w", err)
	}
	return tok, nil
}

// VerifyLive checks a live-view token and returns its claims: signature,
// issuer, audience, expiry and lifetime are checked; which session and
// page it names is the caller's to compare.
func (t *Tokens) VerifyLive(token string) (LiveClaims, error) {
	var c LiveClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.liveKey(), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithAudience(liveAudience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(t.now),
	)
	if err != nil {
		return LiveClaims{}, fmt.Errorf("%w: live-view token: %v", ErrBadToken, err)
	}
	if c.SessionID == "" || c.Subject != liveSubPrefix+c.SessionID+"/"+c.PageID {
		return LiveClaims{}, fmt.Errorf("%w: live-view token names no session", ErrBadToken)
	}
	if c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > LiveTokenTTL {
		return LiveClaims{}, fmt.Errorf("%w: live-view token lives too long", ErrBadToken)
	}
	return c, nil
}
