import type { EnrollmentTokenRepository } from '../../domain/model/enrollment-tokens.js';
import { command, type Database } from '../sql/index.js';

const INSERT = command(
  `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, created_by, expires_at, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?)`,
);

export function createEnrollmentTokenRepository(db: Database): EnrollmentTokenRepository {
  return {
    async insert(t, tokenHash) {
      await db.run(INSERT, [t.id, t.orgId, t.name, tokenHash, t.createdBy, t.expiresAt, t.createdAt]);
    },
  };
}
