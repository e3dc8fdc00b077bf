-- Ending every session of a user (docs/management.md, "Your account"): a session token carries
-- the user's session generation as it was at sign-in, and is refused once a password change or
-- "sign out everywhere" has moved it on.
ALTER TABLE users ADD COLUMN session_generation integer NOT NULL DEFAULT 0;

-- Adding someone to an organization invites them; they join when they accept (docs/management.md,
-- "Members"). `status` moves from `pending` once: `accepted`, `declined` (by the invitee),
-- `revoked` (by an owner), or `expired` (replaced by a new invitation after `expires_at`). A
-- pending invitation past `expires_at` has expired too, without its row being changed. Emails
-- compare without case, as SQLite's `COLLATE NOCASE` column does.
CREATE TABLE org_invitations (
  id          text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  email       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('owner', 'member')),
  status      text NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
  created_by  text REFERENCES users(id) ON DELETE SET NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  ended_at    timestamptz
);
-- One pending invitation per email in an organization; an invitee's pending invitations.
CREATE UNIQUE INDEX org_invitations_pending ON org_invitations (org_id, lower(email)) WHERE status = 'pending';
CREATE INDEX org_invitations_email ON org_invitations (lower(email)) WHERE status = 'pending';
