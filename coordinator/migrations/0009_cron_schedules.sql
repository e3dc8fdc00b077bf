-- Cron triggers fire on schedule (docs/schedules.md). Each trigger gets its policies, the fixed
-- params and ref of its scheduled runs, and the instant its current schedule took effect; each
-- occurrence of a schedule gets one row, claimed in the transaction that creates its job.
ALTER TABLE triggers ADD COLUMN cron_missed_policy TEXT CHECK (cron_missed_policy IN ('skip', 'run_once'));
ALTER TABLE triggers ADD COLUMN cron_overlap_policy TEXT CHECK (cron_overlap_policy IN ('skip', 'queue'));
ALTER TABLE triggers ADD COLUMN run_params TEXT;       -- JSON object or NULL: the params of each scheduled run
ALTER TABLE triggers ADD COLUMN run_ref TEXT;          -- the ref of each scheduled run, or NULL
-- Occurrences at or before this instant are not the current schedule's (it did not exist yet).
ALTER TABLE triggers ADD COLUMN cron_since TEXT;
UPDATE triggers SET cron_missed_policy = 'skip', cron_overlap_policy = 'skip', cron_since = updated_at
  WHERE type = 'cron';

-- One row per occurrence of a cron trigger's schedule, whatever happened to it. The primary key
-- is the claim: a scheduler that cannot insert the row did not fire the occurrence.
CREATE TABLE cron_occurrences (
  trigger_id      TEXT NOT NULL,
  scheduled_at    TEXT NOT NULL,                  -- ISO 8601 UTC with milliseconds
  org_id          TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  outcome         TEXT NOT NULL CHECK (outcome IN ('job_created', 'skipped')),
  job_id          TEXT,                           -- with job_created: the job (pending or rejected)
  reason          TEXT CHECK (reason IN ('overlap', 'missed', 'disabled')),
  -- A row that stands for a run of missed occurrences: the first of them (scheduled_at is the
  -- last); every occurrence of the schedule between the two was missed.
  first_scheduled_at TEXT,
  recorded_at     TEXT NOT NULL,
  PRIMARY KEY (trigger_id, scheduled_at)
) WITHOUT ROWID;
