-- Signing the command line in through the browser (docs/cli.md, "drover login --browser"): the
-- device authorization grant of RFC 8628. The command line keeps the device code, of which only
-- the SHA-256 is kept here; the user checks the short user code on the dashboard's /device page,
-- where they are signed in, and approves or denies. A sign-in lasts ten minutes; its session is
-- handed out once (`used`). Rows are forgotten once expired, when the next one starts.
CREATE TABLE device_sign_ins (
  device_code_hash    text PRIMARY KEY,
  user_code           text NOT NULL UNIQUE,
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'used')),
  -- How the client described itself (its own words), and the address it asked from.
  client              text,
  requested_from      text NOT NULL,
  created_at          text NOT NULL,
  expires_at          text NOT NULL,
  -- Who approved or denied it, when, and (approved) that user's session generation then: a
  -- "sign out everywhere" after the approval ends the sign-in too.
  user_id             text REFERENCES users(id) ON DELETE CASCADE,
  session_generation  integer,
  decided_at          text,
  -- The command line's last poll (polls closer than the interval are refused).
  polled_at           text
);
CREATE INDEX device_sign_ins_expiry ON device_sign_ins(expires_at);
CREATE INDEX device_sign_ins_pending_from ON device_sign_ins(requested_from) WHERE status = 'pending';
