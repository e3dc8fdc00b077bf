import { describe, expect, it } from 'vitest';
import { AttemptThrottle } from '../../../src/domain/auth/attempt-throttle.js';
import { clientKey } from '../../../src/domain/auth/client-key.js';

function setup(overrides: Partial<ConstructorParameters<typeof AttemptThrottle>[0]> = {}) {
  const clock = {
    t: 1_000_000,
    now() {
      return this.t;
    },
  };
  const throttle = new AttemptThrottle(
    { freeFailures: 3, baseLockMs: 1_000, maxLockMs: 8_000, forgetAfterMs: 60_000, maxKeys: 100, ...overrides },
    clock,
  );
  return { clock, throttle };
}

describe('AttemptThrottle', () => {
  it('lets the free failures through, then locks for a doubling time up to the maximum', () => {
    const { clock, throttle } = setup();
    for (let i = 0; i < 3; i++) expect(throttle.fail('a').lockedUntil).toBeNull();
    expect(throttle.waitMs('a')).toBe(0);
    const locks: number[] = [];
    for (let i = 0; i < 6; i++) {
      const { lockedUntil } = throttle.fail('a');
      locks.push(lockedUntil! - clock.t);
      expect(throttle.waitMs('a')).toBe(locks.at(-1));
      clock.t = lockedUntil!;
      expect(throttle.waitMs('a')).toBe(0);
    }
    expect(locks).toEqual([1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
  });

  it('ends a lock its length after the clock went back, not when the clock reaches its old end', () => {
    const { clock, throttle } = setup();
    for (let i = 0; i < 4; i++) throttle.fail('a');
    expect(throttle.waitMs('a')).toBe(1_000);
    // A clock a day fast, corrected by NTP while the key is locked.
    clock.t -= 86_400_000;
    expect(throttle.waitMs('a')).toBe(1_000);
    clock.t += 1_000;
    expect(throttle.waitMs('a')).toBe(0);
    // Its failures count from the corrected time: forgotten a minute without a failure later.
    clock.t += 60_000;
    expect(throttle.fail('a').failures).toBe(1);
  });

  it('does not lengthen a lock for failures of attempts already under way', () => {
    const { clock, throttle } = setup();
    for (let i = 0; i < 3; i++) throttle.fail('a');
    expect(throttle.fail('a').lockedUntil).toBe(clock.t + 1_000);
    for (let i = 0; i < 20; i++) expect(throttle.fail('a').lockedUntil).toBeNull();
    expect(throttle.waitMs('a')).toBe(1_000);
    clock.t += 1_000;
    expect(throttle.fail('a').lockedUntil).toBe(clock.t + 2_000);
  });

  it('keeps keys apart, clears one on success, and forgets one after a quiet period', () => {
    const { clock, throttle } = setup();
    for (let i = 0; i < 4; i++) throttle.fail('a');
    for (let i = 0; i < 4; i++) throttle.fail('b');
    expect(throttle.waitMs('a')).toBeGreaterThan(0);
    throttle.succeed('a');
    expect(throttle.waitMs('a')).toBe(0);
    expect(throttle.fail('a').lockedUntil).toBeNull();
    expect(throttle.waitMs('b')).toBe(1_000);
    clock.t += 60_000;
    expect(throttle.waitMs('b')).toBe(0);
    expect(throttle.fail('b').lockedUntil).toBeNull(); // counting starts over
  });

  it('holds at most maxKeys records, dropping the oldest', () => {
    const { throttle } = setup({ maxKeys: 2, freeFailures: 0 });
    throttle.fail('a');
    throttle.fail('b');
    throttle.fail('c');
    expect(throttle.waitMs('a')).toBe(0);
    expect(throttle.waitMs('b')).toBe(1_000);
    expect(throttle.waitMs('c')).toBe(1_000);
  });
});

describe('the key a client address is counted by', () => {
  it('is an IPv6 address by its /64 (one host may hold it whole), an IPv4 address whole, a mapped one as IPv4', () => {
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0DB8:0001:0002:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8::/64');
    expect(clientKey('2001:db8:0:0:1::')).toBe('2001:db8::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80::/64');
    expect(clientKey('::1')).toBe('::/64');
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
  });
});

describe('forgiving', () => {
  it('takes one failure back when forgiven, and keeps a lock', () => {
    const clock = { now: () => 0 };
    const throttle = new AttemptThrottle(
      { freeFailures: 2, baseLockMs: 1_000, maxLockMs: 1_000, forgetAfterMs: 60_000, maxKeys: 10 },
      clock,
    );
    throttle.fail('a');
    throttle.fail('a');
    throttle.forgive('a');
    expect(throttle.fail('a').lockedUntil).toBeNull(); // two counted, not three
    expect(throttle.fail('a').lockedUntil).toBe(1_000);
    throttle.forgive('a');
    expect(throttle.waitMs('a')).toBe(1_000);
  });
});
