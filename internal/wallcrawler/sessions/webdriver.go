package sessions

import (
	"context"
	"fmt"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// WebDriverBrowser returns the browser of session sessionID for its
// WebDriver endpoint: signingKey must be a valid signingKey of that very
// session (cdp.ErrUnauthorized, wrapped, otherwise: another session's or
// another project's key is refused as a bad one), and the browser must
// run in this process (cdp.ErrNotFound otherwise, also while the session
// is stopping).
func (m *Manager) WebDriverBrowser(ctx context.Context, sessionID, signingKey string) (browser.Browser, error) {
	c, err := m.d.Tokens.Verify(signingKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
	}
	if c.SessionID != sessionID {
		return nil, fmt.Errorf("%w: token of another session", cdp.ErrUnauthorized)
	}
	m.mu.Lock()
	l := m.live[sessionID]
	m.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("%w: session %s has no browser here", cdp.ErrNotFound, sessionID)
	}
	l.mu.Lock()
	stopping := l.stopping
	l.mu.Unlock()
	if stopping {
		return nil, fmt.Errorf("%w: session %s is stopping", cdp.ErrNotFound, sessionID)
	}
	return l.b, nil
}
