// Package auth holds Wallcrawler's tenancy data: projects (the
// wallcrawler-projects table) and API keys (the wallcrawler-api-keys table,
// which stores only the SHA-256 hex of each key), and the authorizer that
// turns a raw API key and an optional requested project into a Principal.
//
// Everything goes through aws-sdk-go-v2, so the package runs unchanged
// against quarry's embedded store or any DynamoDB endpoint.
package auth

import (
	"crypto/rand"
	"errors"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/quarrydb/quarry/internal/wallcrawler/tables"
)

// Errors returned by the package. Callers match them with errors.Is; the
// returned errors may wrap them with detail.
var (
	// ErrUnauthorized means no valid, active API key was presented (HTTP 401).
	ErrUnauthorized = errors.New("auth: unauthorized")
	// ErrForbidden means the key is valid but may not use the requested
	// project, or that project is not active (HTTP 403).
	ErrForbidden = errors.New("auth: forbidden")
	// ErrNotFound means the project or key does not exist.
	ErrNotFound = errors.New("auth: not found")
	// ErrExists means a project with the given id already exists.
	ErrExists = errors.New("auth: already exists")
	// ErrInvalid means an argument failed validation.
	ErrInvalid = errors.New("auth: invalid argument")
	// ErrConcurrencyLimit means the project already runs as many sessions as
	// its concurrency allows (HTTP 429).
	ErrConcurrencyLimit = errors.New("auth: project concurrency limit reached")
)

// Status values of projects and API keys.
const (
	StatusActive   = "ACTIVE"
	StatusInactive = "INACTIVE"
)

// Defaults applied when a project is created without explicit values.
const (
	// DefaultSessionTimeout is a new project's defaultTimeout in seconds.
	DefaultSessionTimeout = 3600
	// DefaultConcurrency is a new project's concurrency (maximum number of
	// concurrent sessions).
	DefaultConcurrency = 1
	// DefaultLastUsedInterval is how stale an API key's lastUsedAt may get
	// before Authorize rewrites it.
	DefaultLastUsedInterval = time.Minute
)

// Options configures a Store. The zero value of each field means its
// default.
type Options struct {
	// Now returns the current time; default time.Now.
	Now func() time.Time
	// Rand is the source of key material and identifiers; default
	// crypto/rand.Reader.
	Rand io.Reader
	// LastUsedInterval is the minimum interval between two lastUsedAt
	// updates of one key; default DefaultLastUsedInterval. Negative disables
	// lastUsedAt tracking.
	LastUsedInterval time.Duration
}

// Store reads and writes projects and API keys. It is safe for concurrent
// use and holds no state of its own beyond its configuration.
type Store struct {
	client *dynamodb.Client
	names  tables.Names
	opts   Options
}

// New returns a Store over the tables named by names (see
// tables.EnsureTables). opts may be nil.
func New(client *dynamodb.Client, names tables.Names, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.LastUsedInterval == 0 {
		o.LastUsedInterval = DefaultLastUsedInterval
	}
	return &Store{client: client, names: names, opts: o}
}

func (s *Store) now() time.Time { return s.opts.Now().UTC() }

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
