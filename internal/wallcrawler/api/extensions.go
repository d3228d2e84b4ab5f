package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
)

// registerExtensionRoutes adds the /v1/extensions routes when the Handler
// has an extensions store.
func (h *Handler) registerExtensionRoutes() {
	if h.opts.Extensions == nil {
		return
	}
	h.mux.HandleFunc("POST /v1/extensions", h.createExtension)
	h.mux.HandleFunc("GET /v1/extensions", h.listExtensions)
	h.mux.HandleFunc("GET /v1/extensions/{id}", h.getExtension)
	h.mux.HandleFunc("DELETE /v1/extensions/{id}", h.deleteExtension)
}

// extensionJSON is an extension as the API returns it: Browserbase's
// fields (id, fileName, projectId, createdAt, updatedAt), then quarry's
// additions read from the manifest (name, version).
type extensionJSON struct {
	ID        string `json:"id"`
	FileName  string `json:"fileName"`
	ProjectID string `json:"projectId"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	Name      string `json:"name"`
	Version   string `json:"version"`
}

func toExtensionJSON(e extensions.Extension) extensionJSON {
	return extensionJSON{
		ID: e.ID, FileName: e.FileName, ProjectID: e.ProjectID,
		CreatedAt: e.CreatedAt.UTC().Format(contextTimeLayout),
		UpdatedAt: e.UpdatedAt.UTC().Format(contextTimeLayout),
		Name:      e.Name, Version: e.Version,
	}
}

// createExtension stores the zip archive of the multipart part "file" as
// an extension of the key's project. The body is read as it arrives and
// cut at the archive cap plus the multipart overhead.
func (h *Handler) createExtension(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	maxZip := h.opts.Extensions.MaxZipBytes()
	part, err := filePart(w, r, maxZip, "the extension's zip archive")
	if err != nil {
		h.extensionError(w, r, err, maxZip)
		return
	}
	if part == nil {
		return
	}
	name := part.FileName()
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if len(name) > 255 {
		name = name[:255]
	}
	e, err := h.opts.Extensions.Create(r.Context(), pr.ProjectID, name, part)
	if err != nil {
		h.extensionError(w, r, err, maxZip)
		return
	}
	writeJSON(w, http.StatusCreated, toExtensionJSON(e))
}

// extensionError answers a refused upload: 400 with what to fix for an
// archive that is not an acceptable extension, 413 past a cap, 403 for a
// project at its extension quota.
func (h *Handler) extensionError(w http.ResponseWriter, r *http.Request, err error, maxZip int64) {
	var le *extensions.LimitError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &le):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The extension's archive passes this server's cap: more than %d %s", le.Limit, le.What))
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body passes %d bytes: an extension's archive may hold at most %d", mbe.Limit, maxZip))
	case errors.Is(err, extensions.ErrQuota):
		writeError(w, http.StatusForbidden, fmt.Sprintf("This project has %d extensions, the most allowed: delete one (DELETE /v1/extensions/{id}) before uploading another", h.opts.Extensions.MaxPerProject()))
	case errors.Is(err, extensions.ErrInvalid):
		writeError(w, http.StatusBadRequest, "The extension cannot be used: "+strings.TrimPrefix(err.Error(), extensions.ErrInvalid.Error()+": "))
	case errors.Is(err, extensions.ErrNotFound):
		writeError(w, http.StatusNotFound, "Extension not found")
	default:
		h.serverError(w, r, err)
	}
}

// lookupExtension returns the path's extension when it belongs to a
// project the key may use; otherwise it answers 404, whether the
// extension is unknown or another tenant's, and returns false.
func (h *Handler) lookupExtension(w http.ResponseWriter, r *http.Request) (extensions.Extension, bool) {
	pr, _ := auth.PrincipalFrom(r.Context())
	projects := append([]string{pr.ProjectID}, pr.ProjectIDs...)
	e, err := h.opts.Extensions.GetIn(r.Context(), projects, r.PathValue("id"))
	if err != nil {
		h.extensionError(w, r, err, 0)
		return extensions.Extension{}, false
	}
	return e, true
}

// listExtensions answers the extensions of the key's project in id order
// (Browserbase's SDK has no list call; this is quarry's).
func (h *Handler) listExtensions(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	list, err := h.opts.Extensions.List(r.Context(), pr.ProjectID)
	if err != nil {
		h.extensionError(w, r, err, 0)
		return
	}
	out := make([]extensionJSON, len(list))
	for i, e := range list {
		out[i] = toExtensionJSON(e)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) getExtension(w http.ResponseWriter, r *http.Request) {
	if e, ok := h.lookupExtension(w, r); ok {
		writeJSON(w, http.StatusOK, toExtensionJSON(e))
	}
}

func (h *Handler) deleteExtension(w http.ResponseWriter, r *http.Request) {
	e, ok := h.lookupExtension(w, r)
	if !ok {
		return
	}
	if err := h.opts.Extensions.Delete(r.Context(), e.ProjectID, e.ID); err != nil {
		h.extensionError(w, r, err, 0)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
