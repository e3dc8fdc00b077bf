-- Retention (docs/operations.md, "Retention"): what an organization keeps, and the indexes the
-- sweep seeks its oldest rows by, so that each of its small deleting batches reads only what it
-- deletes.

-- An organization's overrides of the coordinator's retention settings, in days (NULL: the
-- coordinator's setting applies).
ALTER TABLE orgs ADD COLUMN retention_jobs_days INTEGER;
ALTER TABLE orgs ADD COLUMN retention_failed_jobs_days INTEGER;
ALTER TABLE orgs ADD COLUMN retention_audit_days INTEGER;
ALTER TABLE orgs ADD COLUMN retention_occurrences_days INTEGER;

-- An organization's ended jobs of each status by their end.
CREATE INDEX jobs_org_ended ON jobs(org_id, status, finished_at) WHERE finished_at IS NOT NULL;
-- The rate-limit refusals that name a job, deleted with it.
CREATE INDEX rate_limit_blocks_job ON rate_limit_blocks(job_id);
CREATE INDEX audit_log_org_created ON audit_log(org_id, created_at);
CREATE INDEX cron_occurrences_org_scheduled ON cron_occurrences(org_id, scheduled_at);
CREATE INDEX batches_org_ended ON batches(org_id, ended_at) WHERE ended_at IS NOT NULL;
