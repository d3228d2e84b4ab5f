// Package sigv4 verifies AWS Signature Version 4 on incoming HTTP requests
// for quarry's DynamoDB-compatible server.
//
// A Verifier holds a set of access key ids and their secrets. Verify checks a
// request signed in its Authorization header or presigned in its query string
// (X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires,
// X-Amz-SignedHeaders, X-Amz-Signature) and answers nil or an *Error whose
// Type and Message are those DynamoDB sends for the same failure, so that SDKs
// report the exceptions they would against AWS. The checks run in DynamoDB's
// order: presence of the signature, its components, the date format, the
// clock skew, Host among the signed headers, the algorithm, the credential
// and its scope, the access key id, and last the signature itself.
//
// The canonical request follows SigV4 for services other than S3: the path
// is URI-encoded a second time, the query is sorted after encoding, and the
// payload hash is the SHA-256 of the body. An X-Amz-Content-Sha256 header,
// when present, must equal that hash, so that the body is always
// authenticated (UNSIGNED-PAYLOAD is refused).
//
// Session tokens (X-Amz-Security-Token) are not checked: the verifier knows
// only long-term access keys, and the token is covered by the signature when
// the client signs it.
package sigv4

import (
	"crypto/hmac"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxSkew is how far a signing time may be from the verifier's clock,
// as on AWS.
const DefaultMaxSkew = 15 * time.Minute

// DefaultService is the service name a credential scope must carry.
const DefaultService = "dynamodb"

// Verifier checks SigV4 signatures against a set of credentials. It is safe
// for concurrent use.
type Verifier struct {
	creds   map[string]string
	now     func() time.Time
	maxSkew time.Duration
	service string
	region  string
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithClock sets the clock signing times are compared with (time.Now by
// default).
func WithClock(now func() time.Time) Option {
	return func(v *Verifier) {
		if now != nil {
			v.now = now
		}
	}
}

// WithMaxSkew sets how far a header-signed request's time may be from the
// clock, either way (DefaultMaxSkew by default). It also bounds how far in the
// future a presigned request's time may be.
func WithMaxSkew(d time.Duration) Option {
	return func(v *Verifier) {
		if d > 0 {
			v.maxSkew = d
		}
	}
}

// WithService sets the service name the credential scope must name
// (DefaultService by default).
func WithService(service string) Option {
	return func(v *Verifier) {
		if service != "" {
			v.service = service
		}
	}
}

// WithRegion makes the verifier require this region in the credential scope.
// By default any region is accepted, as a local server answers for all.
func WithRegion(region string) Option {
	return func(v *Verifier) { v.region = region }
}

// New returns a Verifier for creds, a map from access key id to secret access
// key. The map is copied.
func New(creds map[string]string, opts ...Option) *Verifier {
	v := &Verifier{
		creds:   make(map[string]string, len(creds)),
		now:     time.Now,
		maxSkew: DefaultMaxSkew,
		service: DefaultService,
	}
	for id, secret := range creds {
		v.creds[id] = secret
	}
	for _, opt := range opts {
		opt(v)
	}
	return v
}

// Verify checks the signature of r, whose body the caller has already read
// into body (the request's own Body is not touched). It returns nil when the
// signature is valid and an *Error otherwise.
func (v *Verifier) Verify(r *http.Request, body []byte) error {
	c, err := v.verifyHeaders(r)
	if err != nil {
		return err
	}
	if err := c.body(body); err != nil {
		return err
	}
	return nil
}

// VerifyHeaders checks what r's headers (or query) alone decide, before its
// body is read, and returns the check of the body to run once it is: every
// check of Verify but the last when the payload hash is unknown, and all of
// them when the client sent X-Amz-Content-Sha256 (which the signature
// covers), so that an unsigned, badly signed or unknown-key request is
// refused without reading its body. Verify(r, body) is VerifyHeaders(r)
// followed by BodyCheck.Verify(body). On failure the error is an *Error.
func (v *Verifier) VerifyHeaders(r *http.Request) (*BodyCheck, error) {
	c, err := v.verifyHeaders(r)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// BodyCheck is the rest of a signature check once the headers passed: the
// payload hash, and the signature itself when the hash was not sent.
type BodyCheck struct {
	r         *http.Request
	signed    []string
	presigned bool
	signedAt  time.Time
	sc        scope
	secret    string
	sig       string // the signature the request carries
	sentHash  string // X-Amz-Content-Sha256, already verified with the signature; "" when absent
}

// Verify checks the body against the signature; nil means the request is
// authentic. On failure the error is an *Error.
func (c *BodyCheck) Verify(body []byte) error {
	if err := c.body(body); err != nil {
		return err
	}
	return nil
}

func (c *BodyCheck) body(body []byte) *Error {
	hash := payloadHash(body)
	if c.sentHash != "" {
		if !strings.EqualFold(c.sentHash, hash) {
			return mismatch()
		}
		return nil
	}
	return c.signature(hash)
}

// signature compares the request's signature with the one computed over
// the canonical request whose payload hash is hash.
func (c *BodyCheck) signature(hash string) *Error {
	canonical, err := canonicalRequest(c.r, c.signed, hash, c.presigned)
	if err != nil {
		return err
	}
	want := hmacSHA256(signingKey(c.secret, c.sc), stringToSign(c.signedAt.Format(amzTimeFormat), c.sc, canonical))
	if !hmac.Equal([]byte(hex.EncodeToString(want)), []byte(c.sig)) {
		return mismatch()
	}
	return nil
}

func (v *Verifier) verifyHeaders(r *http.Request) (*BodyCheck, *Error) {
	if r == nil {
		return nil, missingToken()
	}
	var query url.Values
	if r.URL != nil {
		query, _ = url.ParseQuery(r.URL.RawQuery)
	}
	header := r.Header.Get("Authorization")
	_, presigned := query[queryAlgorithm]
	if header != "" && presigned {
		return nil, invalid(msgFoundBoth)
	}
	if header == "" && !presigned {
		return nil, missingToken()
	}

	var (
		auth authorization
		err  *Error
	)
	if presigned {
		auth, err = parsePresigned(query)
	} else {
		date := r.Header.Get("X-Amz-Date")
		if date == "" {
			date = r.Header.Get("Date")
		}
		auth, err = parseAuthorization(header, date != "")
		auth.date = date
	}
	if err != nil {
		return nil, err
	}

	signedAt, err := parseSigningTime(auth.date)
	if err != nil {
		return nil, err
	}
	if err := v.checkTime(signedAt, auth); err != nil {
		return nil, err
	}
	signed := splitSignedHeaders(auth.signedHeaders)
	if !slices.Contains(signed, "host") {
		return nil, invalid(msgHostNotSigned)
	}
	if unsigned := unsignedAmzHeaders(r.Header, signed); len(unsigned) > 0 {
		// Else a captured signed request could be replayed with another
		// X-Amz-Target: the same signature over another operation.
		return nil, incomplete("There were headers present in the request which were not signed: %s. Sign every x-amz-* header the request carries.", strings.Join(unsigned, ", "))
	}
	if auth.algorithm != Algorithm {
		return nil, incomplete("Unsupported AWS 'algorithm': '%s' (only %s for now). ", auth.algorithm, Algorithm)
	}
	sc, err := parseCredential(auth.credential)
	if err != nil {
		return nil, err
	}
	if err := v.checkScope(sc, signedAt); err != nil {
		return nil, err
	}
	secret, ok := v.creds[sc.accessKeyID]
	if !ok {
		return nil, unrecognized()
	}
	c := &BodyCheck{r: r, signed: signed, presigned: auth.presigned, signedAt: signedAt, sc: sc, secret: secret, sig: auth.signature}
	if sent := r.Header.Get("X-Amz-Content-Sha256"); sent != "" {
		// The signature covers the hash the client sent: check it now,
		// and the body against the hash once read.
		if err := c.signature(sent); err != nil {
			return nil, err
		}
		c.sentHash = sent
	}
	return c, nil
}

// unsignedAmzHeaders returns the lower-cased names of the x-amz-* headers
// of h (X-Amz-Target, X-Amz-Date, X-Amz-Security-Token, …) that signed,
// the request's SignedHeaders, does not list, sorted.
func unsignedAmzHeaders(h http.Header, signed []string) []string {
	var out []string
	for name := range h {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "x-amz-") && !slices.Contains(signed, lower) {
			out = append(out, lower)
		}
	}
	slices.Sort(out)
	return out
}

// checkTime rejects a signing time outside the skew window or, for a
// presigned request with X-Amz-Expires, past its expiry.
func (v *Verifier) checkTime(signedAt time.Time, auth authorization) *Error {
	now := v.now().UTC()
	if signedAt.After(now.Add(v.maxSkew)) {
		return notYetCurrent(signedAt, now, v.maxSkew)
	}
	if !auth.presigned || auth.expires == "" {
		if signedAt.Before(now.Add(-v.maxSkew)) {
			return expired(signedAt, now, v.maxSkew)
		}
		return nil
	}
	secs, perr := strconv.ParseInt(auth.expires, 10, 64)
	switch {
	case perr != nil:
		return incomplete("X-Amz-Expires should be a number")
	case secs < 0:
		return incomplete("X-Amz-Expires must be non-negative")
	case secs > maxExpires:
		return incomplete("X-Amz-Expires must be less than a week (in seconds) that is %d", maxExpires)
	}
	lifetime := time.Duration(secs) * time.Second
	if now.After(signedAt.Add(lifetime)) {
		return expired(signedAt, now, lifetime)
	}
	return nil
}

// checkScope compares the credential scope with the verifier's region and
// service and with the signing date, reporting every mismatch at once.
func (v *Verifier) checkScope(sc scope, signedAt time.Time) *Error {
	var msg strings.Builder
	if v.region != "" && sc.region != v.region {
		msg.WriteString("Credential should be scoped to a valid region, not '" + sc.region + "'. ")
	}
	if sc.service != v.service {
		msg.WriteString("Credential should be scoped to correct service: '" + v.service + "'. ")
	}
	if sc.terminator != "aws4_request" {
		msg.WriteString("Credential should be scoped with a valid terminator: 'aws4_request', not '" + sc.terminator + "'. ")
	}
	if day := signedAt.Format(amzDateFormat); sc.date != day {
		msg.WriteString("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '" +
			sc.date + "' != '" + day + "', from '" + signedAt.Format(amzTimeFormat) + "'.")
	}
	if msg.Len() > 0 {
		return invalid(msg.String())
	}
	return nil
}
