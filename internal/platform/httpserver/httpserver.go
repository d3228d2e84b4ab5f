// Package httpserver runs HTTP listeners with graceful shutdown and the
// common endpoints (/healthz).
package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Default limits of a listener, used where Limits leaves a field zero.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxConns          = 1024
)

// MinBodyRate is the average rate, in bytes per second, below which a
// request body falls behind its deadline: reading a body may take
// Limits.ReadTimeout plus one second per MinBodyRate bytes received.
const MinBodyRate = 64 << 10

// Limits bound what one client can hold of a listener. A zero field takes
// its default.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, extended by one second
	// per MinBodyRate bytes received, so that a large body sent at a
	// reasonable rate completes and a trickle is cut off. Requests without
	// a body (WebSocket upgrades among them) are not affected, nor is
	// anything after the body: a long-running handler keeps its connection.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// WriteTimeout bounds sending a response to a client that reads it
	// slowly or not at all: WriteTimeout from its first byte, extended by
	// one second per MinBodyRate bytes written. WebSocket upgrades and
	// CONNECT tunnels are not affected, nor is the time a handler takes
	// before it writes.
	WriteTimeout time.Duration
	// MaxConns caps the ordinary connections open at once; a connection
	// over the cap is answered 503 with Server.Busy and closed. A
	// connection a handler takes over (a WebSocket upgrade, hijacked) no
	// longer counts: it moves to the MaxUpgradedConns pool, so that
	// long-lived streams cannot starve ordinary requests.
	MaxConns int
	// MaxUpgradedConns caps the connections taken over by their handlers
	// (WebSockets) open at once, so that those too cannot exhaust the
	// process's file descriptors; an upgrade request over the cap is
	// answered 503 with Server.Busy before its handler runs. Zero: MaxConns.
	MaxUpgradedConns int
	// MaxConnsPerClient caps the ordinary connections one client address
	// holds at once, so that one client flooding the listener with idle
	// or slow connections gets 429 while the others keep the rest of
	// MaxConns. Zero: no cap per client.
	MaxConnsPerClient int
	// SharedClient reports whether a client address is shared by many
	// clients (a trusted reverse proxy), which MaxConnsPerClient then does
	// not bound; nil: none is.
	SharedClient func(netip.Addr) bool
	// MaxRequestsPerCredential caps the requests in flight that carry one
	// credential (Authorization or X-BB-API-Key), whatever address they
	// come from: over it a request is answered 429 at once. Zero: no cap.
	MaxRequestsPerCredential int
}

func (l Limits) withDefaults() Limits {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxUpgradedConns <= 0 {
		l.MaxUpgradedConns = l.MaxConns
	}
	return l
}

// BusyAnswer is the answer, with status 503, to a connection refused
// because Limits.MaxConns are open. The listener writes it without reading
// the request (the connection is never handed to the HTTP server), with
// Content-Length, Retry-After: 1 and Connection: close added.
type BusyAnswer struct {
	// Header is sent as given (a Content-Type here replaces the default
	// application/json): for example a checksum of Body that the
	// listener's clients check.
	Header http.Header
	Body   []byte
}

// DefaultBusy is the busy answer of a listener of quarry's REST APIs:
// {"error":"too many connections"}.
func DefaultBusy() *BusyAnswer {
	return &BusyAnswer{Body: []byte(`{"error":"too many connections"}`)}
}

// tooManyFromClient is the answer to a connection over
// Limits.MaxConnsPerClient: 429 with a JSON error.
var tooManyFromClient = answer("429 Too Many Requests", http.Header{"Content-Type": {"application/json"}},
	[]byte(`{"error":"too many connections from your address"}`))

// bytes returns the answer as written on the connection.
func (b *BusyAnswer) bytes() []byte {
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range b.Header {
		h[http.CanonicalHeaderKey(k)] = v
	}
	return answer("503 Service Unavailable", h, b.Body)
}

// answer writes a whole HTTP/1.1 response of status with h and body, with
// Content-Length, Retry-After: 1 and Connection: close added.
func answer(status string, h http.Header, body []byte) []byte {
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Retry-After", "1")
	h.Set("Connection", "close")
	var buf bytes.Buffer
	buf.WriteString("HTTP/1.1 " + status + "\r\n")
	h.Write(&buf) // sorted by name; values are checked by Write
	buf.WriteString("\r\n")
	buf.Write(body)
	return buf.Bytes()
}

// Server is one HTTP listener.
type Server struct {
	Name    string
	Addr    string
	Handler http.Handler
	Logger  *slog.Logger
	// Limits bound each client's use of the listener.
	Limits Limits
	// Busy is the 503 answered to a connection over Limits.MaxConns, so
	// that each listener answers in its clients' error shape (nil:
	// DefaultBusy).
	Busy *BusyAnswer
	// Flag is the command-line flag that sets Addr (such as "--listen"):
	// when set, a failure to bind names it, and an address in use says
	// how to choose another.
	Flag string

	ln  net.Listener
	srv *http.Server
}

// Listen binds the address. After it returns the server accepts
// connections (they queue until Serve runs) and the bound address is known.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return s.listenError(err)
	}
	lim := s.Limits.withDefaults()
	busy := s.Busy
	if busy == nil {
		busy = DefaultBusy()
	}
	ll := newLimitListener(ln, lim.MaxConns, lim.MaxUpgradedConns, busy, s.Logger.With("server", s.Name))
	ll.perClient, ll.shared = int64(lim.MaxConnsPerClient), lim.SharedClient
	s.ln = ll
	h := s.Handler
	if lim.MaxRequestsPerCredential > 0 {
		h = (&perCredential{max: lim.MaxRequestsPerCredential, n: map[string]int{}}).wrap(h)
	}
	s.srv = &http.Server{
		Handler:           ll.gate(WriteDeadline(BodyDeadline(h, lim.ReadTimeout), lim.WriteTimeout)),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
		ConnContext:       withConn,
		ConnState:         connState,
	}
	return nil
}

// listenError says why Listen could not bind, naming the flag that sets
// the address when Flag is set. It wraps err, so errors.Is finds
// syscall.EADDRINUSE.
func (s *Server) listenError(err error) error {
	switch {
	case s.Flag == "":
		return fmt.Errorf("%s: listen %s: %w", s.Name, s.Addr, err)
	case errors.Is(err, syscall.EADDRINUSE):
		return &listenErr{msg: fmt.Sprintf("%s %s: address already in use (another quarry running? choose another with %s ADDR)", s.Flag, s.Addr, s.Flag), err: err}
	default:
		return fmt.Errorf("%s %s: %w", s.Flag, s.Addr, err)
	}
}

// listenErr is a bind failure told in the command line's words; the
// system's own wording is left out of its message but kept for errors.Is.
type listenErr struct {
	msg string
	err error
}

func (e *listenErr) Error() string { return e.msg }
func (e *listenErr) Unwrap() error { return e.err }

// BoundAddr returns the address the listener is bound to.
func (s *Server) BoundAddr() string { return s.ln.Addr().String() }

// Serve serves until Shutdown; it returns nil after a graceful shutdown.
func (s *Server) Serve() error {
	s.Logger.Info("listening on "+s.BoundAddr(), "server", s.Name, "addr", s.BoundAddr())
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Close closes a listener bound by Listen whose Serve was never called
// (a later part of the start failed); after Serve, use Shutdown.
func (s *Server) Close() error {
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// Shutdown stops accepting connections and waits for requests in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// Health returns a /healthz handler that runs check (nil means healthy).
func Health(check func(context.Context) error) http.Handler {
	return HealthDetails(func(ctx context.Context) (map[string]any, error) {
		if check == nil {
			return nil, nil
		}
		return nil, check(ctx)
	})
}

// HealthDetails is Health with details, both from one call of state so
// that they describe the same instant: each entry of the map state returns
// (nil: none) is one more member of the JSON object, after "status" (and
// "error"), in key order; for example
// {"status":"ok","wallcrawler":{"browserUser":"nobody","sandbox":true}}.
// A non-nil error answers 503 with status "unhealthy", or "degraded" when
// the error (or one it wraps) has a method Degraded() bool that returns
// true: the process serves, but something it depends on fails.
func HealthDetails(state func(context.Context) (map[string]any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		d, err := state(r.Context())
		var extra []byte
		keys := make([]string, 0, len(d))
		for k := range d {
			if k != "status" && k != "error" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			kj, _ := json.Marshal(k)
			vj, merr := json.Marshal(d[k])
			if merr != nil {
				vj, _ = json.Marshal(merr.Error())
			}
			extra = append(append(append(append(extra, ','), kj...), ':'), vj...)
		}
		if err != nil {
			status := "unhealthy"
			var d interface{ Degraded() bool }
			if errors.As(err, &d) && d.Degraded() {
				status = "degraded"
			}
			msg, _ := json.Marshal(err.Error())
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "{\"status\":%q,\"error\":%s%s}\n", status, msg, extra)
			return
		}
		fmt.Fprintf(w, "{\"status\":\"ok\"%s}\n", extra)
	})
}
