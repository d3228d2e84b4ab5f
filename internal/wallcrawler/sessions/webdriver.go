package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

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

// webdriverPage is the page of the node-to-node tokens of forwarded
// WebDriver requests: never a DevTools target id (those have no ':'), so
// such a token opens no CDP connection.
const webdriverPage = "wd:"

// WebDriverOwner returns, for a session whose browser runs in another
// process of the installation, that process's WebDriver endpoint of the
// session (its nodeUrl + /wallcrawler/webdriver/{id}) and a node-to-node
// token for one request to it; cdp.ErrNotFound when the session is not
// READY on another node.
func (m *Manager) WebDriverOwner(ctx context.Context, sessionID string) (endpoint, nodeToken string, err error) {
	x, err := m.d.Repo.Get(ctx, sessionID)
	if errors.Is(err, ErrNotFound) {
		return "", "", cdp.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("sessions: find the owner of %s: %w", sessionID, err)
	}
	if x.InternalStatus != StateReady || x.NodeURL == "" || x.NodeURL == m.o.AdvertiseURL || strings.HasPrefix(x.TaskARN, m.taskPrefix()) {
		return "", "", cdp.ErrNotFound
	}
	u, err := url.Parse(x.NodeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("sessions: session %s has an unusable nodeUrl %q", sessionID, x.NodeURL)
	}
	tok, err := m.d.Tokens.SignNode(m.o.NodeID, sessionID, webdriverPage)
	if err != nil {
		return "", "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/wallcrawler/webdriver/" + sessionID
	u.RawQuery, u.Fragment = "", ""
	return u.String(), tok, nil
}

// VerifyWebDriverNode checks the node-to-node token of a WebDriver request
// another process forwarded for session sessionID (cdp.ErrUnauthorized,
// wrapped, when it is not valid for it).
func (m *Manager) VerifyWebDriverNode(nodeToken, sessionID string) error {
	if _, err := m.d.Tokens.VerifyNode(nodeToken, sessionID, webdriverPage); err != nil {
		return fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
	}
	return nil
}
