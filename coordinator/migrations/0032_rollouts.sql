-- Staged rollouts (docs/ota.md, "Staged rollouts"): a release published with a rollout plan
-- reaches its channel's devices wave by wave. One row per rollout (its release's id), the devices
-- counted at publish with their wave, and its history.
CREATE TABLE rollouts (
  release_id        TEXT PRIMARY KEY REFERENCES releases(id) ON DELETE CASCADE,
  org_id            TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  application_id    TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  channel           TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('running', 'paused', 'completed', 'aborted', 'superseded')),
  waves             TEXT NOT NULL,     -- JSON array of increasing percentages ending at 100
  soak_seconds      INTEGER NOT NULL,
  max_failure_rate  REAL NOT NULL,
  min_attempts      INTEGER NOT NULL,
  device_count      INTEGER NOT NULL,  -- the channel's devices at publish
  current_wave      INTEGER NOT NULL,  -- 0-based
  accepted_wave     INTEGER NOT NULL,  -- the last wave whose failures an operator accepted by resuming it (-1: none)
  paused_reason     TEXT CHECK (paused_reason IN ('failure_threshold', 'operator')),
  wave_times        TEXT NOT NULL,     -- JSON: [startedAt, endedAt or null] of each wave so far (endedAt: its last update ended; the soak follows)
  created_at        TEXT NOT NULL,
  ended_at          TEXT
);
-- The rollouts that still limit who gets their release (every one but a completed one).
CREATE INDEX rollouts_app_limiting ON rollouts(application_id) WHERE status <> 'completed';
CREATE INDEX rollouts_running ON rollouts(status) WHERE status = 'running';

CREATE TABLE rollout_devices (
  release_id  TEXT NOT NULL REFERENCES rollouts(release_id) ON DELETE CASCADE,
  binding_id  TEXT NOT NULL,
  wave        INTEGER NOT NULL,  -- the first wave that holds the device
  PRIMARY KEY (release_id, binding_id)
);
CREATE INDEX rollout_devices_binding ON rollout_devices(binding_id);
CREATE INDEX rollout_devices_wave ON rollout_devices(release_id, wave);

CREATE TABLE rollout_events (
  release_id  TEXT NOT NULL REFERENCES rollouts(release_id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  at          TEXT NOT NULL,
  event       TEXT NOT NULL,
  by          TEXT NOT NULL,  -- a user id, or 'system'
  detail      TEXT,
  PRIMARY KEY (release_id, seq)
);
