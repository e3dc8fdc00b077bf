import type {
  EnrollmentToken,
  EnrollmentTokenInsertion,
  EnrollmentTokenRepository,
  EnrollmentTokenState,
  ListedEnrollmentToken,
} from '../../domain/model/enrollment-tokens.js';
import type { Role } from '../../domain/model/orgs.js';
import { can } from '@drover/shared';
import { command, one, query, run, type Database, type Dialect, type Flow } from '../sql/index.js';
import { lockOrg } from './parent-locks.js';

interface EnrollmentTokenRow {
  id: string;
  org_id: string;
  name: string | null;
  created_by: string | null;
  expires_at: string;
  used_at: string | null;
  used_by_agent_id: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  created_at: string;
}

const COLUMNS = `id, org_id, name, created_by, expires_at, used_at, used_by_agent_id, revoked_at, revoked_by,
  created_at`;
/** The same, of the table named `t`. */
const T_COLUMNS = COLUMNS.split(',')
  .map((c) => `t.${c.trim()}`)
  .join(', ');

const toToken = (r: EnrollmentTokenRow): EnrollmentToken => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
  usedByAgentId: r.used_by_agent_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  revokedBy: r.revoked_by,
});

const INSERT = command(
  `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, created_by, expires_at, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?)`,
);

/** The maker's role, read under the organization's lock (a role change or removal takes it too). */
const MAKER_ROLE = query<{ role: Role }, [string, string]>(
  'SELECT role FROM memberships WHERE org_id = ? AND user_id = ?',
);

interface ListParams {
  orgId: string;
  at: string;
  before: number;
  limit: number;
}

/**
 * The condition of each state at `@at` (the rule of `enrollmentTokenState`, in SQL): a spent
 * token is `used` whatever else; an unspent one `revoked` once revoked, else `expired` at its end.
 */
const STATE_CONDITIONS: Record<EnrollmentTokenState | 'any', string> = {
  any: 'TRUE',
  used: 't.used_at IS NOT NULL',
  revoked: 't.used_at IS NULL AND t.revoked_at IS NOT NULL',
  expired: 't.used_at IS NULL AND t.revoked_at IS NULL AND t.expires_at <= @at',
  open: 't.used_at IS NULL AND t.revoked_at IS NULL AND t.expires_at > @at',
};

type ListedRow = EnrollmentTokenRow & { created_by_email: string | null; list_key: number };

/** What a listed token reads: its columns, its issuer's email, its place in the list. */
const LISTED = (d: Dialect) => `SELECT ${T_COLUMNS}, u.email AS created_by_email, t.${d.insertionOrder} AS list_key
  FROM enrollment_tokens t LEFT JOIN users u ON u.id = t.created_by`;

/** The list of one state (or all), from the constants above: never from what a caller sent. */
const listOf = (condition: string) =>
  query<ListedRow, ListParams>(
    (d) => `${LISTED(d)}
     WHERE t.org_id = @orgId AND t.${d.insertionOrder} < @before AND (${condition})
     ORDER BY t.${d.insertionOrder} DESC LIMIT @limit`,
  );
// The organization's index (migration 0052, PostgreSQL 0035) gives the newest first.
const LIST = {
  any: listOf(STATE_CONDITIONS.any),
  used: listOf(STATE_CONDITIONS.used),
  revoked: listOf(STATE_CONDITIONS.revoked),
  expired: listOf(STATE_CONDITIONS.expired),
  open: listOf(STATE_CONDITIONS.open),
};

/** Only a token neither spent nor revoked: a revocation and an enrollment at once take turns on the row. */
const REVOKE = query<EnrollmentTokenRow, [string, string, string, string]>(
  `UPDATE enrollment_tokens SET revoked_at = ?, revoked_by = ?
   WHERE org_id = ? AND id = ? AND used_at IS NULL AND revoked_at IS NULL RETURNING ${COLUMNS}`,
);
const ROW_IN_ORG = query<EnrollmentTokenRow, [string, string]>(
  `SELECT ${COLUMNS} FROM enrollment_tokens WHERE org_id = ? AND id = ?`,
);
const IN_ORG = query<ListedRow, [string, string]>((d) => `${LISTED(d)} WHERE t.org_id = ? AND t.id = ?`);

const toListed = (r: ListedRow): ListedEnrollmentToken => ({
  ...toToken(r),
  createdByEmail: r.created_by_email,
  listKey: r.list_key,
});

export function createEnrollmentTokenRepository(db: Database): EnrollmentTokenRepository {
  return {
    insert(t, tokenHash) {
      return db.transaction(function* (): Flow<EnrollmentTokenInsertion> {
        if (t.createdBy !== null) {
          yield* lockOrg(t.orgId);
          const role = (yield* one(MAKER_ROLE, [t.orgId, t.createdBy]))?.role ?? null;
          if (role === null || !can(role, 'agents.enroll')) return { outcome: 'maker_cannot_enroll', role };
        }
        yield* run(INSERT, [t.id, t.orgId, t.name, tokenHash, t.createdBy, t.expiresAt, t.createdAt]);
        return { outcome: 'ok' };
      });
    },
    async list(orgId, q) {
      const rows = await db.all(LIST[q.state ?? 'any'], {
        orgId,
        at: q.at,
        before: q.before ?? Number.MAX_SAFE_INTEGER,
        limit: q.limit,
      });
      return rows.map(toListed);
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toListed(row) : null;
    },
    revoke(orgId, id, by, at) {
      return db.transaction(function* (): Flow<Awaited<ReturnType<EnrollmentTokenRepository['revoke']>>> {
        const revoked = yield* one(REVOKE, [at, by, orgId, id]);
        if (revoked) return { outcome: 'revoked', token: toToken(revoked), first: true };
        const row = yield* one(ROW_IN_ORG, [orgId, id]);
        if (!row) return { outcome: 'not_found' };
        if (row.used_at !== null) return { outcome: 'used', token: toToken(row) };
        return { outcome: 'revoked', token: toToken(row), first: false };
      });
    },
  };
}
