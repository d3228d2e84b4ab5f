package sqlite

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/quarrydb/quarry/internal/datashelf/store"
)

// Column lists: ids are TEXT, JSON is TEXT, times INTEGER microseconds
// (see conn).
const (
	navCols  = `id, title, source_url, parent_id, last_scraped_at, created_at, updated_at`
	catCols  = `id, navigation_id, title, source_url, product_count, last_scraped_at, created_at, updated_at`
	prodCols = `id, category_id, title, source_url, source_id, price, currency, image_urls, summary, specs,
	available, last_scraped_at, created_at, updated_at`
	jobCols = `id, type, target_url, status, attempts, max_attempts, priority, run_after, locked_at, locked_by,
	last_error, metadata, created_at, updated_at, completed_at`
	runCols = `id, start_url, node, max_pages, state, pages, products, failures, last_error, started_at, updated_at,
	ended_at`
)

// newDialect returns SQLite's statements for store.SQL: random (version
// 4) UUIDs made here, as PostgreSQL's gen_random_uuid does; upserts with
// ON CONFLICT … excluded; Claim as one UPDATE … RETURNING (the one
// connection is the one writer); id lists as JSON arrays read with
// json_each; prices rounded to cents (PostgreSQL's numeric(10,2)); title
// search on the FTS5 table. queued is called after every commit that
// leaves a job claimable.
func newDialect(queued func()) *store.Dialect {
	return &store.Dialect{
		Name:        "sqlite",
		Placeholder: func(n int) string { return "?" + strconv.Itoa(n) },
		NewID:       uuid.NewString,
		NoRows:      sql.ErrNoRows,
		Invalid:     invalid,
		Queued:      queued,
		Price: func(p *float64) any {
			if p == nil {
				return nil
			}
			return float64(int64(*p*100+0.5)) / 100
		},
		IDList: func(ids []string) any {
			list, _ := json.Marshal(ids)
			return string(list)
		},
		Bucket: func(w time.Duration) any {
			return max(w.Microseconds(), 1)
		},
		NavCols:  navCols,
		CatCols:  catCols,
		ProdCols: prodCols,
		JobCols:  jobCols,
		RunCols:  runCols,
		UpsertNavigation: `
		INSERT INTO navigation (id, title, source_url, parent_id, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (source_url) DO UPDATE SET title = excluded.title, parent_id = excluded.parent_id,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING ` + navCols,
		UpsertCategory: `
		INSERT INTO category (id, navigation_id, title, source_url, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (source_url) DO UPDATE SET navigation_id = excluded.navigation_id, title = excluded.title,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING ` + catCols,
		// Triggers keep product_count and the FTS index right.
		UpsertProduct: `
		INSERT INTO product (id, category_id, title, source_url, source_id, price, currency, image_urls, summary,
			specs, available, last_scraped_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?12)
		ON CONFLICT (source_url) DO UPDATE SET
			category_id = excluded.category_id, title = excluded.title, source_id = excluded.source_id,
			price = excluded.price, currency = excluded.currency, image_urls = excluded.image_urls,
			summary = excluded.summary, specs = excluded.specs, available = excluded.available,
			last_scraped_at = excluded.last_scraped_at, updated_at = excluded.updated_at
		RETURNING ` + prodCols,
		Enqueue: `
		INSERT INTO scrape_job (id, type, target_url, priority, max_attempts, metadata, run_after, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
		ON CONFLICT (type, target_url) WHERE status IN ('queued', 'running')
		DO UPDATE SET priority = max(priority, excluded.priority), updated_at = excluded.updated_at,
			run_after = CASE WHEN ?9 AND status = 'queued' THEN excluded.run_after ELSE run_after END,
			attempts = CASE WHEN ?9 AND status = 'queued' THEN 0 ELSE attempts END
		RETURNING ` + jobCols,
		Claim: `
		UPDATE scrape_job SET status = 'running', locked_at = ?1, locked_by = ?3, attempts = attempts + 1, updated_at = ?1
		WHERE id IN (SELECT id FROM scrape_job WHERE status = 'queued' AND run_after <= ?1
			ORDER BY priority DESC, created_at ASC, id LIMIT ?2)
		RETURNING ` + jobCols,
		Heartbeat: `UPDATE scrape_job SET locked_at = ?2, updated_at = ?2
		WHERE id = ?1 AND status = 'running' AND locked_by = ?3`,
		RescueExpired: `
		UPDATE scrape_job SET
			status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
			completed_at = CASE WHEN attempts >= max_attempts THEN ?1 END,
			last_error = 'lease expired (worker ' || coalesce(locked_by, '?') || ')',
			locked_at = NULL, locked_by = NULL, run_after = ?1, updated_at = ?1
		WHERE status = 'running' AND locked_at < ?2`,
		Complete: `UPDATE scrape_job SET status = 'completed', completed_at = ?2,
		locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1 AND status = 'running' AND locked_by = ?3`,
		CompleteMany: `UPDATE scrape_job SET status = 'completed', completed_at = ?2,
		locked_at = NULL, locked_by = NULL, updated_at = ?2
		WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'running' AND locked_by = ?3 RETURNING id`,
		FailLock: `SELECT status, locked_by, attempts, max_attempts FROM scrape_job WHERE id = ?1`,
		FailFinal: `UPDATE scrape_job SET status = 'failed', completed_at = ?2,
				last_error = ?3, locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1
				RETURNING ` + jobCols,
		FailRetry: `UPDATE scrape_job SET status = 'queued', run_after = ?4,
				last_error = ?3, locked_at = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1
				RETURNING ` + jobCols,
		RetryFailed: `
		UPDATE scrape_job SET status = 'queued', attempts = 0, run_after = ?1, completed_at = NULL,
			locked_at = NULL, locked_by = NULL, updated_at = ?1
		WHERE status = 'failed'
			AND (json_array_length(?2) = 0 OR id IN (SELECT value FROM json_each(?2)))
			AND NOT EXISTS (SELECT 1 FROM scrape_job o WHERE o.type = scrape_job.type
				AND o.target_url = scrape_job.target_url AND o.status IN ('queued', 'running'))
			AND id = (SELECT f.id FROM scrape_job f WHERE f.type = scrape_job.type
				AND f.target_url = scrape_job.target_url AND f.status = 'failed'
				ORDER BY f.completed_at DESC, f.id LIMIT 1)`,
		Throughput: `SELECT (completed_at - ?1) / ?2 AS b, status, count(*) FROM scrape_job
		WHERE status IN ('completed', 'failed') AND completed_at >= ?1 GROUP BY b, status`,
		QueueStats: `SELECT status, type, count, avg_attempts, oldest_job, newest_job
		FROM job_queue_stats ORDER BY status, type`,
		// SQLite's equivalents of the original design's maintenance
		// statements: ANALYZE then PRAGMA optimize for statistics, VACUUM
		// (rewrites the database file, reclaiming free pages; SQLite has
		// no VACUUM ANALYZE) and REINDEX (rebuilds every index). An export
		// holds the store's one connection until it ends.
		Maintenance: map[store.MaintenanceOp][]string{
			store.MaintainAnalyze: {"ANALYZE", "PRAGMA optimize"},
			store.MaintainVacuum:  {"VACUUM"},
			store.MaintainReindex: {"REINDEX"},
		},
		Integrity: store.IntegrityQueries(""),
		Filters: store.ProductFilters{
			Search:    "id IN (SELECT product_id FROM product_fts WHERE product_fts MATCH ?)",
			SearchArg: ftsQuery,
			Spec:      func(key string) string { return "json_extract(specs, '$." + key + "')" },
			// The equivalents of PostgreSQL's specs ? 'key' (a key
			// present, whatever its value, JSON null included) and specs
			// @> '{"key": "value"}' (a string value, compared exactly).
			HasSpec: func(w *store.Where, key string) { w.Add("json_type(specs, ?) IS NOT NULL", specPath(key)) },
			Specs: func(w *store.Where, specs map[string]string) {
				for _, k := range store.SortedSpecKeys(specs) {
					w.Add("json_type(specs, ?) = 'text' AND json_extract(specs, ?) = ?", specPath(k), specPath(k), specs[k])
				}
			},
			Price:  "?",
			Keyset: func(string) string { return "?" },
		},
	}
}

// invalid reports the errors of violated constraints other than UNIQUE.
func invalid(err error) (string, bool) {
	msg := err.Error()
	return msg, strings.Contains(msg, "constraint failed") && !strings.Contains(msg, "UNIQUE")
}

// ftsQuery turns free text into an FTS5 query: every word quoted and
// required (like plainto_tsquery).
func ftsQuery(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	return strings.Join(words, " AND ")
}

// specPath is the JSON path of a spec key (validated by
// store.ValidateSpecKey, so it needs no escaping beyond the quotes).
func specPath(k string) string { return `$."` + k + `"` }
