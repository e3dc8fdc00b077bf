import { clientKey } from './client-key.js';
import { randomBytes, randomInt } from 'node:crypto';
import { formatUserCode, normalizeUserCode, USER_CODE_ALPHABET, USER_CODE_LENGTH } from '@drover/shared';
import type { Logger } from 'pino';
import {
  DEVICE_SIGN_IN_INTERVAL_SECONDS,
  DEVICE_SIGN_IN_TTL_MS,
  DEVICE_SIGN_INS_PENDING_PER_ADDRESS,
  MAX_DEVICE_SIGN_INS,
  type DeviceSignInView,
} from '../model/device-sign-ins.js';
import type { Repositories } from '../model/repositories.js';
import { AppError, conflict, invalid } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { hashBearerSecret } from '../../util/secrets.js';
import type { SessionService } from './sessions.js';
import type { SignedIn } from './sign-in.js';
import { AttemptThrottle, tooManyAttempts, type ThrottlePolicy } from './attempt-throttle.js';

/** What the command line gets when it starts: what it keeps, and what it shows its user. */
export interface DeviceSignInStart {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete: string;
  expiresAt: string;
  interval: number;
}

/** The command line's poll while nobody has approved. */
export interface DeviceSignInPending {
  status: 'pending';
  expiresAt: string;
  interval: number;
}

export interface DeviceSignInDeps {
  repos: Pick<Repositories, 'deviceSignIns' | 'users'>;
  sessions: SessionService;
  clock: Clock;
  logger: Logger;
  /** The coordinator's public URL, without a trailing slash (the dashboard's /device page is under it). */
  publicUrl: () => string;
}

const USER_CODE_ATTEMPTS = 5;
/** A refusal for a full table of sign-ins is logged at most this often. */
const FULL_WARNING_EVERY_MS = 60_000;

/**
 * Control characters, and the invisible ones that format text (bidirectional overrides, zero-width
 * characters): the approval page shows the client's description to someone deciding whether to
 * trust it, where an override could make `drover on build-7` read as something else.
 */
const HIDDEN = /[\p{Cc}\p{Cf}]/u;

/** A user code drawn at random (~34.6 bits; only a signed-in user can look one up). */
function newUserCode(): string {
  let letters = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) letters += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return formatUserCode(letters);
}

/**
 * Codes a signed-in user may get wrong (looked up, approved or denied) before each further miss
 * locks them out of the code pages: 1 s, then 2, 4, 8 s ... up to 15 minutes; the count ages out
 * after an hour without a miss, and a code found does not clear it (or a user could clear it
 * between guesses with a sign-in of their own). A user code has ~34.6 bits: unthrottled, one
 * session tried hundreds a second, and a code found is a stranger's command line signed in to
 * the guesser's account, or denied (RFC 8628, 5.1). The counts live in this coordinator's memory.
 */
export const USER_CODE_GUESS_POLICY: ThrottlePolicy = {
  freeFailures: 10,
  baseLockMs: 1_000,
  maxLockMs: 15 * 60_000,
  forgetAfterMs: 60 * 60_000,
  maxKeys: 100_000,
};

const noSuchSignIn = () =>
  new AppError(
    'not_found',
    'No sign-in waits for this code: it is wrong, has expired (codes last 10 minutes) or was already used',
  );

/**
 * Signing the command line in through the browser: the device authorization grant of RFC 8628
 * (docs/cli.md, "drover login --browser"). The command line starts a sign-in and keeps its device
 * code (a bearer secret, of which only the SHA-256 is stored); its user opens the dashboard's
 * /device page where they are signed in, by password or single sign-on, checks the user code and
 * approves or denies; the command line, polling, then gets a session of the approving user, the
 * same as a password sign-in answers, once. A sign-in lasts ten minutes; one client address may
 * have ten pending (an IPv6 one by its /64), and the coordinator stores at most
 * MAX_DEVICE_SIGN_INS from every address together (503 beyond, until some expire); a poll sooner
 * than the interval after the previous one is refused. A "sign out everywhere" (or a password change) between the approval and the
 * poll ends it too.
 */
export class DeviceSignInService {
  /** When a start was last refused for the full table and logged. */
  private fullSince = Number.NEGATIVE_INFINITY;
  /** Codes each signed-in user got wrong, by user id. */
  private readonly guesses: AttemptThrottle;

  constructor(private readonly deps: DeviceSignInDeps) {
    this.guesses = new AttemptThrottle(USER_CODE_GUESS_POLICY, deps.clock);
  }

  async start(client: string | null, address: string): Promise<DeviceSignInStart> {
    if (client !== null && (client.trim() === '' || HIDDEN.test(client))) {
      throw invalid('body.client', 'must be visible text, without control or invisible formatting characters');
    }
    const now = this.deps.clock.now();
    const deviceCode = randomBytes(32).toString('base64url');
    const deviceCodeHash = hashBearerSecret(deviceCode);
    const expiresAt = isoAt(now + DEVICE_SIGN_IN_TTL_MS);
    for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
      const userCode = newUserCode();
      const outcome = await this.deps.repos.deviceSignIns.start(
        {
          deviceCodeHash,
          userCode,
          client,
          requestedFrom: address,
          clientKey: clientKey(address),
          createdAt: isoAt(now),
          expiresAt,
        },
        { perAddress: DEVICE_SIGN_INS_PENDING_PER_ADDRESS, total: MAX_DEVICE_SIGN_INS },
      );
      if (outcome === 'full') {
        if (now - this.fullSince >= FULL_WARNING_EVERY_MS) {
          this.fullSince = now;
          this.deps.logger.warn(
            { stored: MAX_DEVICE_SIGN_INS },
            'command-line sign-in: as many sign-ins are waiting as the coordinator keeps; new ones wait until some expire',
          );
        }
        throw new AppError('unavailable', 'Too many command-line sign-ins are waiting; try again in a minute', {
          retryAfter: 60,
        });
      }
      if (outcome === 'limited') {
        throw new AppError(
          'rate_limited',
          `This address already has ${DEVICE_SIGN_INS_PENDING_PER_ADDRESS} sign-ins waiting for an approval; finish or let them expire first`,
          { retryAfter: DEVICE_SIGN_IN_TTL_MS / 1000 },
        );
      }
      if (outcome === 'started') {
        const page = `${this.deps.publicUrl()}/device`;
        return {
          deviceCode,
          userCode,
          verificationUri: page,
          verificationUriComplete: `${page}?code=${userCode}`,
          expiresAt,
          interval: DEVICE_SIGN_IN_INTERVAL_SECONDS,
        };
      }
    }
    throw new Error(`no free user code in ${USER_CODE_ATTEMPTS} draws`);
  }

  /**
   * The sign-in waiting for the code the signed-in user `userId` typed, or 404 (a miss, counted:
   * USER_CODE_GUESS_POLICY); 429 while they are locked out, without the code being looked at.
   */
  async describe(typedCode: string, userId: string): Promise<DeviceSignInView> {
    this.refuseWhileLocked(userId);
    const userCode = normalizeUserCode(typedCode);
    const found = userCode ? await this.deps.repos.deviceSignIns.findByUserCode(userCode, this.now()) : null;
    if (!found) throw this.missed(userId);
    return found;
  }

  /**
   * Approves or denies a pending sign-in as the signed-in user `userId`: 404 none (a miss,
   * counted as in `describe`), 409 decided already, 429 while they are locked out.
   */
  async decide(typedCode: string, status: 'approved' | 'denied', userId: string): Promise<DeviceSignInView> {
    this.refuseWhileLocked(userId);
    const userCode = normalizeUserCode(typedCode);
    if (!userCode) throw this.missed(userId);
    const user = await this.deps.repos.users.findById(userId);
    if (!user) throw noSuchSignIn();
    const decided = await this.deps.repos.deviceSignIns.decide(userCode, {
      status,
      userId,
      sessionGeneration: status === 'approved' ? user.sessionGeneration : null,
      at: this.now(),
    });
    if (decided === null) throw this.missed(userId);
    if (decided === 'decided') throw conflict('This sign-in was already approved or denied');
    this.deps.logger.info(
      { userId, userCode, requestedFrom: decided.requestedFrom, client: decided.client },
      status === 'approved' ? 'command-line sign-in approved' : 'command-line sign-in denied',
    );
    return decided;
  }

  private refuseWhileLocked(userId: string): void {
    const wait = this.guesses.waitMs(userId);
    if (wait > 0) throw tooManyAttempts('command-line sign-in code', wait);
  }

  /** Counts a code the user got wrong (logged when it locks them out): the 404 to answer. */
  private missed(userId: string) {
    const outcome = this.guesses.fail(userId);
    if (outcome.lockedUntil !== null) {
      this.deps.logger.warn(
        { userId, failures: outcome.failures, lockedUntil: isoAt(outcome.lockedUntil) },
        'command-line sign-in: codes locked for this user after repeated wrong codes',
      );
    }
    return noSuchSignIn();
  }

  /** The command line's poll: its session once approved (once), else pending, or why not. */
  async finish(deviceCode: string): Promise<SignedIn | DeviceSignInPending> {
    const { repos, sessions } = this.deps;
    const poll = await repos.deviceSignIns.poll(
      hashBearerSecret(deviceCode),
      this.now(),
      DEVICE_SIGN_IN_INTERVAL_SECONDS * 1000,
    );
    switch (poll.outcome) {
      case 'pending':
        return { status: 'pending', expiresAt: poll.expiresAt, interval: DEVICE_SIGN_IN_INTERVAL_SECONDS };
      case 'too_soon': {
        const seconds = Math.max(1, Math.ceil((Date.parse(poll.earliest) - this.deps.clock.now()) / 1000));
        throw new AppError('rate_limited', `Poll at most every ${DEVICE_SIGN_IN_INTERVAL_SECONDS} seconds`, {
          retryAfter: seconds,
        });
      }
      case 'denied':
        throw new AppError('device_sign_in_denied', 'The sign-in was denied in the browser');
      case 'expired':
        throw new AppError(
          'device_sign_in_expired',
          'The sign-in expired before it was approved, or its session was already handed out: start again',
        );
      case 'unknown':
        throw new AppError('not_found', 'No sign-in has this device code');
      case 'approved': {
        const user = await repos.users.findById(poll.userId);
        if (!user || user.sessionGeneration !== poll.sessionGeneration) {
          throw new AppError(
            'device_sign_in_denied',
            "The approving user's sessions were all ended after the approval: start again",
          );
        }
        const session = await sessions.issue(user.id, user.sessionGeneration);
        this.deps.logger.info({ userId: user.id }, 'command-line sign-in handed out its session');
        return { ...session, user: { id: user.id, email: user.email, createdAt: user.createdAt } };
      }
    }
  }

  private now(): string {
    return isoAt(this.deps.clock.now());
  }
}
