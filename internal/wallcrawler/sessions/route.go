package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// Resolve implements cdp.Resolver: the signingKey must be valid and for
// this session. When the session's browser runs here, the target is the
// browser; when it runs in another quarry process of the installation,
// the target is that process's CDP endpoint (the session's NodeURL),
// dialled with a node-to-node token: the owner applies the filter and
// counts the bytes. A connection that was itself forwarded (req.NodeToken
// set) must carry a valid node token and is never forwarded again. Either
// way the target names the project of the signingKey, whose share of
// connections it counts against.
func (m *Manager) Resolve(ctx context.Context, req cdp.Request) (cdp.Target, error) {
	sessionID, pageID := req.SessionID, req.PageID
	c, err := m.d.Tokens.Verify(req.SigningKey)
	if err != nil {
		return cdp.Target{}, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
	}
	if c.SessionID != sessionID {
		return cdp.Target{}, fmt.Errorf("%w: token of another session", cdp.ErrUnauthorized)
	}
	if pageID != "" && !validTargetID(pageID) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	if req.NodeToken != "" {
		if _, err := m.d.Tokens.VerifyNode(req.NodeToken, sessionID, pageID); err != nil {
			return cdp.Target{}, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
		}
	}
	m.mu.Lock()
	l := m.live[sessionID]
	m.mu.Unlock()
	if l == nil {
		if req.NodeToken != "" {
			return cdp.Target{}, cdp.ErrNotFound // one hop at most
		}
		t, err := m.forward(ctx, req)
		t.Project = c.ProjectID
		return t, err
	}
	t := m.local(l, pageID)
	t.Project = c.ProjectID
	return t, nil
}

// local returns the target of page pageID ("" for the browser itself) of
// l, a browser running here: the connections it opens count as l's
// clients (its idle time starts when the last one closes), and the bytes
// they carry count against the session's proxyBytes and its project's
// usage.
func (m *Manager) local(l *live, pageID string) cdp.Target {
	sessionID := l.id
	target := l.b.WebSocketURL()
	if pageID != "" {
		target = l.b.PageWebSocketURL(pageID)
	}
	return cdp.Target{
		URL:         target,
		HTTPClient:  l.b.HTTPClient(),
		DownloadDir: l.b.DownloadDir(),
		UploadDir:   l.b.UploadDir(),
		Log:         l.log,
		Opened: func() {
			l.mu.Lock()
			l.clients++
			l.mu.Unlock()
		},
		Closed: func() {
			l.mu.Lock()
			l.clients--
			if l.clients == 0 {
				l.idleSince = m.now()
			}
			l.mu.Unlock()
		},
		Count: func(n int64) {
			ctx, cancel := context.WithTimeout(m.base, 5*time.Second)
			defer cancel()
			if err := m.d.Repo.AddProxyBytes(ctx, sessionID, n); err != nil {
				m.log.Warn("wallcrawler: count proxy bytes", "session", sessionID, "err", err)
			}
			if err := m.d.Auth.AddUsage(ctx, l.projectID, 0, n); err != nil {
				m.log.Warn("wallcrawler: count project usage", "project", l.projectID, "err", err)
			}
		},
	}
}

// forward returns the target of a session whose browser runs in another
// process: ErrNotFound unless the session is READY on a node that
// advertises an address other than this process's.
func (m *Manager) forward(ctx context.Context, req cdp.Request) (cdp.Target, error) {
	x, err := m.d.Repo.Get(ctx, req.SessionID)
	if errors.Is(err, ErrNotFound) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	if err != nil {
		return cdp.Target{}, fmt.Errorf("sessions: find the owner of %s: %w", req.SessionID, err)
	}
	if x.InternalStatus != StateReady || x.NodeURL == "" || x.NodeURL == m.o.AdvertiseURL || strings.HasPrefix(x.TaskARN, m.taskPrefix()) {
		return cdp.Target{}, cdp.ErrNotFound
	}
	u, err := url.Parse(x.NodeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cdp.Target{}, fmt.Errorf("sessions: session %s has an unusable nodeUrl %q", req.SessionID, x.NodeURL)
	}
	tok, err := m.d.Tokens.SignNode(m.o.NodeID, req.SessionID, req.PageID)
	if err != nil {
		return cdp.Target{}, err
	}
	path := strings.TrimSuffix(u.Path, "/") + "/wallcrawler/cdp/" + req.SessionID
	if req.PageID != "" {
		path += "/page/" + req.PageID
	}
	scheme := "ws"
	if u.Scheme == "https" {
		scheme = "wss"
	}
	target := url.URL{Scheme: scheme, Host: u.Host, Path: path, RawQuery: url.Values{"signingKey": {req.SigningKey}}.Encode()}
	return cdp.Target{URL: target.String(), Forward: true, Header: http.Header{cdp.NodeTokenHeader: {tok}}}, nil
}

func validTargetID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}
