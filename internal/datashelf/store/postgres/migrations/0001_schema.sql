-- DataShelf schema: the original design (see docs/datashelf.md), plain
-- PostgreSQL 15, Supabase-compatible. Deviations from the design (each
-- fixes a defect of DESIGN.md §5, or adds what the queue needs):
--   * tables are created before the trigger that references them;
--   * author/isbn/format/condition use btree expression indexes (text has
--     no default GIN operator class);
--   * the product_count trigger also handles UPDATE OF category_id;
--   * scrape_job has run_after (retry backoff) and a partial unique index
--     on (type, target_url) for queued/running jobs (dedup with ON CONFLICT);
--   * failures set completed_at.
-- The queue index idx_scrape_job_queue is the design's (status, priority
-- DESC, created_at) WHERE status = 'queued': it does not contain run_after.
-- Claim walks it in priority order and checks run_after <= now on each row
-- it yields (a filter, not an index key), so queued jobs waiting out a
-- backoff are skipped, not excluded by the index.

CREATE TABLE navigation (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title text NOT NULL,
    source_url text UNIQUE NOT NULL,
    parent_id uuid REFERENCES navigation(id),
    last_scraped_at timestamptz DEFAULT now(),
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now()
);
CREATE INDEX idx_navigation_parent ON navigation(parent_id);
CREATE INDEX idx_navigation_url ON navigation(source_url);

CREATE TABLE category (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    navigation_id uuid REFERENCES navigation(id),
    title text NOT NULL,
    source_url text UNIQUE NOT NULL,
    product_count integer DEFAULT 0,
    last_scraped_at timestamptz DEFAULT now(),
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now()
);
CREATE INDEX idx_category_navigation ON category(navigation_id);
CREATE INDEX idx_category_url ON category(source_url);
CREATE INDEX idx_category_count ON category(product_count DESC);

CREATE TABLE product (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    category_id uuid REFERENCES category(id),
    title text NOT NULL,
    source_url text UNIQUE NOT NULL,
    source_id text,
    price numeric(10,2),
    currency text DEFAULT 'GBP',
    image_urls jsonb DEFAULT '[]'::jsonb,
    summary text,
    specs jsonb DEFAULT '{}'::jsonb,
    available boolean DEFAULT true,
    last_scraped_at timestamptz DEFAULT now(),
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now()
);
CREATE INDEX idx_product_category ON product(category_id);
CREATE INDEX idx_product_price ON product(price);
CREATE INDEX idx_product_available ON product(available);
CREATE INDEX idx_product_url ON product(source_url);
CREATE INDEX idx_product_scraped ON product(last_scraped_at);
CREATE INDEX idx_product_created ON product(created_at DESC);
CREATE INDEX idx_product_title ON product USING gin(to_tsvector('english', title));
CREATE INDEX idx_product_specs_gin ON product USING gin(specs);
-- Fixed: btree expression indexes (the document's USING gin((specs->>'author')) fails).
CREATE INDEX idx_product_author ON product (lower(specs->>'author'));
CREATE INDEX idx_product_isbn ON product ((specs->>'isbn'));
CREATE INDEX idx_product_format ON product (lower(specs->>'format'));
CREATE INDEX idx_product_condition ON product (lower(specs->>'condition'));

ALTER TABLE product ADD CONSTRAINT check_price_positive
    CHECK (price IS NULL OR price >= 0);
ALTER TABLE product ADD CONSTRAINT check_currency_valid
    CHECK (currency IN ('GBP', 'USD', 'EUR'));
ALTER TABLE product ADD CONSTRAINT check_image_urls_array
    CHECK (jsonb_typeof(image_urls) = 'array');

-- Fixed: declared after product exists, and handles category moves.
CREATE OR REPLACE FUNCTION update_category_product_count()
RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE category SET product_count = product_count + 1, updated_at = now()
        WHERE id = NEW.category_id;
        RETURN NEW;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE category SET product_count = product_count - 1, updated_at = now()
        WHERE id = OLD.category_id;
        RETURN OLD;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.category_id IS DISTINCT FROM NEW.category_id THEN
            UPDATE category SET product_count = product_count - 1, updated_at = now()
            WHERE id = OLD.category_id;
            UPDATE category SET product_count = product_count + 1, updated_at = now()
            WHERE id = NEW.category_id;
        END IF;
        RETURN NEW;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER trigger_update_category_count
    AFTER INSERT OR DELETE OR UPDATE OF category_id ON product
    FOR EACH ROW EXECUTE FUNCTION update_category_product_count();

CREATE TABLE scrape_job (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    type text NOT NULL CHECK (type IN ('navigation', 'category', 'product')),
    target_url text NOT NULL,
    status text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    attempts integer DEFAULT 0,
    max_attempts integer DEFAULT 3,
    priority integer DEFAULT 0,
    run_after timestamptz NOT NULL DEFAULT now(),
    locked_at timestamptz,
    locked_by text,
    last_error text,
    metadata jsonb DEFAULT '{}'::jsonb,
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX idx_scrape_job_queue ON scrape_job(status, priority DESC, created_at ASC)
    WHERE status = 'queued';
CREATE INDEX idx_scrape_job_locked ON scrape_job(locked_at)
    WHERE locked_at IS NOT NULL;
CREATE INDEX idx_scrape_job_cleanup ON scrape_job(completed_at)
    WHERE status IN ('completed', 'failed');
CREATE INDEX idx_scrape_job_status ON scrape_job(status);
CREATE INDEX idx_scrape_job_type ON scrape_job(type);
CREATE INDEX idx_scrape_job_url ON scrape_job(target_url);
-- Fixed: at most one queued/running job per (type, target_url).
CREATE UNIQUE INDEX idx_scrape_job_dedup ON scrape_job(type, target_url)
    WHERE status IN ('queued', 'running');

CREATE VIEW active_products AS
SELECT
    p.*,
    c.title as category_title,
    n.title as navigation_title
FROM product p
JOIN category c ON p.category_id = c.id
JOIN navigation n ON c.navigation_id = n.id
WHERE p.available = true
  AND p.last_scraped_at > NOW() - INTERVAL '30 days';

CREATE VIEW job_queue_stats AS
SELECT
    status,
    type,
    COUNT(*) as count,
    AVG(attempts) as avg_attempts,
    MIN(created_at) as oldest_job,
    MAX(created_at) as newest_job
FROM scrape_job
GROUP BY status, type;

CREATE OR REPLACE FUNCTION upsert_product(
    p_category_id uuid,
    p_title text,
    p_source_url text,
    p_source_id text DEFAULT NULL,
    p_price numeric DEFAULT NULL,
    p_currency text DEFAULT 'GBP',
    p_image_urls jsonb DEFAULT '[]'::jsonb,
    p_summary text DEFAULT NULL,
    p_specs jsonb DEFAULT '{}'::jsonb,
    p_available boolean DEFAULT true
) RETURNS uuid AS $$
DECLARE
    product_id uuid;
BEGIN
    INSERT INTO product (
        category_id, title, source_url, source_id, price,
        currency, image_urls, summary, specs, available,
        last_scraped_at, updated_at
    ) VALUES (
        p_category_id, p_title, p_source_url, p_source_id, p_price,
        p_currency, p_image_urls, p_summary, p_specs, p_available,
        NOW(), NOW()
    )
    ON CONFLICT (source_url) DO UPDATE SET
        category_id = EXCLUDED.category_id,
        title = EXCLUDED.title,
        source_id = EXCLUDED.source_id,
        price = EXCLUDED.price,
        currency = EXCLUDED.currency,
        image_urls = EXCLUDED.image_urls,
        summary = EXCLUDED.summary,
        specs = EXCLUDED.specs,
        available = EXCLUDED.available,
        last_scraped_at = NOW(),
        updated_at = NOW()
    RETURNING id INTO product_id;

    RETURN product_id;
END;
$$ LANGUAGE plpgsql;

-- Fixed: one INSERT ... ON CONFLICT on the partial unique index instead of
-- check-then-insert.
CREATE OR REPLACE FUNCTION enqueue_scrape_job(
    p_type text,
    p_target_url text,
    p_priority integer DEFAULT 0,
    p_metadata jsonb DEFAULT '{}'::jsonb
) RETURNS uuid AS $$
DECLARE
    job_id uuid;
BEGIN
    INSERT INTO scrape_job (type, target_url, priority, metadata)
    VALUES (p_type, p_target_url, p_priority, p_metadata)
    ON CONFLICT (type, target_url) WHERE status IN ('queued', 'running')
    DO UPDATE SET priority = GREATEST(scrape_job.priority, EXCLUDED.priority),
                  updated_at = NOW()
    RETURNING id INTO job_id;
    RETURN job_id;
END;
$$ LANGUAGE plpgsql;
