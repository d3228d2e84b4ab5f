package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// Row is one result row of a query: pgx.Row and *sql.Row have it.
type Row interface {
	Scan(dest ...any) error
}

// ResultRows is a query's result set as SQL reads it: pgx.Rows has it; a
// database/sql backend wraps *sql.Rows (whose Close returns an error).
type ResultRows interface {
	Rows
	Row
	Close()
}

// Conn is what SQL needs of a connection pool or a transaction. Exec
// returns the number of rows the statement affected.
type Conn interface {
	Query(ctx context.Context, query string, args ...any) (ResultRows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// DB is a Conn that can also run a transaction: InTx calls fn with a Conn
// of one transaction, which it commits when fn returns nil and rolls back
// otherwise.
type DB interface {
	Conn
	InTx(ctx context.Context, fn func(tx Conn) error) error
}

// Dialect is what a SQL database backend supplies to SQL: the statements
// whose text differs between databases and the few conversions of
// arguments and errors that do. Every function field except NewID, Retryable
// and Queued is required. Placeholders in the statements are numbered
// (Placeholder's form); the argument lists below are in that order.
// Statements that insert a row take the new row's id first when NewID is
// set.
type Dialect struct {
	// Name prefixes the backend's errors ("postgres", "sqlite").
	Name string
	// Placeholder returns the marker of the n-th argument (n from 1).
	Placeholder func(n int) string
	// NewID, when set, returns the id of a row to insert; nil means the
	// database generates it.
	NewID func() string
	// NoRows is the driver's error for a single-row query without a row.
	NoRows error
	// Invalid reports whether err is a violated constraint or a bad value
	// (reported as ErrInvalid) and the message to report.
	Invalid func(err error) (msg string, ok bool)
	// Retryable reports whether an UpsertProduct error (a deadlock between
	// concurrent upserts) is worth up to five more attempts; nil means no
	// error is.
	Retryable func(err error) bool
	// Queued is called after a commit that leaves a job claimable (Enqueue
	// of a queued job, RescueExpired and RetryFailed that changed rows,
	// Fail's retry); nil when the database announces them itself.
	Queued func()
	// Price converts a product's validated price to its argument.
	Price func(price *float64) any
	// IDList converts a list of lowercased ids to one argument.
	IDList func(ids []string) any
	// Bucket converts Throughput's bucket width to its argument.
	Bucket func(width time.Duration) any

	// Column lists read by the scans of each table, in the order of the
	// fields of Navigation, Category, Product and Job.
	NavCols, CatCols, ProdCols, JobCols string
	// RunCols lists crawl_run's columns but its log, in the order of the
	// fields of Run.
	RunCols string

	// UpsertNavigation: title, source_url, parent_id, now; RETURNING
	// NavCols.
	UpsertNavigation string
	// UpsertCategory: navigation_id, title, source_url, now; RETURNING
	// CatCols.
	UpsertCategory string
	// UpsertProduct: category_id, title, source_url, source_id, price,
	// currency, image_urls (JSON), summary, specs (JSON), available, now;
	// RETURNING ProdCols.
	UpsertProduct string
	// Enqueue: type, target_url, priority, max_attempts, metadata (JSON),
	// run_after, now, reset; RETURNING JobCols.
	Enqueue string
	// Claim: now, n, worker; RETURNING JobCols.
	Claim string
	// Heartbeat: id, now, worker.
	Heartbeat string
	// RescueExpired: now, now - lease.
	RescueExpired string
	// Complete: id, now, worker.
	Complete string
	// CompleteMany: IDList(ids), now, worker; RETURNING id.
	CompleteMany string
	// CompleteAndClaim, when set, is CompleteMany and Claim in one
	// statement: now, n, worker, IDList(ids); rows of a kind ('done' or
	// 'claimed') and JobCols. Empty: the two statements run in one
	// transaction.
	CompleteAndClaim string
	// FailLock reads status, locked_by, attempts, max_attempts of job id
	// (locking it until the transaction ends).
	FailLock string
	// FailFinal: id, now, message; RETURNING JobCols.
	FailFinal string
	// FailRetry: id, now, message, run_after; RETURNING JobCols.
	FailRetry string
	// RetryFailed: now, IDList(ids) (an empty list: every failed job).
	RetryFailed string
	// Throughput: since, Bucket(width); rows of (bucket index, status,
	// count).
	Throughput string
	// QueueStats reads the job_queue_stats view as QueueStat's fields,
	// ordered by status and type.
	QueueStats string

	// Maintenance holds the statements of each maintenance operation.
	Maintenance map[MaintenanceOp][]string
	// Integrity holds the query of each of IntegrityChecks (see
	// IntegrityQueries).
	Integrity map[string]string
	// Filters writes ProductFilter's conditions.
	Filters ProductFilters
}

// ProductFilters holds the product filter conditions that differ between
// databases. A "?" in a condition stands for its argument.
type ProductFilters struct {
	// Search is the condition of a title search; SearchArg turns
	// ProductFilter.Q into its argument, "" meaning no search.
	Search    string
	SearchArg func(q string) string
	// Spec returns the expression of a spec value as text, for the Author,
	// ISBN, Format and Condition filters.
	Spec func(key string) string
	// HasSpec and Specs add the conditions of ProductFilter's fields of
	// the same names.
	HasSpec func(w *Where, key string)
	Specs   func(w *Where, specs map[string]string)
	// Price is the marker of a price argument ("?" with a cast).
	Price string
	// Keyset is KeysetCondition's cast.
	Keyset func(kind string) string
}

// SQL implements Store (except Wake and Close) and Admin on a database
// reached through a DB and described by a Dialect: the validation,
// argument lists, row loops, scanning and bookkeeping both SQL backends
// share. A backend embeds *SQL and adds opening, migrations, Wake and
// Close.
type SQL struct {
	db   DB
	d    *Dialect
	opts *Options
}

// NewSQL returns the SQL of db in dialect d; opts must have been
// defaulted.
func NewSQL(db DB, d *Dialect, opts *Options) *SQL {
	return &SQL{db: db, d: d, opts: opts}
}

// Migration is one embedded migration file.
type Migration struct {
	// Version is the file name without directory and .sql suffix.
	Version string
	// Body is the file's SQL.
	Body string
}

// ReadMigrations returns the migrations/*.sql files of fsys in name order.
func ReadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql"), Body: string(body)})
	}
	return out, nil
}

// JSONText returns v as JSON text ("null" if it cannot be encoded).
func JSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// Signal sends on ch unless a value is already pending.
func Signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// mapErr converts driver errors to the store's sentinels.
func (s *SQL) mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, s.d.NoRows) {
		return ErrNotFound
	}
	if msg, ok := s.d.Invalid(err); ok {
		return fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	return err
}

// p returns the marker of the n-th argument.
func (s *SQL) p(n int) string { return s.d.Placeholder(n) }

// insertArgs prepends a new id to args when the dialect generates ids.
func (s *SQL) insertArgs(args ...any) []any {
	if s.d.NewID == nil {
		return args
	}
	return append([]any{s.d.NewID()}, args...)
}

// queued tells the dialect that a job may have become claimable.
func (s *SQL) queued() {
	if s.d.Queued != nil {
		s.d.Queued()
	}
}

// lowerID returns the canonical (lowercase) form of a validated id.
func lowerID(p *string) *string {
	if p == nil {
		return nil
	}
	v := strings.ToLower(*p)
	return &v
}

// collect reads every row of rows with scan and closes rows.
func collect[T any](s *SQL, rows ResultRows, scan func(Row) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	err := EachRow(rows, func() (T, error) { return scan(rows) }, func(v T) error {
		out = append(out, v)
		return nil
	}, s.mapErr)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Ping implements Store.
func (s *SQL) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("%s: %w", s.d.Name, err)
	}
	return nil
}

// Where is a WHERE clause under construction: its conditions, joined by
// AND, and their arguments in placeholder order.
type Where struct {
	conds       []string
	args        []any
	placeholder func(n int) string
}

// NewWhere returns an empty clause whose arguments are marked by
// placeholder.
func NewWhere(placeholder func(n int) string) *Where {
	return &Where{placeholder: placeholder}
}

// Arg adds an argument and returns its marker.
func (w *Where) Arg(v any) string {
	w.args = append(w.args, v)
	return w.placeholder(len(w.args))
}

// Add adds cond, each "?" of which is replaced by the marker of the next
// of args.
func (w *Where) Add(cond string, args ...any) {
	parts := strings.Split(cond, "?")
	var b strings.Builder
	b.WriteString(parts[0])
	for i, part := range parts[1:] {
		b.WriteString(w.Arg(args[i]))
		b.WriteString(part)
	}
	w.conds = append(w.conds, b.String())
}

// Raw adds cond as it is (its arguments, if any, added with Arg).
func (w *Where) Raw(cond string) { w.conds = append(w.conds, cond) }

// String returns "" or " WHERE " and the conditions.
func (w *Where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// Args returns the arguments added so far.
func (w *Where) Args() []any { return w.args }

// IntegrityQueries returns, per check of IntegrityChecks, a query
// returning the offending rows' descriptions: the original design's
// data-validation counts written with NOT EXISTS (so a NULL reference is
// not an orphan, as with the design's NOT IN). text is appended to the id
// columns to read them as text ("::text" on PostgreSQL).
func IntegrityQueries(text string) map[string]string {
	return map[string]string{
		CheckOrphanedProducts: `SELECT p.id` + text + ` || ' -> category ' || p.category_id` + text + ` FROM product p
		WHERE p.category_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM category c WHERE c.id = p.category_id)
		ORDER BY p.id`,
		CheckOrphanedCategories: `SELECT c.id` + text + ` || ' -> navigation ' || c.navigation_id` + text + ` FROM category c
		WHERE c.navigation_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM navigation n WHERE n.id = c.navigation_id)
		ORDER BY c.id`,
		CheckInvalidJobStatus: `SELECT id` + text + ` || ': ' || coalesce(status, 'NULL') FROM scrape_job
		WHERE status IS NULL OR status NOT IN ('queued', 'running', 'completed', 'failed')
		ORDER BY id`,
	}
}
