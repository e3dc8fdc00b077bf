import { describe, expect, it } from 'vitest';
import { ReadRateLimiter, readLimitBody, type ReadRefusal } from '../../../src/domain/discovery/read-rate-limiter.js';

function fakeClock(iso: string) {
  let now = Date.parse(iso);
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('ReadRateLimiter', () => {
  it('allows the limit per minute and refuses the next call with the count and the wait', () => {
    const clock = fakeClock('2026-01-02T03:04:45.000Z');
    const limiter = new ReadRateLimiter(2, clock);
    expect(limiter.hit('t')).toEqual({ allowed: true });
    expect(limiter.hit('t')).toEqual({ allowed: true });
    expect(limiter.hit('t')).toEqual({
      allowed: false,
      window: 'minute',
      limit: 2,
      observed: 3,
      retryAfter: 15,
      firstBlock: true,
    });
  });

  it('marks only the first refusal of a token in a window as the one to audit', () => {
    const limiter = new ReadRateLimiter(1, fakeClock('2026-01-02T03:04:00.000Z'));
    limiter.hit('t');
    const refusals = [limiter.hit('t'), limiter.hit('t'), limiter.hit('t')] as ReadRefusal[];
    expect(refusals.map((r) => [r.observed, r.firstBlock])).toEqual([
      [2, true],
      [3, false],
      [4, false],
    ]);
  });

  it('counts each token on its own', () => {
    const limiter = new ReadRateLimiter(1, fakeClock('2026-01-02T03:04:00.000Z'));
    expect(limiter.hit('a').allowed).toBe(true);
    expect(limiter.hit('a').allowed).toBe(false);
    expect(limiter.hit('b').allowed).toBe(true);
  });

  it('starts over when the UTC minute changes, not sixty seconds after the first call', () => {
    const clock = fakeClock('2026-01-02T03:04:59.000Z');
    const limiter = new ReadRateLimiter(1, clock);
    limiter.hit('t');
    expect(limiter.hit('t').allowed).toBe(false);
    clock.advance(1_000);
    expect(limiter.hit('t').allowed).toBe(true);
    const refusal = limiter.hit('t') as ReadRefusal;
    expect(refusal.firstBlock).toBe(true);
    expect(refusal.retryAfter).toBe(60);
  });

  it('never answers a wait below one second', () => {
    const limiter = new ReadRateLimiter(1, fakeClock('2026-01-02T03:04:59.999Z'));
    limiter.hit('t');
    expect((limiter.hit('t') as ReadRefusal).retryAfter).toBe(1);
  });
});

describe('readLimitBody', () => {
  it("is the spec's token read body, naming the window and the count against the limit", () => {
    const refusal: ReadRefusal = {
      allowed: false,
      window: 'minute',
      limit: 60,
      observed: 61,
      retryAfter: 5,
      firstBlock: true,
    };
    expect(readLimitBody(refusal)).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Token read limit exceeded: 61 requests this minute, limit 60',
      scope: 'token_read',
      window: 'minute',
      limit: 60,
      observed: 61,
    });
  });
});
