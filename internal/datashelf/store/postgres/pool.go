package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
