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
	"fmt"
	"time"

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

// Store is the SQLite implementation of store.Store: store.SQL in
// SQLite's dialect over database/sql, with in-process wake-ups.
type Store struct {
	*store.SQL
	db    *sql.DB
	opts  *store.Options
	wakes wakers
}

var (
	_ store.Store = (*Store)(nil)
	_ store.Admin = (*Store)(nil)
)

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
	s.SQL = store.NewSQL(txDB{conn: conn{db}, s: s}, newDialect(s.wakes.wake), s.opts)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DB returns the underlying handle (for tools and tests).
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	migrations, err := store.ReadMigrations(migrationsFS)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: schema_migrations: %w", err)
	}
	for _, m := range migrations {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.Body); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				m.Version, s.opts.Clock().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.Version, err)
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
