// Package postgres implements store.Store on PostgreSQL 15 (plain, so
// Supabase-compatible) through a pgx/v5 pool. Open applies the embedded
// migrations (the DataShelf schema document's tables, indexes, constraints,
// trigger, views and functions, with the defects of DESIGN.md §5 fixed) in
// order, tracked in schema_migrations.
package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
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

// Store is the PostgreSQL implementation of store.Store: store.SQL in
// PostgreSQL's dialect over a pgx pool, with LISTEN/NOTIFY wake-ups.
type Store struct {
	*store.SQL
	pool pgxPool
}

var (
	_ store.Store = (*Store)(nil)
	_ store.Admin = (*Store)(nil)
)

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
	s := &Store{pool: pgxPool{p}}
	s.SQL = store.NewSQL(newDB(s.pool), newDialect(), o.Options.EnsureDefaults())
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

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own transaction, in file name order, under
// an advisory lock so concurrent Opens are safe.
func (s *Store) migrate(ctx context.Context) error {
	migrations, err := store.ReadMigrations(migrationsFS)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		err = s.pool.BeginFunc(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('quarry.datashelf.migrate.' || current_schema()))`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, m.Body); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.Version)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.Version, err)
		}
	}
	return nil
}
