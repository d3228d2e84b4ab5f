package checks

import (
	"context"
	"testing"

	"github.com/quarrydb/quarry/ddb"
	checksstore "github.com/quarrydb/quarry/internal/checks/store"
	"github.com/quarrydb/quarry/internal/checks/tables"
)

// testStore returns Checks' store over a new embedded store, closed at the
// test's end.
func testStore(t *testing.T) *checksstore.Store {
	t.Helper()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	client := ddb.NewClient(db)
	names, err := tables.EnsureTables(context.Background(), client, tables.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return checksstore.New(client, names, nil)
}
