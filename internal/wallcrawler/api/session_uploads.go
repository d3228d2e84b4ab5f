package api

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/cdp"
	"github.com/quarrydb/quarry/internal/wallcrawler/sessions"
)

// multipartOverhead is what a multipart body may hold besides the file:
// boundaries, part headers, small fields.
const multipartOverhead = 1 << 20

// uploadJSON answers POST /v1/sessions/{id}/uploads. message is
// Browserbase's answer; path (where the session's pages may be handed the
// file: DOM.setFileInputFiles), name and size are quarry's additions.
type uploadJSON struct {
	Message string `json:"message"`
	Path    string `json:"path"`
	Name    string `json:"name"`
	Size    int64  `json:"size"`
}

// uploadFile stores the multipart part "file" in the session's upload
// directory. The body is read as it arrives (never held in memory), and
// cut at the per-file cap plus the multipart overhead.
func (h *Handler) uploadFile(w http.ResponseWriter, r *http.Request) {
	pr, _ := auth.PrincipalFrom(r.Context())
	id := r.PathValue("id")
	// Ownership first: another project's session is 404 whatever the body.
	if _, err := h.opts.Sessions.Get(r.Context(), pr, id); err != nil {
		h.sessionError(w, r, err)
		return
	}
	maxFile := h.opts.Sessions.UploadMaxBytes()
	part, err := filePart(w, r, maxFile, "the file")
	if err != nil {
		h.uploadError(w, r, err, maxFile)
		return
	}
	if part == nil {
		return
	}
	if part.FileName() == "" {
		writeError(w, http.StatusBadRequest, "The part \"file\" has no file name")
		return
	}
	name, size, err := h.opts.Sessions.Upload(r.Context(), pr, id, part.FileName(), part)
	if err != nil {
		h.uploadError(w, r, err, maxFile)
		return
	}
	writeJSON(w, http.StatusOK, uploadJSON{Message: "File uploaded successfully", Path: cdp.BrowserbaseUploadDir + "/" + name, Name: name, Size: size})
}

// filePart returns the part named "file" of r's multipart body, the body
// cut at max bytes plus the multipart overhead; what names the file in
// the refusals ("the file", "the extension's zip archive"). A body that
// is not multipart, or has no such part, is answered 400 here (nil, nil);
// a read error is returned for the caller to answer.
func filePart(w http.ResponseWriter, r *http.Request, max int64, what string) (*multipart.Part, error) {
	r.Body = http.MaxBytesReader(w, r.Body, max+multipartOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "The body must be multipart/form-data with "+what+" in a part named \"file\"")
		return nil, nil
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, "No part named \"file\" in the multipart body")
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if part.FormName() == "file" {
			return part, nil
		}
		_ = part.Close()
	}
}

// uploadError answers a failed upload: 413 for a cap (the file's, the
// session's quota, or the body's), 409 for a session whose browser is not
// here, else as any session error.
func (h *Handler) uploadError(w http.ResponseWriter, r *http.Request, err error, maxFile int64) {
	var le *sessions.UploadLimitError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &le) && le.What == "session":
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The session's uploaded files would pass %d bytes, this server's cap per session (%s)", le.Limit, le.Setting))
	case errors.As(err, &le):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The file passes %d bytes, this server's cap per file (%s)", le.Limit, le.Setting))
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body passes %d bytes: a file may hold at most %d (--wallcrawler-upload-max-bytes)", mbe.Limit, maxFile))
	case errors.Is(err, sessions.ErrElsewhere):
		writeError(w, http.StatusConflict, "The session's browser runs on another quarry node: send the upload to that node")
	case errors.Is(err, sessions.ErrState):
		writeError(w, http.StatusConflict, "Session is not running")
	default:
		h.sessionError(w, r, err)
	}
}
