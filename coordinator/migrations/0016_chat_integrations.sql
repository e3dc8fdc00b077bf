-- Chat workspaces connected to an organization (docs/chat.md, "Connecting a workspace"): a Slack
-- workspace or a Discord guild, connected by an OAuth flow started from the dashboard. A
-- workspace belongs to one organization (the unique index). `access_token` is the Slack bot
-- token, sealed with the coordinator's secrets key (AES-256-GCM), never stored in the clear;
-- Discord needs none of its own (the application's bot token is a setting).
CREATE TABLE chat_integrations (
  id                    TEXT PRIMARY KEY,
  org_id                TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  provider              TEXT NOT NULL CHECK (provider IN ('slack', 'discord')),
  team_id               TEXT NOT NULL,
  team_name             TEXT NOT NULL,
  -- Slack: the app's bot user (app mentions name it); Discord: null.
  bot_user_id           TEXT,
  access_token          TEXT,
  scopes                TEXT NOT NULL,
  connected_by_user_id  TEXT NOT NULL,
  created_at            TEXT NOT NULL
);
CREATE UNIQUE INDEX chat_integrations_team ON chat_integrations(provider, team_id);
CREATE INDEX chat_integrations_org ON chat_integrations(org_id, created_at);

-- The `state` of an OAuth flow in progress: single use, bound to the organization and the
-- owner who started it, valid ten minutes. Only its SHA-256 is kept.
CREATE TABLE chat_oauth_states (
  state_hash  TEXT PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  user_id     TEXT NOT NULL,
  provider    TEXT NOT NULL CHECK (provider IN ('slack', 'discord')),
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX chat_oauth_states_expiry ON chat_oauth_states(expires_at);
