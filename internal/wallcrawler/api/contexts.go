package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/contexts"
)

// UploadURLTTL is how long a context's uploadUrl stays valid.
const UploadURLTTL = 15 * time.Minute

// maxContextBody bounds the JSON body of POST /v1/contexts.
const maxContextBody = 64 << 10

// contextTimeLayout is the form of the contexts' timestamps: RFC 3339 in UTC
// with milliseconds.
const contextTimeLayout = "2006-01-02T15:04:05.000Z"

// registerContextRoutes adds the /v1/contexts routes when the Handler has a
// contexts store.
func (h *Handler) registerContextRoutes() {
	if h.opts.Contexts == nil {
		return
	}
	h.mux.HandleFunc("POST /v1/contexts", h.createContext)
	h.mux.HandleFunc("GET /v1/contexts/{id}", h.getContext)
	h.mux.HandleFunc("PUT /v1/contexts/{id}", h.updateContext)
	h.mux.HandleFunc("DELETE /v1/contexts/{id}", h.deleteContext)
}

// contextUploadJSON is the answer of POST and PUT /v1/contexts: where to
// upload the profile archive. Archives are not encrypted, so publicKey is
// empty and cipherAlgorithm "NONE".
type contextUploadJSON struct {
	ID                       string `json:"id"`
	UploadURL                string `json:"uploadUrl"`
	PublicKey                string `json:"publicKey"`
	CipherAlgorithm          string `json:"cipherAlgorithm"`
	InitializationVectorSize int    `json:"initializationVectorSize"`
}

// contextJSON is a context as GET /v1/contexts/{id} returns it.
type contextJSON struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	Name      string `json:"name,omitempty"`
}

// createContextJSON is the body of POST /v1/contexts.
type createContextJSON struct {
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
}

func (h *Handler) uploadJSON(r *http.Request, c contexts.Context) (contextUploadJSON, error) {
	out := contextUploadJSON{ID: c.ID, CipherAlgorithm: "NONE"}
	if h.opts.Uploads != nil {
		u, err := h.opts.Uploads.UploadURL(r.Context(), h.origin(r), c.StorageKey, UploadURLTTL)
		if err != nil {
			return out, fmt.Errorf("context %s: upload URL: %w", c.ID, err)
		}
		out.UploadURL = u
	}
	return out, nil
}

func (h *Handler) createContext(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	var in createContextJSON
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxContextBody)).Decode(&in)
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF): // no body: all defaults
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, "Request body too large")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "Invalid JSON body: "+err.Error())
		return
	}
	projectID := pr.ProjectID
	if in.ProjectID != "" {
		if !pr.CanUse(in.ProjectID) {
			writeError(w, http.StatusNotFound, "Project not found")
			return
		}
		projectID = in.ProjectID
	}
	c, err := h.opts.Contexts.Create(r.Context(), projectID, in.Name)
	if errors.Is(err, contexts.ErrQuota) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("This project has %d contexts, the most allowed: delete one (DELETE /v1/contexts/{id}) before creating another", h.opts.Contexts.MaxPerProject()))
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	out, err := h.uploadJSON(r, c)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// lookupContext returns the path's context when it belongs to a project
// the key may use (any of them, not only the selected one); otherwise it
// answers 404, whether the context is unknown or another tenant's, and
// returns false.
func (h *Handler) lookupContext(w http.ResponseWriter, r *http.Request) (contexts.Context, bool) {
	pr, _ := auth.PrincipalFrom(r.Context())
	projects := append([]string{pr.ProjectID}, pr.ProjectIDs...)
	c, err := h.opts.Contexts.GetIn(r.Context(), projects, r.PathValue("id"))
	if errors.Is(err, contexts.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Context not found")
		return contexts.Context{}, false
	}
	if err != nil {
		h.serverError(w, r, err)
		return contexts.Context{}, false
	}
	return c, true
}

func (h *Handler) getContext(w http.ResponseWriter, r *http.Request) {
	c, ok := h.lookupContext(w, r)
	if !ok {
		return
	}
	if c.Deleting() { // only a retried DELETE still sees it
		writeError(w, http.StatusNotFound, "Context not found")
		return
	}
	writeJSON(w, http.StatusOK, contextJSON{
		ID:        c.ID,
		ProjectID: c.ProjectID,
		CreatedAt: c.CreatedAt.UTC().Format(contextTimeLayout),
		UpdatedAt: c.UpdatedAt.UTC().Format(contextTimeLayout),
		Name:      c.Name,
	})
}

func (h *Handler) updateContext(w http.ResponseWriter, r *http.Request) {
	c, ok := h.lookupContext(w, r)
	if !ok {
		return
	}
	c, err := h.opts.Contexts.Touch(r.Context(), c.ProjectID, c.ID)
	if errors.Is(err, contexts.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Context not found")
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	out, err := h.uploadJSON(r, c)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) deleteContext(w http.ResponseWriter, r *http.Request) {
	c, ok := h.lookupContext(w, r)
	if !ok {
		return
	}
	err := h.opts.Contexts.Delete(r.Context(), c.ProjectID, c.ID)
	if errors.Is(err, contexts.ErrNotFound) {
		writeError(w, http.StatusNotFound, "Context not found")
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
