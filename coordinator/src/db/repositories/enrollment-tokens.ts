import type { Db } from '../database.js';

export interface EnrollmentToken {
  id: string;
  orgId: string;
  name: string | null;
  expiresAt: string;
  usedAt: string | null;
  usedByAgentId: string | null;
  createdBy: string | null;
  createdAt: string;
}

export interface EnrollmentTokenRepository {
  insert(token: EnrollmentToken, tokenHash: string): Promise<void>;
}

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
