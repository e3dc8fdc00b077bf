-- The browser that started an OAuth flow (docs/chat.md, "Connecting a workspace"): the SHA-256
-- of the random key its connect cookie holds. The callback is finished only in that browser.
-- NULL on states made before this migration: those are refused (their owner starts again).
ALTER TABLE chat_oauth_states ADD COLUMN browser_hash TEXT;

-- Signed chat requests already received (docs/chat.md, "Signatures and replays"): the SHA-256 of
-- a request's signed timestamp and raw body, kept ten minutes (twice the five minutes a
-- signature is accepted), so that the same signed request delivered again, to this coordinator
-- or to another on the same database, is not acted on twice. Rows past `expires_at` are removed.
CREATE TABLE chat_requests_seen (
  provider      TEXT NOT NULL CHECK (provider IN ('slack', 'discord')),
  request_hash  TEXT NOT NULL,
  expires_at    TEXT NOT NULL,
  PRIMARY KEY (provider, request_hash)
);
CREATE INDEX chat_requests_seen_expiry ON chat_requests_seen(expires_at);
