-- The jobs' index by trigger holds only the jobs that have one. An OTA update job has no trigger
-- (a publish to 100,000 devices writes 100,000 of them) and no longer pays for an index entry
-- nobody can look up: every query by trigger compares trigger_id with a value, which implies it
-- is not NULL, so it still uses this index (docs/performance.md, "OTA at 100,000 devices").
DROP INDEX jobs_org_trigger;
CREATE INDEX jobs_org_trigger ON jobs (org_id, trigger_id, seq DESC) WHERE trigger_id IS NOT NULL;
