// Package browser is the browser provider of Wallcrawler, the
// Browserbase-compatible remote-browser service. It launches local headless
// Chromium processes, exposes their Chrome DevTools Protocol (CDP) endpoints
// and manages their lifetime: graceful shutdown (so that profiles are flushed
// to disk), process-group cleanup, crash detection, downloads, a warm pool of
// pre-launched browsers and the removal of orphans left behind by a crashed
// server.
package browser

import (
	"context"
	"io"
	"net/http"
)

// DefaultWidth is the window width in pixels used when LaunchOptions.Width is 0.
const DefaultWidth = 1280

// DefaultHeight is the window height in pixels used when LaunchOptions.Height is 0.
const DefaultHeight = 720

// LaunchOptions configures one browser.
type LaunchOptions struct {
	// UserDataDir is the Chrome profile directory to use (e.g. one restored
	// from an archive). Empty: the provider creates a fresh one inside the
	// browser's work dir.
	UserDataDir string
	// Width and Height are the window size in pixels; 0 means
	// DefaultWidth x DefaultHeight.
	Width, Height int
	// Extension, when set, writes an unpacked extension into the empty
	// directory it is given (inside the browser's work dir). The provider
	// hands the files to the browser's user, read-only, and loads the
	// extension before Launch returns, without access to file:// URLs.
	// A warm browser is never handed out for it.
	Extension func(dir string) error
	// Nice, when positive, starts the browser that much nicer (at a lower
	// CPU priority) than quarry: every process and thread of it is born
	// at quarry's niceness plus Nice (at most 19). A Pool starts its warm
	// browsers so and gives them quarry's niceness back when it hands one
	// over.
	Nice int
}

// size returns the effective window size of o.
func (o LaunchOptions) size() (width, height int) {
	width, height = o.Width, o.Height
	if width <= 0 {
		width = DefaultWidth
	}
	if height <= 0 {
		height = DefaultHeight
	}
	return width, height
}

// Browser is one running browser process.
type Browser interface {
	// ID returns the unique id assigned by the provider.
	ID() string
	// WebSocketURL returns the browser target's CDP endpoint,
	// ws://devtools.invalid/devtools/browser/<id>, reached only through
	// HTTPClient.
	WebSocketURL() string
	// PageWebSocketURL returns the CDP endpoint of the browser's target
	// targetID (a page), reached only through HTTPClient.
	PageWebSocketURL(targetID string) string
	// HTTPClient returns the client that reaches the browser's DevTools
	// endpoints (its WebSocket URLs, /json/version, /json/list): the
	// browser has no DevTools port, and no other client reaches them.
	HTTPClient() *http.Client
	// PID returns the process id of the browser's main process (which is
	// also the id of its process group).
	PID() int
	// LaunchRetries returns how many times the provider started the
	// browser again because an earlier attempt died during start-up (0
	// when the first attempt succeeded).
	LaunchRetries() int
	// UserDataDir returns the profile directory in use.
	UserDataDir() string
	// DownloadDir returns the directory into which the browser's downloads
	// are saved (inside the work dir).
	DownloadDir() string
	// UploadDir returns the directory holding the files uploaded for the
	// session (inside the work dir): readable by the browser's user, never
	// writable by it.
	UploadDir() string
	// StoreUpload writes src into the upload directory as name (its last
	// path element; see UploadName) and returns the file's path and size.
	// More than limit bytes fail with ErrUploadTooLarge and keep nothing;
	// a file of the same name is replaced.
	StoreUpload(name string, src io.Reader, limit int64) (path string, size int64, err error)
	// Done returns a channel that is closed when the process has exited
	// (crash or Close).
	Done() <-chan struct{}
	// Err reports, after Done is closed, why the process exited. It is nil
	// after a Close and before the process exited.
	Err() error
	// Close stops the browser: gracefully via CDP Browser.close first, then
	// SIGTERM and finally SIGKILL of its process group. It returns nil once
	// no process of the browser is alive any more. It is idempotent and safe
	// for concurrent use.
	Close(ctx context.Context) error
	// Kill stops the browser at once: SIGKILL of its process group, without
	// the graceful close, so what the profile had not yet written to disk
	// is lost (use it when the profile is thrown away). It returns nil once
	// no process of the browser is alive any more. It is idempotent and
	// safe for concurrent use, with Close too.
	Kill(ctx context.Context) error
	// Remove deletes the browser's work dir. Call it after Close, once the
	// caller has archived the profile. It never deletes a caller-provided
	// UserDataDir. With per-browser user ids, the browser's id returns to
	// its range only here, once its files are gone (a caller's
	// UserDataDir outside the work dir must be deleted before).
	Remove() error
}

// Provider launches browsers.
type Provider interface {
	// Launch starts a browser and returns once its CDP endpoint answers.
	Launch(ctx context.Context, opts LaunchOptions) (Browser, error)
}
