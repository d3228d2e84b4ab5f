// Package sessions runs Wallcrawler's browser sessions: the
// wallcrawler-sessions table (one item per session, every lifecycle step a
// conditional write on the previous state that appends to eventHistory),
// the signingKey JWTs that open the CDP proxy, the Notifier that follows
// the table's stream to learn of the sessions other processes end, and
// the Manager that launches, releases, times out and reconciles the
// browsers behind the sessions, routes their CDP connections, samples
// their usage and keeps their artifacts and recordings.
package sessions

import (
	"errors"
	"time"
)

// Internal (lifecycle) statuses, the document's internalStatus.
const (
	StateCreating     = "CREATING"
	StateProvisioning = "PROVISIONING"
	StateReady        = "READY"
	StateTerminating  = "TERMINATING"
	StateStopped      = "STOPPED"
	StateFailed       = "FAILED"
	StateTimedOut     = "TIMED_OUT"
)

// SDK-visible statuses, the document's status attribute.
const (
	StatusRunning   = "RUNNING"
	StatusCompleted = "COMPLETED"
	StatusError     = "ERROR"
	StatusTimedOut  = "TIMED_OUT"
)

// SDKStatus maps an internal status to the status the Browserbase SDK
// sees: CREATING…TERMINATING are RUNNING, STOPPED is COMPLETED, FAILED is
// ERROR, TIMED_OUT is TIMED_OUT, and anything unknown is ERROR.
func SDKStatus(internal string) string {
	switch internal {
	case StateCreating, StateProvisioning, "STARTING", StateReady, "ACTIVE", StateTerminating:
		return StatusRunning
	case StateStopped:
		return StatusCompleted
	case StateTimedOut:
		return StatusTimedOut
	default:
		return StatusError
	}
}

// Terminal reports whether an internal status is final.
func Terminal(internal string) bool {
	return internal == StateStopped || internal == StateFailed || internal == StateTimedOut
}

// Errors of the package, matched with errors.Is.
var (
	// ErrNotFound: no such session (or one of another project).
	ErrNotFound = errors.New("sessions: not found")
	// ErrState: the session is not in a state that allows the operation
	// (the conditional write on the previous state failed).
	ErrState = errors.New("sessions: wrong state")
	// ErrInvalid: a request parameter failed validation.
	ErrInvalid = errors.New("sessions: invalid request")
	// ErrUnavailable: the browser could not be started.
	ErrUnavailable = errors.New("sessions: browser unavailable")
	// ErrContextArchive: the context's archive cannot be used: it passes
	// an unpack cap (the error also matches contexts.ErrArchiveTooLarge),
	// holds an unsafe entry (contexts.ErrUnsafeArchive) or is corrupt
	// (contexts.ErrCorruptArchive). No session is created.
	ErrContextArchive = errors.New("sessions: context archive refused")
)

// Event is one entry of a session's eventHistory: an EventBridge-style
// envelope recording a state change.
type Event struct {
	Source     string
	DetailType string
	Time       time.Time
	From       string
	To         string
	Reason     string
}

// Session is one item of wallcrawler-sessions.
type Session struct {
	ID             string
	ProjectID      string
	Status         string // SDK status
	InternalStatus string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	StartedAt      time.Time
	EndedAt        time.Time
	ExpiresAt      time.Time // whole seconds
	KeepAlive      bool
	Region         string
	PublicIP       string
	TaskARN        string // the document's ecsTaskArn: "local:<node>:<browser id>"
	// NodeURL is the internal base URL of the quarry process that runs
	// the browser (its --advertise-url): other processes forward CDP
	// connections there. Not shown to clients.
	NodeURL        string
	ConnectURL     string
	SigningKey     string
	ContextID      string
	ContextPersist bool
	ContextKey     string // contextStorageKey
	ProxyBytes     int64
	Events         []Event
	LastEventAt    time.Time
	// RetryCount is how many times the browser was started again after
	// dying during start-up (see browser.Browser.LaunchRetries).
	RetryCount   int
	UserMetadata map[string]any
	// AvgCPUUsage is the browser's average CPU use since READY, in percent
	// of one core; MemoryUsage the largest memory footprint of its
	// processes seen (their proportional set size), in bytes. Both are sampled (Options.SampleEvery and
	// once as the session ends); UsageSampled tells whether they were.
	AvgCPUUsage  float64
	MemoryUsage  int64
	UsageSampled bool
	// Extensions (documented in docs/wallcrawler.md).
	Timeout       int // seconds
	Width, Height int // viewport
	Error         string
	// StopAs is the final state a process without the session's browser
	// asked for when it wrote TERMINATING: the node running the browser
	// writes it once the browser is closed.
	StopAs string
}
