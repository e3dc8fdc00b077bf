import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../src/retry-after.js';

describe('retryAfterMs', () => {
  const now = Date.parse('2025-06-01T12:00:00Z');

  it('reads whole seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('7', now)).toBe(7_000);
    expect(retryAfterMs([' 3 '], now)).toBe(3_000);
    expect(retryAfterMs('Sun, 01 Jun 2025 12:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Sunday, 01-Jun-25 12:00:05 GMT', now)).toBe(5_000);
    for (const bad of [undefined, '', 'soon', '-1', '1.5', '1e3']) expect(retryAfterMs(bad, now)).toBeNull();
  });

  it('is 0, never negative, for `0` or a date already past (a clock ahead of the server): callers wait a floor of their own', () => {
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs('Sun, 01 Jun 2025 11:59:00 GMT', now)).toBe(0);
    // The same date read on the server's time, when the caller knows it, is what the server meant.
    expect(retryAfterMs('Sun, 01 Jun 2025 11:59:00 GMT', now - 65_000)).toBe(5_000);
  });
});
