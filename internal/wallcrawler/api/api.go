// Package api is Wallcrawler's HTTP API, compatible with Browserbase API v1:
// raw JSON bodies (no envelope) and Browserbase-shaped JSON errors. The
// caller mounts the Handler under /wallcrawler with the prefix stripped,
// e.g.
//
//	mux.Handle("/wallcrawler/", http.StripPrefix("/wallcrawler", h))
//
// so that a Browserbase SDK with baseURL http://host:port/wallcrawler reaches
// /v1/... here.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/platform/blob"
	"github.com/quarrydb/quarry/internal/platform/origin"
	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
	"github.com/quarrydb/quarry/internal/wallcrawler/live"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// Request headers carrying credentials. Both the Browserbase family and the
// original Wallcrawler family are accepted (header names are
// case-insensitive).
const (
	HeaderBBAPIKey    = "X-BB-API-Key"
	HeaderWCAPIKey    = "X-WC-API-Key"
	HeaderBBProjectID = "X-BB-Project-Id"
	HeaderWCProjectID = "X-WC-Project-Id"
)

// Usage is a project's consumption, as GET /v1/projects/{id}/usage returns
// it.
type Usage struct {
	BrowserMinutes float64 `json:"browserMinutes"`
	ProxyBytes     int64   `json:"proxyBytes"`
}

// UsageSource reports a project's usage. The sessions layer implements it;
// without one every project reports zero usage.
type UsageSource interface {
	ProjectUsage(ctx context.Context, projectID string) (Usage, error)
}

// Options configures a Handler. Zero values mean defaults.
type Options struct {
	// Usage answers /v1/projects/{id}/usage; default: zeros.
	Usage UsageSource
	// Logger receives server-side errors; default slog.Default().
	Logger *slog.Logger
	// Contexts serves /v1/contexts; nil leaves those routes unanswered (404).
	Contexts *contexts.Store
	// Extensions serves /v1/extensions; nil leaves those routes
	// unanswered (404).
	Extensions *extensions.Store
	// Uploads issues the contexts' uploadUrl (a *blob.Signer, or a
	// *blob.S3 presigning PutObject); nil leaves uploadUrl empty.
	Uploads blob.Uploader
	// Sessions serves /v1/sessions (and project usage when Usage is nil);
	// nil leaves those routes unanswered (404).
	Sessions *sessions.Manager
	// CDP serves /cdp/... (authenticated by signingKey, not API key).
	CDP http.Handler
	// WebDriver serves /webdriver/... (each session's seleniumRemoteUrl,
	// authenticated by signingKey, not API key); nil: 404.
	WebDriver http.Handler
	// Origin computes the origin of connectUrl and of quarry-signed
	// uploadUrl: the configured public URL, else the request's Host
	// (X-Forwarded-* only from trusted proxies). nil: the request's Host
	// and TLS, never X-Forwarded-* headers.
	Origin *origin.Resolver
	// LiveFrameAncestors is the CSP frame-ancestors of the live view
	// (/live/..., served when Sessions is set): who may embed it in a
	// frame. Default "*": any origin.
	LiveFrameAncestors string
	// Projects caps one project's live viewers, counted with its CDP
	// clients (the CDP proxy is given the same); nil: no cap.
	Projects *cdp.ProjectConns
}

// Handler serves the Wallcrawler API. Every request must carry a valid API
// key (see HeaderBBAPIKey); the authorized auth.Principal is available to
// route handlers through auth.PrincipalFrom.
type Handler struct {
	store *auth.Store
	opts  Options
	mux   *http.ServeMux
	live  http.Handler // nil without Sessions
}

// New returns a Handler authorizing requests and reading projects through
// store. opts may be nil.
func New(store *auth.Store, opts *Options) *Handler {
	h := &Handler{store: store, mux: http.NewServeMux()}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	h.mux.HandleFunc("GET /v1/projects", h.listProjects)
	h.mux.HandleFunc("GET /v1/projects/{id}", h.getProject)
	h.mux.HandleFunc("GET /v1/projects/{id}/usage", h.projectUsage)
	if h.opts.Usage == nil && h.opts.Sessions != nil {
		h.opts.Usage = sessionUsage{h.opts.Sessions}
	}
	if h.opts.Sessions != nil {
		h.live = live.New(h.opts.Sessions, &live.Options{FrameAncestors: h.opts.LiveFrameAncestors, Logger: h.opts.Logger, Projects: h.opts.Projects})
	}
	h.registerContextRoutes()
	h.registerExtensionRoutes()
	h.registerSessionRoutes()
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Route "+r.Method+":"+r.URL.Path+" not found")
	})
	return h
}

// ServeHTTP authorizes the request and dispatches it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.CDP != nil && strings.HasPrefix(r.URL.Path, "/cdp/") {
		h.opts.CDP.ServeHTTP(w, r) // authenticated by the signingKey
		return
	}
	if h.opts.WebDriver != nil && strings.HasPrefix(r.URL.Path, "/webdriver/") {
		h.opts.WebDriver.ServeHTTP(w, r) // authenticated by the signingKey
		return
	}
	if h.live != nil && strings.HasPrefix(r.URL.Path, "/live/") {
		h.live.ServeHTTP(w, r) // authenticated by the live-view token
		return
	}
	key := r.Header.Get(HeaderBBAPIKey)
	if key == "" {
		key = r.Header.Get(HeaderWCAPIKey)
	}
	project := r.Header.Get(HeaderBBProjectID)
	if project == "" {
		project = r.Header.Get(HeaderWCProjectID)
	}
	p, err := h.store.Authorize(r.Context(), key, project)
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		writeError(w, http.StatusUnauthorized, "Invalid or missing API key")
		return
	case errors.Is(err, auth.ErrForbidden):
		writeError(w, http.StatusForbidden, "API key may not use the requested project, or the project is not active")
		return
	case err != nil:
		h.serverError(w, r, err)
		return
	}
	h.mux.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
}

// projectJSON is a project as Browserbase returns it.
type projectJSON struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	OwnerID        string `json:"ownerId"`
	DefaultTimeout int    `json:"defaultTimeout"`
	Concurrency    int    `json:"concurrency"`
	CreatedAt      string `json:"createdAt"`
	UpdatedAt      string `json:"updatedAt"`
}

func toProjectJSON(p auth.Project) projectJSON {
	return projectJSON{
		ID: p.ID, Name: p.Name, OwnerID: p.OwnerID,
		DefaultTimeout: p.DefaultTimeout, Concurrency: p.Concurrency,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano),
		UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
}

// listProjects answers the projects the key may use, primary first.
func (h *Handler) listProjects(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	out := []projectJSON{}
	for _, id := range pr.ProjectIDs {
		p, err := h.store.GetProject(r.Context(), id)
		if errors.Is(err, auth.ErrNotFound) {
			continue
		}
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		out = append(out, toProjectJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

// project returns the path's project when the key may use it; otherwise it
// answers 404 (not 403, so as not to reveal other tenants' projects) and
// returns false.
func (h *Handler) project(w http.ResponseWriter, r *http.Request) (auth.Project, bool) {
	pr, _ := auth.PrincipalFrom(r.Context())
	id := r.PathValue("id")
	if !pr.CanUse(id) {
		writeError(w, http.StatusNotFound, "Project not found")
		return auth.Project{}, false
	}
	p, err := h.store.GetProject(r.Context(), id)
	if errors.Is(err, auth.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Project not found")
		return auth.Project{}, false
	}
	if err != nil {
		h.serverError(w, r, err)
		return auth.Project{}, false
	}
	return p, true
}

func (h *Handler) getProject(w http.ResponseWriter, r *http.Request) {
	if p, ok := h.project(w, r); ok {
		writeJSON(w, http.StatusOK, toProjectJSON(p))
	}
}

func (h *Handler) projectUsage(w http.ResponseWriter, r *http.Request) {
	p, ok := h.project(w, r)
	if !ok {
		return
	}
	var u Usage
	if h.opts.Usage != nil {
		var err error
		if u, err = h.opts.Usage.ProjectUsage(r.Context(), p.ID); err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, u)
}

// origin returns the scheme and host (and base path) clients reach quarry
// at ("http://127.0.0.1:8080"), for the URLs the API hands out: see
// Options.Origin.
func (h *Handler) origin(r *http.Request) string { return h.opts.Origin.Origin(r) }

// errorJSON is the error body Browserbase's API returns.
type errorJSON struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Message    string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, errorJSON{StatusCode: status, Error: http.StatusText(status), Message: message})
}

func (h *Handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	h.opts.Logger.ErrorContext(r.Context(), "wallcrawler: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "Internal server error")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
