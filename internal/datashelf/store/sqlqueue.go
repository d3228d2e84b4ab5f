package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

func (s *SQL) scanJob(row Row) (Job, error) {
	var j Job
	var meta string
	if err := row.Scan(&j.ID, &j.Type, &j.TargetURL, &j.Status, &j.Attempts, &j.MaxAttempts, &j.Priority, &j.RunAfter,
		&j.LockedAt, &j.LockedBy, &j.LastError, &meta, &j.CreatedAt, &j.UpdatedAt, &j.CompletedAt); err != nil {
		return j, s.mapErr(err)
	}
	j.RunAfter, j.CreatedAt, j.UpdatedAt = j.RunAfter.UTC(), j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	j.LockedAt, j.CompletedAt = utcPtr(j.LockedAt), utcPtr(j.CompletedAt)
	if err := json.Unmarshal([]byte(meta), &j.Metadata); err != nil {
		return j, fmt.Errorf("%s: metadata: %w", s.d.Name, err)
	}
	return j, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// lowerIDs returns the canonical (lowercase) form of validated ids, never
// nil.
func lowerIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.ToLower(id)
	}
	return out
}

// Enqueue implements Store with one INSERT … ON CONFLICT on the partial
// unique index idx_scrape_job_dedup.
func (s *SQL) Enqueue(ctx context.Context, in NewJob) (Job, error) {
	in, err := ValidateJob(in)
	if err != nil {
		return Job{}, err
	}
	now := s.opts.Clock()
	runAfter := now
	if !in.RunAfter.IsZero() {
		runAfter = in.RunAfter.UTC().Truncate(time.Microsecond)
	}
	j, err := s.scanJob(s.db.QueryRow(ctx, s.d.Enqueue, s.insertArgs(string(in.Type), in.TargetURL, in.Priority,
		in.MaxAttempts, JSONText(in.Metadata), runAfter, now, in.Reset)...))
	if err == nil && j.Status == StatusQueued {
		s.queued()
	}
	return j, err
}

// GetJob implements Store.
func (s *SQL) GetJob(ctx context.Context, id string) (Job, error) {
	if err := ValidateID(id); err != nil {
		return Job{}, err
	}
	return s.scanJob(s.db.QueryRow(ctx, `SELECT `+s.d.JobCols+` FROM scrape_job WHERE id = `+s.p(1), strings.ToLower(id)))
}

// Claim implements Store with the dialect's one atomic claiming statement.
func (s *SQL) Claim(ctx context.Context, worker string, n int) ([]Job, error) {
	return s.claim(ctx, s.db, worker, n, s.opts.Clock())
}

// claim runs the claiming statement on c.
func (s *SQL) claim(ctx context.Context, c Conn, worker string, n int, now time.Time) ([]Job, error) {
	if n <= 0 {
		return []Job{}, nil
	}
	rows, err := c.Query(ctx, s.d.Claim, now, n, worker)
	if err != nil {
		return nil, s.mapErr(err)
	}
	jobs, err := collect(s, rows, s.scanJob)
	if err != nil {
		return nil, err
	}
	sortClaimed(jobs)
	return jobs, nil
}

// sortClaimed orders claimed jobs as the claim picked them (a statement's
// RETURNING order is unspecified).
func sortClaimed(jobs []Job) {
	sort.SliceStable(jobs, func(a, b int) bool {
		x, y := jobs[a], jobs[b]
		if x.Priority != y.Priority {
			return x.Priority > y.Priority
		}
		if !x.CreatedAt.Equal(y.CreatedAt) {
			return x.CreatedAt.Before(y.CreatedAt)
		}
		return x.ID < y.ID
	})
}

// kindRow scans a row's first column into kind and the others into the
// destinations Scan is given.
type kindRow struct {
	row  Row
	kind *string
}

func (r kindRow) Scan(dest ...any) error {
	return r.row.Scan(append([]any{r.kind}, dest...)...)
}

// Heartbeat implements Store.
func (s *SQL) Heartbeat(ctx context.Context, id, worker string) error {
	return s.heldUpdate(ctx, s.d.Heartbeat, id, worker)
}

// Complete implements Store.
func (s *SQL) Complete(ctx context.Context, id, worker string) error {
	return s.heldUpdate(ctx, s.d.Complete, id, worker)
}

// heldUpdate runs stmt (arguments id, now, worker) on a job that must be
// running under worker, reporting ErrNotRunning (or ErrNotFound) when it
// changed nothing.
func (s *SQL) heldUpdate(ctx context.Context, stmt, id, worker string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	n, err := s.db.Exec(ctx, stmt, strings.ToLower(id), s.opts.Clock(), worker)
	if err != nil {
		return s.mapErr(err)
	}
	if n == 0 {
		if _, err := s.GetJob(ctx, id); err != nil {
			return err
		}
		return ErrNotRunning
	}
	return nil
}

// RescueExpired implements Store.
func (s *SQL) RescueExpired(ctx context.Context, now time.Time, lease time.Duration) (int, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	now = now.UTC().Truncate(time.Microsecond)
	n, err := s.db.Exec(ctx, s.d.RescueExpired, now, now.Add(-lease))
	if err != nil {
		return 0, s.mapErr(err)
	}
	if n > 0 {
		s.queued()
	}
	return int(n), nil
}

// CompleteMany implements Store with one UPDATE under the same conditions
// as Complete.
func (s *SQL) CompleteMany(ctx context.Context, ids []string, worker string) ([]string, error) {
	if err := ValidateIDs(ids); err != nil {
		return nil, err
	}
	return s.completeMany(ctx, s.db, ids, worker, s.opts.Clock())
}

// completeMany runs CompleteMany's statement on c; ids are validated.
func (s *SQL) completeMany(ctx context.Context, c Conn, ids []string, worker string, now time.Time) ([]string, error) {
	if len(ids) == 0 {
		return []string{}, nil
	}
	rows, err := c.Query(ctx, s.d.CompleteMany, s.d.IDList(lowerIDs(ids)), now, worker)
	if err != nil {
		return nil, s.mapErr(err)
	}
	return collect(s, rows, func(row Row) (string, error) {
		var id string
		return id, s.mapErr(row.Scan(&id))
	})
}

// CompleteAndClaim implements Store: the dialect's one statement, or
// CompleteMany's and Claim's statements in one transaction, or the one of
// them that has work alone. The end of ctx never leaves the completions'
// outcome unknown: the one statement is not sent once ctx has ended and
// is not interrupted after; in the transaction only the claim runs under
// ctx (its interruption rolls the completions back), and the commit is
// not interrupted.
func (s *SQL) CompleteAndClaim(ctx context.Context, ids []string, worker string, n int) ([]string, []Job, error) {
	if err := ValidateIDs(ids); err != nil {
		return nil, nil, err
	}
	now := s.opts.Clock()
	tctx := context.WithoutCancel(ctx)
	switch {
	case len(ids) == 0:
		jobs, err := s.claim(ctx, s.db, worker, n, now)
		return []string{}, jobs, err
	case n <= 0:
		done, err := s.completeMany(tctx, s.db, ids, worker, now)
		return done, []Job{}, err
	}
	var done []string
	var jobs []Job
	if s.d.CompleteAndClaim != "" {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		rows, err := s.db.Query(tctx, s.d.CompleteAndClaim, now, n, worker, s.d.IDList(lowerIDs(ids)))
		if err != nil {
			return nil, nil, s.mapErr(err)
		}
		type kindJob struct {
			kind string
			job  Job
		}
		all, err := collect(s, rows, func(row Row) (kindJob, error) {
			var k kindJob
			var err error
			k.job, err = s.scanJob(kindRow{row, &k.kind})
			return k, err
		})
		if err != nil {
			return nil, nil, err
		}
		done, jobs = []string{}, []Job{}
		for _, k := range all {
			if k.kind == "done" {
				done = append(done, k.job.ID)
			} else {
				jobs = append(jobs, k.job)
			}
		}
		sortClaimed(jobs)
		return done, jobs, nil
	}
	err := s.db.InTx(tctx, func(tx Conn) error {
		var err error
		if done, err = s.completeMany(tctx, tx, ids, worker, now); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		jobs, err = s.claim(ctx, tx, worker, n, now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return done, jobs, nil
}

// Fail implements Store.
func (s *SQL) Fail(ctx context.Context, id, worker, msg string) (Job, error) {
	return s.fail(ctx, id, worker, msg, false)
}

// FailPermanently implements Store.
func (s *SQL) FailPermanently(ctx context.Context, id, worker, msg string) (Job, error) {
	return s.fail(ctx, id, worker, msg, true)
}

// fail records a failed attempt in one transaction; permanent fails the
// job whatever attempts it has left.
func (s *SQL) fail(ctx context.Context, id, worker, msg string, permanent bool) (Job, error) {
	if err := ValidateID(id); err != nil {
		return Job{}, err
	}
	id = strings.ToLower(id)
	now := s.opts.Clock()
	var out Job
	err := s.db.InTx(ctx, func(tx Conn) error {
		var status string
		var lockedBy *string
		var attempts, max int
		if err := tx.QueryRow(ctx, s.d.FailLock, id).Scan(&status, &lockedBy, &attempts, &max); err != nil {
			return s.mapErr(err)
		}
		if status != string(StatusRunning) || lockedBy == nil || *lockedBy != worker {
			return ErrNotRunning
		}
		var err error
		if attempts >= max || permanent {
			out, err = s.scanJob(tx.QueryRow(ctx, s.d.FailFinal, id, now, msg))
		} else {
			out, err = s.scanJob(tx.QueryRow(ctx, s.d.FailRetry, id, now, msg, now.Add(s.opts.Backoff(attempts))))
		}
		return err
	})
	if err == nil && out.Status == StatusQueued {
		s.queued()
	}
	return out, err
}

// CleanupFinished implements Store.
func (s *SQL) CleanupFinished(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		olderThan = DefaultRetention
	}
	n, err := s.db.Exec(ctx, `DELETE FROM scrape_job WHERE status IN ('completed', 'failed') AND completed_at < `+s.p(1),
		s.opts.Clock().Add(-olderThan))
	if err != nil {
		return 0, s.mapErr(err)
	}
	return int(n), nil
}

// QueueStats implements Store by reading the job_queue_stats view.
func (s *SQL) QueueStats(ctx context.Context) ([]QueueStat, error) {
	rows, err := s.db.Query(ctx, s.d.QueueStats)
	if err != nil {
		return nil, s.mapErr(err)
	}
	return collect(s, rows, func(row Row) (QueueStat, error) {
		var q QueueStat
		if err := row.Scan(&q.Status, &q.Type, &q.Count, &q.AvgAttempts, &q.OldestJob, &q.NewestJob); err != nil {
			return q, s.mapErr(err)
		}
		q.OldestJob, q.NewestJob = q.OldestJob.UTC(), q.NewestJob.UTC()
		return q, nil
	})
}

// FailedJobs implements Store.
func (s *SQL) FailedJobs(ctx context.Context, limit int) ([]Job, error) {
	if limit < 1 || limit > MaxFailedJobs {
		return nil, fmt.Errorf("%w: limit %d (1 to %d)", ErrInvalid, limit, MaxFailedJobs)
	}
	rows, err := s.db.Query(ctx, `SELECT `+s.d.JobCols+` FROM scrape_job WHERE status = 'failed'
		ORDER BY completed_at DESC, id LIMIT `+s.p(1), limit)
	if err != nil {
		return nil, s.mapErr(err)
	}
	return collect(s, rows, s.scanJob)
}

// RetryFailed implements Store with one UPDATE.
func (s *SQL) RetryFailed(ctx context.Context, ids []string) (int, error) {
	if err := ValidateIDs(ids); err != nil {
		return 0, err
	}
	n, err := s.db.Exec(ctx, s.d.RetryFailed, s.opts.Clock(), s.d.IDList(lowerIDs(ids)))
	if err != nil {
		return 0, s.mapErr(err)
	}
	if n > 0 {
		s.queued()
	}
	return int(n), nil
}

// Throughput implements Store with one GROUP BY over completed_at.
func (s *SQL) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]ThroughputBucket, error) {
	out, err := ThroughputBuckets(since, s.opts.Clock(), bucket)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, s.d.Throughput, since, s.d.Bucket(bucket))
	if err != nil {
		return nil, s.mapErr(err)
	}
	defer rows.Close()
	return FillThroughput(out, rows, s.mapErr)
}

// Maintain implements Admin with the dialect's statements.
func (s *SQL) Maintain(ctx context.Context, ops []MaintenanceOp) ([]MaintenanceStep, error) {
	return RunMaintenance(ctx, s.d.Name, ops, s.d.Maintenance, func(ctx context.Context, stmt string) error {
		_, err := s.db.Exec(ctx, stmt)
		return err
	})
}

// ExportProducts implements Admin, reading the rows as the database
// returns them.
func (s *SQL) ExportProducts(ctx context.Context, fn func(Product) error) error {
	return exportRows(ctx, s, `SELECT `+s.d.ProdCols+` FROM product ORDER BY id`, s.scanProduct, fn)
}

// ExportCategories implements Admin.
func (s *SQL) ExportCategories(ctx context.Context, fn func(Category) error) error {
	return exportRows(ctx, s, `SELECT `+s.d.CatCols+` FROM category ORDER BY id`, s.scanCat, fn)
}

func exportRows[T any](ctx context.Context, s *SQL, query string, scan func(Row) (T, error), fn func(T) error, args ...any) error {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return s.mapErr(err)
	}
	defer rows.Close()
	return EachRow(rows, func() (T, error) { return scan(rows) }, fn, s.mapErr)
}

// CheckIntegrity implements Admin with the dialect's queries.
func (s *SQL) CheckIntegrity(ctx context.Context) ([]Finding, error) {
	return RunIntegrity(ctx, s.d.Name, s.d.Integrity, func(ctx context.Context, query string, row func(string)) error {
		rows, err := s.db.Query(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		scan := func() (string, error) {
			var ex string
			err := rows.Scan(&ex)
			return ex, err
		}
		return EachRow(rows, scan, func(ex string) error { row(ex); return nil }, nil)
	})
}
