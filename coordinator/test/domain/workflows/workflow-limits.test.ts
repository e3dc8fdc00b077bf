import { describe, expect, it } from 'vitest';
import { mergeRateLimits } from '../../../src/domain/workflows/workflow-limits.js';

describe('mergeRateLimits', () => {
  const current = { perMinute: 1, perHour: 2, perDay: 3 };

  it('keeps the windows left out of the patch', () => {
    expect(mergeRateLimits(current, { rateLimitPerHour: 20 })).toEqual({ perMinute: 1, perHour: 20, perDay: 3 });
  });

  it('clears a window set to null', () => {
    expect(mergeRateLimits(current, { rateLimitPerMinute: null, rateLimitPerDay: 30 })).toEqual({
      perMinute: null,
      perHour: 2,
      perDay: 30,
    });
  });
});
