package sessions

import (
	"context"
	"log/slog"
	"time"
)

// steps times the steps of one create, launch or stop for the debug log
// ("wallcrawler: create steps" and the like), so that where a session's
// start or end spends its time can be read from a running quarry
// (--log-level debug). It is not safe for concurrent use.
type steps struct {
	start, last time.Time
	attrs       []any
}

func newSteps() *steps {
	now := time.Now()
	return &steps{start: now, last: now}
}

// mark ends the step called name (it began at the previous mark).
func (s *steps) mark(name string) {
	now := time.Now()
	s.attrs = append(s.attrs, name, now.Sub(s.last).Round(10*time.Microsecond))
	s.last = now
}

// log writes the steps and their total at debug level.
func (s *steps) log(l *slog.Logger, msg, session string) {
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := append([]any{"session", session}, s.attrs...)
	attrs = append(attrs, "total", time.Since(s.start).Round(10*time.Microsecond))
	l.Debug(msg, attrs...)
}
