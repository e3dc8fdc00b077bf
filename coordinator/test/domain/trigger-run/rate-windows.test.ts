import { describe, expect, it } from 'vitest';
import {
  checkLimits,
  hasAnyLimit,
  retryAfterSeconds,
  tokenLimitBody,
  windowStarts,
  workflowLimitBody,
} from '../../../src/domain/trigger-run/rate-windows.js';

const T = Date.UTC(2030, 4, 17, 13, 42, 25, 300); // 13:42:25.300 UTC
const none = { perMinute: null, perHour: null, perDay: null };

describe('windowStarts', () => {
  it('aligns the windows to the UTC minute, hour and day', () => {
    expect(windowStarts(T)).toEqual({
      minute: Date.UTC(2030, 4, 17, 13, 42),
      hour: Date.UTC(2030, 4, 17, 13),
      day: Date.UTC(2030, 4, 17),
    });
  });

  it('starts a new window exactly at the boundary', () => {
    const boundary = Date.UTC(2030, 4, 18);
    expect(windowStarts(boundary)).toEqual({ minute: boundary, hour: boundary, day: boundary });
    expect(windowStarts(boundary - 1).day).toBe(Date.UTC(2030, 4, 17));
  });
});

describe('retryAfterSeconds', () => {
  it('counts whole seconds until the window ends, rounding up', () => {
    expect(retryAfterSeconds('minute', T)).toBe(35); // 34.7 s
    expect(retryAfterSeconds('hour', T)).toBe(17 * 60 + 35);
    expect(retryAfterSeconds('day', T)).toBe(10 * 3600 + 17 * 60 + 35);
  });

  it('is at least one second', () => {
    expect(retryAfterSeconds('minute', Date.UTC(2030, 0, 1, 0, 0, 59, 999))).toBe(1);
  });
});

describe('checkLimits', () => {
  it('lets a call through while every limited window is below its limit', () => {
    expect(checkLimits({ perMinute: 3, perHour: 10, perDay: null }, { minute: 2, hour: 9, day: 500 }, T)).toBeNull();
    expect(checkLimits(none, { minute: 1e6, hour: 1e6, day: 1e6 }, T)).toBeNull();
  });

  it('refuses once a window has reached its limit', () => {
    const refusal = checkLimits({ perMinute: 3, perHour: null, perDay: null }, { minute: 3, hour: 3, day: 3 }, T);
    expect(refusal).toMatchObject({ window: 'minute', limit: 3, observed: 3, retryAfter: 35 });
  });

  it('reports the longest refusing window, the one that resets last', () => {
    const refusal = checkLimits({ perMinute: 1, perHour: 50, perDay: 2 }, { minute: 2, hour: 2, day: 2 }, T);
    expect(refusal).toMatchObject({ window: 'day', limit: 2, observed: 2 });
  });

  it('reports a count above the limit when the limit was lowered during the window', () => {
    expect(checkLimits({ perMinute: null, perHour: 5, perDay: null }, { minute: 0, hour: 8, day: 8 }, T)).toMatchObject(
      {
        window: 'hour',
        limit: 5,
        observed: 8,
      },
    );
  });
});

describe('hasAnyLimit', () => {
  it('is false only when the three windows are unlimited', () => {
    expect(hasAnyLimit(none)).toBe(false);
    expect(hasAnyLimit({ ...none, perDay: 1 })).toBe(true);
  });
});

describe('429 bodies', () => {
  const refusal = checkLimits({ perMinute: 2, perHour: null, perDay: 100 }, { minute: 2, hour: 7, day: 7 }, T)!;

  it('gives the general body for a token limit, with retryAfter', () => {
    expect(tokenLimitBody(refusal)).toEqual({
      statusCode: 429,
      code: 'rate_limited',
      message:
        'API token rate limit exceeded for the minute: 2 jobs this minute (limit 2), 7 jobs this hour (no limit), ' +
        '7 jobs today (limit 100); retry in 35 s',
      retryAfter: 35,
    });
  });

  it('gives the workflow body, naming the workflow and the window counts', () => {
    expect(workflowLimitBody('deploy', refusal)).toEqual({
      statusCode: 429,
      code: 'rate_limited',
      message:
        'Rate limit of workflow `deploy` exceeded for the minute: 2 runs this minute (limit 2), ' +
        '7 runs this hour (no limit), 7 runs today (limit 100)',
      window: 'minute',
    });
  });
});
