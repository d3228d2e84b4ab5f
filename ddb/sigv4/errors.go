package sigv4

import (
	"fmt"
	"time"
)

// Exception names DynamoDB answers with when authentication fails. They are
// the values of Error.Type; a server puts them after the
// "com.amazon.coral.service#" prefix of the response's __type.
const (
	// TypeMissingAuthenticationToken is the exception for a request that
	// carries no AWS4 Authorization header and no X-Amz-Algorithm query
	// parameter.
	TypeMissingAuthenticationToken = "MissingAuthenticationTokenException"
	// TypeIncompleteSignature is the exception for a signature that lacks a
	// required component or has one in the wrong shape.
	TypeIncompleteSignature = "IncompleteSignatureException"
	// TypeInvalidSignature is the exception for a well-formed signature that
	// does not verify, is expired, or is scoped to the wrong date or service.
	TypeInvalidSignature = "InvalidSignatureException"
	// TypeUnrecognizedClient is the exception for an access key id that is
	// not among the verifier's credentials.
	TypeUnrecognizedClient = "UnrecognizedClientException"
)

// Messages that do not depend on the request.
const (
	msgMissingToken      = "Request is missing Authentication Token"
	msgUnrecognized      = "The security token included in the request is invalid."
	msgSignatureMismatch = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgHostNotSigned = "'Host' must be a 'SignedHeader' in the AWS Authorization."
	msgFoundBoth     = "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header."
)

// Error is an authentication failure. Type is the DynamoDB exception name
// (one of the Type* constants) and Message the text DynamoDB sends with it.
// A DynamoDB-compatible server answers it with HTTP 400 and the body
// {"__type":"com.amazon.coral.service#<Type>","message":"<Message>"}.
type Error struct {
	Type    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Type + ": " + e.Message }

func missingToken() *Error {
	return &Error{Type: TypeMissingAuthenticationToken, Message: msgMissingToken}
}

func incomplete(format string, args ...any) *Error {
	return &Error{Type: TypeIncompleteSignature, Message: fmt.Sprintf(format, args...)}
}

func invalid(msg string) *Error {
	return &Error{Type: TypeInvalidSignature, Message: msg}
}

func unrecognized() *Error {
	return &Error{Type: TypeUnrecognizedClient, Message: msgUnrecognized}
}

func mismatch() *Error { return invalid(msgSignatureMismatch) }

// amzTimeFormat is the ISO-8601 basic format of X-Amz-Date.
const amzTimeFormat = "20060102T150405Z"

// amzDateFormat is the date of a credential scope.
const amzDateFormat = "20060102"

// expired is AWS's message for a signing time older than the allowed window:
// "Signature expired: <signed> is now earlier than <now-window> (<now> - 15 min.)".
func expired(signed, now time.Time, window time.Duration) *Error {
	return invalid(fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - %s.)",
		signed.UTC().Format(amzTimeFormat), now.Add(-window).UTC().Format(amzTimeFormat),
		now.UTC().Format(amzTimeFormat), durationText(window)))
}

// notYetCurrent is AWS's message for a signing time too far in the future:
// "Signature not yet current: <signed> is still later than <now+window> (<now> + 15 min.)".
func notYetCurrent(signed, now time.Time, window time.Duration) *Error {
	return invalid(fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + %s.)",
		signed.UTC().Format(amzTimeFormat), now.Add(window).UTC().Format(amzTimeFormat),
		now.UTC().Format(amzTimeFormat), durationText(window)))
}

// durationText renders a window the way AWS does ("15 min"), falling back to
// seconds for windows that are not whole minutes.
func durationText(d time.Duration) string {
	secs := int64(d / time.Second)
	if secs%60 == 0 {
		return fmt.Sprintf("%d min", secs/60)
	}
	return fmt.Sprintf("%d sec", secs)
}
