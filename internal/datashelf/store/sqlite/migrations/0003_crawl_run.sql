-- Crawl runs, as PostgreSQL's migration 0004_crawl_run.sql in SQLite's
-- terms: id TEXT (made by the store), times INTEGER unix microseconds,
-- log a JSON array as TEXT.
CREATE TABLE IF NOT EXISTS crawl_run (
    id TEXT PRIMARY KEY,
    start_url TEXT NOT NULL,
    node TEXT NOT NULL,
    max_pages INTEGER NOT NULL DEFAULT 0 CHECK (max_pages >= 0),
    state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'succeeded', 'failed', 'aborted')),
    pages INTEGER NOT NULL DEFAULT 0 CHECK (pages >= 0),
    products INTEGER NOT NULL DEFAULT 0 CHECK (products >= 0),
    failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    last_error TEXT,
    log TEXT NOT NULL DEFAULT '[]' CHECK (json_type(log) = 'array'),
    started_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER,
    CHECK ((state = 'running') = (ended_at IS NULL))
);
CREATE INDEX IF NOT EXISTS idx_crawl_run_started ON crawl_run(started_at DESC, id);
CREATE INDEX IF NOT EXISTS idx_crawl_run_running ON crawl_run(updated_at) WHERE state = 'running';
