package sigv4

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Algorithm is the only signing algorithm the verifier accepts.
const Algorithm = "AWS4-HMAC-SHA256"

// Query-string parameters of a presigned request.
const (
	queryAlgorithm     = "X-Amz-Algorithm"
	queryCredential    = "X-Amz-Credential"
	querySignature     = "X-Amz-Signature"
	querySignedHeaders = "X-Amz-SignedHeaders"
	queryDate          = "X-Amz-Date"
	queryExpires       = "X-Amz-Expires"
)

// maxExpires is the longest lifetime of a presigned request: a week, the
// lifetime of a SigV4 signing key.
const maxExpires = 7 * 24 * 60 * 60

// authorization is what a request states about its signature, from either
// the Authorization header or the presigned query parameters.
type authorization struct {
	algorithm     string
	credential    string
	signedHeaders string
	signature     string
	date          string // X-Amz-Date or Date, as sent
	expires       string // X-Amz-Expires, presigned requests only
	presigned     bool
}

// parseAuthorization splits an Authorization header of the form
//
//	AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=hex
//
// Pairs may be separated by commas, white space or both. hasDate says whether
// the request carries an X-Amz-Date or Date header; its absence is reported in
// the same message as missing parameters, as DynamoDB does. The algorithm is
// returned unchecked: DynamoDB rejects an unsupported one only after checking
// the date.
func parseAuthorization(header string, hasDate bool) (authorization, *Error) {
	trimmed := strings.TrimSpace(header)
	if !strings.HasPrefix(trimmed, "AWS4-") {
		return authorization{}, missingToken()
	}
	var a authorization
	end := strings.IndexAny(trimmed, " \t,")
	if end < 0 {
		end = len(trimmed)
	}
	a.algorithm = trimmed[:end]
	for _, tok := range strings.FieldsFunc(trimmed[end:], isPairSeparator) {
		key, value, ok := strings.Cut(tok, "=")
		if !ok {
			return authorization{}, incomplete(
				"'%s' not a valid key=value pair (missing equal-sign) in Authorization header: '%s'.", tok, header)
		}
		switch key {
		case "Credential":
			a.credential = value
		case "SignedHeaders":
			a.signedHeaders = value
		case "Signature":
			a.signature = value
		}
	}
	var msg strings.Builder
	for _, p := range [...]struct{ name, value string }{
		{"Credential", a.credential},
		{"Signature", a.signature},
		{"SignedHeaders", a.signedHeaders},
	} {
		if p.value == "" {
			msg.WriteString("Authorization header requires '" + p.name + "' parameter. ")
		}
	}
	if !hasDate {
		msg.WriteString("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ")
	}
	if msg.Len() > 0 {
		msg.WriteString("Authorization=" + header)
		return authorization{}, &Error{Type: TypeIncompleteSignature, Message: msg.String()}
	}
	return a, nil
}

func isPairSeparator(r rune) bool { return r == ',' || r == ' ' || r == '\t' }

// parsePresigned reads the X-Amz-* query parameters of a presigned request.
func parsePresigned(q url.Values) (authorization, *Error) {
	a := authorization{
		algorithm:     q.Get(queryAlgorithm),
		credential:    q.Get(queryCredential),
		signature:     q.Get(querySignature),
		signedHeaders: q.Get(querySignedHeaders),
		date:          q.Get(queryDate),
		expires:       q.Get(queryExpires),
		presigned:     true,
	}
	var msg strings.Builder
	for _, p := range [...]struct{ name, value string }{
		{queryAlgorithm, a.algorithm},
		{queryCredential, a.credential},
		{querySignature, a.signature},
		{querySignedHeaders, a.signedHeaders},
		{queryDate, a.date},
	} {
		if p.value == "" {
			msg.WriteString("AWS query-string parameters must include '" + p.name + "'. ")
		}
	}
	if msg.Len() > 0 {
		msg.WriteString("Re-examine the query-string parameters.")
		return authorization{}, &Error{Type: TypeIncompleteSignature, Message: msg.String()}
	}
	return a, nil
}

// parseSigningTime reads X-Amz-Date's ISO-8601 basic format or, for a Date
// header, the HTTP date formats.
func parseSigningTime(s string) (time.Time, *Error) {
	if t, err := time.Parse(amzTimeFormat, s); err == nil {
		return t, nil
	}
	if t, err := http.ParseTime(s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, incomplete("Date must be in ISO-8601 'basic format'. Got '%s'. See http://en.wikipedia.org/wiki/ISO_8601", s)
}

// scope is a parsed credential: keyid/date/region/service/aws4_request.
type scope struct {
	accessKeyID, date, region, service, terminator string
}

// String is the credential scope that goes in the string to sign.
func (s scope) String() string {
	return s.date + "/" + s.region + "/" + s.service + "/" + s.terminator
}

// parseCredential splits a credential into its five parts. Trailing slashes
// are ignored, as DynamoDB does.
func parseCredential(credential string) (scope, *Error) {
	parts := strings.Split(strings.TrimRight(credential, "/"), "/")
	if len(parts) != 5 {
		return scope{}, incomplete("Credential must have exactly 5 slash-delimited elements, "+
			"e.g. keyid/date/region/service/term, got '%s'", credential)
	}
	return scope{parts[0], parts[1], parts[2], parts[3], parts[4]}, nil
}

// splitSignedHeaders returns the lower-cased, sorted names of SignedHeaders.
func splitSignedHeaders(s string) []string {
	var names []string
	for _, n := range strings.Split(s, ";") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
