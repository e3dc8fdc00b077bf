-- The twin of SQLite's 0022_chat_request_guards.sql (comments there).
ALTER TABLE chat_oauth_states ADD COLUMN browser_hash text;

CREATE TABLE chat_requests_seen (
  provider      text NOT NULL CHECK (provider IN ('slack', 'discord')),
  request_hash  text NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (provider, request_hash)
);
CREATE INDEX chat_requests_seen_expiry ON chat_requests_seen (expires_at);
