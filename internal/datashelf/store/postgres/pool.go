package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// pgxPool is a pgxpool.Pool with the transaction helper the store uses.
type pgxPool struct {
	*pgxpool.Pool
}

// BeginFunc runs fn in a transaction, committing when it returns nil and
// rolling back otherwise.
func (p pgxPool) BeginFunc(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.Pool, fn)
}

// Ping connects to the PostgreSQL at url once and disconnects: the probe
// of a database whose store has not opened yet.
func Ping(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// querier is what a pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// conn is a pool or a transaction as a store.Conn.
type conn struct{ q querier }

func (c conn) Query(ctx context.Context, sql string, args ...any) (store.ResultRows, error) {
	return c.q.Query(ctx, sql, args...)
}

func (c conn) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	return c.q.QueryRow(ctx, sql, args...)
}

func (c conn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// db is the pool as a store.DB.
type db struct {
	conn
	pool pgxPool
}

func newDB(p pgxPool) db { return db{conn: conn{p}, pool: p} }

func (d db) InTx(ctx context.Context, fn func(store.Conn) error) error {
	return d.pool.BeginFunc(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
}
