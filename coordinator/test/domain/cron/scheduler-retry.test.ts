import { expect, it } from 'vitest';
import { CronScheduler, type CronSchedulerDeps } from '../../../src/domain/cron/scheduler.js';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import { ManualTime } from './harness.js';

/**
 * An occurrence whose firing fails (the database could not be written) is fired again after a
 * pause while it is on time, and recorded as missed after: never lost with a log line only
 * (docs/schedules.md, "Every occurrence is accounted for"). Fake repositories: the failure is the
 * point, and a real database does not fail on cue.
 */
function scheduler(time: ManualTime, failures: number) {
  const trigger = {
    id: 't1',
    orgId: 'o1',
    type: 'cron',
    cronEnabled: true,
    cronExpression: '* * * * *',
    cronTimezone: 'UTC',
    cronMissedPolicy: 'skip',
    cronSince: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-01T00:00:00.000Z',
  } as Trigger;
  const records: string[] = [];
  let calls = 0;
  const deps: CronSchedulerDeps = {
    triggers: { listEnabledCron: async () => ({ triggers: [trigger], damaged: [] }), findById: async () => trigger },
    occurrences: {
      recordSkipped: async (skipped) => {
        for (const s of skipped) records.push(`${s.scheduledAt} skipped ${s.reason}`);
        return skipped.length;
      },
      latestScheduledAt: async () => null,
    },
    runs: {
      runOccurrence: async (input) => {
        calls += 1;
        if (calls <= failures) throw new Error('SQLITE_BUSY: database is locked');
        records.push(`${input.scheduledAt} job_created`);
        return { outcome: 'job_created', jobId: `j${calls}` } as Awaited<
          ReturnType<CronSchedulerDeps['runs']['runOccurrence']>
        >;
      },
    },
    clock: time,
    timers: time,
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  };
  const s = new CronScheduler(deps);
  time.schedulers.push(s);
  return { s, records };
}

it('fires an occurrence again after its firing failed, while it is on time', async () => {
  const time = new ManualTime('2030-01-01T00:00:30.000Z');
  const { s, records } = scheduler(time, 3); // fails at 00:01:00, +1 s and +2 s; fired at +4 s
  await s.start();
  await time.advanceTo('2030-01-01T00:02:30.000Z');
  expect(records).toEqual(['2030-01-01T00:01:00.000Z job_created', '2030-01-01T00:02:00.000Z job_created']);
  await s.stop();
});

it('records an occurrence missed when its firing failed until it was no longer on time', async () => {
  const time = new ManualTime('2030-01-01T00:00:30.000Z');
  // Tried at 00:01:00, then after pauses of 1, 2, 4, 8, 15, 15 s; at 00:02:00 the next occurrence
  // is due with it: that one is fired (and fails too), 00:01 is recorded missed.
  const { s, records } = scheduler(time, 9);
  await s.start();
  await time.advanceTo('2030-01-01T00:01:59.000Z');
  expect(records).toEqual([]);
  await time.advanceTo('2030-01-01T00:02:01.000Z');
  expect(records).toEqual(['2030-01-01T00:01:00.000Z skipped missed']);
  await time.advanceTo('2030-01-01T00:02:50.000Z');
  expect(records).toEqual(['2030-01-01T00:01:00.000Z skipped missed', '2030-01-01T00:02:00.000Z job_created']);
  await s.stop();
});
