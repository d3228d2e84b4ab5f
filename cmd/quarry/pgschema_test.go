package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresSchemaURL creates a fresh schema in the PostgreSQL server at base
// (dropped at cleanup) and returns base with search_path set to it: a
// quarry process given that URL works in the schema alone (pgx sends
// unknown URL parameters as run-time parameters).
func postgresSchemaURL(t *testing.T, base string) *url.URL {
	u, _ := postgresSchema(t, base)
	return u
}

// postgresSchema is postgresSchemaURL that also returns the schema's name.
func postgresSchema(t *testing.T, base string) (*url.URL, string) {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := fmt.Sprintf("quarry_test_%x", b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		conn.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u, schema
}
