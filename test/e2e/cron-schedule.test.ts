import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { eventually } from '../helpers/poll.js';

/**
 * A cron trigger firing on schedule, end to end: a real coordinator whose clock is moved so that
 * its next minute starts a few seconds after the trigger is saved, a real `drover-agent run`
 * child process running the scheduled job, and the occurrence record read over HTTP.
 */

const MINUTE = 60_000;
/** The coordinator's clock: the system's, moved by `offset` (set once the agent is ready). */
const clock = { offset: 0, now: () => Date.now() + clock.offset };

let rig: DaemonRig | undefined;
afterAll(() => rig?.close());

describe('cron schedule with a real agent', { timeout: 90_000 }, () => {
  it('fires `* * * * *` at the next minute with its fixed params and ref, and records the occurrence', async () => {
    rig = await startDaemonRig({
      workPrefix: 'drover-cron-',
      clock,
      workflows: (work) => ({
        tick: [
          'name: tick',
          'params:',
          '  - {name: env, type: enum, options: [staging, prod], required: true}',
          'steps:',
          `  - run: echo "$DROVER_PARAM_ENV $DROVER_REF" >> ${path.join(work, 'ticks')}`,
          '    shell: true',
        ],
      }),
    });
    const { t, a, work } = rig;
    // The coordinator's next minute starts 3 s from now.
    const now = Date.now();
    clock.offset = (((MINUTE - 3_000 - (now % MINUTE)) % MINUTE) + MINUTE) % MINUTE;
    const due = Math.ceil(clock.now() / MINUTE) * MINUTE;

    const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'every minute',
        type: 'cron',
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: 'tick',
        responseMode: 'async',
        cronExpression: '* * * * *',
        cronOverlapPolicy: 'queue',
        params: { env: 'prod' },
        allowedRefs: ['main'],
        ref: 'main',
      },
    });
    expect(created.status, created.text).toBe(201);
    const trigger = created.body;
    expect(trigger).toMatchObject({
      cronMissedPolicy: 'skip',
      cronOverlapPolicy: 'queue',
      params: { env: 'prod' },
      ref: 'main',
      nextRunAt: new Date(due).toISOString(),
      lastOccurrences: [],
    });
    expect(trigger.nextRuns[1]).toEqual({
      at: new Date(due + MINUTE).toISOString(),
      localTime: new Date(due + MINUTE).toISOString().replace('.000Z', '+00:00'),
    });

    const occurrencesPath = `/orgs/${t.orgId}/triggers/${trigger.id}/occurrences`;
    const [occurrence] = await eventually(
      async () => {
        const res = await t.owner.get(occurrencesPath);
        return res.body.length > 0 && res.body[0].jobStatus === 'success' ? res.body : undefined;
      },
      30_000,
      'the scheduled job to run',
    );
    expect(occurrence).toMatchObject({
      scheduledAt: new Date(due).toISOString(),
      outcome: 'job_created',
      jobId: expect.any(String),
      jobStatus: 'success',
      reason: null,
      firstScheduledAt: null,
    });
    expect(fs.readFileSync(path.join(work, 'ticks'), 'utf8')).toBe('prod main\n');
    const job = await t.owner.get(`/jobs/${occurrence.jobId}`);
    expect(job.body).toMatchObject({ source: 'cron', triggerId: trigger.id, ref: 'main', params: { env: 'prod' } });

    // Disabled: no next run, and the view keeps the last occurrences.
    const paused = await t.owner.patch(`/orgs/${t.orgId}/triggers/${trigger.id}`, { body: { cronEnabled: false } });
    expect(paused.body).toMatchObject({ cronEnabled: false, nextRunAt: null, nextRuns: [] });
    expect(paused.body.lastOccurrences[0]).toMatchObject({ scheduledAt: occurrence.scheduledAt });
  });

  it('pages through the occurrences, newest first', async () => {
    const { t, a } = rig!;
    const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'paged',
        type: 'cron',
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: 'tick',
        responseMode: 'async',
        cronExpression: '0 0 1 1 *',
        params: { env: 'prod' },
      },
    });
    const id = created.body.id as string;
    // Three years of a yearly schedule's history: no API makes past occurrences, so they are written.
    for (const year of [2021, 2022, 2023]) {
      await t.sql.run(
        `INSERT INTO cron_occurrences (trigger_id, scheduled_at, org_id, outcome, reason, recorded_at)
         VALUES (?, ?, ?, 'skipped', 'missed', ?)`,
        id,
        `${year}-01-01T00:00:00.000Z`,
        t.orgId,
        '2024-01-01T00:00:00.000Z',
      );
    }
    const first = await t.owner.get(`/orgs/${t.orgId}/triggers/${id}/occurrences?limit=2`);
    expect(first.body.map((o: { scheduledAt: string }) => o.scheduledAt)).toEqual([
      '2023-01-01T00:00:00.000Z',
      '2022-01-01T00:00:00.000Z',
    ]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toBeTruthy();
    const second = await t.owner.get(`/orgs/${t.orgId}/triggers/${id}/occurrences?limit=2&cursor=${cursor}`);
    expect(second.body.map((o: { scheduledAt: string }) => o.scheduledAt)).toEqual(['2021-01-01T00:00:00.000Z']);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    // A cursor past the last storable instant (the year 9999), or past what a Date holds: all of them.
    for (const far of ['253402300800000', '8640000000000000', '9000000000000000']) {
      const page = await t.owner.get(`/orgs/${t.orgId}/triggers/${id}/occurrences?cursor=${far}`);
      expect(page.status, page.text).toBe(200);
      expect(page.body).toHaveLength(3);
    }
    const unknown = await t.owner.get(`/orgs/${t.orgId}/triggers/00000000-0000-4000-8000-000000000000/occurrences`);
    expect(unknown.status).toBe(404);
  });
});
