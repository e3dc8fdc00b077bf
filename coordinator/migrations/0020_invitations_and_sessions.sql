-- Ending every session of a user (docs/management.md, "Your account"): a session token carries
-- the user's session generation as it was at sign-in, and is refused once a password change or
-- "sign out everywhere" has moved it on.
ALTER TABLE users ADD COLUMN session_generation INTEGER NOT NULL DEFAULT 0;

-- Adding someone to an organization invites them; they join when they accept (docs/management.md,
-- "Members"). `status` moves from `pending` once: `accepted`, `declined` (by the invitee),
-- `revoked` (by an owner), or `expired` (replaced by a new invitation after `expires_at`). A
-- pending invitation past `expires_at` has expired too, without its row being changed.
CREATE TABLE org_invitations (
  id          TEXT PRIMARY KEY,
  org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
  email       TEXT NOT NULL COLLATE NOCASE,
  role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
  status      TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
  created_by  TEXT REFERENCES users(id) ON DELETE SET NULL,
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  ended_at    TEXT
);
-- One pending invitation per email in an organization; an invitee's pending invitations.
CREATE UNIQUE INDEX org_invitations_pending ON org_invitations(org_id, email) WHERE status = 'pending';
CREATE INDEX org_invitations_email ON org_invitations(email) WHERE status = 'pending';
