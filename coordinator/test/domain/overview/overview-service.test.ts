import { describe, expect, it } from 'vitest';
import { CronSchedules } from '../../../src/domain/cron/schedule.js';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import { hourBuckets, nextCronRuns, windowStart } from '../../../src/domain/overview/overview-service.js';

const NOW = Date.parse('2026-11-25T10:42:17.500Z');
const zero = { success: 0, failed: 0, timed_out: 0, cancelled: 0, rejected: 0 };

describe("the overview's hour buckets", () => {
  it('gives one bucket an hour, aligned to the hour, oldest first, the last the hour under way, zeros filled in', () => {
    const { buckets, total } = hourBuckets(NOW, 3, []);
    expect(buckets).toEqual([
      { start: '2026-11-25T08:00:00.000Z', ...zero },
      { start: '2026-11-25T09:00:00.000Z', ...zero },
      { start: '2026-11-25T10:00:00.000Z', ...zero },
    ]);
    expect(total).toBe(0);
    expect(windowStart(NOW, 3)).toBe('2026-11-25T08:00:00.000Z');
    expect(hourBuckets(NOW, 24, []).buckets).toHaveLength(24);
    expect(hourBuckets(NOW, 24, []).buckets[0]!.start).toBe('2026-11-24T11:00:00.000Z');
  });

  it('counts each outcome in its hour; open jobs count in the total only; hours outside the window are left out', () => {
    const { buckets, total } = hourBuckets(NOW, 2, [
      { hour: '2026-11-25T09', status: 'success', count: 40 },
      { hour: '2026-11-25T09', status: 'failed', count: 2 },
      { hour: '2026-11-25T10', status: 'timed_out', count: 1 },
      { hour: '2026-11-25T10', status: 'cancelled', count: 3 },
      { hour: '2026-11-25T10', status: 'rejected', count: 4 },
      { hour: '2026-11-25T10', status: 'running', count: 5 },
      { hour: '2026-11-25T10', status: 'pending', count: 6 },
      // Created after now (a clock set back): in no hour shown.
      { hour: '2026-11-25T11', status: 'success', count: 100 },
    ]);
    expect(buckets).toEqual([
      { start: '2026-11-25T09:00:00.000Z', ...zero, success: 40, failed: 2 },
      { start: '2026-11-25T10:00:00.000Z', ...zero, timed_out: 1, cancelled: 3, rejected: 4 },
    ]);
    expect(total).toBe(40 + 2 + 1 + 3 + 4 + 5 + 6);
  });
});

describe("the overview's next cron runs", () => {
  const trigger = (name: string, fields: Partial<Trigger>): Trigger =>
    ({
      id: `id-${name}`,
      name,
      type: 'cron',
      cronExpression: '0 * * * *',
      cronTimezone: 'UTC',
      cronEnabled: true,
      ...fields,
    }) as Trigger;

  it("gives each enabled cron trigger's next occurrence once, soonest first, at most the limit", () => {
    const triggers = [
      trigger('hourly', {}),
      trigger('every quarter', { cronExpression: '*/15 * * * *' }),
      trigger('disabled', { cronEnabled: false, cronExpression: '* * * * *' }),
      trigger('webhook', { type: 'webhook', cronExpression: null, cronTimezone: null, cronEnabled: null }),
      trigger('paris 2am', { cronExpression: '0 2 * * *', cronTimezone: 'Europe/Paris' }),
      trigger('also hourly', {}),
    ];
    expect(nextCronRuns(triggers, NOW, new CronSchedules(), 10)).toEqual([
      { triggerId: 'id-every quarter', name: 'every quarter', at: '2026-11-25T10:45:00.000Z' },
      { triggerId: 'id-also hourly', name: 'also hourly', at: '2026-11-25T11:00:00.000Z' },
      { triggerId: 'id-hourly', name: 'hourly', at: '2026-11-25T11:00:00.000Z' },
      // 02:00 in Paris (UTC+1 in November).
      { triggerId: 'id-paris 2am', name: 'paris 2am', at: '2026-11-26T01:00:00.000Z' },
    ]);
    expect(nextCronRuns(triggers, NOW, new CronSchedules(), 2).map((r) => r.name)).toEqual([
      'every quarter',
      'also hourly',
    ]);
    expect(nextCronRuns([], NOW, new CronSchedules(), 10)).toEqual([]);
  });
});
