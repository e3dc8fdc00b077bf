import { AppError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';

/**
 * Failed attempts per key (an account, a client address), and the lockouts they earn: after
 * `freeFailures` failures each further one locks the key, for `baseLockMs` the first time,
 * doubling with every lockout up to `maxLockMs`. Failures of attempts that were already under way
 * when the key got locked (concurrent guesses) are counted but do not lock it longer. A locked key
 * is refused without looking at the attempt. A key's
 * record is forgotten once it has had no failure for `forgetAfterMs`, or on success where the
 * caller says so. The table holds at most `maxKeys` records; when full, the oldest is dropped
 * first, so a flood of keys costs bounded memory and only loses the oldest history.
 */
export interface ThrottlePolicy {
  readonly freeFailures: number;
  readonly baseLockMs: number;
  readonly maxLockMs: number;
  readonly forgetAfterMs: number;
  readonly maxKeys: number;
}

interface Record {
  failures: number;
  locks: number;
  lastFailureAt: number;
  lockedUntil: number;
  /** The length of the last lock (ms). */
  lockMs: number;
}

export interface FailureOutcome {
  failures: number;
  /** Set when this failure locked the key: until when (Unix ms). */
  lockedUntil: number | null;
}

export class AttemptThrottle {
  /** In insertion order, oldest first: Map keeps it, and a touched key is moved to the end. */
  private readonly records = new Map<string, Record>();

  constructor(
    readonly policy: ThrottlePolicy,
    private readonly clock: Clock,
  ) {}

  /** Milliseconds until `key` may try again; 0 when it may now. */
  waitMs(key: string): number {
    const record = this.current(key);
    return record ? Math.max(0, record.lockedUntil - this.clock.now()) : 0;
  }

  fail(key: string): FailureOutcome {
    const now = this.clock.now();
    const record = this.current(key) ?? { failures: 0, locks: 0, lastFailureAt: now, lockedUntil: 0, lockMs: 0 };
    record.failures += 1;
    record.lastFailureAt = now;
    let lockedUntil: number | null = null;
    if (record.failures > this.policy.freeFailures && record.lockedUntil <= now) {
      const lockMs = Math.min(this.policy.maxLockMs, this.policy.baseLockMs * 2 ** Math.min(record.locks, 40));
      record.locks += 1;
      record.lockedUntil = now + lockMs;
      record.lockMs = lockMs;
      lockedUntil = record.lockedUntil;
    }
    this.records.delete(key);
    this.records.set(key, record);
    while (this.records.size > this.policy.maxKeys) {
      const oldest = this.records.keys().next().value as string;
      this.records.delete(oldest);
    }
    return { failures: record.failures, lockedUntil };
  }

  succeed(key: string): void {
    this.records.delete(key);
  }

  /** Takes one failure back (an attempt that turned out well, or never happened); a lock stays. */
  forgive(key: string): void {
    const record = this.current(key);
    if (record && record.failures > 0) record.failures -= 1;
  }

  private current(key: string): Record | undefined {
    const record = this.records.get(key);
    const now = this.clock.now();
    if (record && record.lockedUntil - now > record.lockMs) {
      // The wall clock went back (a clock fast, then corrected by NTP): a lock ends no later than its
      // length from now, not when the clock reaches the instant it was set to end at (a day away for
      // a clock a day fast), and the failures count from now.
      record.lockedUntil = now + record.lockMs;
      record.lastFailureAt = Math.min(record.lastFailureAt, now);
    }
    if (record && now - record.lastFailureAt >= this.policy.forgetAfterMs) {
      this.records.delete(key);
      return undefined;
    }
    return record;
  }
}

/** The 429 of a locked key: `reason`, then how long to wait (at least a second), which `Retry-After` carries too. */
export function lockedOut(reason: string, waitMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('rate_limited', `${reason}; try again in ${seconds} second${seconds === 1 ? '' : 's'}`, {
    retryAfter: seconds,
  });
}

/** The 429 of a key locked by failed attempts (`what`: sign-in, enrollment). */
export const tooManyAttempts = (what: string, waitMs: number): AppError =>
  lockedOut(`Too many failed ${what} attempts`, waitMs);
