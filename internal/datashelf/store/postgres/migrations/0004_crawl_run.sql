-- Crawl runs (beyond the original design, which has no run table): one
-- row per crawl, written as the crawl goes. state is running until the
-- crawl ends as succeeded, failed or aborted (ended_at set then); the
-- counters and the log are replaced by the crawler about once a second
-- while it runs (updated_at is then its heartbeat). log is a JSON array
-- of the run's last lines (at most store.RunLogLines), kept as text.
CREATE TABLE IF NOT EXISTS crawl_run (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    start_url text NOT NULL,
    node text NOT NULL,
    max_pages integer NOT NULL DEFAULT 0 CHECK (max_pages >= 0),
    state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'succeeded', 'failed', 'aborted')),
    pages bigint NOT NULL DEFAULT 0 CHECK (pages >= 0),
    products bigint NOT NULL DEFAULT 0 CHECK (products >= 0),
    failures bigint NOT NULL DEFAULT 0 CHECK (failures >= 0),
    last_error text,
    log text NOT NULL DEFAULT '[]',
    started_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    ended_at timestamptz,
    CHECK ((state = 'running') = (ended_at IS NULL))
);
-- The runs list, newest first, and the sweep of running runs whose
-- process stopped updating them.
CREATE INDEX IF NOT EXISTS idx_crawl_run_started ON crawl_run(started_at DESC, id);
CREATE INDEX IF NOT EXISTS idx_crawl_run_running ON crawl_run(updated_at) WHERE state = 'running';
