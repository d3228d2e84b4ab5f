// Package sqlite implements store.Store on an embedded SQLite database
// (modernc.org/sqlite, pure Go): WAL mode, busy_timeout, one connection
// (so one writer), FTS5 for title search, JSON text for specs and
// image_urls, triggers for product_count. Migrations are embedded and
// applied at Open, tracked in schema_migrations.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Options configures a SQLite store. The zero value is valid.
type Options struct {
	store.Options
	// BusyTimeout is SQLite's busy_timeout; 0 means 10 s.
	BusyTimeout time.Duration
}

// Store is the SQLite implementation of store.Store.
type Store struct {
	db    *sql.DB
	opts  *store.Options
	wakes wakers
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, applies
// pending migrations and returns the store. The caller must Close it.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		path, o.BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s := &Store{db: db, opts: o.Options.EnsureDefaults()}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DB returns the underlying handle (for tools and tests).
func (s *Store) DB() *sql.DB { return s.db }

// Ping runs SELECT 1.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationsFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: schema_migrations: %w", err)
	}
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		body, err := migrationsFS.ReadFile(name)
		if err != nil {
			return err
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				version, s.opts.Clock().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", version, err)
		}
	}
	return nil
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// newID returns a random (version 4) UUID in its canonical form, as
// PostgreSQL's gen_random_uuid does.
func newID() string { return uuid.NewString() }

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	msg := err.Error()
	if strings.Contains(msg, "constraint failed") && !strings.Contains(msg, "UNIQUE") {
		return fmt.Errorf("%w: %s", store.ErrInvalid, msg)
	}
	return err
}

func micros(t time.Time) int64 { return t.UTC().Truncate(time.Microsecond).UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

func lowerID(p *string) *string {
	if p == nil {
		return nil
	}
	v := strings.ToLower(*p)
	return &v
}

type scanner interface{ Scan(dest ...any) error }

// --- navigation ---

const navCols = `id, title, source_url, parent_id, last_scraped_at, created_at, updated_at`

func scanNav(row scanner) (store.Navigation, error) {
	var n store.Navigation
	var ls, c, u int64
	if err := row.Scan(&n.ID, &n.Title, &n.SourceURL, &n.ParentID, &ls, &c, &u); err != nil {
		return n, mapErr(err)
	}
	n.LastScrapedAt, n.CreatedAt, n.UpdatedAt = fromMicros(ls), fromMicros(c), fromMicros(u)
	return n, nil
}

// UpsertNavigation implements store.Store.
func (s *Store) UpsertNavigation(ctx context.Context, in store.NavigationInput) (store.Navigation, error) {
	if in.Title == "" || in.SourceURL == "" {
		return store.Navigation{}, fmt.Errorf("%w: navigation title and source_url are required", store.ErrInvalid)
	}
	if in.ParentID != nil {
		if err := store.ValidateID(*in.ParentID); err != nil {
			return store.Navigation{}, err
		}
	}
	now := micros(s.opts.Clock())
	return scanNav(s.db.QueryRowContext(ctx, `
		INSERT INTO navigation (id, title, source_url, parent_id, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (source_url) DO UPDATE SET title = excluded.title, parent_id = excluded.parent_id,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING `+navCols, newID(), in.Title, in.SourceURL, lowerID(in.ParentID), now))
}

// GetNavigation implements store.Store.
func (s *Store) GetNavigation(ctx context.Context, id string) (store.Navigation, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Navigation{}, err
	}
	return scanNav(s.db.QueryRowContext(ctx, `SELECT `+navCols+` FROM navigation WHERE id = ?`, strings.ToLower(id)))
}

// NavigationTree implements store.Store.
func (s *Store) NavigationTree(ctx context.Context) ([]*store.NavigationNode, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+navCols+` FROM navigation ORDER BY lower(title), title, id`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var all []store.Navigation
	for rows.Next() {
		n, err := scanNav(rows)
		if err != nil {
			return nil, err
		}
		all = append(all, n)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	return store.BuildTree(all), nil
}

// --- categories ---

const catCols = `id, navigation_id, title, source_url, product_count, last_scraped_at, created_at, updated_at`

func scanCat(row scanner) (store.Category, error) {
	var c store.Category
	var ls, cr, u int64
	if err := row.Scan(&c.ID, &c.NavigationID, &c.Title, &c.SourceURL, &c.ProductCount, &ls, &cr, &u); err != nil {
		return c, mapErr(err)
	}
	c.LastScrapedAt, c.CreatedAt, c.UpdatedAt = fromMicros(ls), fromMicros(cr), fromMicros(u)
	return c, nil
}

// UpsertCategory implements store.Store.
func (s *Store) UpsertCategory(ctx context.Context, in store.CategoryInput) (store.Category, error) {
	if in.Title == "" || in.SourceURL == "" {
		return store.Category{}, fmt.Errorf("%w: category title and source_url are required", store.ErrInvalid)
	}
	if in.NavigationID != nil {
		if err := store.ValidateID(*in.NavigationID); err != nil {
			return store.Category{}, err
		}
	}
	now := micros(s.opts.Clock())
	return scanCat(s.db.QueryRowContext(ctx, `
		INSERT INTO category (id, navigation_id, title, source_url, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (source_url) DO UPDATE SET navigation_id = excluded.navigation_id, title = excluded.title,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING `+catCols, newID(), lowerID(in.NavigationID), in.Title, in.SourceURL, now))
}

// GetCategory implements store.Store.
func (s *Store) GetCategory(ctx context.Context, id string) (store.Category, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Category{}, err
	}
	return scanCat(s.db.QueryRowContext(ctx, `SELECT `+catCols+` FROM category WHERE id = ?`, strings.ToLower(id)))
}

// ListCategories implements store.Store.
func (s *Store) ListCategories(ctx context.Context, f store.CategoryFilter) ([]store.Category, int, error) {
	f, err := store.NormalizeCategoryFilter(f)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	if f.NavID != "" {
		conds = append(conds, "navigation_id = ?")
		args = append(args, strings.ToLower(f.NavID))
	}
	if f.ParentID != "" {
		conds = append(conds, "navigation_id IN (SELECT id FROM navigation WHERE parent_id = ?)")
		args = append(args, strings.ToLower(f.ParentID))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM category`+where, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	args = append(args, f.Limit, f.Offset)
	rows, err := s.db.QueryContext(ctx, `SELECT `+catCols+` FROM category`+where+` ORDER BY lower(title), title, id LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer rows.Close()
	out := []store.Category{}
	for rows.Next() {
		c, err := scanCat(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, c)
	}
	return out, total, mapErr(rows.Err())
}

// --- products ---

const prodCols = `id, category_id, title, source_url, source_id, price, currency, image_urls, summary, specs,
	available, last_scraped_at, created_at, updated_at`

func scanProduct(row scanner) (store.Product, error) {
	var p store.Product
	var images, specs string
	var ls, c, u int64
	if err := row.Scan(&p.ID, &p.CategoryID, &p.Title, &p.SourceURL, &p.SourceID, &p.Price, &p.Currency,
		&images, &p.Summary, &specs, &p.Available, &ls, &c, &u); err != nil {
		return p, mapErr(err)
	}
	p.LastScrapedAt, p.CreatedAt, p.UpdatedAt = fromMicros(ls), fromMicros(c), fromMicros(u)
	if err := json.Unmarshal([]byte(images), &p.ImageURLs); err != nil {
		return p, fmt.Errorf("sqlite: image_urls: %w", err)
	}
	if err := json.Unmarshal([]byte(specs), &p.Specs); err != nil {
		return p, fmt.Errorf("sqlite: specs: %w", err)
	}
	return p, nil
}

// UpsertProduct implements store.Store (the document's upsert_product:
// ON CONFLICT (source_url) updates every field; triggers keep
// product_count and the FTS index right).
func (s *Store) UpsertProduct(ctx context.Context, in store.ProductInput) (store.Product, error) {
	in, err := store.ValidateProduct(in)
	if err != nil {
		return store.Product{}, err
	}
	var price any
	if in.Price != nil {
		// numeric(10,2) on PostgreSQL: round to cents here too.
		price = float64(int64(*in.Price*100+0.5)) / 100
	}
	now := micros(s.opts.Clock())
	return scanProduct(s.db.QueryRowContext(ctx, `
		INSERT INTO product (id, category_id, title, source_url, source_id, price, currency, image_urls, summary,
			specs, available, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?12)
		ON CONFLICT (source_url) DO UPDATE SET
			category_id = excluded.category_id, title = excluded.title, source_id = excluded.source_id,
			price = excluded.price, currency = excluded.currency, image_urls = excluded.image_urls,
			summary = excluded.summary, specs = excluded.specs, available = excluded.available,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING `+prodCols,
		newID(), lowerID(in.CategoryID), in.Title, in.SourceURL, in.SourceID, price, in.Currency,
		jsonText(in.ImageURLs), in.Summary, jsonText(in.Specs), in.Available, now))
}

// GetProduct implements store.Store.
func (s *Store) GetProduct(ctx context.Context, id string) (store.Product, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Product{}, err
	}
	return scanProduct(s.db.QueryRowContext(ctx, `SELECT `+prodCols+` FROM product WHERE id = ?`, strings.ToLower(id)))
}

var productOrder = map[string]string{
	store.SortPriceAsc:      "price ASC NULLS LAST, id",
	store.SortPriceDesc:     "price DESC NULLS LAST, id",
	store.SortTitleAsc:      "lower(title) ASC, title ASC, id",
	store.SortTitleDesc:     "lower(title) DESC, title DESC, id",
	store.SortCreatedAtDesc: "created_at DESC, id",
}

// ftsQuery turns free text into an FTS5 query: every word quoted and
// required (like plainto_tsquery).
func ftsQuery(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	return strings.Join(words, " AND ")
}

// specPath is the JSON path of a spec key (validated by
// store.ValidateSpecKey, so it needs no escaping beyond the quotes).
func specPath(k string) string { return `$."` + k + `"` }

// ListProducts implements store.Store.
func (s *Store) ListProducts(ctx context.Context, f store.ProductFilter) ([]store.Product, int, error) {
	f, err := store.NormalizeProductFilter(f)
	if err != nil {
		return nil, 0, err
	}
	var conds []string
	var args []any
	add := func(cond string, v any) {
		conds = append(conds, cond)
		args = append(args, v)
	}
	if f.CategoryID != "" {
		add("category_id = ?", strings.ToLower(f.CategoryID))
	}
	if fq := ftsQuery(f.Q); fq != "" {
		add("id IN (SELECT product_id FROM product_fts WHERE product_fts MATCH ?)", fq)
	}
	if f.Author != "" {
		add("lower(json_extract(specs, '$.author')) = lower(?)", f.Author)
	}
	if f.ISBN != "" {
		add("json_extract(specs, '$.isbn') = ?", f.ISBN)
	}
	if f.Format != "" {
		add("lower(json_extract(specs, '$.format')) = lower(?)", f.Format)
	}
	if f.Condition != "" {
		add("lower(json_extract(specs, '$.condition')) = lower(?)", f.Condition)
	}
	// The equivalents of PostgreSQL's specs ? 'key' (a key present, whatever
	// its value, JSON null included) and specs @> '{"key": "value"}' (a
	// string value, compared exactly).
	for _, k := range f.HasSpec {
		add("json_type(specs, ?) IS NOT NULL", specPath(k))
	}
	for _, k := range store.SortedSpecKeys(f.Specs) {
		conds = append(conds, "json_type(specs, ?) = 'text' AND json_extract(specs, ?) = ?")
		args = append(args, specPath(k), specPath(k), f.Specs[k])
	}
	if f.MinPrice != nil {
		add("price >= ?", *f.MinPrice)
	}
	if f.MaxPrice != nil {
		add("price <= ?", *f.MaxPrice)
	}
	if f.Available != nil {
		add("available = ?", *f.Available)
	}
	if f.Active != nil {
		if *f.Active {
			conds = append(conds, "id IN (SELECT id FROM active_products)")
		} else {
			conds = append(conds, "id NOT IN (SELECT id FROM active_products)")
		}
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	total := -1
	if !f.SkipTotal {
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM product`+where, args...).Scan(&total); err != nil {
			return nil, 0, mapErr(err)
		}
	}
	// The keyset condition narrows the page, not the total.
	if cond, kargs := store.KeysetCondition(f, func(string) string { return "?" }); cond != "" {
		for i, a := range kargs {
			if t, ok := a.(time.Time); ok {
				kargs[i] = micros(t)
			}
		}
		if where == "" {
			where = " WHERE " + cond
		} else {
			where += " AND " + cond
		}
		args = append(args, kargs...)
	}
	args = append(args, f.Limit, f.Offset)
	rows, err := s.db.QueryContext(ctx, `SELECT `+prodCols+` FROM product`+where+` ORDER BY `+productOrder[f.Sort]+` LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	defer rows.Close()
	out := []store.Product{}
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p)
	}
	return out, total, mapErr(rows.Err())
}

// --- queue ---

const jobCols = `id, type, target_url, status, attempts, max_attempts, priority, run_after, locked_at, locked_by,
	last_error, metadata, created_at, updated_at, completed_at`

func scanJob(row scanner) (store.Job, error) {
	var j store.Job
	var meta string
	var runAfter, created, updated int64
	var locked, completed sql.NullInt64
	if err := row.Scan(&j.ID, &j.Type, &j.TargetURL, &j.Status, &j.Attempts, &j.MaxAttempts, &j.Priority, &runAfter,
		&locked, &j.LockedBy, &j.LastError, &meta, &created, &updated, &completed); err != nil {
		return j, mapErr(err)
	}
	j.RunAfter, j.CreatedAt, j.UpdatedAt = fromMicros(runAfter), fromMicros(created), fromMicros(updated)
	j.LockedAt, j.CompletedAt = fromNullMicros(locked), fromNullMicros(completed)
	if err := json.Unmarshal([]byte(meta), &j.Metadata); err != nil {
		return j, fmt.Errorf("sqlite: metadata: %w", err)
	}
	return j, nil
}

// Enqueue implements store.Store with one INSERT … ON CONFLICT on the
// partial unique index idx_scrape_job_dedup.
func (s *Store) Enqueue(ctx context.Context, in store.NewJob) (store.Job, error) {
	in, err := store.ValidateJob(in)
	if err != nil {
		return store.Job{}, err
	}
	now := micros(s.opts.Clock())
	runAfter := now
	if !in.RunAfter.IsZero() {
		runAfter = micros(in.RunAfter)
	}
	j, err := scanJob(s.db.QueryRowContext(ctx, `
		INSERT INTO scrape_job (id, type, target_url, priority, max_attempts, metadata, run_after, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
		ON CONFLICT (type, target_url) WHERE status IN ('queued', 'running')
		DO UPDATE SET priority = max(priority, excluded.priority), updated_at = excluded.updated_at,
			run_after = CASE WHEN ?9 AND status = 'queued' THEN excluded.run_after ELSE run_after END,
			attempts = CASE WHEN ?9 AND status = 'queued' THEN 0 ELSE attempts END
		RETURNING `+jobCols, newID(), string(in.Type), in.TargetURL, in.Priority, in.MaxAttempts, jsonText(in.Metadata), runAfter, now, in.Reset))
	if err == nil && j.Status == store.StatusQueued {
		s.wakes.wake()
	}
	return j, err
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, id string) (store.Job, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Job{}, err
	}
	return scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobCols+` FROM scrape_job WHERE id = ?`, strings.ToLower(id)))
}

// Claim implements store.Store with one atomic UPDATE … RETURNING.
func (s *Store) Claim(ctx context.Context, worker string, n int) ([]store.Job, error) {
	if n <= 0 {
		return []store.Job{}, nil
	}
	now := s.opts.Clock()
	rows, err := s.db.QueryContext(ctx, `
		UPDATE scrape_job SET status = 'running', locked_at = ?1, locked_by = ?2, attempts = attempts + 1, updated_at = ?1
		WHERE id IN (SELECT id FROM scrape_job WHERE status = 'queued' AND run_after <= ?1
			ORDER BY priority DESC, created_at ASC, id LIMIT ?3)
		RETURNING `+jobCols, micros(now), worker, n)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return x.CreatedAt.Before(y.CreatedAt)
		}
		return x.ID < y.ID
	})
	return out, nil
}

func (s *Store) notRunning(ctx context.Context, id string) error {
	if _, err := s.GetJob(ctx, id); err != nil {
		return err
	}
	return store.ErrNotRunning
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, id, worker string) error {
	if err := store.ValidateID(id); err != nil {
		return err
	}
	now := micros(s.opts.Clock())
	res, err := s.db.ExecContext(ctx, `UPDATE scrape_job SET locked_at = ?2, updated_at = ?2
		WHERE id = ?1 AND status = 'running' AND locked_by = ?3`, strings.ToLower(id), now, worker)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.notRunning(ctx, id)
	}
	return nil
}

// RescueExpired implements store.Store.
func (s *Store) RescueExpired(ctx context.Context, now time.Time, lease time.Duration) (int, error) {
	if lease <= 0 {
		lease = store.DefaultLease
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE scrape_job SET
			status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
			completed_at = CASE WHEN attempts >= max_attempts THEN ?1 END,
			last_error = 'lease expired (worker ' || coalesce(locked_by, '?') || ')',
			locked_at = NULL, locked_by = NULL, run_after = ?1, updated_at = ?1
		WHERE status = 'running' AND locked_at < ?2`, micros(now), micros(now.Add(-lease)))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		s.wakes.wake()
	}
	return int(n), nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, id, worker string) error {
	if err := store.ValidateID(id); err != nil {
		return err
	}
	now := micros(s.opts.Clock())
	res, err := s.db.ExecContext(ctx, `UPDATE scrape_job SET status = 'completed', completed_at = ?2,
		locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1 AND status = 'running' AND locked_by = ?3`,
		strings.ToLower(id), now, worker)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.notRunning(ctx, id)
	}
	return nil
}

// CompleteMany implements store.Store with one UPDATE … WHERE id IN
// (json_each) under the same conditions as Complete.
func (s *Store) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	if err := store.ValidateIDs(ids); err != nil {
		return nil, err
	}
	done := []string{}
	if len(ids) == 0 {
		return done, nil
	}
	lower := make([]string, len(ids))
	for i, id := range ids {
		lower[i] = strings.ToLower(id)
	}
	list, _ := json.Marshal(lower)
	rows, err := s.db.QueryContext(ctx, `UPDATE scrape_job SET status = 'completed', completed_at = ?2,
		locked_at = NULL, locked_by = NULL, updated_at = ?2
		WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'running' AND locked_by = ?3 RETURNING id`,
		string(list), micros(s.opts.Clock()), worker)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr(err)
		}
		done = append(done, id)
	}
	return done, mapErr(rows.Err())
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, id, worker, msg string) (store.Job, error) {
	return s.fail(ctx, id, worker, msg, false)
}

// FailPermanently implements store.Store.
func (s *Store) FailPermanently(ctx context.Context, id, worker, msg string) (store.Job, error) {
	return s.fail(ctx, id, worker, msg, true)
}

// fail records a failed attempt; permanent fails the job whatever attempts
// it has left.
func (s *Store) fail(ctx context.Context, id, worker, msg string, permanent bool) (store.Job, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Job{}, err
	}
	id = strings.ToLower(id)
	now := s.opts.Clock()
	var out store.Job
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		var lockedBy sql.NullString
		var attempts, max int
		if err := tx.QueryRowContext(ctx, `SELECT status, locked_by, attempts, max_attempts FROM scrape_job WHERE id = ?`, id).
			Scan(&status, &lockedBy, &attempts, &max); err != nil {
			return mapErr(err)
		}
		if status != string(store.StatusRunning) || !lockedBy.Valid || lockedBy.String != worker {
			return store.ErrNotRunning
		}
		var err error
		if attempts >= max || permanent {
			out, err = scanJob(tx.QueryRowContext(ctx, `UPDATE scrape_job SET status = 'failed', completed_at = ?2,
				last_error = ?3, locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1
				RETURNING `+jobCols, id, micros(now), msg))
		} else {
			out, err = scanJob(tx.QueryRowContext(ctx, `UPDATE scrape_job SET status = 'queued', run_after = ?4,
				last_error = ?3, locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1
				RETURNING `+jobCols, id, micros(now), msg, micros(now.Add(s.opts.Backoff(attempts)))))
		}
		return err
	})
	if err == nil && out.Status == store.StatusQueued {
		s.wakes.wake()
	}
	return out, err
}

// CleanupFinished implements store.Store.
func (s *Store) CleanupFinished(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		olderThan = store.DefaultRetention
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM scrape_job WHERE status IN ('completed', 'failed') AND completed_at < ?`,
		micros(s.opts.Clock().Add(-olderThan)))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// QueueStats implements store.Store by reading the job_queue_stats view.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStat, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, type, count, avg_attempts, oldest_job, newest_job
		FROM job_queue_stats ORDER BY status, type`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []store.QueueStat{}
	for rows.Next() {
		var q store.QueueStat
		var oldest, newest int64
		if err := rows.Scan(&q.Status, &q.Type, &q.Count, &q.AvgAttempts, &oldest, &newest); err != nil {
			return nil, mapErr(err)
		}
		q.OldestJob, q.NewestJob = fromMicros(oldest), fromMicros(newest)
		out = append(out, q)
	}
	return out, mapErr(rows.Err())
}
