import { describe, expect, it } from 'vitest';
import { retryDelayMs, RETRY_MAX_MS } from '../../../../src/domain/chat/notifications/delivery-worker.js';

describe('retryDelayMs', () => {
  it('doubles from 5 s per failed attempt, up to an hour, with jitter between half and all of it', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 1 - 1e-9))).toEqual([5000, 10_000, 20_000, 40_000]);
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 0))).toEqual([2500, 5000, 10_000, 20_000]);
    expect(retryDelayMs(20, 1 - 1e-9)).toBe(RETRY_MAX_MS);
    expect(retryDelayMs(500, 0)).toBe(RETRY_MAX_MS / 2);
  });
});
