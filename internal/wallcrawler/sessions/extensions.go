package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/quarrydb/quarry/internal/wallcrawler/browser"
	"github.com/quarrydb/quarry/internal/wallcrawler/extensions"
)

// lookupExtension returns the extension id of project projectID ("" for
// none: nil). An unknown id, or another project's, is ErrInvalid, as an
// unknown context is.
func (m *Manager) lookupExtension(ctx context.Context, projectID, id string) (*extensions.Extension, error) {
	if id == "" {
		return nil, nil
	}
	if m.d.Extensions == nil {
		return nil, fmt.Errorf("%w: extensions are not enabled", ErrInvalid)
	}
	e, err := m.d.Extensions.Get(ctx, projectID, id)
	if errors.Is(err, extensions.ErrNotFound) {
		return nil, fmt.Errorf("%w: extension %.80q not found", ErrInvalid, id)
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// withExtension sets opts to unpack e (nil: none) into the browser it
// launches. The archive is checked again as it is unpacked.
func (m *Manager) withExtension(ctx context.Context, opts *browser.LaunchOptions, e *extensions.Extension) {
	if e == nil {
		return
	}
	ext := *e
	opts.Extension = func(dir string) error { return m.d.Extensions.Unpack(ctx, ext, dir) }
}
