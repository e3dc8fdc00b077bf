-- The audit log filtered by target (docs/management.md, "Audit log"): one target's entries,
-- newest first, without scanning the organization's.
CREATE INDEX audit_log_target ON audit_log(org_id, target_id, id DESC);

-- The job list filtered by creation time (docs/jobs.md, "Reading jobs"): the range's first and
-- last creation numbers, read from this index alone, bound the list's scan (docs/performance.md).
CREATE INDEX jobs_org_created ON jobs(org_id, created_at);
