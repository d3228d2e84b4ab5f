package scheduler

import (
	"context"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// Maintenance windows silence alerts: a run inside an active window of
// its check's user that covers the check still runs, records its result
// and moves the check's alert state, but its alert is not sent (no
// outbox entry, no delivery). Since the state moved, the end of the
// window sends nothing by itself: the next alert is for the next change
// of state, so a check that went DOWN in the window and is UP again
// after it alerts "up" then.

type cachedWindows struct {
	ws []store.Maintenance
	at time.Time
}

// inMaintenance reports whether check c is in one of its user's active
// maintenance windows at now, so that its alert event is not sent. The
// windows are cached for Options.UserCache. When they cannot be read the
// alert is sent: a missed alert costs more than an unwanted one.
func (s *Scheduler) inMaintenance(ctx context.Context, c store.Check, event string, now time.Time) bool {
	s.mu.Lock()
	cw, ok := s.windows[c.UserID]
	s.mu.Unlock()
	if !ok || now.Sub(cw.at) >= s.o.UserCache || now.Sub(cw.at) < 0 {
		ws, err := s.st.ListMaintenance(ctx, c.UserID)
		if err != nil {
			s.log.Warn("checks: maintenance windows not read; the alert is sent", "check", c.ID, "err", err)
			return false
		}
		cw = cachedWindows{ws: ws, at: now}
		s.mu.Lock()
		s.windows[c.UserID] = cw
		s.mu.Unlock()
	}
	if !store.InMaintenance(cw.ws, c, now) {
		return false
	}
	s.log.Info("checks: alert not sent: the check is in a maintenance window", "check", c.ID, "event", event)
	return true
}
