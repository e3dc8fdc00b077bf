import type { ApiToken, ApiTokenRepository, Grant } from '../../../domain/model/api-tokens.js';
import type { Role } from '../../../domain/model/orgs.js';
import type { PgPool } from '../pool.js';
import { all, json, one, run } from '../rows.js';

interface ApiTokenRow {
  id: string;
  org_id: string;
  user_id: string;
  name: string;
  token_hint: string;
  scopes: Grant[];
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
  scopes: r.scopes ?? [],
  rateLimit: { perMinute: r.rate_limit_per_minute, perHour: r.rate_limit_per_hour, perDay: r.rate_limit_per_day },
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
});

export function createApiTokenRepository(pool: PgPool): ApiTokenRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await one<ApiTokenRow>(pool, 'SELECT * FROM api_tokens WHERE org_id = $1 AND id = $2', [orgId, id]);
    return row ? toApiToken(row) : null;
  };
  return {
    async insert(t, tokenHash) {
      await run(
        pool,
        `INSERT INTO api_tokens (id, org_id, user_id, name, token_hash, token_hint, scopes,
           rate_limit_per_minute, rate_limit_per_hour, rate_limit_per_day, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [
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
        ],
      );
    },
    async findByHash(tokenHash) {
      const row = await one<ApiTokenRow>(pool, 'SELECT * FROM api_tokens WHERE token_hash = $1', [tokenHash]);
      return row ? toApiToken(row) : null;
    },
    async findForAuthentication(tokenHash) {
      const row = await one<ApiTokenRow & { issuer_role: Role | null }>(
        pool,
        `SELECT t.*, m.role AS issuer_role FROM api_tokens t
         LEFT JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id
         WHERE t.token_hash = $1`,
        [tokenHash],
      );
      return row ? { ...toApiToken(row), issuerRole: row.issuer_role } : null;
    },
    findInOrg: inOrg,
    async listByOrg(orgId) {
      const rows = await all<ApiTokenRow>(
        pool,
        'SELECT * FROM api_tokens WHERE org_id = $1 ORDER BY created_at DESC, seq DESC',
        [orgId],
      );
      return rows.map(toApiToken);
    },
    async revoke(orgId, id, at) {
      const changed = await run(
        pool,
        'UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE org_id = $2 AND id = $3',
        [at, orgId, id],
      );
      return changed === 0 ? null : inOrg(orgId, id);
    },
  };
}
