-- Where a job came from (docs/jobs.md, "Sources"): a trigger run's source of runs, or an OTA
-- update job. Jobs stored before this migration were webhook calls or update jobs.
ALTER TABLE jobs ADD COLUMN source TEXT NOT NULL DEFAULT 'webhook'
  CHECK (source IN ('webhook', 'cron', 'manual', 'slack', 'discord', 'ota'));
UPDATE jobs SET source = 'ota' WHERE kind = 'update';
