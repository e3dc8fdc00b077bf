import type { ApiToken, ApiTokenRepository, Grant } from '../../domain/model/api-tokens.js';
import type { Role } from '../../domain/model/orgs.js';
import { parseJsonColumn } from '../../util/json.js';
import { command, json, query, type Database } from '../sql/index.js';

interface ApiTokenRow {
  id: string;
  org_id: string;
  user_id: string;
  name: string;
  token_hint: string;
  scopes: string;
  rate_limit_per_minute: number | null;
  rate_limit_per_hour: number | null;
  rate_limit_per_day: number | null;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

const toApiToken = (r: ApiTokenRow): ApiToken => ({
  id: r.id,
  orgId: r.org_id,
  userId: r.user_id,
  name: r.name,
  hint: r.token_hint,
  scopes: parseJsonColumn<Grant[]>(r.scopes, 'api_tokens.scopes') ?? [],
  rateLimit: { perMinute: r.rate_limit_per_minute, perHour: r.rate_limit_per_hour, perDay: r.rate_limit_per_day },
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
});

const INSERT = command(
  `INSERT INTO api_tokens (id, org_id, user_id, name, token_hash, token_hint, scopes,
     rate_limit_per_minute, rate_limit_per_hour, rate_limit_per_day, expires_at, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const BY_HASH = query<ApiTokenRow, [string]>('SELECT * FROM api_tokens WHERE token_hash = ?');
const FOR_AUTHENTICATION = query<ApiTokenRow & { issuer_role: Role | null }, [string]>(
  `SELECT t.*, m.role AS issuer_role FROM api_tokens t
   LEFT JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id
   WHERE t.token_hash = ?`,
);
const IN_ORG = query<ApiTokenRow, [string, string]>('SELECT * FROM api_tokens WHERE org_id = ? AND id = ?');
const BY_ORG = query<ApiTokenRow, [string]>(
  (d) => `SELECT * FROM api_tokens WHERE org_id = ? ORDER BY created_at DESC, ${d.insertionOrder} DESC`,
);
/** Only a token not revoked yet: of two revocations at once, one changes the row (the other waits, then finds it revoked). */
const REVOKE = command<[string, string, string]>(
  'UPDATE api_tokens SET revoked_at = ? WHERE org_id = ? AND id = ? AND revoked_at IS NULL',
);

const REVOKE_ALL_OF_USER = query<ApiTokenRow, [string, string]>(
  'UPDATE api_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING *',
);

export function createApiTokenRepository(db: Database): ApiTokenRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await db.one(IN_ORG, [orgId, id]);
    return row ? toApiToken(row) : null;
  };
  return {
    async insert(t, tokenHash) {
      await db.run(INSERT, [
        t.id,
        t.orgId,
        t.userId,
        t.name,
        tokenHash,
        t.hint,
        json(t.scopes),
        t.rateLimit.perMinute,
        t.rateLimit.perHour,
        t.rateLimit.perDay,
        t.expiresAt,
        t.createdAt,
      ]);
    },
    async findByHash(tokenHash) {
      const row = await db.one(BY_HASH, [tokenHash]);
      return row ? toApiToken(row) : null;
    },
    async findForAuthentication(tokenHash) {
      const row = await db.one(FOR_AUTHENTICATION, [tokenHash]);
      return row ? { ...toApiToken(row), issuerRole: row.issuer_role } : null;
    },
    findInOrg: inOrg,
    async listByOrg(orgId) {
      return (await db.all(BY_ORG, [orgId])).map(toApiToken);
    },
    async revokeAllOfUser(userId, at) {
      return (await db.all(REVOKE_ALL_OF_USER, [at, userId])).map(toApiToken);
    },
    async revoke(orgId, id, at) {
      const first = (await db.run(REVOKE, [at, orgId, id])) === 1;
      const token = await inOrg(orgId, id);
      return token ? { token, first } : null;
    },
  };
}
