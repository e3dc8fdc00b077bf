import type { Invitation, InvitationRepository } from '../../domain/model/invitations.js';
import type { Role } from '../../domain/model/orgs.js';
import { command, one, query, run, type Database } from '../sql/index.js';
import { ADD_MEMBER } from './orgs.js';
import { sameEmail } from './users.js';
import { lockOrg } from './parent-locks.js';

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

const BY_ID = query<InvitationRow, [string]>(`${INVITATION} WHERE i.id = ?`);
const PENDING_IN_ORG = query<InvitationRow, [string]>(
  `${INVITATION} WHERE i.org_id = ? AND i.status = 'pending' ORDER BY i.created_at DESC, i.id DESC`,
);
const FOR_EMAIL = query<InvitationRow, [string, string]>(
  (d) => `${INVITATION} WHERE ${sameEmail(d, 'i.email')} AND i.status = 'pending' AND i.expires_at > ?
   ORDER BY i.created_at DESC, i.id DESC`,
);
const IS_MEMBER = query<{ one: number }, [string, string]>(
  (d) =>
    `SELECT 1 AS one FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND ${sameEmail(d, 'u.email')}`,
);
const IS_OWNER = query<{ one: number }, [string, string]>(
  "SELECT 1 AS one FROM memberships WHERE org_id = ? AND user_id = ? AND role = 'owner'",
);
const PENDING_OF = query<{ id: string; expires_at: string }, [string, string]>(
  (d) =>
    `SELECT id, expires_at FROM org_invitations WHERE org_id = ? AND ${sameEmail(d, 'email')} AND status = 'pending'`,
);
const MARK_EXPIRED = command<[string, string]>(
  "UPDATE org_invitations SET status = 'expired', ended_at = ? WHERE id = ?",
);
/** The account an invitation makes, its password the inviter's choice (users.password_by_inviter). */
const INSERT_USER = command<[string, string, string, string]>(
  `INSERT INTO users (id, email, password_hash, created_at, password_by_inviter) VALUES (?, ?, ?, ?, TRUE)
   ON CONFLICT DO NOTHING`,
);
const INSERT = command<[string, string, string, Role, string, string, string]>(
  `INSERT INTO org_invitations (id, org_id, email, role, status, created_by, created_at, expires_at)
   VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`,
);
const MARK_ACCEPTED = query<{ org_id: string; role: Role }, { at: string; id: string }>(
  `UPDATE org_invitations SET status = 'accepted', ended_at = @at
   WHERE id = @id AND status = 'pending' AND expires_at > @at RETURNING org_id, role`,
);
const REVOKE_ALL_SENT_BY = query<
  { id: string; org_id: string; email: string; role: Role; expires_at: string },
  [string, string]
>(
  `UPDATE org_invitations SET status = 'revoked', ended_at = ? WHERE created_by = ? AND status = 'pending'
   RETURNING id, org_id, email, role, expires_at`,
);
const END = command<[string, string, string]>(
  "UPDATE org_invitations SET status = ?, ended_at = ? WHERE id = ? AND status = 'pending'",
);

/**
 * Emails compare without case (`sameEmail`). Creating an invitation locks the organization's row
 * first (on PostgreSQL; SQLite's single writer serializes), so two coordinators inviting the same
 * email take turns: the second sees the first's pending invitation (`already_invited`) rather than
 * breaking the unique index. A role change or removal takes the same lock (orgs.ts), so an inviter
 * demoted or removed meanwhile is seen as such (`inviter_not_owner`), and never leaves behind an
 * invitation that the change did not revoke.
 */
export function createInvitationRepository(db: Database): InvitationRepository {
  return {
    create(invitation, newUser) {
      const { id, orgId, email, role, createdBy, createdAt, expiresAt } = invitation;
      return db.transaction(function* () {
        yield* lockOrg(orgId);
        if (!(yield* one(IS_OWNER, [orgId, createdBy]))) return 'inviter_not_owner' as const;
        if (yield* one(IS_MEMBER, [orgId, email])) return 'already_member' as const;
        const pending = yield* one(PENDING_OF, [orgId, email]);
        if (pending) {
          if (pending.expires_at > createdAt) return 'already_invited' as const;
          yield* run(MARK_EXPIRED, [createdAt, pending.id]);
        }
        if (newUser) yield* run(INSERT_USER, [newUser.id, newUser.email, newUser.passwordHash, newUser.createdAt]);
        yield* run(INSERT, [id, orgId, email, role, createdBy, createdAt, expiresAt]);
        return 'ok' as const;
      });
    },
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      return row ? toInvitation(row) : null;
    },
    async listPending(orgId) {
      return (await db.all(PENDING_IN_ORG, [orgId])).map(toInvitation);
    },
    async listForEmail(email, now) {
      return (await db.all(FOR_EMAIL, [email, now])).map(toInvitation);
    },
    accept(id, userId, at) {
      return db.transaction(function* () {
        const accepted = yield* one(MARK_ACCEPTED, { at, id });
        if (!accepted) return 'not_pending' as const;
        const added = yield* run(ADD_MEMBER, [accepted.org_id, userId, accepted.role, at, null]);
        return added === 1 ? ('ok' as const) : ('already_member' as const);
      });
    },
    async end(id, status, at) {
      return (await db.run(END, [status, at, id])) === 1;
    },
    async revokeAllSentBy(userId, at) {
      return (await db.all(REVOKE_ALL_SENT_BY, [at, userId])).map((r) => ({
        id: r.id,
        orgId: r.org_id,
        email: r.email,
        role: r.role,
        expiresAt: r.expires_at,
      }));
    },
  };
}
