import type { Logger } from 'pino';
import type { OrgRepository } from '../model/orgs.js';
import type { StoredUser, UserRepository, UserWithPassword } from '../model/users.js';
import { AppError, unauthorized } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { AttemptThrottle, tooManyAttempts, type FailureOutcome, type ThrottlePolicy } from './attempt-throttle.js';
import { clientKey } from './client-key.js';
import type { AuditLog } from '../audit/audit-log.js';
import { decoyPasswordHash, verifyPassword } from './passwords.js';
import type { SessionService } from './sessions.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { emailKey } from '../emails.js';

/**
 * Dashboard sign-in: the password check, and the throttles that make guessing slow.
 *
 * Failures are counted per account from one client address (the email as accounts compare it,
 * `emailKey`, with the address) and per client address (an IPv6 one by its /64: client-key.ts).
 * An account may fail 5 times from one address, and an address 20 times whatever the accounts
 * (many users may share one, behind a NAT), before each further failure locks that pair or that
 * address: 1 s, then 2, 4, 8 s ... up to 15 minutes (guesses already being checked when the lock
 * began do not lengthen it). While locked, a sign-in is answered 429 with `Retry-After` without
 * its password being looked at, the right one included, so a lockout costs the coordinator no
 * hashing. An account is never locked as a whole: a stranger who knows its email and fails from
 * their address locks only themselves, and its holder still signs in from any address that has
 * not failed (docs/decisions.md, "Sign-in lockouts"). A success clears the pair's count; an
 * address's count only ages out (an hour without failures), or an attacker holding one account
 * could clear it between guesses. Every lockout is logged and audited: in the organizations of the
 * account when it exists, and without an organization for an address. The counts live in this
 * coordinator's memory.
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
  /** Whether passwords sign in (`DROVER_PASSWORD_LOGIN`); true by default. */
  password?: boolean;
}

export interface SignedIn {
  token: string;
  expiresAt: string;
  user: { id: string; email: string; createdAt: string };
}

export class SignInService {
  /** Keyed by the account and the client address together (`pairKey`). */
  private readonly accounts: AttemptThrottle;
  private readonly addresses: AttemptThrottle;

  constructor(private readonly deps: SignInDeps) {
    this.accounts = new AttemptThrottle(SIGN_IN_ACCOUNT_POLICY, deps.clock);
    this.addresses = new AttemptThrottle(SIGN_IN_ADDRESS_POLICY, deps.clock);
  }

  async signIn(email: string, password: string, address: string): Promise<SignedIn> {
    if (this.deps.password === false) {
      throw new AppError(
        'password_sign_in_off',
        'Password sign-in is turned off on this coordinator: sign in with single sign-on (GET /v1/auth/oidc/start, or the button of the sign-in page)',
      );
    }
    const trimmed = email.trim();
    const user = await this.checkPassword(trimmed, password, address);
    if (!user) throw unauthorized('Wrong email or password');
    const session = await this.deps.sessions.issue(user.id, user.sessionGeneration);
    return {
      token: session.token,
      expiresAt: session.expiresAt,
      user: { id: user.id, email: user.email, createdAt: user.createdAt },
    };
  }

  /**
   * The account of `email` when `password` is its password, else null (the failure counted); 429
   * while the account is locked from this address or the address is locked, without the password
   * being looked at. Signing in and changing one's password (which asks for the current one) both
   * check passwords here, so they share the counts.
   */
  async checkPassword(
    email: string,
    password: string,
    address: string,
  ): Promise<(UserWithPassword & StoredUser) | null> {
    const account = emailKey(email.trim());
    const client = clientKey(address);
    const pair = pairKey(account, client);
    const wait = Math.max(this.accounts.waitMs(pair), this.addresses.waitMs(client));
    if (wait > 0) {
      (this.deps.metrics ?? noMetrics).rateLimitBlocked('sign_in');
      throw tooManyAttempts('sign-in', wait);
    }
    const user = await this.deps.users.findByEmail(email.trim());
    // Hash even for an unknown email, so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, user?.passwordHash ?? (await decoyPasswordHash()));
    if (!user || !ok) {
      await this.failed(account, client, user?.id ?? null);
      return null;
    }
    this.accounts.succeed(pair);
    return user;
  }

  private async failed(account: string, address: string, userId: string | null): Promise<void> {
    const byAccount = this.accounts.fail(pairKey(account, address));
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
    const what = scope === 'account' ? 'account from this address' : 'address';
    this.deps.logger.warn(metadata, `sign-in locked for this ${what} after repeated failures`);
    return metadata;
  }
}

/** One key per account and client address; an address holds no NUL, so the last one splits them. */
const pairKey = (account: string, address: string): string => `${account}\u0000${address}`;
