import type { ApiToken, ApiTokenRepository, Grant } from '../../domain/model/api-tokens.js';
import type { Role } from '../../domain/model/orgs.js';
import { parseJsonColumn } from '../../util/json.js';
import type { Db } from '../database.js';

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

export function createApiTokenRepository(db: Db): ApiTokenRepository {
  const insert = db.prepare(
    `INSERT INTO api_tokens (id, org_id, user_id, name, token_hash, token_hint, scopes,
       rate_limit_per_minute, rate_limit_per_hour, rate_limit_per_day, expires_at, created_at)
     VALUES (@id, @orgId, @userId, @name, @tokenHash, @hint, @scopes, @perMinute, @perHour, @perDay, @expiresAt, @createdAt)`,
  );
  const byHash = db.prepare<[string], ApiTokenRow>('SELECT * FROM api_tokens WHERE token_hash = ?');
  const forAuthentication = db.prepare<[string], ApiTokenRow & { issuer_role: Role | null }>(
    `SELECT t.*, m.role AS issuer_role FROM api_tokens t
     LEFT JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id
     WHERE t.token_hash = ?`,
  );
  const inOrg = db.prepare<[string, string], ApiTokenRow>('SELECT * FROM api_tokens WHERE org_id = ? AND id = ?');
  const byOrg = db.prepare<[string], ApiTokenRow>(
    'SELECT * FROM api_tokens WHERE org_id = ? ORDER BY created_at DESC, rowid DESC',
  );
  const revoke = db.prepare('UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE org_id = ? AND id = ?');
  return {
    async insert(token, tokenHash) {
      insert.run({
        id: token.id,
        orgId: token.orgId,
        userId: token.userId,
        name: token.name,
        tokenHash,
        hint: token.hint,
        scopes: JSON.stringify(token.scopes),
        perMinute: token.rateLimit.perMinute,
        perHour: token.rateLimit.perHour,
        perDay: token.rateLimit.perDay,
        expiresAt: token.expiresAt,
        createdAt: token.createdAt,
      });
    },
    async findByHash(tokenHash) {
      const row = byHash.get(tokenHash);
      return row ? toApiToken(row) : null;
    },
    async findForAuthentication(tokenHash) {
      const row = forAuthentication.get(tokenHash);
      return row ? { ...toApiToken(row), issuerRole: row.issuer_role } : null;
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toApiToken(row) : null;
    },
    async listByOrg(orgId) {
      return byOrg.all(orgId).map(toApiToken);
    },
    async revoke(orgId, id, at) {
      if (revoke.run(at, orgId, id).changes === 0) return null;
      return toApiToken(inOrg.get(orgId, id) as ApiTokenRow);
    },
  };
}
