-- Jobs (CONTRACT §4): workflow runs on one agent, their log lines, idempotency keys, the
-- fixed-window counters of workflow and token rate limits, and the workflow-level refusals.

CREATE TABLE jobs (
  -- Monotonic order of creation (the rowid: assigned on insert, never reused while the newest job
  -- is kept), for stable "newest first" lists and stream delivery order.
  seq              INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  org_id           TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  -- 'trigger': started by a trigger (webhook, cron, chat, dashboard); 'update': an OTA update job.
  kind             TEXT NOT NULL CHECK (kind IN ('trigger', 'update')),
  trigger_id       TEXT,                 -- NULL for update jobs
  agent_id         TEXT NOT NULL REFERENCES agents(id),
  workflow_id      TEXT,                 -- NULL when the workflow was unknown (a rejected call)
  workflow_name    TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN
                     ('pending', 'queued', 'running', 'success', 'failed', 'timed_out', 'cancelled', 'rejected')),
  ref              TEXT,
  debug            INTEGER NOT NULL DEFAULT 0,
  params           TEXT NOT NULL DEFAULT '{}',   -- JSON object, defaults applied; never secrets
  output           TEXT,                         -- JSON object produced by the workflow
  exit_code        INTEGER,
  error_message    TEXT,
  forced           INTEGER NOT NULL DEFAULT 0,
  force_reason     TEXT,
  api_token_id     TEXT,                 -- the token that called, if any
  user_id          TEXT,                 -- the user behind the call (token issuer or dashboard user)
  timeout_ms       INTEGER,              -- the whole job's limit, from the workflow definition
  created_at       TEXT NOT NULL,
  queued_at        TEXT,
  started_at       TEXT,
  finished_at      TEXT,
  -- A running job without a result past this instant is failed by the coordinator's sweeper.
  deadline_at      TEXT
);
CREATE INDEX jobs_org_seq ON jobs(org_id, seq DESC);
CREATE INDEX jobs_org_trigger ON jobs(org_id, trigger_id, seq DESC);
CREATE INDEX jobs_agent_open ON jobs(agent_id, status) WHERE status IN ('pending', 'queued', 'running');
CREATE INDEX jobs_deadline ON jobs(deadline_at) WHERE status IN ('queued', 'running');

CREATE TABLE job_logs (
  job_id   TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq      INTEGER NOT NULL,             -- assigned by the agent, from 1; duplicates are ignored
  at       TEXT NOT NULL,
  stream   TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr', 'system')),
  step     INTEGER,                      -- index of the step, NULL for job-level lines
  text     TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

-- Idempotency keys, per trigger and workflow name (spec), remembered 24 hours (CONTRACT §4).
CREATE TABLE idempotency_keys (
  trigger_id     TEXT NOT NULL,
  workflow_name  TEXT NOT NULL,
  key            TEXT NOT NULL,
  request_hash   TEXT NOT NULL,          -- SHA-256 of the canonical request body
  job_id         TEXT NOT NULL,
  expires_at     TEXT NOT NULL,
  PRIMARY KEY (trigger_id, workflow_name, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);

-- Fixed windows aligned to the UTC minute, hour and day: calls dispatched in each window.
CREATE TABLE rate_counters (
  scope         TEXT NOT NULL CHECK (scope IN ('workflow', 'token')),
  scope_id      TEXT NOT NULL,
  window        TEXT NOT NULL CHECK (window IN ('minute', 'hour', 'day')),
  window_start  INTEGER NOT NULL,        -- Unix ms
  count         INTEGER NOT NULL,
  PRIMARY KEY (scope, scope_id, window, window_start)
) WITHOUT ROWID;

-- Trigger calls refused by a workflow's rate limit (spec: "a table of rate-limit blocks").
CREATE TABLE rate_limit_blocks (
  id            INTEGER PRIMARY KEY,
  org_id        TEXT NOT NULL,
  workflow_id   TEXT NOT NULL,
  trigger_id    TEXT,
  api_token_id  TEXT,
  job_id        TEXT NOT NULL,
  window        TEXT NOT NULL CHECK (window IN ('minute', 'hour', 'day')),
  limit_value   INTEGER NOT NULL,
  observed      INTEGER NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX rate_limit_blocks_org ON rate_limit_blocks(org_id, id DESC);
