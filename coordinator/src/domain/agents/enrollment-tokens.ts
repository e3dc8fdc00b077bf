import { ENROLLMENT_TOKEN_PREFIX } from '@drover/shared';
import type { EnrollmentTokenRepository } from '../model/enrollment-tokens.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashBearerSecret, newBearerSecret } from '../../util/secrets.js';

export const ENROLLMENT_TOKEN_DEFAULT_TTL_SECONDS = 3600;
export const ENROLLMENT_TOKEN_MIN_TTL_SECONDS = 60;
export const ENROLLMENT_TOKEN_MAX_TTL_SECONDS = 30 * 24 * 3600;

export interface IssuedEnrollmentToken {
  id: string;
  name: string | null;
  /** The plaintext (`drve_...`): returned once, never stored. */
  token: string;
  expiresAt: string;
}

/**
 * Issues a single-use enrollment token for an organization. Only its SHA-256 is stored; the
 * agent enrollment spends it atomically (AgentRepository.enroll).
 */
export async function issueEnrollmentToken(
  repo: EnrollmentTokenRepository,
  clock: Clock,
  input: { orgId: string; createdBy: string; name: string | null; expiresInSeconds?: number | undefined },
): Promise<IssuedEnrollmentToken> {
  const now = clock.now();
  const ttl = input.expiresInSeconds ?? ENROLLMENT_TOKEN_DEFAULT_TTL_SECONDS;
  const token = newBearerSecret(ENROLLMENT_TOKEN_PREFIX);
  const issued = {
    id: newId(),
    orgId: input.orgId,
    name: input.name,
    expiresAt: new Date(now + ttl * 1000).toISOString(),
    usedAt: null,
    usedByAgentId: null,
    createdBy: input.createdBy,
    createdAt: new Date(now).toISOString(),
  };
  await repo.insert(issued, hashBearerSecret(token));
  return { id: issued.id, name: issued.name, token, expiresAt: issued.expiresAt };
}
