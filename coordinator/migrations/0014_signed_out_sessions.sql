-- Signing out ends the session on the server (docs/dashboard.md, "Sessions, cookies and
-- cross-site requests"): the session's id is kept here until the session would have expired
-- anyway, and a session token whose id is here is refused. Rows past `expires_at` are removed.
CREATE TABLE signed_out_sessions (
  id          TEXT PRIMARY KEY,
  expires_at  TEXT NOT NULL
);
CREATE INDEX signed_out_sessions_expiry ON signed_out_sessions(expires_at);
