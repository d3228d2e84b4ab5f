package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// TestWakeReconnects: when the listening connection is killed, Wake
// reconnects, sends a wake-up (it cannot know what it missed) and hears
// the next Enqueue.
func TestWakeReconnects(t *testing.T) {
	url := testURL(t)
	s := openTest(t, nil).(*Store)
	schema := s.pool.Config().ConnConfig.RuntimeParams["search_path"]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := s.Wake(ctx)
	recv := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(2 * time.Minute): // a hang guard, not a timing check
			t.Fatalf("no wake-up %s", what)
		}
	}
	recv("once listening")
	conn := schemaConn(t, url, schema)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, "quarry wake "+schema).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listening connections, %v; want 1", killed, err)
	}
	recv("after the reconnect")
	if _, err := s.Enqueue(ctx, store.NewJob{Type: store.JobProduct, TargetURL: "https://x/after"}); err != nil {
		t.Fatal(err)
	}
	recv("after an Enqueue on the new connection")
	cancel()
	for range wake {
	}
}
