-- Runs on many agents (docs/fleets.md): triggers on a label selector, pools and batches.
--
-- A selector trigger has no agent, and a job of a pool has none until an agent takes it: the
-- NOT NULL of triggers.agent_id and jobs.agent_id goes. SQLite cannot alter a column; removing a
-- NOT NULL changes nothing stored, so the tables' definitions are edited in place, as SQLite's
-- documentation describes for this change (https://sqlite.org/lang_altertable.html, "making
-- other kinds of table schema changes"), instead of rebuilding `jobs` and every table that
-- refers to it. The migrator allows this on its connection while it migrates.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
  SET sql = replace(sql, 'agent_id         TEXT NOT NULL REFERENCES agents(id)', 'agent_id         TEXT REFERENCES agents(id)')
  WHERE type = 'table' AND name = 'jobs';
UPDATE sqlite_master
  SET sql = replace(sql, 'agent_id             TEXT NOT NULL REFERENCES agents(id)', 'agent_id             TEXT REFERENCES agents(id)')
  WHERE type = 'table' AND name = 'triggers';
PRAGMA writable_schema = RESET;
-- Both edits took: a column still NOT NULL fails this migration (and rolls it back).
CREATE TEMP TABLE fleet_runs_check (still_not_null INTEGER CHECK (still_not_null = 0));
INSERT INTO fleet_runs_check SELECT "notnull" FROM pragma_table_info('jobs') WHERE name = 'agent_id';
INSERT INTO fleet_runs_check SELECT "notnull" FROM pragma_table_info('triggers') WHERE name = 'agent_id';
DROP TABLE fleet_runs_check;

-- A trigger names either an agent or a label selector; a selector trigger runs on one agent of
-- the pool it selects (`one`) or on every agent it selects (`all`, a batch), at most
-- `max_parallel` of a batch's jobs handed out at a time (NULL: all at once).
ALTER TABLE triggers ADD COLUMN agent_selector TEXT;
ALTER TABLE triggers ADD COLUMN fanout TEXT CHECK (fanout IN ('one', 'all'));
ALTER TABLE triggers ADD COLUMN max_parallel INTEGER;

-- A batch: the jobs of one call of a `fanout: all` trigger, one per agent.
CREATE TABLE batches (
  id             TEXT PRIMARY KEY,
  org_id         TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  -- The organization's number of the batch: 1, 2, 3, ... in creation order.
  number         INTEGER NOT NULL,
  trigger_id     TEXT NOT NULL,
  workflow_name  TEXT NOT NULL,
  selector       TEXT NOT NULL,
  max_parallel   INTEGER,
  source         TEXT NOT NULL,
  api_token_id   TEXT,
  user_id        TEXT,
  job_count      INTEGER NOT NULL,
  created_at     TEXT NOT NULL,
  -- When its last job ended (NULL while one is open); set once, with its chat notification.
  ended_at       TEXT
);
CREATE UNIQUE INDEX batches_org_number ON batches(org_id, number);
CREATE INDEX batches_open ON batches(created_at) WHERE ended_at IS NULL;

-- A job of a batch names it; `held`: a job of a batch past its max_parallel, not handed out
-- until one of the batch's jobs ends.
ALTER TABLE jobs ADD COLUMN batch_id TEXT;
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_batch ON jobs(batch_id, seq) WHERE batch_id IS NOT NULL;
-- The jobs waiting in a pool: pending, with no agent yet.
CREATE INDEX jobs_pooled ON jobs(org_id, seq) WHERE agent_id IS NULL AND status = 'pending';
