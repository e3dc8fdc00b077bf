import type { EnrollmentTokenRepository } from '../../domain/model/enrollment-tokens.js';
import type { Db } from '../database.js';

export function createEnrollmentTokenRepository(db: Db): EnrollmentTokenRepository {
  const insert = db.prepare(
    `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, created_by, expires_at, created_at)
     VALUES (@id, @orgId, @name, @tokenHash, @createdBy, @expiresAt, @createdAt)`,
  );
  return {
    async insert(token, tokenHash) {
      insert.run({ ...token, tokenHash });
    },
  };
}
