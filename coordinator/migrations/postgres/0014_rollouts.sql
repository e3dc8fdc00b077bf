-- Staged rollouts (docs/ota.md, "Staged rollouts"): a release published with a rollout plan
-- reaches its channel's devices wave by wave. One row per rollout (its release's id), the devices
-- counted at publish with their wave, and its history.
CREATE TABLE rollouts (
  release_id        text PRIMARY KEY REFERENCES releases(id) ON DELETE CASCADE,
  org_id            text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  application_id    text NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  channel           text NOT NULL,
  status            text NOT NULL CHECK (status IN ('running', 'paused', 'completed', 'aborted', 'superseded')),
  waves             text NOT NULL,     -- JSON array of increasing percentages ending at 100
  soak_seconds      bigint NOT NULL,
  max_failure_rate  double precision NOT NULL,
  min_attempts      bigint NOT NULL,
  device_count      bigint NOT NULL,  -- the channel's devices at publish
  current_wave      bigint NOT NULL,  -- 0-based
  accepted_wave     bigint NOT NULL,  -- the last wave whose failures an operator accepted by resuming it (-1: none)
  paused_reason     text CHECK (paused_reason IN ('failure_threshold', 'operator')),
  wave_times        text NOT NULL,     -- JSON: [startedAt, endedAt or null] of each wave so far (endedAt: its last update ended; the soak follows)
  created_at        timestamptz NOT NULL,
  ended_at          timestamptz
);
-- The rollouts that still limit who gets their release (every one but a completed one).
CREATE INDEX rollouts_app_limiting ON rollouts(application_id) WHERE status <> 'completed';
CREATE INDEX rollouts_running ON rollouts(status) WHERE status = 'running';

CREATE TABLE rollout_devices (
  release_id  text NOT NULL REFERENCES rollouts(release_id) ON DELETE CASCADE,
  binding_id  text NOT NULL,
  wave        bigint NOT NULL,  -- the first wave that holds the device
  PRIMARY KEY (release_id, binding_id)
);
CREATE INDEX rollout_devices_binding ON rollout_devices(binding_id);
CREATE INDEX rollout_devices_wave ON rollout_devices(release_id, wave);

CREATE TABLE rollout_events (
  release_id  text NOT NULL REFERENCES rollouts(release_id) ON DELETE CASCADE,
  seq         bigint NOT NULL,
  at          timestamptz NOT NULL,
  event       text NOT NULL,
  by          text NOT NULL,  -- a user id, or 'system'
  detail      text,
  PRIMARY KEY (release_id, seq)
);
