package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

func micros(t time.Time) int64 { return t.UTC().Truncate(time.Microsecond).UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// querier is what a *sql.DB and a *sql.Tx share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// conn is a database or a transaction as a store.Conn. SQLite keeps every
// time as an INTEGER of microseconds since the Unix epoch (UTC); conn
// converts on the way in and out, so store.SQL passes and scans time.Time
// as on PostgreSQL: a time.Time argument becomes its microseconds, a
// *time.Time or **time.Time destination (NULL: nil) reads them.
type conn struct{ q querier }

// convertArgs replaces time.Time arguments by their microseconds.
func convertArgs(in []any) []any {
	out := make([]any, len(in))
	for i, a := range in {
		if t, ok := a.(time.Time); ok {
			a = micros(t)
		}
		out[i] = a
	}
	return out
}

func (c conn) Query(ctx context.Context, query string, a ...any) (store.ResultRows, error) {
	rows, err := c.q.QueryContext(ctx, query, convertArgs(a)...)
	if err != nil {
		return nil, err
	}
	return resultRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, query string, a ...any) store.Row {
	return row{c.q.QueryRowContext(ctx, query, convertArgs(a)...)}
}

func (c conn) Exec(ctx context.Context, query string, a ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, query, convertArgs(a)...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// txDB is the store's database as a store.DB.
type txDB struct {
	conn
	s *Store
}

func (d txDB) InTx(ctx context.Context, fn func(store.Conn) error) error {
	return d.s.tx(ctx, func(tx *sql.Tx) error { return fn(conn{tx}) })
}

// scanDest replaces time destinations by readers of microseconds.
func scanDest(dest []any) []any {
	out := make([]any, len(dest))
	for i, d := range dest {
		switch p := d.(type) {
		case *time.Time:
			d = microTime{p}
		case **time.Time:
			d = nullMicroTime{p}
		}
		out[i] = d
	}
	return out
}

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error { return r.r.Scan(scanDest(dest)...) }

type resultRows struct{ rows *sql.Rows }

func (r resultRows) Next() bool             { return r.rows.Next() }
func (r resultRows) Err() error             { return r.rows.Err() }
func (r resultRows) Close()                 { _ = r.rows.Close() }
func (r resultRows) Scan(dest ...any) error { return r.rows.Scan(scanDest(dest)...) }

// microTime reads a NOT NULL time column.
type microTime struct{ t *time.Time }

func (m microTime) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("sqlite: time column holds %T, want integer microseconds", src)
	}
	*m.t = fromMicros(v)
	return nil
}

// nullMicroTime reads a nullable time column.
type nullMicroTime struct{ t **time.Time }

func (m nullMicroTime) Scan(src any) error {
	if src == nil {
		*m.t = nil
		return nil
	}
	var t time.Time
	if err := (microTime{&t}).Scan(src); err != nil {
		return err
	}
	*m.t = &t
	return nil
}
