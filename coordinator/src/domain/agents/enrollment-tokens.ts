import { ENROLLMENT_TOKEN_PREFIX } from '@drover/shared';
import type {
  EnrollmentToken,
  EnrollmentTokenRepository,
  EnrollmentTokenState,
  ListedEnrollmentToken,
  NewEnrollmentToken,
} from '../model/enrollment-tokens.js';
import type { Role } from '../model/orgs.js';
import { conflict, notFound } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashBearerSecret, newBearerSecret } from '../../util/secrets.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import { requirePermission } from '../orgs/permissions.js';

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

/** A listed token with where it stands at the time of the list. */
export type EnrollmentTokenView = ListedEnrollmentToken & { state: EnrollmentTokenState };

/**
 * Where a token stands at `at`: a spent one is `used` whatever else (it enrolled its agent); an
 * unspent one `revoked` once revoked, else `expired` from its end on, else `open`. The list's
 * state filter (db/repositories/enrollment-tokens.ts) states the same in SQL.
 */
export function enrollmentTokenState(token: EnrollmentToken, at: string): EnrollmentTokenState {
  if (token.usedAt !== null) return 'used';
  if (token.revokedAt !== null) return 'revoked';
  return token.expiresAt <= at ? 'expired' : 'open';
}

/**
 * Enrollment tokens of an organization (docs/management.md, "Enrollment tokens"): issued by any
 * role that may add agents, listed, and revoked while unspent, each with its audit entry. The
 * plaintext is in the issuing answer only; the store keeps its SHA-256, which enrollment spends
 * atomically (AgentRepository.enroll).
 */
export class EnrollmentTokenService {
  constructor(private readonly deps: { repo: EnrollmentTokenRepository; audit: AuditLog; clock: Clock }) {}

  async issue(
    actor: UserActor,
    input: { name: string | null; expiresInSeconds?: number | undefined },
  ): Promise<IssuedEnrollmentToken> {
    const { repo, audit, clock } = this.deps;
    const now = clock.now();
    const ttl = input.expiresInSeconds ?? ENROLLMENT_TOKEN_DEFAULT_TTL_SECONDS;
    const token = newBearerSecret(ENROLLMENT_TOKEN_PREFIX);
    const issued: NewEnrollmentToken = {
      id: newId(),
      orgId: actor.orgId,
      name: input.name,
      expiresAt: new Date(now + ttl * 1000).toISOString(),
      usedAt: null,
      usedByAgentId: null,
      createdBy: actor.userId,
      createdAt: new Date(now).toISOString(),
    };
    const inserted = await repo.insert(issued, hashBearerSecret(token));
    if (inserted.outcome === 'maker_cannot_enroll') {
      // Demoted or removed since the request's role was read: answered as that change would have been.
      if (inserted.role === null) throw notFound('Organization');
      requirePermission(inserted.role, 'agents.enroll');
    }
    await audit.record(
      userAction(actor, 'enrollment_token.create', 'enrollment_token', issued.id, {
        name: issued.name,
        expiresAt: issued.expiresAt,
      }),
    );
    return { id: issued.id, name: issued.name, token, expiresAt: issued.expiresAt };
  }

  /** The organization's tokens, newest first, those in one state only if asked; one more than `limit` tells a next page. */
  async list(
    actor: UserActor,
    query: { state?: EnrollmentTokenState | undefined; before?: number | undefined; limit: number },
  ): Promise<EnrollmentTokenView[]> {
    const at = isoNow(this.deps.clock);
    const tokens = await this.deps.repo.list(actor.orgId, { ...query, at });
    return tokens.map((t) => ({ ...t, state: enrollmentTokenState(t, at) }));
  }

  /**
   * Revokes a token not spent yet: it enrolls nothing from now on. Revoking it again answers the
   * same token, and only the first is audited; a spent one is a 409 (revoke its agent instead).
   * One's own token any role that issues them may revoke; another member's, only those who may
   * revoke agents (403).
   */
  async revoke(actor: UserActor & { role: Role }, tokenId: string): Promise<EnrollmentTokenView> {
    const { repo, audit, clock } = this.deps;
    const before = await repo.findInOrg(actor.orgId, tokenId);
    if (!before) throw notFound('Enrollment token');
    if (before.createdBy !== actor.userId) requirePermission(actor.role, 'agents.revoke');
    const result = await repo.revoke(actor.orgId, tokenId, actor.userId, isoNow(clock));
    if (result.outcome === 'not_found') throw notFound('Enrollment token');
    if (result.outcome === 'used') {
      throw conflict('The enrollment token was already used to enroll an agent: revoke that agent instead');
    }
    // The call that revoked it, not each of the calls that found it unrevoked at once.
    if (result.first) {
      await audit.record(
        userAction(actor, 'enrollment_token.revoke', 'enrollment_token', tokenId, { name: result.token.name }),
      );
    }
    // The token as the revocation left it, with what the list adds (its maker's email, its place).
    const after = { ...before, ...result.token };
    return { ...after, state: enrollmentTokenState(after, isoNow(clock)) };
  }
}
