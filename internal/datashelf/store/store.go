// Package store defines DataShelf's storage contract: navigation rows,
// categories, products and the scrape_job queue of the DataShelf schema
// document, behind one Store interface with two implementations
// (store/postgres and store/sqlite) and one conformance suite
// (store/storetest) run against both. What does not depend on the SQL
// dialect lives here once: SQL implements Store and Admin over a Dialect,
// and each backend supplies its statements and driver.
//
// Every method takes a context.Context first. Missing rows are reported with
// the sentinel ErrNotFound, never (nil, nil). Time comes from the clock in
// Options, so tests can stub it.
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Sentinel errors returned (possibly wrapped) by every Store implementation.
var (
	// ErrNotFound reports that the requested row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalid reports an invalid argument (malformed id, unknown sort,
	// negative price, unsupported currency, ...).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrNotRunning reports a job operation (Heartbeat, Complete, Fail) on a
	// job that is not currently running under the given worker: never
	// claimed, already finished, or rescued after its lease expired (and
	// possibly claimed since by another worker).
	ErrNotRunning = errors.New("store: job is not running")
)

// Defaults used by Options.EnsureDefaults and by the queue methods when they
// are given a zero duration.
const (
	DefaultLease         = 10 * time.Minute
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultBackoffBase   = 30 * time.Second
	DefaultBackoffMax    = time.Hour
	DefaultMaxAttempts   = 3
	DefaultCategoryLimit = 50
	MaxListLimit         = 100
	DefaultProductLimit  = 20
	DefaultCurrency      = "GBP"
)

// Options configures a Store. The zero value is valid: EnsureDefaults fills
// every unset field.
type Options struct {
	// Now is the clock. Nil means time.Now. Timestamps are truncated to
	// microseconds (PostgreSQL's precision) on every backend.
	Now func() time.Time
	// Backoff returns how long a job waits before its next run after its
	// attempt-th failure (attempt ≥ 1). Nil means exponential backoff:
	// BackoffBase·2^(attempt-1), capped at BackoffMax.
	Backoff func(attempt int) time.Duration
	// BackoffBase is the first retry delay of the default Backoff.
	BackoffBase time.Duration
	// BackoffMax caps the default Backoff.
	BackoffMax time.Duration
}

// EnsureDefaults returns a copy of o (which may be nil) with every unset
// field defaulted.
func (o *Options) EnsureDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Backoff == nil {
		base, max := c.BackoffBase, c.BackoffMax
		c.Backoff = func(attempt int) time.Duration { return ExponentialBackoff(base, max, attempt) }
	}
	return &c
}

// Clock returns the current time from o.Now, in UTC, truncated to
// microseconds. o must have been defaulted.
func (o *Options) Clock() time.Time {
	return o.Now().UTC().Truncate(time.Microsecond)
}

// ExponentialBackoff returns base·2^(attempt-1) capped at max; attempt < 1
// counts as 1.
func ExponentialBackoff(base, max time.Duration, attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := base
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= max || d <= 0 {
			return max
		}
	}
	if d > max {
		return max
	}
	return d
}

// Store is DataShelf's storage. Implementations are safe for concurrent use.
type Store interface {
	// UpsertNavigation inserts or updates the navigation row identified by
	// in.SourceURL and returns it.
	UpsertNavigation(ctx context.Context, in NavigationInput) (Navigation, error)
	// GetNavigation returns one navigation row or ErrNotFound.
	GetNavigation(ctx context.Context, id string) (Navigation, error)
	// NavigationTree returns every navigation row as a forest ordered by
	// title: roots are rows without a parent (or whose parent is missing).
	NavigationTree(ctx context.Context) ([]*NavigationNode, error)

	// UpsertCategory inserts or updates the category identified by
	// in.SourceURL and returns it. product_count is never written here.
	UpsertCategory(ctx context.Context, in CategoryInput) (Category, error)
	// GetCategory returns one category or ErrNotFound.
	GetCategory(ctx context.Context, id string) (Category, error)
	// ListCategories returns one page of categories ordered by title, id and
	// the total number matching the filter.
	ListCategories(ctx context.Context, f CategoryFilter) ([]Category, int, error)

	// UpsertProduct is the document's upsert_product: insert, or update every
	// field of the product with the same source_url. Moving a product to
	// another category keeps both categories' product_count right.
	UpsertProduct(ctx context.Context, in ProductInput) (Product, error)
	// GetProduct returns one product or ErrNotFound.
	GetProduct(ctx context.Context, id string) (Product, error)
	// ListProducts returns one page of products and the total matching f.
	ListProducts(ctx context.Context, f ProductFilter) ([]Product, int, error)

	// Enqueue adds a job. If a queued or running job of the same type and
	// URL exists it is returned instead, its priority raised to the higher
	// of the two (and, with NewJob.Reset, a queued one made due again with
	// its attempts counted afresh). Safe under concurrent calls: at most
	// one such job exists.
	Enqueue(ctx context.Context, in NewJob) (Job, error)
	// GetJob returns one job or ErrNotFound.
	GetJob(ctx context.Context, id string) (Job, error)
	// Claim marks up to n queued jobs whose run_after has passed as running,
	// held by worker, ordered by priority DESC, created_at ASC, and returns
	// them; attempts is incremented. No job is returned to two concurrent
	// callers. Claim does not rescue expired leases: a job whose worker
	// died stays running until RescueExpired (which the crawler runs on a
	// timer) queues it again.
	Claim(ctx context.Context, worker string, n int) ([]Job, error)
	// Wake subscribes to wake-ups until ctx ends (the channel is then
	// closed). The channel (buffered, so wake-ups coalesce) receives a
	// value once the subscription is listening, so a caller that claims
	// after that first value misses nothing, and then after every commit
	// that makes a job claimable: Enqueue, RescueExpired and RetryFailed,
	// and Fail's queueing for a retry (whose run_after may lie ahead). A
	// wake-up is a hint, not a promise: one can be lost (PostgreSQL's
	// listening connection may drop; it reconnects with backoff and then
	// sends one value, since it cannot know what it missed), so callers
	// keep polling, at a longer interval.
	Wake(ctx context.Context) <-chan struct{}
	// Heartbeat extends the lease of a running job held by worker (locked_at
	// = now). It returns ErrNotRunning if the job is not running or is held
	// by another worker.
	Heartbeat(ctx context.Context, id, worker string) error
	// RescueExpired returns running jobs whose lease expired (locked_at <
	// now-lease; lease 0 means DefaultLease) to queued, or to failed with
	// completed_at when they have no attempts left, and returns how many it
	// touched.
	RescueExpired(ctx context.Context, now time.Time, lease time.Duration) (int, error)
	// Complete marks a running job held by worker completed (completed_at =
	// now). It returns ErrNotRunning if the job is not running or is held by
	// another worker (for instance because worker's lease expired and the
	// job was rescued and claimed again), so a stale worker can never finish
	// a job it no longer holds.
	Complete(ctx context.Context, id, worker string) error
	// CompleteMany is Complete for many jobs of one worker in one statement
	// (one commit): the jobs of ids that are running under worker are
	// completed, and their ids returned; the others (not running, held by
	// another worker, missing) are left as they are, as Complete would
	// have refused them.
	CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error)
	// CompleteAndClaim is CompleteMany(ids, worker) and then Claim(worker,
	// n) in one transaction, so one commit both settles the jobs a
	// worker pool finished and hands it the next ones (the dispatcher's
	// steady state). It returns the ids completed and the jobs claimed,
	// with the guarantees of the two calls. On an error neither took
	// effect, unless the commit's own outcome is unknown (a connection
	// lost during it); the end of ctx interrupts the claim, rolling the
	// completions back with it, but never a commit under way.
	CompleteAndClaim(ctx context.Context, ids []string, worker string, n int) (done []string, claimed []Job, err error)
	// FailPermanently records a failure that retrying cannot cure (the
	// network policy refuses the address, the page answers 404): the
	// running job held by worker is failed at once, with last_error = msg
	// and completed_at = now, whatever attempts it has left. Like Fail, it
	// returns ErrNotRunning if the job is not running under worker.
	FailPermanently(ctx context.Context, id, worker, msg string) (Job, error)
	// Fail records a failed attempt of a running job held by worker:
	// last_error = msg; if attempts < max_attempts the job is queued again
	// with run_after = now + Backoff(attempts), otherwise it is failed with
	// completed_at = now. The updated job is returned. Like Complete, it
	// returns ErrNotRunning if the job is not running under worker.
	Fail(ctx context.Context, id, worker, msg string) (Job, error)
	// CleanupFinished deletes completed and failed jobs whose completed_at is
	// older than olderThan (0 means DefaultRetention) and returns how many.
	CleanupFinished(ctx context.Context, olderThan time.Duration) (int, error)
	// QueueStats returns the document's job_queue_stats view, ordered by
	// status and type.
	QueueStats(ctx context.Context) ([]QueueStat, error)
	// FailedJobs returns up to limit failed jobs (1 to MaxFailedJobs),
	// the most recently finished first, with their last_error.
	FailedJobs(ctx context.Context, limit int) ([]Job, error)
	// RetryFailed queues failed jobs again, due now, with their attempts
	// counted afresh (completed_at cleared, last_error kept): the jobs of
	// ids, or every failed job when ids is empty. A failed job whose type
	// and URL already have a queued or running job is left failed (so the
	// queue keeps one job per URL), as is any but the newest failed job
	// of the same type and URL. It returns how many it queued.
	RetryFailed(ctx context.Context, ids []string) (int, error)
	// Throughput counts the jobs that finished (completed or failed) since
	// since, in buckets of bucket, oldest first (ThroughputBuckets bounds
	// them). Finished jobs are kept until CleanupFinished removes them.
	Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]ThroughputBucket, error)

	// Runs is the record of crawl runs.
	Runs

	// Ping runs one trivial query (SELECT 1), so that a database that
	// stopped answering shows in /healthz.
	Ping(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}

// Navigation is a row of the navigation table.
type Navigation struct {
	ID            string    `json:"id"`
	Title         string    `json:"title"`
	SourceURL     string    `json:"source_url"`
	ParentID      *string   `json:"parent_id"`
	LastScrapedAt time.Time `json:"last_scraped_at"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// NavigationInput is the writable part of a navigation row.
type NavigationInput struct {
	Title     string
	SourceURL string
	ParentID  *string
}

// NavigationNode is a navigation row with its children.
type NavigationNode struct {
	Navigation
	Children []*NavigationNode `json:"children"`
}

// Category is a row of the category table.
type Category struct {
	ID            string    `json:"id"`
	NavigationID  *string   `json:"navigation_id"`
	Title         string    `json:"title"`
	SourceURL     string    `json:"source_url"`
	ProductCount  int       `json:"product_count"`
	LastScrapedAt time.Time `json:"last_scraped_at"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// CategoryInput is the writable part of a category row.
type CategoryInput struct {
	NavigationID *string
	Title        string
	SourceURL    string
}

// CategoryFilter selects categories. NavID keeps categories of that
// navigation row; ParentID keeps categories whose navigation row is a child
// of that navigation row. Limit 0 means DefaultCategoryLimit; at most
// MaxListLimit.
type CategoryFilter struct {
	NavID    string
	ParentID string
	Limit    int
	Offset   int
}

// Product is a row of the product table.
type Product struct {
	ID            string         `json:"id"`
	CategoryID    *string        `json:"category_id"`
	Title         string         `json:"title"`
	SourceURL     string         `json:"source_url"`
	SourceID      *string        `json:"source_id"`
	Price         *float64       `json:"price"`
	Currency      string         `json:"currency"`
	ImageURLs     []string       `json:"image_urls"`
	Summary       *string        `json:"summary"`
	Specs         map[string]any `json:"specs"`
	Available     bool           `json:"available"`
	LastScrapedAt time.Time      `json:"last_scraped_at"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// ProductInput holds upsert_product's parameters. Currency "" means GBP,
// nil ImageURLs means [], nil Specs means {}.
type ProductInput struct {
	CategoryID *string
	Title      string
	SourceURL  string
	SourceID   *string
	Price      *float64
	Currency   string
	ImageURLs  []string
	Summary    *string
	Specs      map[string]any
	Available  bool
}

// Product sort orders accepted by ProductFilter.Sort. "" means
// SortCreatedAtDesc.
const (
	SortPriceAsc      = "price_asc"
	SortPriceDesc     = "price_desc"
	SortTitleAsc      = "title_asc"
	SortTitleDesc     = "title_desc"
	SortCreatedAtDesc = "created_at_desc"
)

// ProductKey is a position in a product listing: the sort value of one
// product and its ID, the tiebreaker (ties on the sort value are ordered by
// id ascending in every sort). Price is the position for the price sorts
// (nil: among the products without a price, which sort last), Title for the
// title sorts and CreatedAt for created_at_desc; the other fields are
// ignored. KeyOf builds one.
type ProductKey struct {
	Price     *float64
	Title     string
	CreatedAt time.Time
	ID        string
}

// KeyOf returns p's position in a listing ordered by sort ("" means
// SortCreatedAtDesc).
func KeyOf(p Product, sort string) ProductKey {
	k := ProductKey{ID: p.ID}
	switch sort {
	case SortPriceAsc, SortPriceDesc:
		if p.Price != nil {
			v := *p.Price
			k.Price = &v
		}
	case SortTitleAsc, SortTitleDesc:
		k.Title = p.Title
	default:
		k.CreatedAt = p.CreatedAt
	}
	return k
}

// ProductFilter selects products. Empty strings and nil pointers mean "any".
// Q is a full-text search on title (all words must match, English
// stemming). Author, Format and Condition match specs values
// case-insensitively; ISBN matches specs.isbn exactly. Limit 0 means
// DefaultProductLimit; at most MaxListLimit. Prices without a value sort
// last; ties on the sort value are ordered by id.
//
// After selects keyset pagination: the page holds the products that come
// after that position in Sort's order (Offset must then be 0). Unlike
// offsets, a position is stable under concurrent writes: paging through a
// listing while products are inserted or updated never repeats a product
// and never skips one whose sort value did not change (one whose sort
// value changed may move past the position, and so appear twice or not
// at all).
type ProductFilter struct {
	CategoryID string
	Q          string
	Author     string
	ISBN       string
	Format     string
	Condition  string
	MinPrice   *float64
	MaxPrice   *float64
	Available  *bool
	// HasSpec keeps products whose specs object has every one of these
	// keys, whatever the value (PostgreSQL: specs ? key, which
	// idx_product_specs_gin serves; SQLite: json_type(specs, '$.key') IS
	// NOT NULL). Keys are SpecKeyPattern.
	HasSpec []string
	// Specs keeps products whose specs hold exactly these string values
	// (PostgreSQL: specs @> '{"key": "value"}', served by
	// idx_product_specs_gin; SQLite: json_extract). Unlike Author, Format
	// and Condition the match is case-sensitive: it is JSON containment.
	Specs map[string]string
	// Active true keeps the rows of the active_products view (available
	// products with a category and a navigation row, scraped in the last
	// 30 days by the database's clock); false keeps the other products.
	Active *bool
	Sort   string
	Limit  int
	Offset int
	// After is the position the page starts after (keyset pagination);
	// nil means the start of the listing (or Offset).
	After *ProductKey
	// SkipTotal skips counting the matching products: ListProducts then
	// returns -1 as the total.
	SkipTotal bool
}

// JobType is scrape_job.type.
type JobType string

// Job types of the document.
const (
	JobNavigation JobType = "navigation"
	JobCategory   JobType = "category"
	JobProduct    JobType = "product"
)

// JobStatus is scrape_job.status.
type JobStatus string

// Job statuses of the document.
const (
	StatusQueued    JobStatus = "queued"
	StatusRunning   JobStatus = "running"
	StatusCompleted JobStatus = "completed"
	StatusFailed    JobStatus = "failed"
)

// Job is a row of scrape_job. RunAfter is quarry's addition for retry
// backoff: a queued job is not claimed before it.
type Job struct {
	ID          string         `json:"id"`
	Type        JobType        `json:"type"`
	TargetURL   string         `json:"target_url"`
	Status      JobStatus      `json:"status"`
	Attempts    int            `json:"attempts"`
	MaxAttempts int            `json:"max_attempts"`
	Priority    int            `json:"priority"`
	RunAfter    time.Time      `json:"run_after"`
	LockedAt    *time.Time     `json:"locked_at"`
	LockedBy    *string        `json:"locked_by"`
	LastError   *string        `json:"last_error"`
	Metadata    map[string]any `json:"metadata"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	CompletedAt *time.Time     `json:"completed_at"`
}

// NewJob is Enqueue's input. MaxAttempts 0 means DefaultMaxAttempts; a zero
// RunAfter means now.
type NewJob struct {
	Type        JobType
	TargetURL   string
	Priority    int
	MaxAttempts int
	Metadata    map[string]any
	RunAfter    time.Time
	// Reset applies when a queued job of the same type and URL exists (for
	// instance one waiting out the backoff of an earlier failure): its
	// run_after becomes this job's (now by default) and its attempts 0, so
	// a new crawl does not wait for the old one's retry. A running job is
	// left alone (its worker, or the lease rescue, finishes it).
	Reset bool
}

// QueueStat is a row of the job_queue_stats view.
type QueueStat struct {
	Status      JobStatus `json:"status"`
	Type        JobType   `json:"type"`
	Count       int       `json:"count"`
	AvgAttempts float64   `json:"avg_attempts"`
	OldestJob   time.Time `json:"oldest_job"`
	NewestJob   time.Time `json:"newest_job"`
}

// ValidateJob checks and defaults a NewJob.
func ValidateJob(in NewJob) (NewJob, error) {
	switch in.Type {
	case JobNavigation, JobCategory, JobProduct:
	default:
		return in, fmt.Errorf("%w: job type %q", ErrInvalid, in.Type)
	}
	if in.TargetURL == "" {
		return in, fmt.Errorf("%w: empty target_url", ErrInvalid)
	}
	if in.MaxAttempts <= 0 {
		in.MaxAttempts = DefaultMaxAttempts
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	return in, nil
}

// ValidateProduct checks and defaults a ProductInput.
func ValidateProduct(in ProductInput) (ProductInput, error) {
	if in.Title == "" || in.SourceURL == "" {
		return in, fmt.Errorf("%w: product title and source_url are required", ErrInvalid)
	}
	if in.Currency == "" {
		in.Currency = DefaultCurrency
	}
	switch in.Currency {
	case "GBP", "USD", "EUR":
	default:
		return in, fmt.Errorf("%w: currency %q", ErrInvalid, in.Currency)
	}
	if in.Price != nil && *in.Price < 0 {
		return in, fmt.Errorf("%w: negative price", ErrInvalid)
	}
	if in.ImageURLs == nil {
		in.ImageURLs = []string{}
	}
	if in.Specs == nil {
		in.Specs = map[string]any{}
	}
	if in.CategoryID != nil {
		if err := ValidateID(*in.CategoryID); err != nil {
			return in, err
		}
	}
	return in, nil
}

// NormalizeProductFilter checks and defaults a ProductFilter.
func NormalizeProductFilter(f ProductFilter) (ProductFilter, error) {
	switch f.Sort {
	case "":
		f.Sort = SortCreatedAtDesc
	case SortPriceAsc, SortPriceDesc, SortTitleAsc, SortTitleDesc, SortCreatedAtDesc:
	default:
		return f, fmt.Errorf("%w: sort %q", ErrInvalid, f.Sort)
	}
	var err error
	if f.Limit, f.Offset, err = normalizePage(f.Limit, f.Offset, DefaultProductLimit); err != nil {
		return f, err
	}
	if f.CategoryID != "" {
		if err := ValidateID(f.CategoryID); err != nil {
			return f, err
		}
	}
	if len(f.HasSpec)+len(f.Specs) > MaxSpecFilters {
		return f, fmt.Errorf("%w: more than %d spec filters", ErrInvalid, MaxSpecFilters)
	}
	for _, k := range f.HasSpec {
		if err := ValidateSpecKey(k); err != nil {
			return f, err
		}
	}
	for k := range f.Specs {
		if err := ValidateSpecKey(k); err != nil {
			return f, err
		}
	}
	if f.After != nil {
		if f.Offset != 0 {
			return f, fmt.Errorf("%w: After and Offset cannot be combined", ErrInvalid)
		}
		if err := ValidateID(f.After.ID); err != nil {
			return f, err
		}
		k := *f.After
		k.ID = strings.ToLower(k.ID)
		if k.Price != nil && (math.IsNaN(*k.Price) || math.IsInf(*k.Price, 0)) {
			return f, fmt.Errorf("%w: position price is not a number", ErrInvalid)
		}
		k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Microsecond)
		f.After = &k
	}
	return f, nil
}

// KeysetCondition returns the SQL condition selecting the products after
// f.After in f.Sort's order, with "?" placeholders and their arguments in
// order (nil when f.After is nil). f must be normalized. The condition
// mirrors the ORDER BY clauses of both backends ("price ASC NULLS LAST,
// id", "lower(title) DESC, title DESC, id", …); cast wraps each argument's
// placeholder by kind ("price", "id", "time" or "text"), so that a backend
// can add type casts.
func KeysetCondition(f ProductFilter, cast func(kind string) string) (string, []any) {
	k := f.After
	if k == nil {
		return "", nil
	}
	id := cast("id")
	switch f.Sort {
	case SortPriceAsc, SortPriceDesc:
		if k.Price == nil {
			return "(price IS NULL AND id > " + id + ")", []any{k.ID}
		}
		op := ">"
		if f.Sort == SortPriceDesc {
			op = "<"
		}
		p := cast("price")
		return "(price " + op + " " + p + " OR (price = " + p + " AND id > " + id + ") OR price IS NULL)",
			[]any{*k.Price, *k.Price, k.ID}
	case SortTitleAsc, SortTitleDesc:
		op := ">"
		if f.Sort == SortTitleDesc {
			op = "<"
		}
		t := cast("text")
		return "(lower(title) " + op + " lower(" + t + ") OR (lower(title) = lower(" + t + ") AND (title " + op + " " + t +
				" OR (title = " + t + " AND id > " + id + "))))",
			[]any{k.Title, k.Title, k.Title, k.Title, k.ID}
	default:
		c := cast("time")
		return "(created_at < " + c + " OR (created_at = " + c + " AND id > " + id + "))",
			[]any{k.CreatedAt, k.CreatedAt, k.ID}
	}
}

// MaxSpecFilters bounds len(HasSpec)+len(Specs) in a ProductFilter.
const MaxSpecFilters = 16

// SpecKeyPattern describes the spec keys HasSpec and Specs accept: 1 to 64
// ASCII letters, digits and underscores (every key the crawler writes).
const SpecKeyPattern = "[A-Za-z0-9_]{1,64}"

// ValidateSpecKey reports ErrInvalid unless k matches SpecKeyPattern.
func ValidateSpecKey(k string) error {
	if len(k) == 0 || len(k) > 64 {
		return fmt.Errorf("%w: spec key %q must be 1 to 64 letters, digits or underscores", ErrInvalid, k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: spec key %q must be 1 to 64 letters, digits or underscores", ErrInvalid, k)
		}
	}
	return nil
}

// SortedSpecKeys returns the keys of m in order (so that generated SQL is
// deterministic).
func SortedSpecKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NormalizeCategoryFilter checks and defaults a CategoryFilter.
func NormalizeCategoryFilter(f CategoryFilter) (CategoryFilter, error) {
	var err error
	if f.Limit, f.Offset, err = normalizePage(f.Limit, f.Offset, DefaultCategoryLimit); err != nil {
		return f, err
	}
	for _, id := range []string{f.NavID, f.ParentID} {
		if id != "" {
			if err := ValidateID(id); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

func normalizePage(limit, offset, def int) (int, int, error) {
	if limit < 0 || offset < 0 {
		return 0, 0, fmt.Errorf("%w: negative limit or offset", ErrInvalid)
	}
	if limit == 0 {
		limit = def
	}
	if limit > MaxListLimit {
		limit = MaxListLimit
	}
	return limit, offset, nil
}

// ValidateID reports ErrInvalid unless id is a canonical UUID
// (8-4-4-4-12 hex digits).
func ValidateID(id string) error {
	if len(id) != 36 {
		return fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, id)
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, id)
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, id)
			}
		}
	}
	return nil
}

// BuildTree arranges navigation rows (already ordered by title) into a
// forest. Rows whose parent is missing become roots.
func BuildTree(rows []Navigation) []*NavigationNode {
	nodes := make(map[string]*NavigationNode, len(rows))
	for _, r := range rows {
		nodes[r.ID] = &NavigationNode{Navigation: r, Children: []*NavigationNode{}}
	}
	roots := []*NavigationNode{}
	for _, r := range rows {
		n := nodes[r.ID]
		if r.ParentID != nil {
			if p, ok := nodes[*r.ParentID]; ok && p != n {
				p.Children = append(p.Children, n)
				continue
			}
		}
		roots = append(roots, n)
	}
	return roots
}
