package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// FailedJobs implements store.Store.
func (s *Store) FailedJobs(ctx context.Context, limit int) ([]store.Job, error) {
	if limit < 1 || limit > store.MaxFailedJobs {
		return nil, fmt.Errorf("%w: limit %d (1 to %d)", store.ErrInvalid, limit, store.MaxFailedJobs)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobCols+` FROM scrape_job WHERE status = 'failed'
		ORDER BY completed_at DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, mapErr(rows.Err())
}

// RetryFailed implements store.Store with one UPDATE.
func (s *Store) RetryFailed(ctx context.Context, ids []string) (int, error) {
	if err := store.ValidateIDs(ids); err != nil {
		return 0, err
	}
	lower := make([]string, len(ids))
	for i, id := range ids {
		lower[i] = strings.ToLower(id)
	}
	list, _ := json.Marshal(lower)
	res, err := s.db.ExecContext(ctx, `
		UPDATE scrape_job SET status = 'queued', attempts = 0, run_after = ?1, completed_at = NULL,
			locked_at = NULL, locked_by = NULL, updated_at = ?1
		WHERE status = 'failed'
			AND (?2 = 0 OR id IN (SELECT value FROM json_each(?3)))
			AND NOT EXISTS (SELECT 1 FROM scrape_job o WHERE o.type = scrape_job.type
				AND o.target_url = scrape_job.target_url AND o.status IN ('queued', 'running'))
			AND id = (SELECT f.id FROM scrape_job f WHERE f.type = scrape_job.type
				AND f.target_url = scrape_job.target_url AND f.status = 'failed'
				ORDER BY f.completed_at DESC, f.id LIMIT 1)`,
		micros(s.opts.Clock()), len(ids), string(list))
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		s.wakes.wake()
	}
	return int(n), nil
}

// Throughput implements store.Store with one GROUP BY over completed_at.
func (s *Store) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]store.ThroughputBucket, error) {
	out, err := store.ThroughputBuckets(since, s.opts.Clock(), bucket)
	if err != nil {
		return nil, err
	}
	from, width := micros(since), bucket.Microseconds()
	if width <= 0 {
		width = 1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT (completed_at - ?1) / ?2 AS b, status, count(*) FROM scrape_job
		WHERE status IN ('completed', 'failed') AND completed_at >= ?1 GROUP BY b, status`, from, width)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	return store.FillThroughput(out, rows, mapErr)
}
