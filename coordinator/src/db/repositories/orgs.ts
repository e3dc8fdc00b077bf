import type {
  Member,
  MemberChange,
  Org,
  OrgRepository,
  RevokedInvitation,
  Role,
  RoleChangeRefusal,
  RoleMapMark,
  RoleMapWithdrawal,
} from '../../domain/model/orgs.js';
import { can } from '@drover/shared';
import { all, command, one, query, run, type Database, type Flow } from '../sql/index.js';
import { lockOrg } from './parent-locks.js';
import { emailKey } from './users.js';

interface OrgRow {
  id: string;
  name: string;
  created_at: string;
}

interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  created_at: string;
  sso_group: string | null;
}

const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, createdAt: r.created_at });

const toMember = (r: MemberRow): Member => ({
  userId: r.user_id,
  email: r.email,
  role: r.role,
  joinedAt: r.created_at,
  ssoGroup: r.sso_group,
});

const INSERT_ORG = command<[string, string, string]>('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)');
const INSERT_OWNER = command<[string, string, string]>(
  "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, 'owner', ?)",
);
/** A membership, unless the user is a member already; the last parameter is the role map's group, if it adds them. */
export const ADD_MEMBER = command<[string, string, Role, string, string | null]>(
  'INSERT INTO memberships (org_id, user_id, role, created_at, sso_group) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
);
const BY_ID = query<OrgRow, [string]>('SELECT id, name, created_at FROM orgs WHERE id = ?');
const BY_NAME = query<OrgRow, [string, number]>(
  'SELECT id, name, created_at FROM orgs WHERE name = ? ORDER BY created_at, id LIMIT ?',
);
const FOR_USER = query<OrgRow & { role: Role }, [string]>(
  `SELECT o.id, o.name, o.created_at, m.role FROM orgs o JOIN memberships m ON m.org_id = o.id
   WHERE m.user_id = ? ORDER BY o.created_at, o.id`,
);
const ROLE = query<{ role: Role }, [string, string]>('SELECT role FROM memberships WHERE org_id = ? AND user_id = ?');
const MEMBER = `SELECT m.user_id, u.email, m.role, m.created_at, m.sso_group FROM memberships m JOIN users u ON u.id = m.user_id`;
/** By when they joined; those who joined at once by email, alike on both databases (`emailKey`). */
const MEMBERS = query<MemberRow, [string]>(
  (d) => `${MEMBER} WHERE m.org_id = ? ORDER BY m.created_at, ${emailKey(d, 'u.email')}`,
);
const MEMBER_OF = query<MemberRow, [string, string]>(`${MEMBER} WHERE m.org_id = ? AND m.user_id = ?`);
const OWNERS = query<{ n: number }, [string]>(
  "SELECT count(*) AS n FROM memberships WHERE org_id = ? AND role = 'owner'",
);
/**
 * An owner sets the role. Of a membership the role map set, that role is also the one it goes back
 * to when the map withdraws its grant: the owners' latest word, not the one before it.
 */
const SET_ROLE = command<[Role, Role, string, string]>(
  `UPDATE memberships SET role = ?, role_before_sso = CASE WHEN sso_group IS NULL THEN NULL ELSE ? END
   WHERE org_id = ? AND user_id = ?`,
);
/**
 * The role map sets the role: the membership is the map's from then on, and remembers the role it
 * had before the map first took it (the right-hand sides read the row as it was).
 */
const SET_ROLE_BY_MAP = command<[Role, string, string, string]>(
  `UPDATE memberships SET role = ?, sso_group = ?,
     role_before_sso = CASE WHEN sso_group IS NULL THEN role ELSE role_before_sso END
   WHERE org_id = ? AND user_id = ?`,
);
/** The role map withdraws its grant: the role it had before, and the owners' again. */
const SET_ROLE_BACK = command<[Role, string, string]>(
  'UPDATE memberships SET role = ?, sso_group = NULL, role_before_sso = NULL WHERE org_id = ? AND user_id = ?',
);
/** The group that set a membership's role, kept current while the role stays (a second group naming the same role). */
const SET_MAP_GROUP = command<[string, string, string, string]>(
  'UPDATE memberships SET sso_group = ? WHERE org_id = ? AND user_id = ? AND sso_group IS NOT NULL AND sso_group <> ?',
);
interface MapMembershipRow {
  org_id: string;
  org_name: string;
  role: Role;
  sso_group: string;
  role_before_sso: Role | null;
}
const MAP_MEMBERSHIP = `SELECT m.org_id, o.name AS org_name, m.role, m.sso_group, m.role_before_sso
  FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.sso_group IS NOT NULL`;
const MAP_MEMBERSHIPS = query<MapMembershipRow, [string]>(`${MAP_MEMBERSHIP} AND m.user_id = ?`);
const MAP_MEMBERSHIP_OF = query<MapMembershipRow, [string, string]>(
  `${MAP_MEMBERSHIP} AND m.org_id = ? AND m.user_id = ?`,
);
const REMOVE = command<[string, string]>('DELETE FROM memberships WHERE org_id = ? AND user_id = ?');
const COUNT = query<{ n: number }, []>('SELECT count(*) AS n FROM orgs');
/** The pending invitations a member sent, revoked when they are no owner any more (inviting is an owner's). */
const REVOKE_INVITATIONS_OF = query<
  { id: string; email: string; role: Role; expires_at: string },
  { at: string; orgId: string; userId: string }
>(
  `UPDATE org_invitations SET status = 'revoked', ended_at = @at
   WHERE org_id = @orgId AND created_by = @userId AND status = 'pending'
   RETURNING id, email, role, expires_at`,
);

/**
 * The open enrollment tokens a member made, revoked when they may enroll no agent any more (removed,
 * or a viewer): enrollment refused them already, but a token listed `open` that works again if its
 * maker comes back is one an operator cannot see the end of.
 */
const REVOKE_ENROLLMENT_TOKENS_OF = query<
  { id: string; name: string | null },
  { at: string; orgId: string; userId: string }
>(
  `UPDATE enrollment_tokens SET revoked_at = @at
   WHERE org_id = @orgId AND created_by = @userId AND used_at IS NULL AND revoked_at IS NULL AND expires_at > @at
   RETURNING id, name`,
);

type ChangeOutcome = MemberChange | 'last_owner' | 'not_found';
/** Who sets a role: an owner, the role map for a group, or the map withdrawing its grant. */
type Setter = 'owner' | RoleMapMark | 'withdrawn';

/** `refusal` decides whether a role change or removal is refused (the domain's). */
export function createOrgRepository(db: Database, refusal: RoleChangeRefusal): OrgRepository {
  /**
   * Sets the member's role, or removes them (`next` null), unless refused. The organization's row
   * is locked first, so that the owners counted are the ones the change leaves, on every
   * coordinator (never two demotions that each saw another owner). A member who is no owner after
   * the change loses the pending invitations they sent, in the same transaction: none of them can
   * be accepted afterwards, on any coordinator (an invitation creation takes the same lock and
   * checks its inviter is an owner: InvitationRepository.create).
   */
  function* change(orgId: string, userId: string, next: Role | null, at: string, by: Setter): Flow<ChangeOutcome> {
    yield* lockOrg(orgId);
    return yield* changeLocked(orgId, userId, next, at, by);
  }

  /** `change`, the organization locked already. */
  function* changeLocked(
    orgId: string,
    userId: string,
    next: Role | null,
    at: string,
    by: Setter,
  ): Flow<ChangeOutcome> {
    const current = yield* one(ROLE, [orgId, userId]);
    if (!current) return 'not_found';
    const refused = refusal(current.role, next, (yield* one(OWNERS, [orgId]))?.n ?? 0);
    if (refused) return refused;
    if (next === null) yield* run(REMOVE, [orgId, userId]);
    else if (by === 'owner') yield* run(SET_ROLE, [next, next, orgId, userId]);
    else if (by === 'withdrawn') yield* run(SET_ROLE_BACK, [next, orgId, userId]);
    else yield* run(SET_ROLE_BY_MAP, [next, by.group, orgId, userId]);
    const revokedEnrollmentTokens =
      next === null || !can(next, 'agents.enroll')
        ? yield* all(REVOKE_ENROLLMENT_TOKENS_OF, { at, orgId, userId })
        : [];
    if (next === 'owner') return { revokedInvitations: [], revokedEnrollmentTokens };
    const rows = yield* all(REVOKE_INVITATIONS_OF, { at, orgId, userId });
    const revokedInvitations: RevokedInvitation[] = rows.map((r) => ({
      id: r.id,
      email: r.email,
      role: r.role,
      expiresAt: r.expires_at,
    }));
    return { revokedInvitations, revokedEnrollmentTokens };
  }

  /**
   * Withdraws the role map's grant, as the membership is once the organization is locked: nothing
   * when it is not the map's any more (an owner removed the member and invited them back meanwhile).
   */
  function* withdraw(orgId: string, userId: string, at: string): Flow<RoleMapWithdrawal | 'last_owner' | 'not_found'> {
    yield* lockOrg(orgId);
    const held = yield* one(MAP_MEMBERSHIP_OF, [orgId, userId]);
    if (!held) return 'not_found';
    const outcome = yield* changeLocked(orgId, userId, held.role_before_sso, at, 'withdrawn');
    if (typeof outcome !== 'object') return outcome;
    return { ...outcome, from: held.role, to: held.role_before_sso, group: held.sso_group };
  }

  return {
    async create(org, ownerId) {
      await db.transaction(function* () {
        yield* run(INSERT_ORG, [org.id, org.name, org.createdAt]);
        yield* run(INSERT_OWNER, [org.id, ownerId, org.createdAt]);
      });
    },
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      return row ? toOrg(row) : null;
    },
    async listByName(name, limit) {
      return (await db.all(BY_NAME, [name, limit])).map(toOrg);
    },
    async listForUser(userId) {
      return (await db.all(FOR_USER, [userId])).map((r) => ({ ...toOrg(r), role: r.role }));
    },
    async roleOf(orgId, userId) {
      return (await db.one(ROLE, [orgId, userId]))?.role ?? null;
    },
    async listMembers(orgId) {
      return (await db.all(MEMBERS, [orgId])).map(toMember);
    },
    async findMember(orgId, userId) {
      const row = await db.one(MEMBER_OF, [orgId, userId]);
      return row ? toMember(row) : null;
    },
    async addMember(orgId, userId, role, at, mark) {
      return (await db.run(ADD_MEMBER, [orgId, userId, role, at, mark?.group ?? null])) === 1;
    },
    setRole(orgId, userId, role, at, mark) {
      return db.transaction(() => change(orgId, userId, role, at, mark ?? 'owner'));
    },
    withdrawRoleMap(orgId, userId, at) {
      return db.transaction(() => withdraw(orgId, userId, at));
    },
    async keepMapGroup(orgId, userId, group) {
      await db.run(SET_MAP_GROUP, [group, orgId, userId, group]);
    },
    async listRoleMapMemberships(userId) {
      return (await db.all(MAP_MEMBERSHIPS, [userId])).map((r) => ({
        orgId: r.org_id,
        orgName: r.org_name,
        role: r.role,
        group: r.sso_group,
        roleBefore: r.role_before_sso,
      }));
    },
    removeMember(orgId, userId, at) {
      return db.transaction(() => change(orgId, userId, null, at, 'owner'));
    },
    async count() {
      return (await db.one(COUNT, []))?.n ?? 0;
    },
  };
}
