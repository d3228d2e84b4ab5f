-- The original design's SQL reproduced for the regression test: a trimmed
-- copy of the original DataShelf design's schema ("Database Schema
-- Documentation"), in the design's order, kept verbatim
-- apart from omitted statements. defects_test.go runs these chunks to show
-- each defect of DESIGN.md §5 and then shows that quarry's schema
-- (migrations/0001_schema.sql) does not have it. Chunks are separated by
-- "-- name: <chunk>" lines. Do not fix this file.

-- name: navigation
CREATE TABLE navigation (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title text NOT NULL,
    source_url text UNIQUE NOT NULL,
    parent_id uuid REFERENCES navigation(id),
    last_scraped_at timestamptz DEFAULT now(),
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now()
);

-- name: category
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

-- name: count_function
CREATE OR REPLACE FUNCTION update_category_product_count()
RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE category 
        SET product_count = product_count + 1,
            updated_at = now()
        WHERE id = NEW.category_id;
        RETURN NEW;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE category 
        SET product_count = product_count - 1,
            updated_at = now()
        WHERE id = OLD.category_id;
        RETURN OLD;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- name: count_trigger
CREATE TRIGGER trigger_update_category_count
    AFTER INSERT OR DELETE ON product
    FOR EACH ROW EXECUTE FUNCTION update_category_product_count();

-- name: product
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

-- name: product_author_index
CREATE INDEX idx_product_author ON product USING gin((specs->>'author'));

-- name: product_isbn_index
CREATE INDEX idx_product_isbn ON product USING gin((specs->>'isbn'));

-- name: scrape_job
CREATE TABLE scrape_job (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    type text NOT NULL CHECK (type IN ('navigation', 'category', 'product')),
    target_url text NOT NULL,
    status text NOT NULL DEFAULT 'queued' 
        CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    attempts integer DEFAULT 0,
    max_attempts integer DEFAULT 3,
    priority integer DEFAULT 0,
    locked_at timestamptz,
    locked_by text,
    last_error text,
    metadata jsonb DEFAULT '{}'::jsonb,
    created_at timestamptz DEFAULT now(),
    updated_at timestamptz DEFAULT now(),
    completed_at timestamptz
);

-- name: get_next_job
SELECT id, type, target_url, metadata
FROM scrape_job 
WHERE status = 'queued' 
  AND (locked_at IS NULL OR locked_at < NOW() - INTERVAL '10 minutes')
ORDER BY priority DESC, created_at ASC 
FOR UPDATE SKIP LOCKED 
LIMIT 1;

-- name: fail_job
UPDATE scrape_job 
SET status = CASE 
        WHEN attempts >= max_attempts THEN 'failed'
        ELSE 'queued'
    END,
    locked_at = NULL,
    locked_by = NULL,
    last_error = $2,
    updated_at = NOW()
WHERE id = $1;

-- name: cleanup
DELETE FROM scrape_job 
WHERE status IN ('completed', 'failed') 
  AND completed_at < NOW() - INTERVAL '7 days';

-- name: upsert_product
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

-- name: enqueue_scrape_job
CREATE OR REPLACE FUNCTION enqueue_scrape_job(
    p_type text,
    p_target_url text,
    p_priority integer DEFAULT 0,
    p_metadata jsonb DEFAULT '{}'::jsonb
) RETURNS uuid AS $$
DECLARE
    job_id uuid;
BEGIN
    -- Check if job already exists and is not completed/failed
    SELECT id INTO job_id
    FROM scrape_job
    WHERE target_url = p_target_url
      AND type = p_type
      AND status IN ('queued', 'running');
    
    IF job_id IS NOT NULL THEN
        -- Update priority if higher
        UPDATE scrape_job 
        SET priority = GREATEST(priority, p_priority),
            updated_at = NOW()
        WHERE id = job_id;
        RETURN job_id;
    END IF;
    
    -- Create new job
    INSERT INTO scrape_job (type, target_url, priority, metadata)
    VALUES (p_type, p_target_url, p_priority, p_metadata)
    RETURNING id INTO job_id;
    
    RETURN job_id;
END;
$$ LANGUAGE plpgsql;
