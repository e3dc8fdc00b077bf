import { describe, expect, it } from 'vitest';
import {
  checkLimits,
  decideLimits,
  hasAnyLimit,
  retryAfterSeconds,
  tokenLimitBody,
  windowStarts,
  workflowLimitBody,
} from '../../../src/domain/trigger-run/rate-windows.js';
import type { RateLimits, WindowCounts } from '../../../src/domain/model/rate-limits.js';
import type { LimitedAdmission } from '../../../src/domain/model/trigger-runs.js';

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

describe('decideLimits', () => {
  const now = Date.UTC(2026, 10, 25, 10, 0, 30);
  const request = (over: { forced?: boolean; token?: RateLimits | null; workflow?: RateLimits } = {}) =>
    ({
      job: { workflowId: 'wf', workflowName: 'deploy', forced: over.forced ?? false },
      now,
      idempotency: null,
      token: over.token === undefined ? null : over.token === null ? null : { id: 'tok', limits: over.token },
      workflowLimits: over.workflow ?? none,
    }) as unknown as LimitedAdmission;
  const reads: string[] = [];
  const counts =
    (byScope: Record<string, number>) =>
    (scope: 'token' | 'workflow', id: string): WindowCounts => {
      reads.push(`${scope}:${id}`);
      return { minute: byScope[scope] ?? 0, hour: byScope[scope] ?? 0, day: byScope[scope] ?? 0 };
    };

  it('reads and counts nothing when no limit is set', () => {
    reads.length = 0;
    expect(decideLimits(request({ token: none }), counts({}))).toEqual({
      windows: windowStarts(now),
      refused: null,
      counted: [],
      // The windows before the current ones stay (a coordinator a little behind counts in them).
      pastBefore: {
        minute: windowStarts(now).minute - 60_000,
        hour: windowStarts(now).hour - 3_600_000,
        day: windowStarts(now).day - 86_400_000,
      },
    });
    expect(reads).toEqual([]);
  });

  it('refuses on the token limit first, without reading the workflow', () => {
    reads.length = 0;
    const d = decideLimits(
      request({ token: { ...none, perMinute: 1 }, workflow: { ...none, perMinute: 1 } }),
      counts({ token: 1, workflow: 1 }),
    );
    expect(d.refused).toMatchObject({ scope: 'token', refusal: { window: 'minute', limit: 1, observed: 1 } });
    expect(d.refused!.message).toMatch(/^API token rate limit exceeded for the minute/);
    expect(reads).toEqual(['token:tok']);
  });

  it('refuses on the workflow limit, naming the workflow', () => {
    const d = decideLimits(request({ workflow: { ...none, perHour: 2 } }), counts({ workflow: 2 }));
    expect(d.refused).toMatchObject({ scope: 'workflow', refusal: { window: 'hour', limit: 2 } });
    expect(d.refused!.message).toMatch(/^Rate limit of workflow `deploy` exceeded for the hour/);
  });

  it('lets a forced run past the workflow limit, still counting it', () => {
    const d = decideLimits(request({ forced: true, workflow: { ...none, perMinute: 1 } }), counts({ workflow: 5 }));
    expect(d.refused).toBeNull();
    expect(d.counted).toEqual([{ scope: 'workflow', id: 'wf' }]);
  });

  it('counts every limited scope of an admitted call', () => {
    const d = decideLimits(
      request({ token: { ...none, perDay: 10 }, workflow: { ...none, perMinute: 10 } }),
      counts({ token: 1, workflow: 1 }),
    );
    expect(d.refused).toBeNull();
    expect(d.counted).toEqual([
      { scope: 'token', id: 'tok' },
      { scope: 'workflow', id: 'wf' },
    ]);
  });
});
