package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// FailedJobs implements store.Store.
func (s *Store) FailedJobs(ctx context.Context, limit int) ([]store.Job, error) {
	if limit < 1 || limit > store.MaxFailedJobs {
		return nil, fmt.Errorf("%w: limit %d (1 to %d)", store.ErrInvalid, limit, store.MaxFailedJobs)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+jobCols+` FROM scrape_job WHERE status = 'failed'
		ORDER BY completed_at DESC, id LIMIT $1`, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectJobs(rows)
}

// RetryFailed implements store.Store with one UPDATE.
func (s *Store) RetryFailed(ctx context.Context, ids []string) (int, error) {
	if err := store.ValidateIDs(ids); err != nil {
		return 0, err
	}
	if ids == nil {
		ids = []string{}
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE scrape_job j SET status = 'queued', attempts = 0, run_after = $1, completed_at = NULL,
			locked_at = NULL, locked_by = NULL, updated_at = $1
		WHERE j.status = 'failed'
			AND (cardinality($2::uuid[]) = 0 OR j.id = ANY($2::uuid[]))
			AND NOT EXISTS (SELECT 1 FROM scrape_job o WHERE o.type = j.type
				AND o.target_url = j.target_url AND o.status IN ('queued', 'running'))
			AND j.id = (SELECT f.id FROM scrape_job f WHERE f.type = j.type
				AND f.target_url = j.target_url AND f.status = 'failed'
				ORDER BY f.completed_at DESC, f.id LIMIT 1)`,
		s.opts.Clock(), ids)
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}

// Throughput implements store.Store with one GROUP BY over completed_at.
func (s *Store) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]store.ThroughputBucket, error) {
	out, err := store.ThroughputBuckets(since, s.opts.Clock(), bucket)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT floor(extract(epoch FROM completed_at - $1) / $2)::bigint AS b, status, count(*)::int
		FROM scrape_job WHERE status IN ('completed', 'failed') AND completed_at >= $1 GROUP BY b, status`,
		since, bucket.Seconds())
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	return store.FillThroughput(out, rows, mapErr)
}
