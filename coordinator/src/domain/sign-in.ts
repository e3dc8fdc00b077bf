import type { Logger } from 'pino';
import type { OrgRepository } from './model/orgs.js';
import type { UserRepository } from './model/users.js';
import { AppError, unauthorized } from '../errors.js';
import { isoAt, type Clock } from '../util/clock.js';
import { AttemptThrottle, type FailureOutcome, type ThrottlePolicy } from './attempt-throttle.js';
import type { AuditLog } from './audit-log.js';
import { decoyPasswordHash, verifyPassword } from './passwords.js';
import type { SessionService } from './sessions.js';
import { noMetrics, type Metrics } from './metrics.js';

/**
 * Dashboard sign-in: the password check, and the throttles that make guessing slow.
 *
 * Failures are counted per account (the email, in lower case) and per client address. An account
 * may fail 5 times and an address 20 times (many users may share one, behind a NAT) before each
 * further failure locks it: 1 s, then 2, 4, 8 s ... up to 15 minutes (guesses already being checked
 * when the lock began do not lengthen it). While locked, a sign-in is
 * answered 429 with `Retry-After` without its password being looked at, the right one included,
 * so a lockout costs the coordinator no hashing. A success clears the account's count; an
 * address's count only ages out (an hour without failures), or an attacker holding one account
 * could clear it between guesses. Every lockout is logged and audited: in the organizations of
 * the account when it exists, and without an organization for an address.
 */
export const SIGN_IN_ACCOUNT_POLICY: ThrottlePolicy = {
  freeFailures: 5,
  baseLockMs: 1_000,
  maxLockMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
  maxKeys: 100_000,
};
export const SIGN_IN_ADDRESS_POLICY: ThrottlePolicy = { ...SIGN_IN_ACCOUNT_POLICY, freeFailures: 20 };

export interface SignInDeps {
  users: UserRepository;
  orgs: OrgRepository;
  sessions: SessionService;
  audit: AuditLog;
  clock: Clock;
  logger: Logger;
  /** Counts the refusals of a locked account or address (docs/metrics.md); none by default. */
  metrics?: Metrics;
}

export interface SignedIn {
  token: string;
  expiresAt: string;
  user: { id: string; email: string; createdAt: string };
}

/** A 429 for a locked key, with the seconds to wait (at least 1). */
export function tooManyAttempts(what: string, waitMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError(
    'rate_limited',
    `Too many failed ${what} attempts; try again in ${seconds} second${seconds === 1 ? '' : 's'}`,
    { retryAfter: seconds },
  );
}

export class SignInService {
  private readonly accounts: AttemptThrottle;
  private readonly addresses: AttemptThrottle;

  constructor(private readonly deps: SignInDeps) {
    this.accounts = new AttemptThrottle(SIGN_IN_ACCOUNT_POLICY, deps.clock);
    this.addresses = new AttemptThrottle(SIGN_IN_ADDRESS_POLICY, deps.clock);
  }

  async signIn(email: string, password: string, address: string): Promise<SignedIn> {
    const trimmed = email.trim();
    const account = trimmed.toLowerCase();
    const wait = Math.max(this.accounts.waitMs(account), this.addresses.waitMs(address));
    if (wait > 0) {
      (this.deps.metrics ?? noMetrics).rateLimitBlocked('sign_in');
      throw tooManyAttempts('sign-in', wait);
    }

    const user = await this.deps.users.findByEmail(trimmed);
    // Hash even for an unknown email, so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, user?.passwordHash ?? (await decoyPasswordHash()));
    if (!user || !ok) {
      await this.failed(account, address, user?.id ?? null);
      throw unauthorized('Wrong email or password');
    }
    this.accounts.succeed(account);
    const session = await this.deps.sessions.issue(user.id);
    return {
      token: session.token,
      expiresAt: session.expiresAt,
      user: { id: user.id, email: user.email, createdAt: user.createdAt },
    };
  }

  private async failed(account: string, address: string, userId: string | null): Promise<void> {
    const byAccount = this.accounts.fail(account);
    const byAddress = this.addresses.fail(address);
    const records = [];
    if (byAccount.lockedUntil !== null) {
      const metadata = this.lockout('account', byAccount, { email: account, address });
      const orgs = userId ? await this.deps.orgs.listForUser(userId) : [];
      const orgIds = orgs.length > 0 ? orgs.map((o) => o.id) : [null];
      for (const orgId of orgIds) {
        records.push(
          this.deps.audit.record({
            orgId,
            actorType: 'system',
            actorId: null,
            action: 'auth.lockout',
            targetType: 'user',
            targetId: userId,
            metadata,
          }),
        );
      }
    }
    if (byAddress.lockedUntil !== null) {
      const metadata = this.lockout('address', byAddress, { address });
      records.push(
        this.deps.audit.record({
          orgId: null,
          actorType: 'system',
          actorId: null,
          action: 'auth.lockout',
          targetType: 'address',
          targetId: address,
          metadata,
        }),
      );
    }
    await Promise.all(records);
  }

  private lockout(scope: 'account' | 'address', outcome: FailureOutcome, who: Record<string, string>) {
    const metadata = { scope, ...who, failures: outcome.failures, lockedUntil: isoAt(outcome.lockedUntil!) };
    this.deps.logger.warn(metadata, `sign-in locked for this ${scope} after repeated failures`);
    return metadata;
  }
}
