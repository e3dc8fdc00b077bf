import type { Invitation, InvitationRepository, NewInvitation } from '../../domain/model/invitations.js';
import type { Role } from '../../domain/model/orgs.js';
import type { UserWithPassword } from '../../domain/model/users.js';
import type { Db } from '../database.js';

interface InvitationRow {
  id: string;
  org_id: string;
  org_name: string;
  email: string;
  role: Role;
  status: Invitation['status'];
  created_by: string | null;
  created_by_email: string | null;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
}

const toInvitation = (r: InvitationRow): Invitation => ({
  id: r.id,
  orgId: r.org_id,
  orgName: r.org_name,
  email: r.email,
  role: r.role,
  status: r.status,
  invitedBy:
    r.created_by !== null && r.created_by_email !== null ? { userId: r.created_by, email: r.created_by_email } : null,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  endedAt: r.ended_at,
});

const INVITATION = `SELECT i.id, i.org_id, o.name AS org_name, i.email, i.role, i.status, i.created_by,
  u.email AS created_by_email, i.created_at, i.expires_at, i.ended_at
  FROM org_invitations i JOIN orgs o ON o.id = i.org_id LEFT JOIN users u ON u.id = i.created_by`;

/** Emails compare without case: the column is `COLLATE NOCASE`, as `users.email` is. */
export function createInvitationRepository(db: Db): InvitationRepository {
  const insertUser = db.prepare(
    'INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const isMember = db.prepare<[string, string], { one: number }>(
    `SELECT 1 AS one FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND u.email = ?`,
  );
  const pendingOf = db.prepare<[string, string], { id: string; expires_at: string }>(
    "SELECT id, expires_at FROM org_invitations WHERE org_id = ? AND email = ? AND status = 'pending'",
  );
  const markExpired = db.prepare("UPDATE org_invitations SET status = 'expired', ended_at = ? WHERE id = ?");
  const insert = db.prepare(
    `INSERT INTO org_invitations (id, org_id, email, role, status, created_by, created_at, expires_at)
     VALUES (@id, @orgId, @email, @role, 'pending', @createdBy, @createdAt, @expiresAt)`,
  );
  const byId = db.prepare<[string], InvitationRow>(`${INVITATION} WHERE i.id = ?`);
  const pendingInOrg = db.prepare<[string], InvitationRow>(
    `${INVITATION} WHERE i.org_id = ? AND i.status = 'pending' ORDER BY i.created_at DESC, i.id DESC`,
  );
  const forEmail = db.prepare<[string, string], InvitationRow>(
    `${INVITATION} WHERE i.email = ? AND i.status = 'pending' AND i.expires_at > ?
     ORDER BY i.created_at DESC, i.id DESC`,
  );
  const markAccepted = db.prepare<[string, string, string], { org_id: string; role: Role }>(
    `UPDATE org_invitations SET status = 'accepted', ended_at = ?
     WHERE id = ? AND status = 'pending' AND expires_at > ? RETURNING org_id, role`,
  );
  const insertMember = db.prepare(
    'INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const endPending = db.prepare(
    "UPDATE org_invitations SET status = ?, ended_at = ? WHERE id = ? AND status = 'pending'",
  );

  const create = db.transaction(
    (invitation: NewInvitation, newUser: UserWithPassword | null): 'ok' | 'already_member' | 'already_invited' => {
      if (isMember.get(invitation.orgId, invitation.email)) return 'already_member';
      const pending = pendingOf.get(invitation.orgId, invitation.email);
      if (pending) {
        if (pending.expires_at > invitation.createdAt) return 'already_invited';
        markExpired.run(invitation.createdAt, pending.id);
      }
      if (newUser) insertUser.run(newUser.id, newUser.email, newUser.passwordHash, newUser.createdAt);
      insert.run(invitation);
      return 'ok';
    },
  );
  const accept = db.transaction((id: string, userId: string, at: string) => {
    const accepted = markAccepted.get(at, id, at);
    if (!accepted) return 'not_pending' as const;
    return insertMember.run(accepted.org_id, userId, accepted.role, at).changes === 1
      ? ('ok' as const)
      : ('already_member' as const);
  });

  return {
    async create(invitation, newUser) {
      return create(invitation, newUser);
    },
    async findById(id) {
      const row = byId.get(id);
      return row ? toInvitation(row) : null;
    },
    async listPending(orgId) {
      return pendingInOrg.all(orgId).map(toInvitation);
    },
    async listForEmail(email, now) {
      return forEmail.all(email, now).map(toInvitation);
    },
    async accept(id, userId, at) {
      return accept(id, userId, at);
    },
    async end(id, status, at) {
      return endPending.run(status, at, id).changes === 1;
    },
  };
}
