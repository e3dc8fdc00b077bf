-- Runs on many agents (docs/fleets.md): triggers on a label selector, pools and batches.
-- A selector trigger has no agent, and a job of a pool has none until an agent takes it.
ALTER TABLE triggers ALTER COLUMN agent_id DROP NOT NULL;
ALTER TABLE jobs ALTER COLUMN agent_id DROP NOT NULL;

-- A trigger names either an agent or a label selector; a selector trigger runs on one agent of
-- the pool it selects (`one`) or on every agent it selects (`all`, a batch), at most
-- `max_parallel` of a batch's jobs handed out at a time (NULL: all at once).
ALTER TABLE triggers ADD COLUMN agent_selector text;
ALTER TABLE triggers ADD COLUMN fanout text CHECK (fanout IN ('one', 'all'));
ALTER TABLE triggers ADD COLUMN max_parallel integer;

-- A batch: the jobs of one call of a `fanout: all` trigger, one per agent.
CREATE TABLE batches (
  id             text PRIMARY KEY,
  org_id         text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  -- The organization's number of the batch: 1, 2, 3, ... in creation order.
  number         bigint NOT NULL,
  trigger_id     text NOT NULL,
  workflow_name  text NOT NULL,
  selector       text NOT NULL,
  max_parallel   integer,
  source         text NOT NULL,
  api_token_id   text,
  user_id        text,
  job_count      integer NOT NULL,
  created_at     timestamptz NOT NULL,
  -- When its last job ended (NULL while one is open); set once, with its chat notification.
  ended_at       timestamptz
);
CREATE UNIQUE INDEX batches_org_number ON batches (org_id, number);
CREATE INDEX batches_open ON batches (created_at) WHERE ended_at IS NULL;

-- A job of a batch names it; `held`: a job of a batch past its max_parallel, not handed out
-- until one of the batch's jobs ends.
ALTER TABLE jobs ADD COLUMN batch_id text;
ALTER TABLE jobs ADD COLUMN held boolean NOT NULL DEFAULT false;
CREATE INDEX jobs_batch ON jobs (batch_id, seq) WHERE batch_id IS NOT NULL;
-- The jobs waiting in a pool: pending, with no agent yet.
CREATE INDEX jobs_pooled ON jobs (org_id, seq) WHERE agent_id IS NULL AND status = 'pending';
