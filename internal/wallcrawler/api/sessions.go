package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// maxBody bounds JSON request bodies.
const maxBody = 1 << 20

// registerSessionRoutes adds the /v1/sessions routes.
func (h *Handler) registerSessionRoutes() {
	if h.opts.Sessions == nil {
		return
	}
	h.mux.HandleFunc("POST /v1/sessions", h.createSession)
	h.mux.HandleFunc("GET /v1/sessions", h.listSessions)
	h.mux.HandleFunc("GET /v1/sessions/{id}", h.getSession)
	h.mux.HandleFunc("POST /v1/sessions/{id}", h.updateSession)
	h.mux.HandleFunc("GET /v1/sessions/{id}/debug", h.debugSession)
	h.mux.HandleFunc("GET /v1/sessions/{id}/logs", h.sessionLogs)
	h.mux.HandleFunc("GET /v1/sessions/{id}/downloads", h.sessionDownloads)
	h.mux.HandleFunc("POST /v1/sessions/{id}/uploads", h.uploadFile)
	h.mux.HandleFunc("GET /v1/sessions/{id}/recording", h.sessionRecording)
	// Browserbase's HLS replays and MP4 recording downloads: not kept.
	for _, route := range []string{"GET /v1/sessions/{id}/replays", "GET /v1/sessions/{id}/replays/{page}",
		"GET /v1/sessions/{id}/recording/downloads", "POST /v1/sessions/{id}/recording/downloads"} {
		h.mux.HandleFunc(route, h.replaysNotSupported)
	}
}

// sessionUsage adapts the session manager to UsageSource.
type sessionUsage struct{ m *sessions.Manager }

func (u sessionUsage) ProjectUsage(ctx context.Context, projectID string) (Usage, error) {
	x, err := u.m.ProjectUsage(ctx, projectID)
	return Usage{BrowserMinutes: x.BrowserMinutes, ProxyBytes: x.ProxyBytes}, err
}

// sessionJSON is a Session as Browserbase returns it.
type sessionJSON struct {
	ID                string         `json:"id"`
	CreatedAt         string         `json:"createdAt"`
	UpdatedAt         string         `json:"updatedAt"`
	ProjectID         string         `json:"projectId"`
	StartedAt         string         `json:"startedAt"`
	EndedAt           string         `json:"endedAt,omitempty"`
	ExpiresAt         string         `json:"expiresAt"`
	Status            string         `json:"status"`
	ProxyBytes        int64          `json:"proxyBytes"`
	AvgCPUUsage       *float64       `json:"avgCpuUsage,omitempty"`
	MemoryUsage       *int64         `json:"memoryUsage,omitempty"`
	KeepAlive         bool           `json:"keepAlive"`
	ContextID         string         `json:"contextId,omitempty"`
	Region            string         `json:"region"`
	UserMetadata      map[string]any `json:"userMetadata,omitempty"`
	ConnectURL        string         `json:"connectUrl,omitempty"`
	SigningKey        string         `json:"signingKey,omitempty"`
	SeleniumRemoteURL *string        `json:"seleniumRemoteUrl,omitempty"`
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// toSessionJSON renders x; withConnect adds connectUrl, signingKey and
// seleniumRemoteUrl while the session runs.
func toSessionJSON(x sessions.Session, withConnect bool) sessionJSON {
	started := x.StartedAt
	if started.IsZero() {
		started = x.CreatedAt
	}
	j := sessionJSON{
		ID: x.ID, CreatedAt: jsonTime(x.CreatedAt), UpdatedAt: jsonTime(x.UpdatedAt),
		ProjectID: x.ProjectID, StartedAt: jsonTime(started), EndedAt: jsonTime(x.EndedAt),
		ExpiresAt: jsonTime(x.ExpiresAt), Status: x.Status, ProxyBytes: x.ProxyBytes,
		KeepAlive: x.KeepAlive, ContextID: x.ContextID, Region: x.Region, UserMetadata: x.UserMetadata,
	}
	if x.UsageSampled {
		cpu, mem := x.AvgCPUUsage, x.MemoryUsage
		j.AvgCPUUsage, j.MemoryUsage = &cpu, &mem
	}
	if withConnect && x.Status == sessions.StatusRunning {
		j.ConnectURL, j.SigningKey = x.ConnectURL, x.SigningKey
		if u := seleniumURL(x); u != "" {
			j.SeleniumRemoteURL = &u
		}
	}
	return j
}

// writeSessionCreated answers a create: connectUrl, signingKey and
// seleniumRemoteUrl are always present.
func writeSessionCreated(w http.ResponseWriter, x sessions.Session) {
	writeJSON(w, http.StatusCreated, toSessionJSON(x, true))
}

// seleniumURL returns the session's W3C WebDriver endpoint: the origin of
// its connectUrl (where the client was told to reach quarry), scheme http
// or https, and /wallcrawler/webdriver/{id}. The signingKey authenticates
// it, in a header rather than in the URL, as WebDriver clients append
// their command paths to it.
func seleniumURL(x sessions.Session) string {
	base, _, ok := strings.Cut(x.ConnectURL, "/wallcrawler/cdp/")
	if !ok || !strings.HasPrefix(base, "ws") {
		return ""
	}
	return "http" + strings.TrimPrefix(base, "ws") + "/wallcrawler/webdriver/" + x.ID
}

// createRequest is the body of POST /v1/sessions.
type createRequest struct {
	ProjectID       string `json:"projectId"`
	ExtensionID     string `json:"extensionId"`
	BrowserSettings struct {
		Context *struct {
			ID      string `json:"id"`
			Persist bool   `json:"persist"`
		} `json:"context"`
		Viewport *struct {
			Width  int `json:"width"`
			Height int `json:"height"`
		} `json:"viewport"`
	} `json:"browserSettings"`
	KeepAlive    bool            `json:"keepAlive"`
	Proxies      json.RawMessage `json:"proxies"`
	Region       string          `json:"region"`
	Timeout      *int            `json:"timeout"`
	UserMetadata map[string]any  `json:"userMetadata"`
}

// decodeJSON reads a JSON body into v; an empty body is an empty object.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "Request body too large")
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	if err := json.Unmarshal(data, v); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON body: "+err.Error())
		return false
	}
	return true
}

func (h *Handler) createSession(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	var req createRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	proxies, msg := parseProxies(req.Proxies)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	in := sessions.CreateInput{
		ProjectID: req.ProjectID, KeepAlive: req.KeepAlive, Region: req.Region, UserMetadata: req.UserMetadata,
		Proxies: proxies, ExtensionID: req.ExtensionID,
	}
	if req.Timeout != nil {
		if *req.Timeout <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("timeout must be between %d and %d seconds", sessions.MinTimeout, sessions.MaxTimeout))
			return
		}
		in.Timeout = *req.Timeout
	}
	if c := req.BrowserSettings.Context; c != nil {
		if c.ID == "" {
			writeError(w, http.StatusBadRequest, "browserSettings.context.id is required")
			return
		}
		in.ContextID, in.ContextPersist = c.ID, c.Persist
	}
	if v := req.BrowserSettings.Viewport; v != nil {
		in.Width, in.Height = v.Width, v.Height
	}
	x, err := h.opts.Sessions.Create(r.Context(), pr, in, h.origin(r))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	writeSessionCreated(w, x)
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	status := r.URL.Query().Get("status")
	switch status {
	case "", sessions.StatusRunning, sessions.StatusCompleted, sessions.StatusError, sessions.StatusTimedOut:
	case "PENDING":
		writeJSON(w, http.StatusOK, []sessionJSON{}) // sessions are never pending here
		return
	default:
		writeError(w, http.StatusBadRequest, "status must be one of RUNNING, ERROR, TIMED_OUT, COMPLETED, PENDING")
		return
	}
	list, err := h.opts.Sessions.List(r.Context(), pr, status, r.URL.Query().Get("q"))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	out := make([]sessionJSON, len(list))
	for i, x := range list {
		out[i] = toSessionJSON(x, false)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	x, err := h.opts.Sessions.Get(r.Context(), pr, r.PathValue("id"))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSessionJSON(x, true))
}

func (h *Handler) updateSession(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	var req struct {
		Status    string `json:"status"`
		ProjectID string `json:"projectId"`
	}
	if !decodeJSON(w, r, &req) {
		return
	}
	if req.Status != "REQUEST_RELEASE" {
		writeError(w, http.StatusBadRequest, `status must be "REQUEST_RELEASE"`)
		return
	}
	if req.ProjectID != "" && !pr.CanUse(req.ProjectID) {
		writeError(w, http.StatusNotFound, "Session not found")
		return
	}
	x, err := h.opts.Sessions.Release(r.Context(), pr, r.PathValue("id"))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSessionJSON(x, false))
}

// debugJSON is GET /v1/sessions/{id}/debug. debuggerUrl and
// debuggerFullscreenUrl are the live view (package live) of the first
// page; debuggerViewOnlyUrl, a quarry addition, is its view-only variant.
type debugJSON struct {
	DebuggerURL           string          `json:"debuggerUrl"`
	DebuggerFullscreenURL string          `json:"debuggerFullscreenUrl"`
	DebuggerViewOnlyURL   string          `json:"debuggerViewOnlyUrl"`
	WSURL                 string          `json:"wsUrl"`
	Pages                 []debugPageJSON `json:"pages"`
}

type debugPageJSON struct {
	ID                    string `json:"id"`
	URL                   string `json:"url"`
	Title                 string `json:"title"`
	FaviconURL            string `json:"faviconUrl"`
	DebuggerURL           string `json:"debuggerUrl"`
	DebuggerFullscreenURL string `json:"debuggerFullscreenUrl"`
	DebuggerViewOnlyURL   string `json:"debuggerViewOnlyUrl"`
}

// liveURLs returns the live view URLs of session x's page pageID ("" for
// its first page): interactive and view-only, each with its own token.
func (h *Handler) liveURLs(r *http.Request, x sessions.Session, pageID string) (full, view string, err error) {
	base := h.origin(r) + "/wallcrawler/live/" + url.PathEscape(x.ID)
	if pageID != "" {
		base += "/" + url.PathEscape(pageID)
	}
	tok, err := h.opts.Sessions.LiveToken(x, pageID, false)
	if err != nil {
		return "", "", err
	}
	vtok, err := h.opts.Sessions.LiveToken(x, pageID, true)
	if err != nil {
		return "", "", err
	}
	return base + "?token=" + url.QueryEscape(tok), base + "?token=" + url.QueryEscape(vtok) + "&mode=view", nil
}

func (h *Handler) debugSession(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	x, pages, err := h.opts.Sessions.Pages(r.Context(), pr, r.PathValue("id"))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	out := debugJSON{WSURL: x.ConnectURL, Pages: []debugPageJSON{}}
	if out.DebuggerURL, out.DebuggerViewOnlyURL, err = h.liveURLs(r, x, ""); err != nil {
		h.serverError(w, r, err)
		return
	}
	out.DebuggerFullscreenURL = out.DebuggerURL
	for i, p := range pages {
		u, v, err := h.liveURLs(r, x, p.ID)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		out.Pages = append(out.Pages, debugPageJSON{ID: p.ID, URL: p.URL, Title: p.Title, FaviconURL: p.FaviconURL,
			DebuggerURL: u, DebuggerFullscreenURL: u, DebuggerViewOnlyURL: v})
		if i == 0 {
			out.DebuggerURL, out.DebuggerFullscreenURL, out.DebuggerViewOnlyURL = u, u, v
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) sessionLogs(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	entries, err := h.opts.Sessions.Logs(r.Context(), pr, r.PathValue("id"))
	if err != nil {
		h.sessionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entries)
}

func (h *Handler) sessionDownloads(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	var buf bytes.Buffer
	if err := h.opts.Sessions.Downloads(r.Context(), pr, r.PathValue("id"), &buf); err != nil {
		h.sessionError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="downloads.zip"`)
	_, _ = w.Write(buf.Bytes())
}

// sessionError maps the session manager's errors to HTTP answers.
func (h *Handler) sessionError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, sessions.ErrInvalid):
		writeError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), sessions.ErrInvalid.Error()+": "))
	case errors.Is(err, sessions.ErrNotFound):
		writeError(w, http.StatusNotFound, "Session not found")
	case errors.Is(err, auth.ErrForbidden):
		// The project became INACTIVE after the request was authorized.
		writeError(w, http.StatusForbidden, "The project is not active")
	case errors.Is(err, auth.ErrConcurrencyLimit):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "The project's concurrency limit is reached: release a session first")
	case errors.Is(err, sessions.ErrState):
		writeError(w, http.StatusConflict, "Session is not running")
	case errors.Is(err, sessions.ErrContextArchive):
		writeError(w, http.StatusUnprocessableEntity, contextArchiveMessage(err))
	case errors.Is(err, sessions.ErrUnavailable):
		h.opts.Logger.WarnContext(r.Context(), "wallcrawler: session failed to start", "err", err)
		w.Header().Set("x-should-retry", "false")
		writeError(w, http.StatusServiceUnavailable, "The browser could not be started: "+err.Error())
	default:
		h.serverError(w, r, err)
	}
}

// contextArchiveMessage explains why a context's archive was refused (422):
// which cap it passes, or that it is unsafe or corrupt.
func contextArchiveMessage(err error) string {
	const prefix = "The context's archive cannot be used: "
	var le *contexts.LimitError
	switch {
	case errors.As(err, &le):
		return fmt.Sprintf("%sit holds more than %d %s, this server's cap; upload a smaller profile", prefix, le.Limit, le.What)
	case errors.Is(err, contexts.ErrUnsafeArchive):
		return prefix + "it holds an entry outside the profile directory (absolute path, \"..\" or a link pointing outside)"
	default:
		return prefix + "it is not a valid tar.gz archive"
	}
}
