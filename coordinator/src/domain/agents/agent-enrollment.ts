import { publicKeyFromBase64, type EnrollRequest } from '@drover/shared';
import type { Logger } from 'pino';
import type { Agent, AgentRepository, EnrollRefusal, StoredEnrollmentToken } from '../model/agents.js';
import { invalid, unauthorized } from '../../errors.js';
import { isoAt, isoNow, type Clock } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import { hashBearerSecret } from '../../util/secrets.js';
import { AttemptThrottle, tooManyAttempts, type ThrottlePolicy } from '../auth/attempt-throttle.js';
import { clientKey } from '../auth/client-key.js';
import type { AuditLog } from '../audit/audit-log.js';
import { cleanName, hiddenCharacterProblem } from '../names.js';
import { can } from '../orgs/permissions.js';
import { noMetrics, type Metrics } from '../metrics.js';
import type { DeviceGroups } from './agent-labels.js';

const REFUSALS = {
  unknown: 'The enrollment token is not valid',
  used: 'The enrollment token has already been used',
  revoked: 'The enrollment token was revoked',
  expired: 'The enrollment token has expired',
  issuer_left: 'The enrollment token was made by someone who is no longer a member of the organization',
  issuer_role: 'The enrollment token was made by someone whose role can no longer enroll agents',
} as const;

/**
 * Why a single-use token cannot be spent at `at`: unknown, already spent, revoked, expired, or
 * made by a member who has left or whose role may no longer enroll agents (as their API tokens, it
 * can do no more than its maker's role now); null: it can.
 */
export function enrollmentTokenRefusal(token: StoredEnrollmentToken, at: string): EnrollRefusal | null {
  if (!token) return 'unknown';
  if (token.usedAt !== null) return 'used';
  if (token.revokedAt !== null) return 'revoked';
  if (token.expiresAt <= at) return 'expired';
  if (token.issuerLeft) return 'issuer_left';
  if (token.issuerRole !== null && !can(token.issuerRole, 'agents.enroll')) return 'issuer_role';
  return null;
}

/**
 * Enrollments with an unknown token, per client address (an IPv6 one by its /64): 10 are free (a
 * technician retyping a token), then each further one locks the address for 1 s, 2 s, 4 s ... up
 * to 15 minutes, answered 429 with
 * `Retry-After`. A token cannot be guessed, so this bounds the work a flood makes, and every
 * lockout is logged and audited.
 */
export const ENROLLMENT_ADDRESS_POLICY: ThrottlePolicy = {
  freeFailures: 10,
  baseLockMs: 1_000,
  maxLockMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
  maxKeys: 100_000,
};

export interface EnrollmentDeps {
  agents: AgentRepository;
  audit: AuditLog;
  clock: Clock;
  logger: Logger;
  /** An agent enrolled joins the device groups whose selector matches it (no labels yet: `!role` does). */
  deviceGroups: DeviceGroups;
  /** Counts the refusals of a locked address (docs/metrics.md); none by default. */
  metrics?: Metrics;
}

/** `POST /v1/agent/enroll`: spends a single-use enrollment token and registers the agent's key. */
export class AgentEnrollment {
  private readonly addresses: AttemptThrottle;

  constructor(private readonly deps: EnrollmentDeps) {
    this.addresses = new AttemptThrottle(ENROLLMENT_ADDRESS_POLICY, deps.clock);
  }

  async enroll(body: EnrollRequest, address: string): Promise<Agent> {
    const client = clientKey(address);
    const wait = this.addresses.waitMs(client);
    if (wait > 0) {
      (this.deps.metrics ?? noMetrics).rateLimitBlocked('enrollment');
      throw tooManyAttempts('enrollment', wait);
    }
    // Checked before the token is spent, so that a bad key does not burn the token.
    if (!publicKeyFromBase64(body.publicKey)) {
      throw invalid(
        'body.publicKey',
        'must be standard base64 of a raw 32-byte Ed25519 public key (a valid curve point)',
      );
    }
    // Shown in the dashboard, the CLI's tables and chat messages: no escape sequences, no NUL.
    for (const field of ['hostname', 'os', 'agentVersion'] as const) {
      const problem = hiddenCharacterProblem(body[field]);
      if (problem) throw invalid(`body.${field}`, problem);
    }
    // The display name: the one asked for, else the hostname (renamed later in the dashboard).
    const name =
      body.name === undefined ? cleanName('body.hostname', body.hostname) : cleanName('body.name', body.name);
    const outcome = await this.deps.agents.enroll(
      hashBearerSecret(body.enrollmentToken),
      {
        id: newTimeOrderedId(this.deps.clock.now()),
        name,
        hostname: body.hostname,
        os: body.os,
        agentVersion: body.agentVersion,
        publicKey: body.publicKey,
      },
      isoNow(this.deps.clock),
    );
    if (!outcome.ok) {
      this.deps.logger.info({ reason: outcome.reason, address }, 'enrollment refused');
      // Request signatures do not cover X-Agent-Id: an agent sharing another's key could be sent
      // that agent's signed requests (nonces are per agent). The token is not spent.
      if (outcome.reason === 'key_in_use') {
        throw invalid(
          'body.publicKey',
          'is already the key of an enrolled agent: make a new key pair for each enrollment',
        );
      }
      // Only a token that never existed is a guess; a used or expired one was real.
      if (outcome.reason === 'unknown') await this.failed(client);
      throw unauthorized(REFUSALS[outcome.reason]);
    }
    const agent = outcome.agent;
    await this.deps.audit.record({
      orgId: agent.orgId,
      actorType: 'agent',
      actorId: agent.id,
      action: 'agent.enroll',
      targetType: 'agent',
      targetId: agent.id,
      metadata: { name: agent.name, hostname: agent.hostname, os: agent.os, agentVersion: agent.agentVersion },
    });
    await this.deps.deviceGroups.agentsChanged(agent.orgId, [agent.id], { actorType: 'agent', actorId: agent.id });
    return agent;
  }

  private async failed(address: string): Promise<void> {
    const { failures, lockedUntil } = this.addresses.fail(address);
    if (lockedUntil === null) return;
    const metadata = { scope: 'address', address, failures, lockedUntil: isoAt(lockedUntil) };
    this.deps.logger.warn(metadata, 'enrollment locked for this address after repeated failures');
    await this.deps.audit.record({
      orgId: null,
      actorType: 'system',
      actorId: null,
      action: 'enrollment.lockout',
      targetType: 'address',
      targetId: address,
      metadata,
    });
  }
}
