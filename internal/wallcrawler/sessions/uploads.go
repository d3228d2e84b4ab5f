package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/quarrydb/quarry/internal/wallcrawler/auth"
	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
)

// Defaults of the upload caps (Options.UploadMaxBytes, UploadQuota).
const (
	DefaultUploadMaxBytes = 50 << 20
	DefaultUploadQuota    = 200 << 20
)

// UploadLimitError is an upload refused by a cap: the file alone passes
// the per-file cap, or with the session's other uploads the session's
// quota. Nothing of the file is kept.
type UploadLimitError struct {
	// What names the cap ("file", "session").
	What string
	// Limit is the cap in bytes.
	Limit int64
	// Setting names the flag of the cap.
	Setting string
}

func (e *UploadLimitError) Error() string {
	if e.What == "session" {
		return fmt.Sprintf("sessions: the session's uploads would pass %d bytes (%s)", e.Limit, e.Setting)
	}
	return fmt.Sprintf("sessions: the file passes %d bytes (%s)", e.Limit, e.Setting)
}

// ErrElsewhere is a request that needs the session's browser, which runs
// in another quarry process of the installation.
var ErrElsewhere = errors.New("sessions: the session's browser runs on another node")

// Upload stores the file name, read from src, in the upload directory of
// session id's browser, where the session's pages may be handed it
// (DOM.setFileInputFiles with its path, or /tmp/.uploads/<name> as
// Browserbase names it). It returns the name the file took and its size.
// A file over Options.UploadMaxBytes, or one that would bring the
// session's uploads over Options.UploadQuota (a file replaced by one of the
// same name no longer counts), is an *UploadLimitError. Uploads to one
// session are stored one at a time.
func (m *Manager) Upload(ctx context.Context, p auth.Principal, id, name string, src io.Reader) (string, int64, error) {
	x, err := m.Get(ctx, p, id)
	if err != nil {
		return "", 0, err
	}
	if x.Status != StatusRunning {
		return "", 0, fmt.Errorf("%w: session %s is %s", ErrState, id, x.Status)
	}
	if name, err = browser.UploadName(name); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m.mu.Lock()
	l := m.live[id]
	m.mu.Unlock()
	if l == nil {
		return "", 0, fmt.Errorf("%w: %s", ErrElsewhere, id)
	}
	l.uploadMu.Lock()
	defer l.uploadMu.Unlock()
	l.mu.Lock()
	used := l.uploaded - l.uploads[name]
	stopping := l.stopping
	l.mu.Unlock()
	if stopping {
		return "", 0, fmt.Errorf("%w: session %s is ending", ErrState, id)
	}
	limit, refusal := m.o.UploadMaxBytes, &UploadLimitError{What: "file", Limit: m.o.UploadMaxBytes, Setting: "--wallcrawler-upload-max-bytes"}
	if left := m.o.UploadQuota - used; left < limit {
		limit, refusal = max(left, 0), &UploadLimitError{What: "session", Limit: m.o.UploadQuota, Setting: "--wallcrawler-upload-quota"}
	}
	_, n, err := l.b.StoreUpload(name, src, limit)
	if errors.Is(err, browser.ErrUploadTooLarge) {
		return "", n, refusal
	}
	if err != nil {
		return "", n, err
	}
	l.mu.Lock()
	if l.uploads == nil {
		l.uploads = map[string]int64{}
	}
	l.uploaded += n - l.uploads[name]
	l.uploads[name] = n
	l.mu.Unlock()
	m.log.Info("wallcrawler: file uploaded", "session", id, "name", name, "bytes", n)
	return name, n, nil
}

// UploadMaxBytes returns the cap on one uploaded file.
func (m *Manager) UploadMaxBytes() int64 { return m.o.UploadMaxBytes }
