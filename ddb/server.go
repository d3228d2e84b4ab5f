package ddb

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/ddb/attr"
	"github.com/quarrydb/quarry/ddb/sigv4"
)

// maxRequestBytes bounds the size of a request body (DynamoDB's is 16 MB).
const maxRequestBytes = 16 << 20

// requestTooLarge is the answer to a body over maxRequestBytes.
func requestTooLarge() *Error {
	return validationf("Request size exceeded %d bytes", maxRequestBytes)
}

// signatureError maps a failed signature check to its DynamoDB error.
func signatureError(err error) *Error {
	var se *sigv4.Error
	if errors.As(err, &se) {
		return &Error{Type: se.Type, Message: se.Message}
	}
	return &Error{Type: "IncompleteSignatureException", Message: err.Error()}
}

type opFunc func(s *Store, body []byte) (any, error)

// op adapts a typed operation to the dispatcher: decode, run.
func op[In any, Out any](f func(*Store, *In) (Out, error)) opFunc {
	return func(s *Store, body []byte) (any, error) {
		in := new(In)
		if err := decodeRequest(body, in); err != nil {
			return nil, err
		}
		return f(s, in)
	}
}

var dynamoOps = map[string]opFunc{
	"CreateTable":    op((*Store).CreateTable),
	"DescribeTable":  op((*Store).DescribeTable),
	"ListTables":     op((*Store).ListTables),
	"DeleteTable":    op((*Store).deleteTableWire),
	"UpdateTable":    op((*Store).UpdateTable),
	"PutItem":        op((*Store).PutItem),
	"GetItem":        op((*Store).getItemWire),
	"UpdateItem":     op((*Store).UpdateItem),
	"DeleteItem":     op((*Store).DeleteItem),
	"Query":          op((*Store).queryWire),
	"Scan":           op((*Store).scanWire),
	"BatchGetItem":   op((*Store).BatchGetItem),
	"BatchWriteItem": op((*Store).BatchWriteItem),
}

// streamsOps are the operations of the DynamoDB Streams API
// (X-Amz-Target: DynamoDBStreams_20120810.<Op>), served on the same endpoint.
var streamsOps = map[string]opFunc{}

// registerOps adds operations to a dispatch table; each feature file
// registers its operations from an init function.
func registerOps(table map[string]opFunc, ops map[string]opFunc) {
	for name, f := range ops {
		if _, dup := table[name]; dup {
			panic("ddb: operation registered twice: " + name)
		}
		table[name] = f
	}
}

func init() {
	// Wrap the table-level outputs in their response envelopes.
	wrap := func(name, field string) {
		f := dynamoOps[name]
		dynamoOps[name] = func(s *Store, body []byte) (any, error) {
			out, err := f(s, body)
			if err != nil {
				return nil, err
			}
			return map[string]any{field: out}, nil
		}
	}
	wrap("CreateTable", "TableDescription")
	wrap("DeleteTable", "TableDescription")
	wrap("UpdateTable", "TableDescription")
	wrap("DescribeTable", "Table")
}

// decodeRequest decodes a JSON request body into in, mapping errors to
// SerializationException (malformed) or ValidationException (bad values).
func decodeRequest(body []byte, in any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, in); err != nil {
		var ae *attr.Error
		if errors.As(err, &ae) {
			return validationf("%s", ae.Message)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Type: "SerializationException", Message: attr.TypeErrorMessage(te)}
		}
		return &Error{Type: "SerializationException", Message: "Start of structure or map found where not expected."}
	}
	return nil
}

// Handler returns the store's HTTP handler for the DynamoDB wire protocol.
// When Options.Credentials is set, it verifies each request's signature.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveHTTP(w, r, s.auth) })
}

// TrustedHandler serves the wire protocol like Handler but checks no
// signature, whatever Options.Credentials says: its caller is trusted. Serve
// it only where nobody else can reach it — an in-process transport
// (NewClient uses it), or a Unix socket in a directory only the store's
// owner can enter (quarry's admin channel).
func (s *Store) TrustedHandler() http.Handler { return s.trustedHandler() }

// trustedHandler serves in-process clients without signature checks.
func (s *Store) trustedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveHTTP(w, r, nil) })
}

// requestID returns a random request id in DynamoDB's style: 32
// upper-case hexadecimal digits.
func requestID() string {
	const digits = "0123456789ABCDEF"
	var b [16]byte
	rand.Read(b[:])
	var out [32]byte
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out[:])
}

func (s *Store) serveHTTP(w http.ResponseWriter, r *http.Request, auth *sigv4.Verifier) {
	w.Header()["X-Amzn-Requestid"] = []string{requestID()}
	if r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "") {
		// DynamoDB's health check names the host the client addressed.
		host := requestHost(r)
		if host == "" {
			host = "dynamodb." + s.opts.Region + ".amazonaws.com"
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "healthy: "+host+" ")
		return
	}
	if r.Method != http.MethodPost {
		s.writeError(w, &Error{Type: "UnknownOperationException", Message: "Only POST requests are supported"})
		return
	}
	target := r.Header.Get("X-Amz-Target")
	service, opName, _ := strings.Cut(target, ".")
	var f opFunc
	switch service {
	case "DynamoDB_20120810":
		f = dynamoOps[opName]
	case "DynamoDBStreams_20120810":
		f = streamsOps[opName]
	}
	if f != nil && service == "DynamoDB_20120810" && opName == "DescribeEndpoints" {
		f = describeEndpointsAt(requestHost(r)) // answers with the request's host
	}
	if f == nil {
		s.writeError(w, &Error{Type: "UnknownOperationException"})
		return
	}
	start := time.Now()
	errType := s.serveOp(w, r, auth, f, opName)
	s.stats.record(opName, time.Since(start), errType)
}

// serveOp reads, authenticates and runs one request of operation opName
// and writes the answer; it returns the type of the error it answered, or
// "" on success.
//
// A hostile client must not make the server reserve memory or hold a
// buffer for a body it does not send: the signature is checked from the
// headers before the body is read (all of it when the client signed
// X-Amz-Content-Sha256, all but the final signature comparison otherwise),
// a Content-Length over the limit is refused unread, and the body is read
// as it arrives, never pre-allocated from the length it announces.
func (s *Store) serveOp(w http.ResponseWriter, r *http.Request, auth *sigv4.Verifier, f opFunc, opName string) string {
	var check *sigv4.BodyCheck
	if auth != nil {
		c, err := auth.VerifyHeaders(r)
		if err != nil {
			return s.writeError(w, signatureError(err))
		}
		check = c
	}
	if r.ContentLength > maxRequestBytes {
		return s.writeError(w, requestTooLarge())
	}
	in := getBuffer()
	defer putBuffer(in)
	if _, err := in.ReadFrom(io.LimitReader(r.Body, maxRequestBytes+1)); err != nil {
		return s.writeError(w, &Error{Type: "SerializationException", Message: "could not read request body"})
	}
	if in.Len() > maxRequestBytes {
		return s.writeError(w, requestTooLarge())
	}
	body := in.Bytes() // no operation keeps it: decoding copies
	if check != nil {
		if err := check.Verify(body); err != nil {
			return s.writeError(w, signatureError(err))
		}
	}
	out, err := s.call(f, body, opName)
	if err != nil {
		return s.writeError(w, asAPIError(err))
	}
	if _, ok := out.(emptyOutput); ok {
		writeJSON(w, http.StatusOK, nil) // DynamoDB answers with no body
		return ""
	}
	resp := getBuffer()
	defer putBuffer(resp)
	err = encodeOutput(resp, out)
	if r, ok := out.(releaser); ok {
		r.release()
	}
	if err != nil {
		return s.writeError(w, internal(err))
	}
	writeJSON(w, http.StatusOK, resp.Bytes())
	return ""
}

// call runs an operation, turning a panic into an InternalServerError so a
// bug in one request never takes the server down.
func (s *Store) call(f opFunc, body []byte, opName string) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("ddb: panic in operation", "op", opName, "panic", fmt.Sprint(p))
			err = internal(fmt.Errorf("%v", p))
		}
	}()
	return f(s, body)
}

var contentTypeJSON = []string{"application/x-amz-json-1.0"}

// BusyAnswer returns the header and body of the endpoint's answer, with
// status 503, to a connection refused because too many are open (the
// listener writes it, not Handler): DynamoDB's ServiceUnavailableException,
// which SDKs retry, with the Content-Type and X-Amz-Crc32 of every other
// answer (aws-sdk-go-v2 checks a body without the checksum against 0, and
// logs a warning when they differ).
func BusyAnswer() (http.Header, []byte) {
	body := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailableException","message":"too many connections"}`)
	h := http.Header{
		"Content-Type": contentTypeJSON,
		"X-Amz-Crc32":  {strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)},
	}
	return h, body
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// Canonical header names, assigned directly: Set would canonicalize.
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["X-Amz-Crc32"] = []string{strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}
	w.WriteHeader(status)
	w.Write(body)
}

// writeError answers with e in DynamoDB's error shape and returns e's type.
func (s *Store) writeError(w http.ResponseWriter, e *Error) string {
	if e == nil {
		// A typed nil *Error reached here: report it rather than crash.
		e = internal(errors.New("operation failed without an error"))
	}
	m := map[string]any{"__type": e.prefix() + e.Type}
	if e.Message != "" || e.Type != "UnknownOperationException" {
		key := "message"
		if e.Type == "ConditionalCheckFailedException" || e.Type == "TransactionCanceledException" {
			key = "Message"
		}
		m[key] = e.Message
	}
	if e.Item != nil {
		m["Item"] = e.Item
	}
	if e.CancellationReasons != nil {
		m["CancellationReasons"] = e.CancellationReasons
	}
	body, _ := json.Marshal(m)
	writeJSON(w, e.status(), body)
	return e.Type
}
