package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// canonicalRequest builds the SigV4 canonical request:
//
//	METHOD \n URI \n QUERY \n HEADERS \n SIGNEDHEADERS \n PAYLOADHASH
//
// signed holds the lower-cased, sorted names of the signed headers. For a
// presigned request the X-Amz-Signature parameter is left out of the query.
func canonicalRequest(r *http.Request, signed []string, payloadHash string, presigned bool) (string, *Error) {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(r))
	b.WriteByte('\n')
	rawQuery := ""
	if r.URL != nil {
		rawQuery = r.URL.RawQuery
	}
	b.WriteString(canonicalQuery(rawQuery, presigned))
	b.WriteByte('\n')
	for _, name := range signed {
		value, ok := headerValue(r, name)
		if !ok {
			return "", incomplete("'%s' is named as a SignedHeader, but it does not exist in the HTTP request.", name)
		}
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(value)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String(), nil
}

// canonicalURI is the request path as sent, URI-encoded once more: for every
// service but S3, SigV4 encodes each path segment twice. The path comes from
// RequestURI when the request came off the wire, so that handlers that rewrite
// r.URL (http.StripPrefix) do not change it.
func canonicalURI(r *http.Request) string {
	path := ""
	if u := r.RequestURI; strings.HasPrefix(u, "/") {
		path, _, _ = strings.Cut(u, "?")
	} else if r.URL != nil {
		if r.URL.Opaque != "" {
			// "//host/path" or "/path" kept verbatim by the client.
			opaque, _, _ := strings.Cut(r.URL.Opaque, "?")
			opaque = strings.TrimPrefix(opaque, "//")
			if i := strings.IndexByte(opaque, '/'); i >= 0 {
				path = opaque[i:]
			}
		} else {
			path = r.URL.EscapedPath()
		}
	}
	if path == "" {
		return "/"
	}
	return uriEncode(path, false)
}

// canonicalQuery decodes the raw query, encodes every name and value the
// SigV4 way, and sorts the pairs after encoding (by name, then value).
func canonicalQuery(rawQuery string, presigned bool) string {
	if rawQuery == "" {
		return ""
	}
	type pair struct{ k, v string }
	var pairs []pair
	for _, part := range strings.Split(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, v = unescapeQuery(k), unescapeQuery(v)
		if presigned && k == querySignature {
			continue
		}
		pairs = append(pairs, pair{uriEncode(k, true), uriEncode(v, true)})
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// unescapeQuery decodes a query component; an undecodable one is kept as
// sent (and will then not match what the client signed).
func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// uriEncode percent-encodes every byte outside the RFC 3986 unreserved set
// with upper-case hex; '/' is kept unless encodeSlash.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || (c == '/' && !encodeSlash) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// headerValue is the canonical value of a signed header: its values trimmed,
// runs of spaces collapsed, and joined with commas. Host and Content-Length
// are not in r.Header for every request, so they fall back to r.Host and
// r.ContentLength.
func headerValue(r *http.Request, name string) (string, bool) {
	var values []string
	if name == "host" {
		// A server moves Host out of r.Header into r.Host.
		host := r.Host
		if host == "" && r.URL != nil {
			host = r.URL.Host
		}
		if host == "" {
			return "", false
		}
		values = []string{host}
	} else if v, ok := lookupHeader(r.Header, name); ok {
		values = v
	} else if name == "content-length" && r.ContentLength >= 0 {
		// A client request keeps its length in r.ContentLength.
		values = []string{strconv.FormatInt(r.ContentLength, 10)}
	} else {
		return "", false
	}
	cleaned := make([]string, len(values))
	for i, v := range values {
		cleaned[i] = collapseSpaces(v)
	}
	return strings.Join(cleaned, ","), true
}

// lookupHeader finds a header under its canonical key or, failing that, a
// key set directly in the map in another case (h["x-foo"] = ...).
func lookupHeader(h http.Header, name string) ([]string, bool) {
	if v, ok := h[textproto.CanonicalMIMEHeaderKey(name)]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// collapseSpaces trims leading and trailing white space and turns every run
// of spaces into one space.
func collapseSpaces(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stringToSign is the SigV4 string to sign.
func stringToSign(amzDate string, sc scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return Algorithm + "\n" + amzDate + "\n" + sc.String() + "\n" + hex.EncodeToString(sum[:])
}

// signingKey derives the SigV4 signing key from a secret and a scope.
func signingKey(secret string, sc scope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), sc.date)
	k = hmacSHA256(k, sc.region)
	k = hmacSHA256(k, sc.service)
	return hmacSHA256(k, sc.terminator)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// payloadHash is the hex SHA-256 of a body.
func payloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
