package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// degraded is an error that marks a degraded process.
type degraded struct{}

func (degraded) Error() string  { return `backend "s3" unreachable` }
func (degraded) Degraded() bool { return true }

func TestHealthDetails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		check    func(context.Context) error
		details  func() map[string]any
		wantCode int
		wantBody string
	}{
		{name: "plain", wantCode: 200, wantBody: `{"status":"ok"}` + "\n"},
		{name: "empty details", details: func() map[string]any { return nil }, wantCode: 200, wantBody: `{"status":"ok"}` + "\n"},
		{name: "details in key order", details: func() map[string]any {
			return map[string]any{"wallcrawler": map[string]any{"sandbox": true, "browserUser": "nobody"}, "a": 1, "status": "ignored"}
		}, wantCode: 200, wantBody: `{"status":"ok","a":1,"wallcrawler":{"browserUser":"nobody","sandbox":true}}` + "\n"},
		{name: "unhealthy with details", check: func(context.Context) error { return errors.New("down") },
			details:  func() map[string]any { return map[string]any{"x": "y"} },
			wantCode: 503, wantBody: `{"status":"unhealthy","error":"down","x":"y"}` + "\n"},
		{name: "degraded", check: func(context.Context) error { return fmt.Errorf("wrapped: %w", degraded{}) },
			details: func() map[string]any {
				return map[string]any{"backends": map[string]any{"s3": map[string]any{"ok": false}}}
			},
			wantCode: 503, wantBody: `{"status":"degraded","error":"wrapped: backend \"s3\" unreachable","backends":{"s3":{"ok":false}}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			HealthDetails(func(ctx context.Context) (map[string]any, error) {
				var d map[string]any
				if tc.details != nil {
					d = tc.details()
				}
				if tc.check == nil {
					return d, nil
				}
				return d, tc.check(ctx)
			}).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

// TestListenInUseNamesFlag checks a bind failure's message: with Flag set
// it names the flag and how to choose another address, and errors.Is still
// finds EADDRINUSE.
func TestListenInUseNamesFlag(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	s := &Server{Name: "api", Addr: addr, Flag: "--listen", Handler: http.NotFoundHandler(), Logger: slog.New(slog.DiscardHandler)}
	err = s.Listen()
	want := "--listen " + addr + ": address already in use (another quarry running? choose another with --listen ADDR)"
	if err == nil || err.Error() != want {
		t.Fatalf("Listen on a port in use: %v, want %q", err, want)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("errors.Is(%v, EADDRINUSE) is false", err)
	}
	s = &Server{Name: "api", Addr: addr, Handler: http.NotFoundHandler(), Logger: slog.New(slog.DiscardHandler)}
	if err := s.Listen(); err == nil || !strings.HasPrefix(err.Error(), "api: listen "+addr+": ") {
		t.Errorf("Listen without Flag: %v", err)
	}
}
