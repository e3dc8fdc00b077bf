-- Drover coordinator schema, version 1: identities, organizations, agents, workflows,
-- triggers, API tokens, storage bindings and the audit log.
-- Timestamps are ISO 8601 UTC strings with milliseconds; ids are UUIDs unless noted.

CREATE TABLE server_secrets (
  name        TEXT PRIMARY KEY,
  value       TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

CREATE TABLE users (
  id             TEXT PRIMARY KEY,
  email          TEXT NOT NULL UNIQUE COLLATE NOCASE,
  password_hash  TEXT NOT NULL,
  created_at     TEXT NOT NULL
);

CREATE TABLE orgs (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

CREATE TABLE memberships (
  org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
  created_at  TEXT NOT NULL,
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

CREATE TABLE enrollment_tokens (
  id                TEXT PRIMARY KEY,
  org_id            TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name              TEXT,
  token_hash        TEXT NOT NULL UNIQUE,
  created_by        TEXT REFERENCES users(id) ON DELETE SET NULL,
  expires_at        TEXT NOT NULL,
  used_at           TEXT,
  used_by_agent_id  TEXT,
  created_at        TEXT NOT NULL
);

CREATE TABLE agents (
  id             TEXT PRIMARY KEY,
  org_id         TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name           TEXT NOT NULL,
  hostname       TEXT NOT NULL,
  os             TEXT NOT NULL,
  agent_version  TEXT NOT NULL,
  public_key     TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('pending', 'connected', 'disconnected', 'revoked')),
  last_seen_at   TEXT,
  enrolled_at    TEXT NOT NULL,
  revoked_at     TEXT,
  -- Monotonic insertion order, so "most recently registered first" is stable within a millisecond.
  seq            INTEGER NOT NULL UNIQUE
);
CREATE INDEX agents_org ON agents(org_id, seq DESC);

-- Nonces seen from each agent within the signature window (CONTRACT §5). Kept in the
-- database, not in process memory, so that several coordinators refuse the same replay.
CREATE TABLE agent_nonces (
  agent_id    TEXT NOT NULL,
  nonce       TEXT NOT NULL,
  expires_at  INTEGER NOT NULL, -- Unix ms
  PRIMARY KEY (agent_id, nonce)
) WITHOUT ROWID;
CREATE INDEX agent_nonces_expiry ON agent_nonces(expires_at);

CREATE TABLE workflows (
  id                     TEXT PRIMARY KEY,
  org_id                 TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  agent_id               TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  name                   TEXT NOT NULL,
  description            TEXT,
  version                TEXT,
  params_schema          TEXT,             -- JSON array or NULL
  secrets_keys           TEXT NOT NULL DEFAULT '[]',
  timeout_ms             INTEGER,
  steps                  TEXT NOT NULL,    -- JSON array
  rate_limit_per_minute  INTEGER,
  rate_limit_per_hour    INTEGER,
  rate_limit_per_day     INTEGER,
  removed_at             TEXT,
  created_at             TEXT NOT NULL,
  updated_at             TEXT NOT NULL,
  UNIQUE (agent_id, name)
);
CREATE INDEX workflows_org ON workflows(org_id, name);

CREATE TABLE triggers (
  id                   TEXT PRIMARY KEY,
  org_id               TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name                 TEXT NOT NULL,
  type                 TEXT NOT NULL CHECK (type IN ('webhook', 'cron', 'slack', 'discord')),
  agent_id             TEXT NOT NULL REFERENCES agents(id),
  scope_type           TEXT NOT NULL CHECK (scope_type IN ('workflow', 'agent')),
  workflow_name        TEXT,
  response_mode        TEXT NOT NULL CHECK (response_mode IN ('async', 'sync')),
  response_timeout_ms  INTEGER NOT NULL,
  allowed_refs         TEXT,              -- JSON array or NULL (all accepted)
  allow_debug          INTEGER NOT NULL DEFAULT 0,
  notify_provider      TEXT,
  notify_team_id       TEXT,
  notify_channel_id    TEXT,
  notify_on            TEXT NOT NULL DEFAULT 'none' CHECK (notify_on IN ('always', 'failure', 'success', 'none')),
  cron_expression      TEXT,
  cron_timezone        TEXT,
  cron_enabled         INTEGER,
  chat_team_id         TEXT,
  chat_channel_id      TEXT,
  chat_keyword         TEXT,
  created_by           TEXT REFERENCES users(id) ON DELETE SET NULL,
  created_at           TEXT NOT NULL,
  updated_at           TEXT NOT NULL,
  deleted_at           TEXT
);
CREATE INDEX triggers_org ON triggers(org_id, created_at);

CREATE TABLE api_tokens (
  id                     TEXT PRIMARY KEY,
  org_id                 TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  user_id                TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name                   TEXT NOT NULL,
  token_hash             TEXT NOT NULL UNIQUE, -- hex SHA-256 of the plaintext
  token_hint             TEXT NOT NULL,        -- prefix and last four characters, for the dashboard
  scopes                 TEXT NOT NULL,        -- JSON array of grants
  rate_limit_per_minute  INTEGER,
  rate_limit_per_hour    INTEGER,
  rate_limit_per_day     INTEGER,
  expires_at             TEXT,
  revoked_at             TEXT,
  created_at             TEXT NOT NULL
);
CREATE INDEX api_tokens_org ON api_tokens(org_id, created_at);

CREATE TABLE storage_bindings (
  id          TEXT PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  name        TEXT NOT NULL,
  backend     TEXT NOT NULL CHECK (backend IN ('local', 's3')),
  config      TEXT NOT NULL DEFAULT '{}', -- JSON; secrets inside are never returned
  is_default  INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT NOT NULL,
  deleted_at  TEXT
);
CREATE INDEX storage_bindings_org ON storage_bindings(org_id, created_at);

-- No AUTOINCREMENT: rows are never deleted, so rowids keep increasing without the cost of
-- sqlite_sequence (docs/performance.md); one index serves the per-organization listing.
CREATE TABLE audit_log (
  id           INTEGER PRIMARY KEY,
  org_id       TEXT,
  actor_type   TEXT NOT NULL CHECK (actor_type IN ('user', 'api_token', 'agent', 'system')),
  actor_id     TEXT,
  action       TEXT NOT NULL,
  target_type  TEXT,
  target_id    TEXT,
  metadata     TEXT NOT NULL DEFAULT '{}',
  created_at   TEXT NOT NULL
);
CREATE INDEX audit_log_org ON audit_log(org_id, id DESC);
