package ddb

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
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

// decodeRequest decodes a JSON request body into in, mapping errors to
// SerializationException (malformed) or ValidationException (bad values).
func decodeRequest(body []byte, in any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if fd, ok := in.(fastDecoder); ok && json.Valid(body) && fd.decodeFast(body) {
		return nil
	}
	return decodeJSON(body, in)
}

// decodeJSON decodes a request body with encoding/json: the reference
// behaviour, which decodeFast's fast paths reproduce.
func decodeJSON(body []byte, in any) error {
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

// A request id is the process's random prefix and the request's number,
// so that generating one costs no call to the system's random source.
var (
	requestIDPrefix = randomRequestIDPrefix() // 16 hexadecimal digits, random per process
	requestIDNext   atomic.Uint64             // the number of the last request
)

// randomRequestIDPrefix returns 16 random upper-case hexadecimal digits.
func randomRequestIDPrefix() (prefix [16]byte) {
	var b [8]byte
	rand.Read(b[:])
	hex.Encode(prefix[:], b[:])
	copy(prefix[:], bytes.ToUpper(prefix[:]))
	return prefix
}

// requestID returns a request id in DynamoDB's style: 32 upper-case
// hexadecimal digits, unique to the request (16 random per process, then a
// counter).
func requestID() string {
	const digits = "0123456789ABCDEF"
	var out [32]byte
	copy(out[:16], requestIDPrefix[:])
	n := requestIDNext.Add(1)
	for i := 31; i >= 16; i-- {
		out[i] = digits[n&15]
		n >>= 4
	}
	return string(out[:])
}

// WireRequest is one request of the DynamoDB wire protocol, as an HTTP
// server other than net/http received it (Handler serves net/http).
type WireRequest struct {
	Method string // HTTP method: POST for operations, GET for the health check
	Path   string // URL path
	Host   string // Host header, named by the health check and DescribeEndpoints
	Target string // X-Amz-Target header: service and operation
	Body   []byte // the whole body; ServeTrustedWire does not keep it
}

// WireAnswer is the answer to a request: the HTTP status, the values of
// the Content-Type, X-Amzn-Requestid and X-Amz-Crc32 headers, and the body.
type WireAnswer struct {
	Status      int
	ContentType string
	RequestID   string
	CRC32       string // "" when the answer carries no X-Amz-Crc32 header
	Body        []byte // valid only until the answer function returns
}

// ServeTrustedWire answers req, a request received by an HTTP server other
// than net/http, by calling answer once. Like TrustedHandler it checks no
// signature, whatever Options.Credentials says: serve it only where
// TrustedHandler could be served. The caller bounds the body it reads
// (a body over 16 MB is answered with DynamoDB's ValidationException).
func (s *Store) ServeTrustedWire(req *WireRequest, answer func(WireAnswer)) {
	w := funcAnswer(answer)
	id := requestID()
	f, opName, ok := s.route(w, id, req.Method, req.Path, req.Host, req.Target)
	if !ok {
		return
	}
	start := time.Now()
	var errType string
	if len(req.Body) > maxRequestBytes {
		errType = s.writeError(w, id, requestTooLarge())
	} else {
		errType = s.runOp(w, id, f, opName, req.Body)
	}
	s.stats.record(opName, time.Since(start), errType)
}

// answerWriter writes an answer as the HTTP server at hand does.
type answerWriter interface{ writeAnswer(WireAnswer) }

// funcAnswer writes an answer by calling a function.
type funcAnswer func(WireAnswer)

func (f funcAnswer) writeAnswer(a WireAnswer) { f(a) }

// httpAnswer writes an answer to a net/http response.
type httpAnswer struct{ w http.ResponseWriter }

func (h httpAnswer) writeAnswer(a WireAnswer) {
	hd := h.w.Header()
	// Canonical header names, assigned directly (Set would canonicalize),
	// their values sharing one allocation.
	vals := make([]string, 4)
	vals[0], vals[1], vals[2] = a.RequestID, strconv.Itoa(len(a.Body)), a.CRC32
	hd["X-Amzn-Requestid"] = vals[0:1:1]
	if a.ContentType == contentTypeJSON[0] {
		hd["Content-Type"] = contentTypeJSON
	} else {
		vals[3] = a.ContentType
		hd["Content-Type"] = vals[3:4:4]
	}
	hd["Content-Length"] = vals[1:2:2]
	if a.CRC32 != "" {
		hd["X-Amz-Crc32"] = vals[2:3:3]
	}
	h.w.WriteHeader(a.Status)
	h.w.Write(a.Body)
}

func (s *Store) serveHTTP(w http.ResponseWriter, r *http.Request, auth *sigv4.Verifier) {
	id := requestID()
	f, opName, ok := s.route(httpAnswer{w}, id, r.Method, r.URL.Path, requestHost(r), r.Header.Get("X-Amz-Target"))
	if !ok {
		return
	}
	start := time.Now()
	errType := s.serveOp(w, r, id, auth, f, opName)
	s.stats.record(opName, time.Since(start), errType)
}

// route finds the operation a request names. When the request names none
// (the health check, an unknown operation), it answers and returns false.
func (s *Store) route(w answerWriter, id, method, path, host, target string) (f opFunc, opName string, ok bool) {
	if method == http.MethodGet && (path == "/" || path == "") {
		// DynamoDB's health check names the host the client addressed.
		if host == "" {
			host = "dynamodb." + s.opts.Region + ".amazonaws.com"
		}
		w.writeAnswer(WireAnswer{Status: http.StatusOK, ContentType: "text/plain", RequestID: id, Body: []byte("healthy: " + host + " ")})
		return nil, "", false
	}
	if method != http.MethodPost {
		s.writeError(w, id, &Error{Type: "UnknownOperationException", Message: "Only POST requests are supported"})
		return nil, "", false
	}
	service, opName, _ := strings.Cut(target, ".")
	f = operations[service][opName]
	if f != nil && service == dynamoAPI && opName == "DescribeEndpoints" {
		f = describeEndpointsAt(host) // answers with the request's host
	}
	if f == nil {
		s.writeError(w, id, &Error{Type: "UnknownOperationException"})
		return nil, "", false
	}
	return f, opName, true
}

// serveOp reads and authenticates one request of operation opName, then
// runs it and writes the answer; it returns the type of the error it
// answered, or "" on success.
//
// A hostile client must not make the server reserve memory or hold a
// buffer for a body it does not send: the signature is checked from the
// headers before the body is read (all of it when the client signed
// X-Amz-Content-Sha256, all but the final signature comparison otherwise),
// a Content-Length over the limit is refused unread, and the body is read
// as it arrives, never pre-allocated from the length it announces.
func (s *Store) serveOp(rw http.ResponseWriter, r *http.Request, id string, auth *sigv4.Verifier, f opFunc, opName string) string {
	w := httpAnswer{rw}
	var check *sigv4.BodyCheck
	if auth != nil {
		c, err := auth.VerifyHeaders(r)
		if err != nil {
			return s.writeError(w, id, signatureError(err))
		}
		check = c
	}
	if r.ContentLength > maxRequestBytes {
		return s.writeError(w, id, requestTooLarge())
	}
	in := getBuffer()
	defer putBuffer(in)
	lr := io.LimitedReader{R: r.Body, N: maxRequestBytes + 1}
	if _, err := in.ReadFrom(&lr); err != nil {
		return s.writeError(w, id, &Error{Type: "SerializationException", Message: "could not read request body"})
	}
	if in.Len() > maxRequestBytes {
		return s.writeError(w, id, requestTooLarge())
	}
	body := in.Bytes() // no operation keeps it: decoding copies
	if check != nil {
		if err := check.Verify(body); err != nil {
			return s.writeError(w, id, signatureError(err))
		}
	}
	return s.runOp(w, id, f, opName, body)
}

// runOp runs operation opName on a request's body and writes the answer;
// it returns the type of the error it answered, or "" on success.
func (s *Store) runOp(w answerWriter, id string, f opFunc, opName string, body []byte) string {
	out, err := s.call(f, body, opName)
	if err != nil {
		return s.writeError(w, id, asAPIError(err))
	}
	if _, ok := out.(emptyOutput); ok {
		writeJSON(w, id, http.StatusOK, nil) // DynamoDB answers with no body
		return ""
	}
	resp := getBuffer()
	defer putBuffer(resp)
	err = encodeOutput(resp, out)
	if r, ok := out.(releaser); ok {
		r.release()
	}
	if err != nil {
		return s.writeError(w, id, internal(err))
	}
	writeJSON(w, id, http.StatusOK, resp.Bytes())
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

// writeJSON answers with a JSON body and its checksum.
func writeJSON(w answerWriter, id string, status int, body []byte) {
	w.writeAnswer(WireAnswer{Status: status, ContentType: contentTypeJSON[0], RequestID: id,
		CRC32: strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), Body: body})
}

// writeError answers with e in DynamoDB's error shape and returns e's type.
func (s *Store) writeError(w answerWriter, id string, e *Error) string {
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
	writeJSON(w, id, e.status(), body)
	return e.Type
}
