package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
)

// LiveGrant is what a verified live-view token grants: a CDP connection
// to one page of a running session.
type LiveGrant struct {
	// Target is the page's CDP target, as the CDP proxy would resolve it
	// for the session's own signingKey (local, or forwarded to the node
	// owning the browser).
	Target cdp.Target
	// PageID is the page shown (the session's first page when the token
	// and the URL name none).
	PageID string
	// ViewOnly means the viewer's input must not be forwarded.
	ViewOnly bool
}

// LiveToken returns a live-view token for session x's page pageID ("" for
// its first page), expiring at the earlier of LiveTokenTTL from now and
// the session's expiry.
func (m *Manager) LiveToken(x Session, pageID string, viewOnly bool) (string, error) {
	return m.d.Tokens.SignLive(x.ID, pageID, viewOnly, x.ExpiresAt)
}

// LiveTarget verifies a live-view token for session sessionID's page
// pageID (both from the URL) and resolves the page's CDP target. Errors
// wrap cdp.ErrUnauthorized (missing, forged or expired token),
// cdp.ErrForbidden (a token of another session or page) or
// cdp.ErrNotFound (the session or page is not live).
func (m *Manager) LiveTarget(ctx context.Context, token, sessionID, pageID string) (LiveGrant, error) {
	c, err := m.d.Tokens.VerifyLive(token)
	if err != nil {
		return LiveGrant{}, fmt.Errorf("%w: %v", cdp.ErrUnauthorized, err)
	}
	if c.SessionID != sessionID || c.PageID != pageID {
		return LiveGrant{}, fmt.Errorf("%w: live-view token of another session or page", cdp.ErrForbidden)
	}
	x, err := m.d.Repo.Get(ctx, sessionID)
	if errors.Is(err, ErrNotFound) {
		return LiveGrant{}, cdp.ErrNotFound
	}
	if err != nil {
		return LiveGrant{}, fmt.Errorf("sessions: live view of %s: %w", sessionID, err)
	}
	if x.InternalStatus != StateReady || x.SigningKey == "" {
		return LiveGrant{}, cdp.ErrNotFound
	}
	if pageID == "" {
		if pageID, err = m.firstPage(ctx, sessionID); err != nil {
			return LiveGrant{}, err
		}
	}
	t, err := m.Resolve(ctx, cdp.Request{SessionID: sessionID, PageID: pageID, SigningKey: x.SigningKey})
	if err != nil {
		return LiveGrant{}, err
	}
	return LiveGrant{Target: t, PageID: pageID, ViewOnly: c.ViewOnly}, nil
}

// firstPage returns the first page target of a session whose browser runs
// in this process.
func (m *Manager) firstPage(ctx context.Context, id string) (string, error) {
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return "", fmt.Errorf("%w: session %s has no browser here", cdp.ErrNotFound, id)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := browser.Call(cctx, l.b, "Target.getTargets", nil)
	if err != nil {
		return "", fmt.Errorf("sessions: list pages: %w", err)
	}
	var reply struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return "", fmt.Errorf("sessions: list pages: %w", err)
	}
	for _, t := range reply.TargetInfos {
		if t.Type == "page" {
			return t.TargetID, nil
		}
	}
	return "", fmt.Errorf("%w: session %s has no page", cdp.ErrNotFound, id)
}

// Page is one page of a live session, as /debug lists it.
type Page struct {
	ID, URL, Title, FaviconURL string
}

// Pages lists the page targets of a live session's browser.
func (m *Manager) Pages(ctx context.Context, p auth.Principal, id string) (Session, []Page, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return Session{}, nil, err
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil || x.InternalStatus != StateReady {
		return x, nil, fmt.Errorf("%w: session %s is not running here", ErrState, id)
	}
	// Target.getTargets sees every page, also those of browser contexts
	// that /json/list leaves out (Playwright's, chromedp's).
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := browser.Call(cctx, l.b, "Target.getTargets", nil)
	if err != nil {
		return x, nil, fmt.Errorf("sessions: list pages: %w", err)
	}
	var reply struct {
		TargetInfos []struct {
			TargetID, Type, Title, URL string
		} `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return x, nil, fmt.Errorf("sessions: list pages: %w", err)
	}
	pages := []Page{}
	for _, t := range reply.TargetInfos {
		if t.Type == "page" {
			pages = append(pages, Page{ID: t.TargetID, URL: t.URL, Title: t.Title})
		}
	}
	return x, pages, nil
}
