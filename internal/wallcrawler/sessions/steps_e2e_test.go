package sessions_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// tbWriter writes log lines to a test's log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// BenchmarkCreateRelease creates and releases sessions one after the
// other, cold and with a warm pool, on a store that fsyncs as quarry
// serve's does, and logs the steps of each create, launch and stop (the
// Manager's debug log) with -v: where a session's start and end spend
// their time. Nothing is asserted about the timings.
//
//	go test ./internal/wallcrawler/sessions -run '^$' -bench CreateRelease -benchtime 5x -v
func BenchmarkCreateRelease(b *testing.B) {
	for _, mode := range []struct {
		name string
		pool int
	}{{"cold", 0}, {"pool4", 4}} {
		b.Run(mode.name, func(b *testing.B) {
			log := slog.New(slog.NewTextHandler(tbWriter{b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
			st := newStackWith(b, 64, sessions.Options{}, stackOptions{Pool: mode.pool, Sync: true, Logger: log})
			if mode.pool > 0 {
				time.Sleep(5 * time.Second) // let the pool fill
			}
			var create, release time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				s := st.create(b, map[string]any{})
				created := time.Now()
				var out map[string]any
				if code := st.call(b, "POST", "/v1/sessions/"+s.ID, map[string]any{"status": "REQUEST_RELEASE"}, &out); code != http.StatusOK {
					b.Fatalf("release: %d", code)
				}
				create += created.Sub(start)
				release += time.Since(created)
			}
			b.ReportMetric(float64(create.Milliseconds())/float64(b.N), "create-ms/op")
			b.ReportMetric(float64(release.Milliseconds())/float64(b.N), "release-ms/op")
		})
	}
}
