import type { EnrollmentTokenRepository } from '../../../domain/model/enrollment-tokens.js';
import type { PgPool } from '../pool.js';
import { run } from '../rows.js';

export function createEnrollmentTokenRepository(pool: PgPool): EnrollmentTokenRepository {
  return {
    async insert(t, tokenHash) {
      await run(
        pool,
        `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, created_by, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [t.id, t.orgId, t.name, tokenHash, t.createdBy, t.expiresAt, t.createdAt],
      );
    },
  };
}
