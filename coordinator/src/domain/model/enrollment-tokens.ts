import type { Role } from './orgs.js';

export interface EnrollmentToken {
  id: string;
  orgId: string;
  name: string | null;
  expiresAt: string;
  usedAt: string | null;
  usedByAgentId: string | null;
  createdBy: string | null;
  createdAt: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

/**
 * Where a token stands at an instant: `open` (it may still enroll a machine), `used` (it did),
 * `revoked` (an operator ended it first), `expired` (it ended unused).
 */
export const ENROLLMENT_TOKEN_STATES = ['open', 'used', 'revoked', 'expired'] as const;
export type EnrollmentTokenState = (typeof ENROLLMENT_TOKEN_STATES)[number];

/** A token as the list reads it: with its issuer's email and its place in the list. */
export interface ListedEnrollmentToken extends EnrollmentToken {
  createdByEmail: string | null;
  /** Its place in insertion order: the list's cursor. */
  listKey: number;
}

export interface EnrollmentTokenListQuery {
  /** Only the tokens in this state at `at`. */
  state?: EnrollmentTokenState | undefined;
  at: string;
  /** Only tokens before this list key (the cursor). */
  before?: number | undefined;
  limit: number;
}

/** A revocation's outcome: the token (`first`: this call revoked it), or why not. */
export type EnrollmentTokenRevocation =
  | { outcome: 'revoked'; token: EnrollmentToken; first: boolean }
  | { outcome: 'used'; token: EnrollmentToken }
  | { outcome: 'not_found' };

/** A token as it is made: not revoked. */
export type NewEnrollmentToken = Omit<EnrollmentToken, 'revokedAt' | 'revokedBy'>;

/**
 * A token's creation: `ok`, or refused with nothing written because its maker's role no longer
 * enrolls agents (`role`: a viewer now; null: no longer a member of the organization).
 */
export type EnrollmentTokenInsertion = { outcome: 'ok' } | { outcome: 'maker_cannot_enroll'; role: Role | null };

export interface EnrollmentTokenRepository {
  /**
   * Stores a token. One with a maker takes the organization's lock first and is refused unless the
   * maker may still enroll agents: a role change or removal takes the same lock and revokes the
   * maker's open tokens (OrgRepository), so no token it did not see can outlive it.
   */
  insert(token: NewEnrollmentToken, tokenHash: string): Promise<EnrollmentTokenInsertion>;
  /** The organization's tokens, newest first. */
  list(orgId: string, query: EnrollmentTokenListQuery): Promise<ListedEnrollmentToken[]>;
  findInOrg(orgId: string, id: string): Promise<ListedEnrollmentToken | null>;
  /** Revokes a token not used yet; a used one stays as it is (it enrolled its agent). */
  revoke(orgId: string, id: string, by: string, at: string): Promise<EnrollmentTokenRevocation>;
}
