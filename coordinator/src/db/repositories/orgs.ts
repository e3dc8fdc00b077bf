import type { Member, Org, OrgRepository, Role, RoleChangeRefusal } from '../../domain/model/orgs.js';
import type { Db } from '../database.js';

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

/** `refusal` decides whether a role change or removal is refused (the domain's). */
export function createOrgRepository(db: Db, refusal: RoleChangeRefusal): OrgRepository {
  const insertOrg = db.prepare('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)');
  const insertMember = db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)');
  const insertMemberIfAbsent = db.prepare(
    'INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const byId = db.prepare<[string], { id: string; name: string; created_at: string }>(
    'SELECT * FROM orgs WHERE id = ?',
  );
  const forUser = db.prepare<[string], { id: string; name: string; created_at: string; role: Role }>(
    `SELECT o.id, o.name, o.created_at, m.role FROM orgs o JOIN memberships m ON m.org_id = o.id
     WHERE m.user_id = ? ORDER BY o.created_at, o.id`,
  );
  const role = db.prepare<[string, string], { role: Role }>(
    'SELECT role FROM memberships WHERE org_id = ? AND user_id = ?',
  );
  const members = db.prepare<[string], MemberRow>(
    `SELECT m.user_id, u.email, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
     WHERE m.org_id = ? ORDER BY m.created_at, u.email`,
  );
  const member = db.prepare<[string, string], MemberRow>(
    `SELECT m.user_id, u.email, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
     WHERE m.org_id = ? AND m.user_id = ?`,
  );
  const owners = db.prepare<[string], { n: number }>(
    "SELECT COUNT(*) AS n FROM memberships WHERE org_id = ? AND role = 'owner'",
  );
  const updateRole = db.prepare('UPDATE memberships SET role = ? WHERE org_id = ? AND user_id = ?');
  const deleteMember = db.prepare('DELETE FROM memberships WHERE org_id = ? AND user_id = ?');
  const count = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM orgs');

  const create = db.transaction((org: Org, ownerId: string) => {
    insertOrg.run(org.id, org.name, org.createdAt);
    insertMember.run(org.id, ownerId, 'owner', org.createdAt);
  });
  const change = db.transaction(
    (orgId: string, userId: string, next: Role | null): 'ok' | 'last_owner' | 'not_found' => {
      const current = role.get(orgId, userId);
      if (!current) return 'not_found';
      const refused = refusal(current.role, next, owners.get(orgId)?.n ?? 0);
      if (refused) return refused;
      if (next === null) deleteMember.run(orgId, userId);
      else updateRole.run(next, orgId, userId);
      return 'ok';
    },
  );

  return {
    async create(org, ownerId) {
      create(org, ownerId);
    },
    async findById(id) {
      const row = byId.get(id);
      return row ? { id: row.id, name: row.name, createdAt: row.created_at } : null;
    },
    async listForUser(userId) {
      return forUser.all(userId).map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at, role: r.role }));
    },
    async roleOf(orgId, userId) {
      return role.get(orgId, userId)?.role ?? null;
    },
    async listMembers(orgId) {
      return members.all(orgId).map(toMember);
    },
    async findMember(orgId, userId) {
      const row = member.get(orgId, userId);
      return row ? toMember(row) : null;
    },
    async addMember(orgId, userId, r, at) {
      return insertMemberIfAbsent.run(orgId, userId, r, at).changes === 1;
    },
    async setRole(orgId, userId, r) {
      return change(orgId, userId, r);
    },
    async removeMember(orgId, userId) {
      return change(orgId, userId, null);
    },
    async count() {
      return count.get()?.n ?? 0;
    },
  };
}
