// Package httpserver runs HTTP listeners with graceful shutdown and the
// common endpoints (/healthz).
package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"time"
)

// Server is one HTTP listener.
type Server struct {
	Name    string
	Addr    string
	Handler http.Handler
	Logger  *slog.Logger

	ln  net.Listener
	srv *http.Server
}

// Listen binds the address. After it returns the server accepts
// connections (they queue until Serve runs) and the bound address is known.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("%s: listen %s: %w", s.Name, s.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	return nil
}

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

// Shutdown stops accepting connections and waits for requests in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// Health returns a /healthz handler that runs check (nil means healthy).
func Health(check func(context.Context) error) http.Handler {
	return HealthDetails(check, nil)
}

// HealthDetails is Health with details: each entry of what details returns
// (nil: none) is one more member of the JSON object, after "status" (and
// "error"), in key order; for example
// {"status":"ok","wallcrawler":{"browserUser":"nobody","sandbox":true}}.
func HealthDetails(check func(context.Context) error, details func() map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var extra []byte
		if details != nil {
			d := details()
			keys := make([]string, 0, len(d))
			for k := range d {
				if k != "status" && k != "error" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				kj, _ := json.Marshal(k)
				vj, err := json.Marshal(d[k])
				if err != nil {
					vj, _ = json.Marshal(err.Error())
				}
				extra = append(append(append(append(extra, ','), kj...), ':'), vj...)
			}
		}
		if check != nil {
			if err := check(r.Context()); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "{\"status\":\"unhealthy\",\"error\":%q%s}\n", err.Error(), extra)
				return
			}
		}
		fmt.Fprintf(w, "{\"status\":\"ok\"%s}\n", extra)
	})
}
