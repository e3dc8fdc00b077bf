import { afterEach, describe, expect, it } from 'vitest';
import { ManualTime, onPostgres, removeWorldData, startCronWorld, WORKFLOW, type CronWorld } from './harness.js';
import { HEAP_SLACK } from '../../../src/domain/cron/scheduler.js';

/**
 * The cron scheduler on a manual clock and timer, inside real coordinators over SQLite files (in
 * the PostgreSQL pass, PostgreSQL databases: harness.ts): occurrences, daylight-saving changes,
 * missed and overlap policies, changes taking effect at once, and two schedulers sharing one
 * database.
 */

const worlds: CronWorld[] = [];
afterEach(async () => {
  const closing = worlds.splice(0).reverse();
  for (const world of closing) await world.close();
  // Once every world is closed: worlds may share a data directory.
  for (const dataDir of new Set(closing.map((w) => w.dataDir))) await removeWorldData(dataDir);
});

async function world(time: ManualTime, dataDir?: string): Promise<CronWorld> {
  const w = await startCronWorld(time, dataDir);
  worlds.push(w);
  return w;
}

const scheduled = async (w: CronWorld, id: string) => (await w.occurrences(id)).map((o) => o.scheduled_at);

describe('cron scheduler', () => {
  it('fires an enabled trigger at each occurrence: one cron job with its fixed params per occurrence', async () => {
    const time = new ManualTime('2030-01-07T10:01:00.000Z');
    const w = await world(time);
    const id = await w.cron({ cronExpression: '*/5 * * * *', ref: 'main', cronOverlapPolicy: 'queue' });
    expect((await w.coordinator.ctx.triggers.get(w.actor, id)).nextRunAt).toBe('2030-01-07T10:05:00.000Z');

    await time.advanceTo('2030-01-07T10:04:59.000Z');
    expect(await w.jobs(id)).toEqual([]);
    await time.advanceTo('2030-01-07T10:10:30.000Z');
    const jobs = await w.jobs(id);
    expect(jobs.map((j) => [j.status, j.source])).toEqual([
      ['pending', 'cron'],
      ['pending', 'cron'],
    ]);
    expect(JSON.parse(jobs[0]!.params)).toEqual({ env: 'staging', replicas: 2 });
    expect(await w.occurrences(id)).toEqual([
      {
        scheduled_at: '2030-01-07T10:05:00.000Z',
        outcome: 'job_created',
        job_id: jobs[0]!.id,
        reason: null,
        first_scheduled_at: null,
      },
      {
        scheduled_at: '2030-01-07T10:10:00.000Z',
        outcome: 'job_created',
        job_id: jobs[1]!.id,
        reason: null,
        first_scheduled_at: null,
      },
    ]);
    const view = await w.coordinator.ctx.triggers.get(w.actor, id);
    expect(view.nextRunAt).toBe('2030-01-07T10:15:00.000Z');
    expect(view.lastOccurrences.map((o) => [o.scheduledAt, o.outcome, o.jobStatus])).toEqual([
      ['2030-01-07T10:10:00.000Z', 'job_created', 'pending'],
      ['2030-01-07T10:05:00.000Z', 'job_created', 'pending'],
    ]);
  });

  it('never fires a trigger created with cronEnabled false', async () => {
    const time = new ManualTime('2030-01-07T10:01:00.000Z');
    const w = await world(time);
    const id = await w.cron({ cronExpression: '* * * * *', cronEnabled: false });
    await time.advanceTo('2030-01-07T10:10:00.000Z');
    expect(await w.jobs(id)).toEqual([]);
    expect(await w.occurrences(id)).toEqual([]);
    const view = await w.coordinator.ctx.triggers.get(w.actor, id);
    expect(view).toMatchObject({ nextRunAt: null, nextRuns: [] });
  });

  // Once, on SQLite: which instants a zone's expression names is the scheduler's arithmetic, which
  // stores them as every other occurrence is stored (the PostgreSQL pass proves that below).
  describe.skipIf(onPostgres)('daylight-saving changes', () => {
    const cases = [
      {
        what: 'Europe/Paris, spring: 02:30 does not exist and fires once at 03:00 CEST',
        zone: 'Europe/Paris',
        expression: '30 2 * * *',
        from: '2025-03-29T12:00:00.000Z',
        to: '2025-03-31T12:00:00.000Z',
        fired: ['2025-03-30T01:00:00.000Z', '2025-03-31T00:30:00.000Z'],
      },
      // croner moves a skipped time only for one minute and one hour: these it dropped.
      ...['0,30 2 * * *', '*/15 2 * * *', '* 2 * * *', '30 1-2 * * *', '30 */2 * * *'].map((expression) => ({
        what: `Europe/Berlin, spring: \`${expression}\` fires once at 03:00 CEST for the skipped hour`,
        zone: 'Europe/Berlin',
        expression,
        from: '2025-03-30T00:59:35.000Z',
        to: '2025-03-30T01:10:00.000Z',
        fired: ['2025-03-30T01:00:00.000Z'],
      })),
      {
        what: 'Europe/Berlin, spring: an expression with nothing in the skipped hour is not moved',
        zone: 'Europe/Berlin',
        expression: '30 1,4 * * *',
        from: '2025-03-29T23:00:00.000Z',
        to: '2025-03-30T03:00:00.000Z',
        fired: ['2025-03-30T00:30:00.000Z', '2025-03-30T02:30:00.000Z'],
      },
      {
        what: 'Europe/Paris, autumn: 02:30 occurs twice and fires once',
        zone: 'Europe/Paris',
        expression: '30 2 * * *',
        from: '2025-10-25T12:00:00.000Z',
        to: '2025-10-27T12:00:00.000Z',
        fired: ['2025-10-26T00:30:00.000Z', '2025-10-27T01:30:00.000Z'],
      },
      {
        what: 'Europe/Paris, autumn: every half hour skips the repeated 02:00 and 02:30',
        zone: 'Europe/Paris',
        expression: '*/30 * * * *',
        from: '2025-10-25T23:50:00.000Z',
        to: '2025-10-26T02:10:00.000Z',
        fired: ['2025-10-26T00:00:00.000Z', '2025-10-26T00:30:00.000Z', '2025-10-26T02:00:00.000Z'],
      },
      {
        what: 'America/New_York, spring: 02:30 does not exist and fires once at 03:00 EDT',
        zone: 'America/New_York',
        expression: '30 2 * * *',
        from: '2025-03-08T12:00:00.000Z',
        to: '2025-03-10T12:00:00.000Z',
        fired: ['2025-03-09T07:00:00.000Z', '2025-03-10T06:30:00.000Z'],
      },
      {
        what: 'America/New_York, autumn: 01:30 occurs twice and fires once',
        zone: 'America/New_York',
        expression: '30 1 * * *',
        from: '2025-11-01T12:00:00.000Z',
        to: '2025-11-03T12:00:00.000Z',
        fired: ['2025-11-02T05:30:00.000Z', '2025-11-03T06:30:00.000Z'],
      },
      {
        what: 'America/New_York, autumn: hourly fires the repeated 01:00 once',
        zone: 'America/New_York',
        expression: '0 * * * *',
        from: '2025-11-02T04:30:00.000Z',
        to: '2025-11-02T07:30:00.000Z',
        fired: ['2025-11-02T05:00:00.000Z', '2025-11-02T07:00:00.000Z'],
      },
    ];
    for (const c of cases) {
      it(c.what, async () => {
        const time = new ManualTime(c.from);
        const w = await world(time);
        const id = await w.cron({ cronExpression: c.expression, cronTimezone: c.zone, cronOverlapPolicy: 'queue' });
        await time.advanceTo(c.to);
        expect(await scheduled(w, id)).toEqual(c.fired);
        expect(await w.jobs(id)).toHaveLength(c.fired.length);
      });
    }

    it('shows the next runs in UTC and in the zone', async () => {
      const time = new ManualTime('2025-03-29T12:00:00.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '30 2 * * *', cronTimezone: 'Europe/Paris' });
      const view = await w.coordinator.ctx.triggers.get(w.actor, id);
      expect(view.nextRuns.slice(0, 2)).toEqual([
        { at: '2025-03-30T01:00:00.000Z', localTime: '2025-03-30T03:00:00+02:00' },
        { at: '2025-03-31T00:30:00.000Z', localTime: '2025-03-31T02:30:00+02:00' },
      ]);
    });
  });

  describe('missed occurrences', () => {
    it('skip: occurrences that passed while the coordinator was down are recorded as missed, none fires', async () => {
      const time = new ManualTime('2030-01-07T10:30:00.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '0 * * * *' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-07T13:30:00.000Z');
      const w = await world(time, first.dataDir);
      expect(await w.jobs(id)).toEqual([]);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.outcome, o.reason])).toEqual([
        ['2030-01-07T11:00:00.000Z', 'skipped', 'missed'],
        ['2030-01-07T12:00:00.000Z', 'skipped', 'missed'],
        ['2030-01-07T13:00:00.000Z', 'skipped', 'missed'],
      ]);
      await time.advanceTo('2030-01-07T14:00:10.000Z');
      expect(await w.jobs(id)).toHaveLength(1);
      expect((await scheduled(w, id)).at(-1)).toBe('2030-01-07T14:00:00.000Z');
    });

    it('fires an occurrence a short restart delayed, whatever the policy', async () => {
      const time = new ManualTime('2030-01-07T10:30:00.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '0 * * * *' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-07T11:00:40.000Z');
      const w = await world(time, first.dataDir);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.outcome])).toEqual([
        ['2030-01-07T11:00:00.000Z', 'job_created'],
      ]);
    });

    it('run_once: fires the newest missed occurrence once within the catch-up window, the older are skipped', async () => {
      const time = new ManualTime('2030-01-07T10:30:00.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '0 * * * *', cronMissedPolicy: 'run_once' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-07T13:30:00.000Z');
      const w = await world(time, first.dataDir);
      const jobs = await w.jobs(id);
      expect(jobs).toHaveLength(1);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.outcome, o.reason, o.job_id])).toEqual([
        ['2030-01-07T11:00:00.000Z', 'skipped', 'missed', null],
        ['2030-01-07T12:00:00.000Z', 'skipped', 'missed', null],
        ['2030-01-07T13:00:00.000Z', 'job_created', null, jobs[0]!.id],
      ]);
    });

    it('counts a skipped local time missed while down at its jump, as it would have fired', async () => {
      const time = new ManualTime('2025-03-29T23:00:00.000Z');
      const first = await world(time);
      const id = await first.cron({
        cronExpression: '0,30 2,4 * * *',
        cronTimezone: 'Europe/Berlin',
        cronMissedPolicy: 'run_once',
      });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      // Down across the jump from 02:00 to 03:00 (01:00 UTC) and past 04:00 and 04:30 CEST.
      time.jumpTo('2025-03-30T02:40:00.000Z');
      const w = await world(time, first.dataDir);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.outcome, o.reason])).toEqual([
        ['2025-03-30T01:00:00.000Z', 'skipped', 'missed'],
        ['2025-03-30T02:00:00.000Z', 'skipped', 'missed'],
        ['2025-03-30T02:30:00.000Z', 'job_created', null],
      ]);
    });

    it('records the late first occurrence of a trigger just created missed, not disabled', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '0 * * * *' });
      // The wall clock steps forward an hour while the coordinator runs (a suspended VM resumed,
      // an NTP step): 11:00 is handled at its next wake, more than a minute late.
      await time.stepTo('2030-01-07T11:01:20.000Z');
      await time.advanceTo('2030-01-07T11:02:30.000Z');
      expect(await w.jobs(id)).toEqual([]);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.outcome, o.reason])).toEqual([
        ['2030-01-07T11:00:00.000Z', 'skipped', 'missed'],
      ]);
    });

    it('run_once: an occurrence older than the catch-up window is skipped, not fired', async () => {
      const time = new ManualTime('2030-01-07T01:00:00.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '0 2 * * *', cronMissedPolicy: 'run_once' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-07T05:00:00.000Z');
      const w = await world(time, first.dataDir);
      expect(await w.jobs(id)).toEqual([]);
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.reason])).toEqual([
        ['2030-01-07T02:00:00.000Z', 'missed'],
      ]);
    });

    it('never a burst: a day of per-minute occurrences makes one job and bounded records', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '* * * * *', cronMissedPolicy: 'run_once' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-08T10:00:30.000Z');
      const w = await world(time, first.dataDir);
      expect(await w.jobs(id)).toHaveLength(1);
      const records = await w.occurrences(id);
      expect(records).toHaveLength(101);
      // The oldest record stands for every occurrence from the first missed one on.
      expect(records[0]).toMatchObject({
        first_scheduled_at: '2030-01-07T10:01:00.000Z',
        scheduled_at: '2030-01-08T08:20:00.000Z',
        reason: 'missed',
      });
      expect(records.at(-1)).toMatchObject({ scheduled_at: '2030-01-08T10:00:00.000Z', outcome: 'job_created' });
    });
  });

  // The scheduler's arithmetic, once, on SQLite: the claims it relies on are proved on both below.
  describe.skipIf(onPostgres)('the clock going back (a clock fast, then corrected)', () => {
    it('fires from the new time at once, and an occurrence fired already never again', async () => {
      const time = new ManualTime('2030-01-07T12:50:00.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '*/10 * * * *', cronOverlapPolicy: 'queue' });
      await time.advanceTo('2030-01-07T13:00:30.000Z');
      expect(await scheduled(w, id)).toEqual(['2030-01-07T13:00:00.000Z']);
      // NTP steps the clock back 25 minutes, while the coordinator runs.
      await time.stepTo('2030-01-07T12:35:30.000Z');
      await time.advanceTo('2030-01-07T12:40:30.000Z');
      expect(await scheduled(w, id)).toEqual(['2030-01-07T12:40:00.000Z', '2030-01-07T13:00:00.000Z']);
      // The clock passes again the occurrence fired while it was fast: no second job.
      await time.advanceTo('2030-01-07T13:10:30.000Z');
      const minutes = ['12:40', '12:50', '13:00', '13:10'];
      expect(await scheduled(w, id)).toEqual(minutes.map((m) => `2030-01-07T${m}:00.000Z`));
      expect(await w.jobs(id)).toHaveLength(4);
    });

    it('fires from the new time after a restart on a clock behind the last occurrence', async () => {
      const time = new ManualTime('2030-01-08T10:30:00.000Z');
      const first = await world(time);
      const id = await first.cron({ cronExpression: '0 * * * *' });
      await time.advanceTo('2030-01-08T11:00:30.000Z');
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);
      time.jumpTo('2030-01-07T10:30:00.000Z');
      const w = await world(time, first.dataDir);
      expect((await w.coordinator.ctx.triggers.get(w.actor, id)).nextRunAt).toBe('2030-01-07T11:00:00.000Z');
      await time.advanceTo('2030-01-07T11:00:30.000Z');
      expect(await scheduled(w, id)).toEqual(['2030-01-07T11:00:00.000Z', '2030-01-08T11:00:00.000Z']);
    });
  });

  describe('overlap', () => {
    it('skip: an occurrence while the previous scheduled job is open is recorded as skipped (overlap)', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '* * * * *', cronOverlapPolicy: 'skip' });
      await time.advanceTo('2030-01-07T10:02:30.000Z');
      expect((await w.occurrences(id)).map((o) => [o.outcome, o.reason])).toEqual([
        ['job_created', null],
        ['skipped', 'overlap'],
      ]);
      await w.sql.run("UPDATE jobs SET status = 'success' WHERE trigger_id = ?", id);
      await time.advanceTo('2030-01-07T10:03:30.000Z');
      expect((await w.occurrences(id)).map((o) => o.outcome)).toEqual(['job_created', 'skipped', 'job_created']);
      expect(await w.jobs(id)).toHaveLength(2);
    });

    it('queue: every occurrence makes a job while the previous ones are open', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '* * * * *', cronOverlapPolicy: 'queue' });
      await time.advanceTo('2030-01-07T10:03:30.000Z');
      expect((await w.jobs(id)).map((j) => j.status)).toEqual(['pending', 'pending', 'pending']);
    });
  });

  describe('changes take effect at once', () => {
    it('a new expression, a new zone, disabling and enabling again', async () => {
      const time = new ManualTime('2030-01-07T10:01:00.000Z');
      const w = await world(time);
      const { triggers } = w.coordinator.ctx;
      const id = await w.cron({ cronExpression: '0 * * * *', cronOverlapPolicy: 'queue' });
      await triggers.update(w.actor, id, { cronExpression: '*/5 * * * *' });
      await time.advanceTo('2030-01-07T10:06:00.000Z');
      expect(await scheduled(w, id)).toEqual(['2030-01-07T10:05:00.000Z']);

      // 11:00 in Asia/Tokyo (UTC+9) is 02:00 UTC the next day; 10:30 UTC would be hourly's next.
      await triggers.update(w.actor, id, { cronExpression: '0 11 * * *', cronTimezone: 'Asia/Tokyo' });
      expect((await triggers.get(w.actor, id)).nextRunAt).toBe('2030-01-08T02:00:00.000Z');
      await time.advanceTo('2030-01-07T12:00:00.000Z');
      expect(await scheduled(w, id)).toEqual(['2030-01-07T10:05:00.000Z']);

      await triggers.update(w.actor, id, { cronExpression: '*/10 * * * *', cronTimezone: 'UTC' });
      await triggers.update(w.actor, id, { cronEnabled: false });
      await time.advanceTo('2030-01-07T12:35:00.000Z');
      expect(await w.jobs(id)).toHaveLength(1);
      await triggers.update(w.actor, id, { cronEnabled: true });
      await w.coordinator.scheduler.idle();
      expect((await w.occurrences(id)).map((o) => [o.scheduled_at, o.reason])).toEqual([
        ['2030-01-07T10:05:00.000Z', null],
        ['2030-01-07T12:10:00.000Z', 'disabled'],
        ['2030-01-07T12:20:00.000Z', 'disabled'],
        ['2030-01-07T12:30:00.000Z', 'disabled'],
      ]);
      await time.advanceTo('2030-01-07T12:40:05.000Z');
      expect(await w.jobs(id)).toHaveLength(2);

      await triggers.remove(w.actor, id);
      await time.advanceTo('2030-01-07T13:00:00.000Z');
      expect(await w.jobs(id)).toHaveLength(2);
    });
  });

  it('keeps its index bounded while a trigger is paused and resumed again and again', async () => {
    const time = new ManualTime('2030-01-07T10:00:30.000Z');
    const w = await world(time);
    const { triggers } = w.coordinator.ctx;
    // A yearly schedule: the index's item for each former schedule is due only next January.
    const id = await w.cron({ cronExpression: '0 0 1 1 *' });
    await w.cron({ name: 'other', cronExpression: '0 0 1 1 *' });
    for (let i = 0; i < 150; i++) {
      await triggers.update(w.actor, id, { cronEnabled: false });
      await triggers.update(w.actor, id, { cronEnabled: true });
    }
    await w.coordinator.scheduler.idle();
    expect(w.coordinator.scheduler.heapSize()).toBeLessThanOrEqual(2 * 2 + HEAP_SLACK);
    expect(w.coordinator.scheduler.nextDue(id)).toBe(Date.parse('2031-01-01T00:00:00.000Z'));
    await time.advanceTo('2031-01-01T00:00:05.000Z');
    expect(await w.jobs(id)).toHaveLength(1);
  });

  describe('fixed params and limits', () => {
    it('a run whose params no longer validate is a rejected job with the reason', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      const id = await w.cron({ cronExpression: '* * * * *', params: { env: 'staging' } });
      const { repos } = w.coordinator.ctx;
      await repos.workflows.replaceForAgent(
        w.actor.orgId,
        w.agentId,
        [{ ...WORKFLOW, paramsSchema: [{ name: 'region', type: 'string', required: true }] }],
        new Date(time.now()).toISOString(),
      );
      await time.advanceTo('2030-01-07T10:01:30.000Z');
      const [job] = await w.jobs(id);
      expect(job).toMatchObject({ status: 'rejected', source: 'cron' });
      expect(job!.error_message).toBe(
        "params.env: is not a parameter of this workflow (the workflow's params are `region`); " +
          'params.region: is required (a string)',
      );
      expect((await w.occurrences(id))[0]).toMatchObject({ outcome: 'job_created', job_id: job!.id });
      // Said in the log, where an operator looks when a schedule seems to do nothing.
      expect(w.warnings).toContain(`cron trigger: the scheduled job was rejected: ${job!.error_message}`);

      // Such a trigger can still be disabled and renamed; enabled again, its params are checked.
      const { triggers } = w.coordinator.ctx;
      await expect(
        triggers.update(w.actor, id, { cronEnabled: false, name: 'nightly (paused)' }),
      ).resolves.toMatchObject({ cronEnabled: false, name: 'nightly (paused)' });
      await expect(triggers.update(w.actor, id, { cronEnabled: true })).rejects.toMatchObject({
        code: 'validation_failed',
        details: [
          expect.objectContaining({ path: 'body.params.env' }),
          expect.objectContaining({ path: 'body.params.region' }),
        ],
      });
      await expect(
        triggers.update(w.actor, id, { params: { region: 'eu' }, cronEnabled: true }),
      ).resolves.toMatchObject({
        cronEnabled: true,
        params: { region: 'eu' },
      });
    });

    it("refuses params the workflow's paramsSchema refuses when the trigger is saved", async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      await expect(w.cron({ cronExpression: '* * * * *', params: { env: 'moon' } })).rejects.toMatchObject({
        code: 'validation_failed',
        details: [expect.objectContaining({ path: 'body.params.env' })],
      });
    });

    it("the workflow's rate limit applies: a refusal is a rejected job and a rate-limit block", async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const w = await world(time);
      const { repos } = w.coordinator.ctx;
      const workflow = await repos.workflows.findActiveByAgentAndName(w.agentId, 'nightly');
      await repos.workflows.setRateLimits(
        w.actor.orgId,
        workflow!.id,
        { perMinute: null, perHour: 1, perDay: null },
        new Date(time.now()).toISOString(),
      );
      const id = await w.cron({ cronExpression: '* * * * *', cronOverlapPolicy: 'queue' });
      await time.advanceTo('2030-01-07T10:02:30.000Z');
      expect((await w.jobs(id)).map((j) => j.status)).toEqual(['pending', 'rejected']);
      const blocks = (await w.sql.all<{ job_id: string }>('SELECT job_id FROM rate_limit_blocks')).map((b) => b.job_id);
      expect(blocks).toEqual([(await w.jobs(id))[1]!.id]);
    });
  });

  describe('a damaged trigger row (a hand-edited database: the API refuses such values)', () => {
    const damages = (sql: CronWorld['sql']) => [
      { field: 'cronExpression', set: "cron_expression = 'every minute'" },
      { field: 'cronTimezone', set: "cron_timezone = 'Mars/Olympus'" },
      // PostgreSQL stores instants as timestamptz: only a SQLite file can hold one that does not parse.
      ...(sql.kind === 'sqlite'
        ? [
            { field: 'cronSince', set: "cron_since = 'yesterday'" },
            { field: 'updatedAt', set: "cron_since = NULL, updated_at = 'soon'" },
            {
              field: 'lastOccurrences.scheduledAt',
              set: 'cron_since = cron_since',
              occurrence: `INSERT INTO cron_occurrences (trigger_id, scheduled_at, org_id, outcome, reason, recorded_at)
                SELECT id, 'never', org_id, 'skipped', 'missed', created_at FROM triggers WHERE id = ?`,
            },
            // And only a SQLite file a JSON column that does not parse (PostgreSQL's are of type json).
            { field: 'triggers.run_params', set: 'run_params = \'{"env":\'', what: 'row' },
            { field: 'triggers.allowed_refs', set: "allowed_refs = '[main'", what: 'row' },
            { field: 'triggers.chat_allowed_user_ids', set: "chat_allowed_user_ids = 'U1'", what: 'row' },
          ]
        : []),
    ];

    it('is taken out of the schedule with an error naming it and its field, at a change and at start; the others go on', async () => {
      const time = new ManualTime('2030-01-07T10:00:30.000Z');
      const first = await world(time);
      const damaged: { id: string; field: string; msg: string }[] = [];
      for (const damage of damages(first.sql)) {
        const id = await first.cron({ name: damage.field, cronExpression: '*/2 * * * *' });
        expect(first.coordinator.scheduler.nextDue(id)).not.toBeNull();
        // A new schedule too, as a change brings: one whose schedule is unchanged keeps its entry.
        await first.sql.run(`UPDATE triggers SET cron_expression = '* * * * *' WHERE id = ?`, id);
        await first.sql.run(`UPDATE triggers SET ${damage.set} WHERE id = ?`, id);
        if (damage.occurrence) await first.sql.run(damage.occurrence, id);
        await first.coordinator.scheduler.triggerChanged(id);
        expect(first.coordinator.scheduler.nextDue(id)).toBeNull();
        const msg = `cron trigger: its stored ${damage.what ?? 'schedule'} does not parse; not scheduled`;
        expect(first.errors.at(-1)).toMatchObject({ triggerId: id, field: damage.field, msg });
        damaged.push({ id, field: damage.field, msg });
      }
      // Listed after the damaged ones (the order they were stored in).
      const sound = await first.cron({ name: 'sound', cronExpression: '* * * * *' });
      await first.close();
      worlds.splice(worlds.indexOf(first), 1);

      const w = await world(time, first.dataDir);
      expect(w.coordinator.scheduler.nextDue(sound)).toBe(Date.parse('2030-01-07T10:01:00.000Z'));
      for (const { id } of damaged) expect(w.coordinator.scheduler.nextDue(id)).toBeNull();
      // In any order: those whose row does not parse are left out of the listing, before the others are read.
      expect(w.errors.map((e) => ({ id: e.triggerId, field: e.field, msg: e.msg }))).toEqual(
        expect.arrayContaining(damaged),
      );
      expect(w.errors).toHaveLength(damaged.length);
      await time.advanceTo('2030-01-07T10:01:30.000Z');
      expect(await scheduled(w, sound)).toEqual(['2030-01-07T10:01:00.000Z']);
    });
  });

  it('claims each occurrence once with two schedulers over one database', async () => {
    const time = new ManualTime('2030-01-07T10:00:30.000Z');
    const a = await world(time);
    const id = await a.cron({ cronExpression: '* * * * *', cronOverlapPolicy: 'queue' });
    const b = await world(time, a.dataDir);
    expect(b.coordinator.scheduler.nextDue(id)).toBe(Date.parse('2030-01-07T10:01:00.000Z'));
    await time.advanceTo('2030-01-07T10:05:30.000Z');
    expect(await scheduled(a, id)).toEqual([
      '2030-01-07T10:01:00.000Z',
      '2030-01-07T10:02:00.000Z',
      '2030-01-07T10:03:00.000Z',
      '2030-01-07T10:04:00.000Z',
      '2030-01-07T10:05:00.000Z',
    ]);
    expect(await a.jobs(id)).toHaveLength(5);
  });
});
