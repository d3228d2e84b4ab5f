// Package postgres implements store.Store on PostgreSQL 15 (plain, so
// Supabase-compatible) through a pgx/v5 pool. Open applies the embedded
// migrations (the DataShelf schema document's tables, indexes, constraints,
// trigger, views and functions, with the defects of DESIGN.md §5 fixed) in
// order, tracked in schema_migrations.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Options configures a PostgreSQL store. The zero value is valid.
type Options struct {
	store.Options
	// Schema, if set, is created when missing and used as the search_path
	// of every connection (tests isolate themselves this way).
	Schema string
	// MaxConns caps the connection pool; 0 means 16.
	MaxConns int
}

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	pool pgxPool
	opts *store.Options
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url, applies pending migrations and
// returns the store. The caller must Close it.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	cfg.MaxConns = int32(o.MaxConns)
	poolerSafe(cfg.ConnConfig)
	if o.Schema != "" {
		if err := createSchema(ctx, url, o.Schema); err != nil {
			return nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pgxPool{p}, opts: o.Options.EnsureDefaults()}
	if err := s.migrate(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return s, nil
}

// poolerSafe makes statement_cache_capacity=0 in the URL mean what a
// transaction-mode pooler needs (no named prepared statements kept on a
// server connection): pgx's default mode, cache_statement, refuses to run
// without its statement cache, so the mode becomes cache_describe (unnamed
// statements, descriptions cached on the client) or, when the description
// cache is off too, exec.
func poolerSafe(cc *pgx.ConnConfig) {
	if cc.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement || cc.StatementCacheCapacity > 0 {
		return
	}
	if cc.DescriptionCacheCapacity > 0 {
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	} else {
		cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
}

func createSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: create schema: %w", err)
	}
	return nil
}

// Ping runs SELECT 1 on a connection of the pool.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own transaction, in file name order, under
// an advisory lock so concurrent Opens are safe.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationsFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		body, err := migrationsFS.ReadFile(name)
		if err != nil {
			return err
		}
		err = s.pool.BeginFunc(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('quarry.datashelf.migrate.' || current_schema()))`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", version, err)
		}
	}
	return nil
}

// mapErr converts driver errors to the store's sentinels.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23503", "23514", "22P02", "23502", "22003":
			return fmt.Errorf("%w: %s", store.ErrInvalid, pe.Message)
		}
	}
	return err
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// --- navigation ---

const navCols = `id::text, title, source_url, parent_id::text, last_scraped_at, created_at, updated_at`

func scanNav(row pgx.Row) (store.Navigation, error) {
	var n store.Navigation
	err := row.Scan(&n.ID, &n.Title, &n.SourceURL, &n.ParentID, &n.LastScrapedAt, &n.CreatedAt, &n.UpdatedAt)
	n.LastScrapedAt, n.CreatedAt, n.UpdatedAt = utc(n.LastScrapedAt), utc(n.CreatedAt), utc(n.UpdatedAt)
	return n, mapErr(err)
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
	now := s.opts.Clock()
	return scanNav(s.pool.QueryRow(ctx, `
		INSERT INTO navigation (title, source_url, parent_id, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4)
		ON CONFLICT (source_url) DO UPDATE SET title = EXCLUDED.title, parent_id = EXCLUDED.parent_id,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING `+navCols, in.Title, in.SourceURL, in.ParentID, now))
}

// GetNavigation implements store.Store.
func (s *Store) GetNavigation(ctx context.Context, id string) (store.Navigation, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Navigation{}, err
	}
	return scanNav(s.pool.QueryRow(ctx, `SELECT `+navCols+` FROM navigation WHERE id = $1`, id))
}

// NavigationTree implements store.Store.
func (s *Store) NavigationTree(ctx context.Context) ([]*store.NavigationNode, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+navCols+` FROM navigation ORDER BY lower(title), title, id`)
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

const catCols = `id::text, navigation_id::text, title, source_url, product_count, last_scraped_at, created_at, updated_at`

func scanCat(row pgx.Row) (store.Category, error) {
	var c store.Category
	err := row.Scan(&c.ID, &c.NavigationID, &c.Title, &c.SourceURL, &c.ProductCount, &c.LastScrapedAt, &c.CreatedAt, &c.UpdatedAt)
	c.LastScrapedAt, c.CreatedAt, c.UpdatedAt = utc(c.LastScrapedAt), utc(c.CreatedAt), utc(c.UpdatedAt)
	return c, mapErr(err)
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
	now := s.opts.Clock()
	return scanCat(s.pool.QueryRow(ctx, `
		INSERT INTO category (navigation_id, title, source_url, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4)
		ON CONFLICT (source_url) DO UPDATE SET navigation_id = EXCLUDED.navigation_id, title = EXCLUDED.title,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING `+catCols, in.NavigationID, in.Title, in.SourceURL, now))
}

// GetCategory implements store.Store.
func (s *Store) GetCategory(ctx context.Context, id string) (store.Category, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Category{}, err
	}
	return scanCat(s.pool.QueryRow(ctx, `SELECT `+catCols+` FROM category WHERE id = $1`, id))
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
		args = append(args, f.NavID)
		conds = append(conds, fmt.Sprintf("navigation_id = $%d", len(args)))
	}
	if f.ParentID != "" {
		args = append(args, f.ParentID)
		conds = append(conds, fmt.Sprintf("navigation_id IN (SELECT id FROM navigation WHERE parent_id = $%d)", len(args)))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM category`+where, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	args = append(args, f.Limit, f.Offset)
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT %s FROM category%s ORDER BY lower(title), title, id LIMIT $%d OFFSET $%d`,
		catCols, where, len(args)-1, len(args)), args...)
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

const prodCols = `id::text, category_id::text, title, source_url, source_id, price::float8, currency,
	image_urls::text, summary, specs::text, available, last_scraped_at, created_at, updated_at`

func scanProduct(row pgx.Row) (store.Product, error) {
	var p store.Product
	var images, specs string
	err := row.Scan(&p.ID, &p.CategoryID, &p.Title, &p.SourceURL, &p.SourceID, &p.Price, &p.Currency,
		&images, &p.Summary, &specs, &p.Available, &p.LastScrapedAt, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return p, mapErr(err)
	}
	p.LastScrapedAt, p.CreatedAt, p.UpdatedAt = utc(p.LastScrapedAt), utc(p.CreatedAt), utc(p.UpdatedAt)
	if err := json.Unmarshal([]byte(images), &p.ImageURLs); err != nil {
		return p, fmt.Errorf("postgres: image_urls: %w", err)
	}
	if err := json.Unmarshal([]byte(specs), &p.Specs); err != nil {
		return p, fmt.Errorf("postgres: specs: %w", err)
	}
	return p, nil
}

// UpsertProduct implements store.Store. It is the document's
// upsert_product (ON CONFLICT (source_url)), with the store's clock; the
// trigger keeps product_count right when category_id changes.
func (s *Store) UpsertProduct(ctx context.Context, in store.ProductInput) (store.Product, error) {
	in, err := store.ValidateProduct(in)
	if err != nil {
		return store.Product{}, err
	}
	now := s.opts.Clock()
	for attempt := 0; ; attempt++ {
		p, err := scanProduct(s.pool.QueryRow(ctx, `
		INSERT INTO product (category_id, title, source_url, source_id, price, currency, image_urls, summary,
			specs, available, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::float8::numeric, $6, $7::jsonb, $8, $9::jsonb, $10, $11, $11, $11)
		ON CONFLICT (source_url) DO UPDATE SET
			category_id = EXCLUDED.category_id, title = EXCLUDED.title, source_id = EXCLUDED.source_id,
			price = EXCLUDED.price, currency = EXCLUDED.currency, image_urls = EXCLUDED.image_urls,
			summary = EXCLUDED.summary, specs = EXCLUDED.specs, available = EXCLUDED.available,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING `+prodCols,
			in.CategoryID, in.Title, in.SourceURL, in.SourceID, in.Price, in.Currency, jsonText(in.ImageURLs),
			in.Summary, jsonText(in.Specs), in.Available, now))
		if err != nil && retryable(err) && attempt < 5 {
			continue
		}
		return p, err
	}
}

// GetProduct implements store.Store.
func (s *Store) GetProduct(ctx context.Context, id string) (store.Product, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Product{}, err
	}
	return scanProduct(s.pool.QueryRow(ctx, `SELECT `+prodCols+` FROM product WHERE id = $1`, id))
}

var productOrder = map[string]string{
	store.SortPriceAsc:      "price ASC NULLS LAST, id",
	store.SortPriceDesc:     "price DESC NULLS LAST, id",
	store.SortTitleAsc:      "lower(title) ASC, title ASC, id",
	store.SortTitleDesc:     "lower(title) DESC, title DESC, id",
	store.SortCreatedAtDesc: "created_at DESC, id",
}

// keysetCast types the placeholders of store.KeysetCondition the way the
// columns are compared: prices as numeric (like the price filters), ids as
// uuid.
func keysetCast(kind string) string {
	switch kind {
	case "price":
		return "?::float8::numeric"
	case "id":
		return "?::uuid"
	case "time":
		return "?::timestamptz"
	}
	return "?::text"
}

// productWhere returns the WHERE clause (empty, or starting with
// " WHERE ") selecting f's products and its arguments ($1, $2, …). f must
// be normalized.
func productWhere(f store.ProductFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if f.CategoryID != "" {
		add("category_id = ?", f.CategoryID)
	}
	if strings.TrimSpace(f.Q) != "" {
		add("to_tsvector('english', title) @@ plainto_tsquery('english', ?)", f.Q)
	}
	if f.Author != "" {
		add("lower(specs->>'author') = lower(?)", f.Author)
	}
	if f.ISBN != "" {
		add("(specs->>'isbn') = ?", f.ISBN)
	}
	if f.Format != "" {
		add("lower(specs->>'format') = lower(?)", f.Format)
	}
	if f.Condition != "" {
		add("lower(specs->>'condition') = lower(?)", f.Condition)
	}
	// The design's JSONB queries, which idx_product_specs_gin serves:
	// specs ? 'key' and specs @> '{"key": "value"}'. (add is not used: it
	// would take the ? operator for a placeholder.)
	for _, k := range f.HasSpec {
		args = append(args, k)
		conds = append(conds, fmt.Sprintf("specs ? $%d", len(args)))
	}
	if len(f.Specs) > 0 {
		args = append(args, jsonText(f.Specs))
		conds = append(conds, fmt.Sprintf("specs @> $%d::jsonb", len(args)))
	}
	if f.MinPrice != nil {
		add("price >= ?::float8::numeric", *f.MinPrice)
	}
	if f.MaxPrice != nil {
		add("price <= ?::float8::numeric", *f.MaxPrice)
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
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// ListProducts implements store.Store.
func (s *Store) ListProducts(ctx context.Context, f store.ProductFilter) ([]store.Product, int, error) {
	f, err := store.NormalizeProductFilter(f)
	if err != nil {
		return nil, 0, err
	}
	where, args := productWhere(f)
	total := -1
	if !f.SkipTotal {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM product`+where, args...).Scan(&total); err != nil {
			return nil, 0, mapErr(err)
		}
	}
	// The keyset condition narrows the page, not the total.
	if cond, kargs := store.KeysetCondition(f, keysetCast); cond != "" {
		// Number the placeholders after the filters' arguments.
		parts := strings.Split(cond, "?")
		var b strings.Builder
		b.WriteString(parts[0])
		for i, part := range parts[1:] {
			args = append(args, kargs[i])
			fmt.Fprintf(&b, "$%d", len(args))
			b.WriteString(part)
		}
		if where == "" {
			where = " WHERE " + b.String()
		} else {
			where += " AND " + b.String()
		}
	}
	args = append(args, f.Limit, f.Offset)
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT %s FROM product%s ORDER BY %s LIMIT $%d OFFSET $%d`,
		prodCols, where, productOrder[f.Sort], len(args)-1, len(args)), args...)
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

const jobCols = `id::text, type, target_url, status, attempts, max_attempts, priority, run_after, locked_at,
	locked_by, last_error, metadata::text, created_at, updated_at, completed_at`

func scanJob(row pgx.Row) (store.Job, error) {
	var j store.Job
	var meta string
	err := row.Scan(&j.ID, &j.Type, &j.TargetURL, &j.Status, &j.Attempts, &j.MaxAttempts, &j.Priority, &j.RunAfter,
		&j.LockedAt, &j.LockedBy, &j.LastError, &meta, &j.CreatedAt, &j.UpdatedAt, &j.CompletedAt)
	if err != nil {
		return j, mapErr(err)
	}
	j.RunAfter, j.CreatedAt, j.UpdatedAt = utc(j.RunAfter), utc(j.CreatedAt), utc(j.UpdatedAt)
	j.LockedAt, j.CompletedAt = utcPtr(j.LockedAt), utcPtr(j.CompletedAt)
	if err := json.Unmarshal([]byte(meta), &j.Metadata); err != nil {
		return j, fmt.Errorf("postgres: metadata: %w", err)
	}
	return j, nil
}

func collectJobs(rows pgx.Rows) ([]store.Job, error) {
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, mapErr(rows.Err())
}

// Enqueue implements store.Store with one INSERT … ON CONFLICT on the
// partial unique index idx_scrape_job_dedup.
func (s *Store) Enqueue(ctx context.Context, in store.NewJob) (store.Job, error) {
	in, err := store.ValidateJob(in)
	if err != nil {
		return store.Job{}, err
	}
	now := s.opts.Clock()
	runAfter := now
	if !in.RunAfter.IsZero() {
		runAfter = in.RunAfter.UTC().Truncate(time.Microsecond)
	}
	return scanJob(s.pool.QueryRow(ctx, `
		INSERT INTO scrape_job (type, target_url, priority, max_attempts, metadata, run_after, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7)
		ON CONFLICT (type, target_url) WHERE status IN ('queued', 'running')
		DO UPDATE SET priority = GREATEST(scrape_job.priority, EXCLUDED.priority), updated_at = EXCLUDED.updated_at,
			run_after = CASE WHEN $8::boolean AND scrape_job.status = 'queued' THEN EXCLUDED.run_after ELSE scrape_job.run_after END,
			attempts = CASE WHEN $8::boolean AND scrape_job.status = 'queued' THEN 0 ELSE scrape_job.attempts END
		RETURNING `+jobCols, string(in.Type), in.TargetURL, in.Priority, in.MaxAttempts, jsonText(in.Metadata), runAfter, now, in.Reset))
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, id string) (store.Job, error) {
	if err := store.ValidateID(id); err != nil {
		return store.Job{}, err
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM scrape_job WHERE id = $1`, id))
}

// Claim implements store.Store with SELECT … FOR UPDATE SKIP LOCKED.
func (s *Store) Claim(ctx context.Context, worker string, n int) ([]store.Job, error) {
	if n <= 0 {
		return []store.Job{}, nil
	}
	now := s.opts.Clock()
	rows, err := s.pool.Query(ctx, `
		WITH next AS (
			SELECT id FROM scrape_job
			WHERE status = 'queued' AND run_after <= $1
			ORDER BY priority DESC, created_at ASC, id
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE scrape_job j SET status = 'running', locked_at = $1, locked_by = $3,
			attempts = j.attempts + 1, updated_at = $1
		FROM next WHERE j.id = next.id
		RETURNING `+prefixCols("j.", jobCols), now, n, worker)
	if err != nil {
		return nil, mapErr(err)
	}
	jobs, err := collectJobs(rows)
	if err != nil {
		return nil, err
	}
	sortClaimed(jobs)
	return jobs, nil
}

func prefixCols(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

func sortClaimed(jobs []store.Job) {
	sort.SliceStable(jobs, func(a, b int) bool {
		x, y := jobs[a], jobs[b]
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return x.CreatedAt.Before(y.CreatedAt)
		}
		return x.ID < y.ID
	})
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, id, worker string) error {
	if err := store.ValidateID(id); err != nil {
		return err
	}
	now := s.opts.Clock()
	tag, err := s.pool.Exec(ctx, `UPDATE scrape_job SET locked_at = $2, updated_at = $2
		WHERE id = $1 AND status = 'running' AND locked_by = $3`, id, now, worker)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return s.notRunning(ctx, id)
	}
	return nil
}

func (s *Store) notRunning(ctx context.Context, id string) error {
	if _, err := s.GetJob(ctx, id); err != nil {
		return err
	}
	return store.ErrNotRunning
}

// RescueExpired implements store.Store.
func (s *Store) RescueExpired(ctx context.Context, now time.Time, lease time.Duration) (int, error) {
	if lease <= 0 {
		lease = store.DefaultLease
	}
	now = now.UTC().Truncate(time.Microsecond)
	tag, err := s.pool.Exec(ctx, `
		UPDATE scrape_job SET
			status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
			completed_at = CASE WHEN attempts >= max_attempts THEN $1::timestamptz END,
			last_error = 'lease expired (worker ' || coalesce(locked_by, '?') || ')',
			locked_at = NULL, locked_by = NULL, run_after = $1, updated_at = $1
		WHERE status = 'running' AND locked_at < $2`, now, now.Add(-lease))
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, id, worker string) error {
	if err := store.ValidateID(id); err != nil {
		return err
	}
	now := s.opts.Clock()
	tag, err := s.pool.Exec(ctx, `UPDATE scrape_job SET status = 'completed', completed_at = $2,
		locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1 AND status = 'running' AND locked_by = $3`,
		id, now, worker)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return s.notRunning(ctx, id)
	}
	return nil
}

// CompleteMany implements store.Store with one UPDATE … WHERE id = ANY($1)
// under the same conditions as Complete.
func (s *Store) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	if err := store.ValidateIDs(ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return []string{}, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE scrape_job SET status = 'completed', completed_at = $2,
		locked_at = NULL, locked_by = NULL, updated_at = $2
		WHERE id = ANY($1::uuid[]) AND status = 'running' AND locked_by = $3 RETURNING id::text`,
		ids, s.opts.Clock(), worker)
	if err != nil {
		return nil, mapErr(err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, mapErr(err)
	}
	if done == nil {
		done = []string{}
	}
	return done, nil
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
	now := s.opts.Clock()
	var out store.Job
	err := s.pool.BeginFunc(ctx, func(tx pgx.Tx) error {
		var status string
		var lockedBy *string
		var attempts, max int
		if err := tx.QueryRow(ctx, `SELECT status, locked_by, attempts, max_attempts FROM scrape_job WHERE id = $1 FOR UPDATE`, id).
			Scan(&status, &lockedBy, &attempts, &max); err != nil {
			return mapErr(err)
		}
		if status != string(store.StatusRunning) || lockedBy == nil || *lockedBy != worker {
			return store.ErrNotRunning
		}
		var err error
		if attempts >= max || permanent {
			out, err = scanJob(tx.QueryRow(ctx, `UPDATE scrape_job SET status = 'failed', completed_at = $2,
				last_error = $3, locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1
				RETURNING `+jobCols, id, now, msg))
		} else {
			out, err = scanJob(tx.QueryRow(ctx, `UPDATE scrape_job SET status = 'queued', run_after = $4,
				last_error = $3, locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1
				RETURNING `+jobCols, id, now, msg, now.Add(s.opts.Backoff(attempts))))
		}
		return err
	})
	return out, err
}

// CleanupFinished implements store.Store.
func (s *Store) CleanupFinished(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		olderThan = store.DefaultRetention
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM scrape_job WHERE status IN ('completed', 'failed') AND completed_at < $1`,
		s.opts.Clock().Add(-olderThan))
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}

// QueueStats implements store.Store by reading the job_queue_stats view.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStat, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, type, count, avg_attempts::float8, oldest_job, newest_job
		FROM job_queue_stats ORDER BY status, type`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []store.QueueStat{}
	for rows.Next() {
		var q store.QueueStat
		if err := rows.Scan(&q.Status, &q.Type, &q.Count, &q.AvgAttempts, &q.OldestJob, &q.NewestJob); err != nil {
			return nil, mapErr(err)
		}
		q.OldestJob, q.NewestJob = utc(q.OldestJob), utc(q.NewestJob)
		out = append(out, q)
	}
	return out, mapErr(rows.Err())
}
