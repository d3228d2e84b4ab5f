// Package live is Wallcrawler's live view: an HTML page, embeddable in an
// iframe of another origin, that shows one page of a running session as
// it is drawn and, unless view-only, forwards the viewer's mouse, keyboard,
// wheel and resize to it.
//
// The page, its script and its WebSocket are served under
//
//	/live/{sessionId}[/{targetId}]?token=JWT[&mode=view]   the HTML page
//	/live/{sessionId}[/{targetId}]/ws?token=JWT[&mode=view] its WebSocket
//	/live/viewer.js                                        the script
//
// (below /wallcrawler). The token is a live-view token (see
// sessions.Tokens.SignLive): short-lived, bound to the session and page,
// optionally view-only; "mode=view" in the URL makes a full token
// view-only too. The viewer never speaks CDP: quarry opens its own CDP
// connection to the page (through the CDP proxy's resolution, so a session
// owned by another node is reached through that node's filtered proxy),
// runs Page.startScreencast, relays the JPEG frames as binary WebSocket
// messages and turns the viewer's small JSON input messages into
// Input.dispatchMouseEvent, Input.dispatchKeyEvent and
// Emulation.setDeviceMetricsOverride commands. Each viewer has its own
// CDP connection, so several may watch at once; a viewer's socket closes
// when the page or the session ends.
package live

import (
	"context"
	_ "embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

//go:embed viewer.js
var viewerJS []byte

// Resolver verifies live-view tokens and finds the page they grant
// (*sessions.Manager implements it).
type Resolver interface {
	LiveTarget(ctx context.Context, token, sessionID, pageID string) (sessions.LiveGrant, error)
}

// Options configures a Handler. Zero values mean defaults.
type Options struct {
	// FrameAncestors is the CSP frame-ancestors source list of the live
	// view page: who may embed it in a frame. Default "*" (any origin);
	// "'none'" forbids framing, "'self' https://app.example" allows those.
	FrameAncestors string
	// Logger receives connection errors; default slog.Default().
	Logger *slog.Logger
	// JPEGQuality is the screencast's JPEG quality, 1 to 100; default 70.
	JPEGQuality int
	// WriteTimeout bounds one write to the viewer (a frame) or to the
	// page (a command): a viewer that stops reading, or a page that
	// does, is disconnected rather than held for ever. A quiet viewer is
	// not: a page that draws nothing sends nothing. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Projects caps one project's viewers, counted with its CDP clients
	// (the CDP proxy is given the same); nil: no cap. A viewer over the
	// cap is answered 429 before the upgrade.
	Projects *cdp.ProjectConns
}

// Handler serves the live view (paths relative to /wallcrawler).
type Handler struct {
	res  Resolver
	opts Options
}

// New returns a Handler granting access through res. opts may be nil.
func New(res Resolver, opts *Options) *Handler {
	h := &Handler{res: res}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.FrameAncestors == "" {
		h.opts.FrameAncestors = "*"
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	if h.opts.JPEGQuality <= 0 || h.opts.JPEGQuality > 100 {
		h.opts.JPEGQuality = 70
	}
	if h.opts.WriteTimeout <= 0 {
		h.opts.WriteTimeout = DefaultWriteTimeout
	}
	return h
}

// page is the live view's HTML: no inline script or style (the CSP allows
// neither); viewer.js does the rest.
var page = template.Must(template.New("live").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Live view</title><script src="{{.Script}}" defer></script></head>
<body><canvas id="screen" tabindex="0" aria-label="Live view of the browser page"></canvas><div id="status" role="status">Connecting…</div></body></html>
`))

// ServeHTTP serves /live/... (the path with /wallcrawler stripped).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/live/")
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.Error(w, "Not found", http.StatusNotFound)
		return
	}
	if rest == "viewer.js" {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(viewerJS)
		return
	}
	parts := strings.Split(rest, "/")
	socket := len(parts) > 1 && parts[len(parts)-1] == "ws"
	if socket {
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 1 || len(parts) > 2 || parts[0] == "" || (len(parts) == 2 && parts[1] == "") {
		http.Error(w, "Not found", http.StatusNotFound)
		return
	}
	sessionID, pageID := parts[0], ""
	if len(parts) == 2 {
		pageID = parts[1]
	}
	q := r.URL.Query()
	g, err := h.res.LiveTarget(r.Context(), q.Get("token"), sessionID, pageID)
	switch {
	case errors.Is(err, cdp.ErrUnauthorized):
		http.Error(w, "Invalid or expired live-view token", http.StatusUnauthorized)
		return
	case errors.Is(err, cdp.ErrForbidden):
		http.Error(w, "The live-view token is for another session or page", http.StatusForbidden)
		return
	case errors.Is(err, cdp.ErrNotFound):
		http.Error(w, "Session is not running", http.StatusNotFound)
		return
	case err != nil:
		h.opts.Logger.ErrorContext(r.Context(), "live: resolve", "session", sessionID, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	if q.Get("mode") == "view" {
		g.ViewOnly = true
	}
	if socket {
		p := g.Target.Project
		if !h.opts.Projects.Acquire(p) {
			h.opts.Projects.Refuse(r.Context(), w, h.opts.Logger, p)
			return
		}
		defer h.opts.Projects.Release(p)
		h.serveSocket(w, r, sessionID, g)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' blob: data:; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "+h.opts.FrameAncestors)
	script := "viewer.js"
	if pageID != "" {
		script = "../viewer.js"
	}
	_ = page.Execute(w, struct{ Script string }{script})
}
