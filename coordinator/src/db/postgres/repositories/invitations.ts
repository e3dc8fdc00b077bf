import type { Invitation, InvitationRepository } from '../../../domain/model/invitations.js';
import type { Role } from '../../../domain/model/orgs.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

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

/**
 * Emails compare without case (`lower(email)`, as the indexes are). Creating an invitation locks
 * the organization's row first, so two coordinators inviting the same email take turns: the
 * second sees the first's pending invitation (`already_invited`) rather than breaking the unique
 * index.
 */
export function createInvitationRepository(pool: PgPool): InvitationRepository {
  return {
    async create(invitation, newUser) {
      return inTransaction(pool, async (tx) => {
        await run(tx, 'SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [invitation.orgId]);
        const member = await one(
          tx,
          `SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
           WHERE m.org_id = $1 AND lower(u.email) = lower($2)`,
          [invitation.orgId, invitation.email],
        );
        if (member) return 'already_member' as const;
        const pending = await one<{ id: string; expired: boolean }>(
          tx,
          `SELECT id, expires_at <= $3 AS expired FROM org_invitations
           WHERE org_id = $1 AND lower(email) = lower($2) AND status = 'pending'`,
          [invitation.orgId, invitation.email, invitation.createdAt],
        );
        if (pending) {
          if (!pending.expired) return 'already_invited' as const;
          await run(tx, "UPDATE org_invitations SET status = 'expired', ended_at = $1 WHERE id = $2", [
            invitation.createdAt,
            pending.id,
          ]);
        }
        if (newUser) {
          await run(
            tx,
            'INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
            [newUser.id, newUser.email, newUser.passwordHash, newUser.createdAt],
          );
        }
        await run(
          tx,
          `INSERT INTO org_invitations (id, org_id, email, role, status, created_by, created_at, expires_at)
           VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)`,
          [
            invitation.id,
            invitation.orgId,
            invitation.email,
            invitation.role,
            invitation.createdBy,
            invitation.createdAt,
            invitation.expiresAt,
          ],
        );
        return 'ok' as const;
      });
    },
    async findById(id) {
      const row = await one<InvitationRow>(pool, `${INVITATION} WHERE i.id = $1`, [id]);
      return row ? toInvitation(row) : null;
    },
    async listPending(orgId) {
      const rows = await all<InvitationRow>(
        pool,
        `${INVITATION} WHERE i.org_id = $1 AND i.status = 'pending' ORDER BY i.created_at DESC, i.id DESC`,
        [orgId],
      );
      return rows.map(toInvitation);
    },
    async listForEmail(email, now) {
      const rows = await all<InvitationRow>(
        pool,
        `${INVITATION} WHERE lower(i.email) = lower($1) AND i.status = 'pending' AND i.expires_at > $2
         ORDER BY i.created_at DESC, i.id DESC`,
        [email, now],
      );
      return rows.map(toInvitation);
    },
    async accept(id, userId, at) {
      return inTransaction(pool, async (tx) => {
        const accepted = await one<{ org_id: string; role: Role }>(
          tx,
          `UPDATE org_invitations SET status = 'accepted', ended_at = $1
           WHERE id = $2 AND status = 'pending' AND expires_at > $1 RETURNING org_id, role`,
          [at, id],
        );
        if (!accepted) return 'not_pending' as const;
        const added = await run(
          tx,
          'INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
          [accepted.org_id, userId, accepted.role, at],
        );
        return added === 1 ? ('ok' as const) : ('already_member' as const);
      });
    },
    async end(id, status, at) {
      return (
        (await run(pool, "UPDATE org_invitations SET status = $1, ended_at = $2 WHERE id = $3 AND status = 'pending'", [
          status,
          at,
          id,
        ])) === 1
      );
    },
  };
}
