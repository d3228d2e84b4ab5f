-- Wake-ups for the job queue's dispatchers (store.Store.Wake): a statement
-- that leaves a job queued (Enqueue, enqueue_scrape_job, RescueExpired,
-- RetryFailed, Fail's retry, or any SQL of an operator's) notifies the
-- channel datashelf_job with the table's schema as payload, so that
-- listeners of other schemas of the same database can ignore it.
-- PostgreSQL delivers notifications when the transaction commits (none if
-- it rolls back) and folds identical ones of a transaction into one.
CREATE OR REPLACE FUNCTION notify_scrape_job_queued()
RETURNS TRIGGER AS $$
BEGIN
    PERFORM pg_notify('datashelf_job', TG_TABLE_SCHEMA);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS trigger_notify_scrape_job_queued ON scrape_job;
CREATE TRIGGER trigger_notify_scrape_job_queued
    AFTER INSERT OR UPDATE OF status, run_after ON scrape_job
    FOR EACH ROW WHEN (NEW.status = 'queued')
    EXECUTE FUNCTION notify_scrape_job_queued();
