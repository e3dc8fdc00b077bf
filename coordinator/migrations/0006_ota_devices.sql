-- Over-the-air deployment (CONTRACT §7, docs/ota.md): device bindings (an application on an
-- agent) and the link between an update job and the binding and release it was issued for.
-- Applications and releases are in 0005.

CREATE TABLE device_bindings (
  id                    TEXT PRIMARY KEY,
  org_id                TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  application_id        TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  agent_id              TEXT NOT NULL REFERENCES agents(id),
  channel               TEXT NOT NULL,
  -- The installation the coordinator observed (agent reports, successful update jobs); NULL until
  -- observed. `current_release_id` stays NULL when the agent reported only a version/sequence.
  current_release_id    TEXT,
  current_version       TEXT,
  current_sequence      INTEGER,
  -- What the last evaluation decided (the answers recompute them from the releases).
  desired_release_id    TEXT,
  forced                INTEGER NOT NULL DEFAULT 0,
  -- Agent-reported: idle, downloading, verifying, installing, installed, failed, refused, postponed.
  state                 TEXT,
  error                 TEXT,
  -- The update job in progress (never two per binding); cleared when it reaches a terminal status.
  active_job_id         TEXT REFERENCES jobs(id),
  last_report_at        TEXT,
  -- Failed update attempts in a row, and when the next automatic attempt may be issued.
  failed_attempts       INTEGER NOT NULL DEFAULT 0,
  retry_at              TEXT,
  -- A release the device postponed (optional update, local policy): not re-issued while desired.
  postponed_release_id  TEXT,
  created_at            TEXT NOT NULL,
  UNIQUE (application_id, agent_id)
);
-- The bindings of an application on a channel (publish, yank: re-evaluation). Lists follow the
-- rowid (bind order).
CREATE INDEX device_bindings_app_channel ON device_bindings(application_id, channel);
-- The bindings of an agent (its desired manifest, its reports).
CREATE INDEX device_bindings_agent ON device_bindings(agent_id);
-- The binding of an update job when it ends.
CREATE INDEX device_bindings_active_job ON device_bindings(active_job_id) WHERE active_job_id IS NOT NULL;
-- The retry sweep.
CREATE INDEX device_bindings_retry ON device_bindings(retry_at) WHERE retry_at IS NOT NULL;

-- What each update job was issued for. Kept after the binding is removed (no foreign key on
-- binding_id), so that a redelivered job still names its application.
CREATE TABLE update_jobs (
  job_id          TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  org_id          TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  binding_id      TEXT NOT NULL,
  application_id  TEXT NOT NULL,
  release_id      TEXT NOT NULL,
  created_at      TEXT NOT NULL
);
CREATE INDEX update_jobs_binding ON update_jobs(binding_id);

-- Releases listed by status (publish/yank filters) within an application.
CREATE INDEX releases_app_status ON releases(application_id, status, sequence DESC);
-- Applications of an organization in creation order.
CREATE INDEX applications_org_created ON applications(org_id, created_at) WHERE deleted_at IS NULL;
