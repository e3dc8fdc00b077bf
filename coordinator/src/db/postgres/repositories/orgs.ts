import type { Member, OrgRepository, Role, RoleChangeRefusal } from '../../../domain/model/orgs.js';
import type { PgClient, PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  created_at: string;
}
const toMember = (r: MemberRow): Member => ({
  userId: r.user_id,
  email: r.email,
  role: r.role,
  joinedAt: r.created_at,
});

interface OrgRow {
  id: string;
  name: string;
  created_at: string;
}

const MEMBER = `SELECT m.user_id, u.email, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id`;

/**
 * `refusal` decides whether a role change or removal is refused (the domain's). A change locks
 * the organization's row first, so two coordinators changing its members take turns and the
 * owners it counts are the ones it leaves (never two demotions that each saw another owner).
 */
export function createOrgRepository(pool: PgPool, refusal: RoleChangeRefusal): OrgRepository {
  const change = (orgId: string, userId: string, next: Role | null) =>
    inTransaction(pool, async (tx: PgClient): Promise<'ok' | 'last_owner' | 'not_found'> => {
      await run(tx, 'SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [orgId]);
      const current = await one<{ role: Role }>(tx, 'SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2', [
        orgId,
        userId,
      ]);
      if (!current) return 'not_found';
      const owners = await one<{ n: number }>(
        tx,
        "SELECT count(*) AS n FROM memberships WHERE org_id = $1 AND role = 'owner'",
        [orgId],
      );
      const refused = refusal(current.role, next, owners?.n ?? 0);
      if (refused) return refused;
      if (next === null) await run(tx, 'DELETE FROM memberships WHERE org_id = $1 AND user_id = $2', [orgId, userId]);
      else await run(tx, 'UPDATE memberships SET role = $1 WHERE org_id = $2 AND user_id = $3', [next, orgId, userId]);
      return 'ok';
    });

  return {
    async create(org, ownerId) {
      await inTransaction(pool, async (tx) => {
        await run(tx, 'INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)', [org.id, org.name, org.createdAt]);
        await run(tx, "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $3)", [
          org.id,
          ownerId,
          org.createdAt,
        ]);
      });
    },
    async findById(id) {
      const row = await one<OrgRow>(pool, 'SELECT id, name, created_at FROM orgs WHERE id = $1', [id]);
      return row ? { id: row.id, name: row.name, createdAt: row.created_at } : null;
    },
    async listForUser(userId) {
      const rows = await all<OrgRow & { role: Role }>(
        pool,
        `SELECT o.id, o.name, o.created_at, m.role FROM orgs o JOIN memberships m ON m.org_id = o.id
         WHERE m.user_id = $1 ORDER BY o.created_at, o.id`,
        [userId],
      );
      return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, role: r.role }));
    },
    async roleOf(orgId, userId) {
      const row = await one<{ role: Role }>(pool, 'SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2', [
        orgId,
        userId,
      ]);
      return row?.role ?? null;
    },
    async listMembers(orgId) {
      return (await all<MemberRow>(pool, `${MEMBER} WHERE m.org_id = $1 ORDER BY m.created_at, u.email`, [orgId])).map(
        toMember,
      );
    },
    async findMember(orgId, userId) {
      const row = await one<MemberRow>(pool, `${MEMBER} WHERE m.org_id = $1 AND m.user_id = $2`, [orgId, userId]);
      return row ? toMember(row) : null;
    },
    async addMember(orgId, userId, role, at) {
      const added = await run(
        pool,
        'INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [orgId, userId, role, at],
      );
      return added === 1;
    },
    async setRole(orgId, userId, role) {
      return change(orgId, userId, role);
    },
    async removeMember(orgId, userId) {
      return change(orgId, userId, null);
    },
    async count() {
      return (await all<{ n: number }>(pool, 'SELECT count(*) AS n FROM orgs'))[0]!.n;
    },
  };
}
