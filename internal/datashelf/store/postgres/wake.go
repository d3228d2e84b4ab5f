package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// wakeChannel is the channel migration 0003_job_wakeup.sql's trigger
// notifies, with the schema of scrape_job as payload.
const wakeChannel = "datashelf_job"

// Backoff of the listening connection's reconnects.
const (
	wakeBackoffMin = 100 * time.Millisecond
	wakeBackoffMax = 10 * time.Second
)

// Wake implements store.Store with LISTEN datashelf_job on a connection of
// its own (outside the pool, application_name "quarry wake SCHEMA"),
// reconnected with backoff (100 ms doubling to 10 s) when it drops. The
// trigger of migration 0003 notifies at the commit of every statement that
// leaves a job queued; notifications of other schemas are ignored. Behind
// a transaction-mode pooler LISTEN does not hold, and callers fall back
// on their poll.
func (s *Store) Wake(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	go s.listen(ctx, ch)
	return ch
}

// listen keeps a listening connection until ctx ends, then closes ch.
func (s *Store) listen(ctx context.Context, ch chan struct{}) {
	defer close(ch)
	backoff := wakeBackoffMin
	for {
		if s.listenOnce(ctx, ch) {
			backoff = wakeBackoffMin
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, wakeBackoffMax)
	}
}

// listenOnce connects, listens and forwards notifications to ch until the
// connection fails or ctx ends; it reports whether it got as far as
// listening.
func (s *Store) listenOnce(ctx context.Context, ch chan struct{}) (listened bool) {
	cfg := s.pool.Config().ConnConfig
	schema := cfg.RuntimeParams["search_path"]
	cfg.RuntimeParams["application_name"] = "quarry wake " + schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return false
	}
	if _, err := conn.Exec(ctx, "LISTEN "+wakeChannel); err != nil {
		return false
	}
	store.Signal(ch) // listening: whatever was enqueued before is claimable now
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if n.Payload == schema {
			store.Signal(ch)
		}
	}
}
