package postgres

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Column lists: uuids, jsonb and numeric read as text and float8.
const (
	navCols  = `id::text, title, source_url, parent_id::text, last_scraped_at, created_at, updated_at`
	catCols  = `id::text, navigation_id::text, title, source_url, product_count, last_scraped_at, created_at, updated_at`
	prodCols = `id::text, category_id::text, title, source_url, source_id, price::float8, currency,
	image_urls::text, summary, specs::text, available, last_scraped_at, created_at, updated_at`
	jobCols = `id::text, type, target_url, status, attempts, max_attempts, priority, run_after, locked_at,
	locked_by, last_error, metadata::text, created_at, updated_at, completed_at`
	runCols = `id::text, start_url, node, max_pages, state, pages, products, failures, last_error, started_at,
	updated_at, ended_at`
)

// newDialect returns PostgreSQL's statements for store.SQL: ids from
// gen_random_uuid, upserts with ON CONFLICT … EXCLUDED, Claim with FOR
// UPDATE SKIP LOCKED, id lists as uuid[]; wake-ups come from the
// trigger of migration 0003, so Queued is nil.
func newDialect() *store.Dialect {
	return &store.Dialect{
		Name:        "postgres",
		Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		NoRows:      pgx.ErrNoRows,
		Invalid:     invalid,
		Retryable:   retryable,
		Price:       func(p *float64) any { return p },
		IDList:      func(ids []string) any { return ids },
		Bucket:      func(w time.Duration) any { return w.Seconds() },
		NavCols:     navCols,
		CatCols:     catCols,
		ProdCols:    prodCols,
		JobCols:     jobCols,
		RunCols:     runCols,
		UpsertNavigation: `
		INSERT INTO navigation (title, source_url, parent_id, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4)
		ON CONFLICT (source_url) DO UPDATE SET title = EXCLUDED.title, parent_id = EXCLUDED.parent_id,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING ` + navCols,
		UpsertCategory: `
		INSERT INTO category (navigation_id, title, source_url, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4)
		ON CONFLICT (source_url) DO UPDATE SET navigation_id = EXCLUDED.navigation_id, title = EXCLUDED.title,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING ` + catCols,
		UpsertProduct: `
		INSERT INTO product (category_id, title, source_url, source_id, price, currency, image_urls, summary,
			specs, available, last_scraped_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::float8::numeric, $6, $7::jsonb, $8, $9::jsonb, $10, $11, $11, $11)
		ON CONFLICT (source_url) DO UPDATE SET
			category_id = EXCLUDED.category_id, title = EXCLUDED.title, source_id = EXCLUDED.source_id,
			price = EXCLUDED.price, currency = EXCLUDED.currency, image_urls = EXCLUDED.image_urls,
			summary = EXCLUDED.summary, specs = EXCLUDED.specs, available = EXCLUDED.available,
			last_scraped_at = EXCLUDED.last_scraped_at, updated_at = EXCLUDED.updated_at
		RETURNING ` + prodCols,
		// One INSERT … ON CONFLICT on the partial unique index
		// idx_scrape_job_dedup.
		Enqueue: `
		INSERT INTO scrape_job (type, target_url, priority, max_attempts, metadata, run_after, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $7)
		ON CONFLICT (type, target_url) WHERE status IN ('queued', 'running')
		DO UPDATE SET priority = GREATEST(scrape_job.priority, EXCLUDED.priority), updated_at = EXCLUDED.updated_at,
			run_after = CASE WHEN $8::boolean AND scrape_job.status = 'queued' THEN EXCLUDED.run_after ELSE scrape_job.run_after END,
			attempts = CASE WHEN $8::boolean AND scrape_job.status = 'queued' THEN 0 ELSE scrape_job.attempts END
		RETURNING ` + jobCols,
		Claim: `
		WITH next AS (
			SELECT id FROM scrape_job
			WHERE status = 'queued' AND run_after <= $1
			ORDER BY priority DESC, created_at ASC, id
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE scrape_job j SET status = 'running', locked_at = $1, locked_by = $3,
			attempts = j.attempts + 1, updated_at = $1
		FROM next WHERE j.id = next.id
		RETURNING ` + prefixCols("j.", jobCols),
		Heartbeat: `UPDATE scrape_job SET locked_at = $2, updated_at = $2
		WHERE id = $1 AND status = 'running' AND locked_by = $3`,
		RescueExpired: `
		UPDATE scrape_job SET
			status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
			completed_at = CASE WHEN attempts >= max_attempts THEN $1::timestamptz END,
			last_error = 'lease expired (worker ' || coalesce(locked_by, '?') || ')',
			locked_at = NULL, locked_by = NULL, run_after = $1, updated_at = $1
		WHERE status = 'running' AND locked_at < $2`,
		Complete: `UPDATE scrape_job SET status = 'completed', completed_at = $2,
		locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1 AND status = 'running' AND locked_by = $3`,
		CompleteMany: `UPDATE scrape_job SET status = 'completed', completed_at = $2,
		locked_at = NULL, locked_by = NULL, updated_at = $2
		WHERE id = ANY($1::uuid[]) AND status = 'running' AND locked_by = $3 RETURNING id::text`,
		// Both UPDATEs see the statement's one snapshot, in which the
		// jobs completed are running and those claimed queued: they never
		// touch the same row. A completed job comes back as its id only,
		// the other columns filled with constants of their types (the
		// caller reads only the id), so the statement does not copy the
		// finished jobs' metadata back.
		CompleteAndClaim: `
		WITH done AS (
			UPDATE scrape_job SET status = 'completed', completed_at = $1,
				locked_at = NULL, locked_by = NULL, updated_at = $1
			WHERE id = ANY($4::uuid[]) AND status = 'running' AND locked_by = $3
			RETURNING id
		), next AS (
			SELECT id FROM scrape_job
			WHERE status = 'queued' AND run_after <= $1
			ORDER BY priority DESC, created_at ASC, id
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		), claimed AS (
			UPDATE scrape_job j SET status = 'running', locked_at = $1, locked_by = $3,
				attempts = j.attempts + 1, updated_at = $1
			FROM next WHERE j.id = next.id
			RETURNING ` + prefixCols("j.", jobCols) + `
		)
		SELECT 'claimed', * FROM claimed UNION ALL
		SELECT 'done', id::text, 'product', '', 'completed', 0, 0, 0, $1, NULL, NULL, NULL, '{}', $1, $1, $1 FROM done`,
		FailLock: `SELECT status, locked_by, attempts, max_attempts FROM scrape_job WHERE id = $1 FOR UPDATE`,
		FailFinal: `UPDATE scrape_job SET status = 'failed', completed_at = $2,
				last_error = $3, locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1
				RETURNING ` + jobCols,
		FailRetry: `UPDATE scrape_job SET status = 'queued', run_after = $4,
				last_error = $3, locked_at = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1
				RETURNING ` + jobCols,
		RetryFailed: `
		UPDATE scrape_job j SET status = 'queued', attempts = 0, run_after = $1, completed_at = NULL,
			locked_at = NULL, locked_by = NULL, updated_at = $1
		WHERE j.status = 'failed'
			AND (cardinality($2::uuid[]) = 0 OR j.id = ANY($2::uuid[]))
			AND NOT EXISTS (SELECT 1 FROM scrape_job o WHERE o.type = j.type
				AND o.target_url = j.target_url AND o.status IN ('queued', 'running'))
			AND j.id = (SELECT f.id FROM scrape_job f WHERE f.type = j.type
				AND f.target_url = j.target_url AND f.status = 'failed'
				ORDER BY f.completed_at DESC, f.id LIMIT 1)`,
		Throughput: `SELECT floor(extract(epoch FROM completed_at - $1) / $2)::bigint AS b, status, count(*)::int
		FROM scrape_job WHERE status IN ('completed', 'failed') AND completed_at >= $1 GROUP BY b, status`,
		QueueStats: `SELECT status, type, count, avg_attempts::float8, oldest_job, newest_job
		FROM job_queue_stats ORDER BY status, type`,
		// The original design's maintenance statements. VACUUM cannot run
		// in a transaction block: each statement is sent on its own.
		Maintenance: map[store.MaintenanceOp][]string{
			store.MaintainAnalyze: {"ANALYZE navigation", "ANALYZE category", "ANALYZE product", "ANALYZE scrape_job"},
			store.MaintainVacuum: {"VACUUM ANALYZE navigation", "VACUUM ANALYZE category", "VACUUM ANALYZE product",
				"VACUUM ANALYZE scrape_job"},
			store.MaintainReindex: {"REINDEX TABLE product", "REINDEX TABLE scrape_job"},
		},
		Integrity: store.IntegrityQueries("::text"),
		Filters: store.ProductFilters{
			Search: "to_tsvector('english', title) @@ plainto_tsquery('english', ?)",
			SearchArg: func(q string) string {
				if strings.TrimSpace(q) == "" {
					return ""
				}
				return q
			},
			Spec: func(key string) string { return "specs->>'" + key + "'" },
			// The design's JSONB queries, which idx_product_specs_gin
			// serves: specs ? 'key' and specs @> '{"key": "value"}'.
			// (Add is not used for the first: it would take the ?
			// operator for a placeholder.)
			HasSpec: func(w *store.Where, key string) { w.Raw("specs ? " + w.Arg(key)) },
			Specs:   func(w *store.Where, specs map[string]string) { w.Add("specs @> ?::jsonb", store.JSONText(specs)) },
			Price:   "?::float8::numeric",
			Keyset:  keysetCast,
		},
	}
}

// invalid reports the errors of violated constraints and bad values.
func invalid(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23503", "23514", "22P02", "23502", "22003":
			return pe.Message, true
		}
	}
	return "", false
}

// retryable reports deadlocks and serialization failures.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// keysetCast types the placeholders of store.KeysetCondition the way the
// columns are compared: prices as numeric (like the price filters), ids as
// uuid.
func keysetCast(kind string) string {
	switch kind {
	case "price":
		return "?::float8::numeric"
	case "id":
		return "?::uuid"
	case "time":
		return "?::timestamptz"
	}
	return "?::text"
}

// prefixCols qualifies each column of cols with the table alias p.
func prefixCols(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
