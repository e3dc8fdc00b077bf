-- Signing the command line in through the browser (docs/cli.md, "drover login --browser"): the
-- device authorization grant of RFC 8628. The command line keeps the device code, of which only
-- the SHA-256 is kept here; the user checks the short user code on the dashboard's /device page,
-- where they are signed in, and approves or denies. A sign-in lasts ten minutes; its session is
-- handed out once (`used`). Rows are forgotten once expired, when the next one starts.
CREATE TABLE device_sign_ins (
  device_code_hash    TEXT PRIMARY KEY,
  user_code           TEXT NOT NULL UNIQUE,
  status              TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'used')),
  -- How the client described itself (its own words), and the address it asked from.
  client              TEXT,
  requested_from      TEXT NOT NULL,
  created_at          TEXT NOT NULL,
  expires_at          TEXT NOT NULL,
  -- Who approved or denied it, when, and (approved) that user's session generation then: a
  -- "sign out everywhere" after the approval ends the sign-in too.
  user_id             TEXT REFERENCES users(id) ON DELETE CASCADE,
  session_generation  INTEGER,
  decided_at          TEXT,
  -- The command line's last poll (polls closer than the interval are refused).
  polled_at           TEXT
);
CREATE INDEX device_sign_ins_expiry ON device_sign_ins(expires_at);
CREATE INDEX device_sign_ins_pending_from ON device_sign_ins(requested_from) WHERE status = 'pending';
