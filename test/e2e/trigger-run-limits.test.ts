import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../helpers/agent.js';
import { auditEntries } from '../helpers/audit.js';
import { issueApiToken, type TokenLimits } from '../helpers/tokens.js';
import { DAY, HOUR, MINUTE, startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/**
 * Workflow and token job limits on trigger runs: each window of each, both must pass, force,
 * the spec's 429 bodies, Retry-After, rejected jobs, rate_limit_blocks rows and audit entries.
 * A fake clock moves across windows; every test first moves to 5 s past the start of a window.
 */

const NAMES = [
  'w-minute',
  'w-hour',
  'w-day',
  'w-longest',
  't-minute',
  't-hour',
  't-day',
  'both-1',
  'both-2',
  'both-3',
  'force-1',
  'force-2',
];

describe('trigger-run rate limits', () => {
  let f: RunFixture;

  beforeAll(async () => {
    f = await startRunFixture(NAMES.map((name) => workflow(name)));
  });
  afterAll(() => f?.close());

  /** Moves the clock to 5 s past the start of the next `window`. */
  const alignTo = (window: number) => {
    const now = f.clock.now();
    f.clock.advance(now - (now % window) + window + 5000 - now);
  };

  const setup = async (name: string, workflowLimits: Record<string, number | null>, tokenLimits: TokenLimits = {}) => {
    const trigger = await f.createTrigger({ workflowName: name, name });
    const workflowId = await f.workflowId(name);
    if (Object.keys(workflowLimits).length > 0) await f.setWorkflowLimits(workflowId, workflowLimits);
    const issued = await issueApiToken(
      await f.owner(),
      f.t.orgId,
      [{ type: 'trigger', triggerIds: [trigger.id] }],
      tokenLimits,
    );
    const { token, id: tokenId } = issued;
    return { trigger, workflowId, token, tokenId, run: (body: object = {}) => f.run(token, trigger.id, body) };
  };

  /** The block rows of a job: the API does not show them. */
  const blocksOf = (jobId: string) => f.t.sql.all('SELECT * FROM rate_limit_blocks WHERE job_id = ?', jobId);
  const auditFor = async (jobId: string) =>
    (await auditEntries(await f.owner(), f.t.orgId, 'rate_limit.block')).filter((e) => e.metadata.jobId === jobId);
  const lastJob = async (triggerId: string) => (await f.jobsOf(triggerId)).at(-1)!;

  describe('of a workflow', () => {
    it('refuses the call past the per-minute limit with the workflow 429 body, a rejected job and a block row', async () => {
      alignTo(MINUTE);
      const s = await setup('w-minute', { rateLimitPerMinute: 2 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).status).toBe(202);
      const res = await s.run({ ref: 'main' });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('55');
      expect(res.body).toEqual({
        statusCode: 429,
        code: 'rate_limited',
        message:
          'Rate limit of workflow `w-minute` exceeded for the minute: 2 runs this minute (limit 2), ' +
          '2 runs this hour (no limit), 2 runs today (no limit)',
        window: 'minute',
      });
      const job = await lastJob(s.trigger.id);
      expect(job).toMatchObject({
        status: 'rejected',
        errorMessage: res.body.message,
        ref: 'main',
        workflowId: s.workflowId,
      });
      expect(job.finishedAt).not.toBeNull();
      expect((await f.jobsOf(s.trigger.id)).map((j) => j.status)).toEqual(['pending', 'pending', 'rejected']);
      expect(await blocksOf(job.id)).toEqual([
        expect.objectContaining({
          org_id: f.t.orgId,
          workflow_id: s.workflowId,
          trigger_id: s.trigger.id,
          api_token_id: s.tokenId,
          window: 'minute',
          limit_value: 2,
          observed: 2,
        }),
      ]);
      expect(await auditFor(job.id)).toEqual([
        expect.objectContaining({
          actorType: 'api_token',
          actorId: s.tokenId,
          targetType: 'workflow',
          targetId: s.workflowId,
          metadata: {
            scope: 'workflow',
            window: 'minute',
            limit: 2,
            observed: 2,
            workflowId: s.workflowId,
            jobId: job.id,
          },
        }),
      ]);
      f.clock.advance(30_000);
      const still = await s.run();
      expect(still.status).toBe(429);
      expect(still.headers.get('retry-after')).toBe('25');
      f.clock.advance(25_000);
      expect((await s.run()).status).toBe(202);
    });

    it('refuses past the per-hour limit until the hour ends', async () => {
      alignTo(HOUR);
      const s = await setup('w-hour', { rateLimitPerHour: 3 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).status).toBe(202);
      f.clock.advance(10 * MINUTE);
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({
        window: 'hour',
        message: expect.stringContaining('3 runs this hour (limit 3)'),
      });
      expect(res.headers.get('retry-after')).toBe(String(HOUR / 1000 - 10 * 60 - 5));
      f.clock.advance(49 * MINUTE);
      expect((await s.run()).status).toBe(429);
      f.clock.advance(MINUTE);
      expect((await s.run()).status).toBe(202);
    });

    it('refuses past the per-day limit until the UTC day ends', async () => {
      alignTo(DAY);
      const s = await setup('w-day', { rateLimitPerDay: 2 });
      expect((await s.run()).status).toBe(202);
      f.clock.advance(5 * HOUR);
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.window).toBe('day');
      expect(res.headers.get('retry-after')).toBe(String(DAY / 1000 - 5 * 3600 - 5));
      f.clock.advance(18 * HOUR);
      expect((await s.run()).status).toBe(429);
      f.clock.advance(HOUR);
      expect((await s.run()).status).toBe(202);
    });

    it('names the longest window when several refuse, and counts only while a limit is set', async () => {
      alignTo(MINUTE);
      const s = await setup('w-longest', {});
      expect((await s.run()).status).toBe(202);
      // The run made before any limit existed was not counted.
      await f.setWorkflowLimits(s.workflowId, { rateLimitPerMinute: 1, rateLimitPerDay: 1 });
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.window).toBe('day');
      expect(res.headers.get('retry-after')).toBe(String((DAY - (f.clock.now() % DAY)) / 1000));
      await f.setWorkflowLimits(s.workflowId, { rateLimitPerMinute: null, rateLimitPerDay: null });
      expect((await s.run()).status).toBe(202);
    });
  });

  describe('of a token', () => {
    it('refuses past the per-minute limit with the general 429 body, a rejected job and no block row', async () => {
      alignTo(MINUTE);
      const s = await setup('t-minute', {}, { rateLimitPerMinute: 2 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('55');
      expect(res.body).toEqual({
        statusCode: 429,
        code: 'rate_limited',
        message:
          'API token rate limit exceeded for the minute: 2 jobs this minute (limit 2), 2 jobs this hour (no limit), ' +
          '2 jobs today (no limit); retry in 55 s',
        retryAfter: 55,
      });
      const job = await lastJob(s.trigger.id);
      expect(job).toMatchObject({ status: 'rejected', errorMessage: res.body.message });
      expect(await blocksOf(job.id)).toEqual([]);
      expect(await auditFor(job.id)).toEqual([
        expect.objectContaining({
          actorId: s.tokenId,
          targetType: 'api_token',
          targetId: s.tokenId,
          metadata: { scope: 'token', window: 'minute', limit: 2, observed: 2, jobId: job.id },
        }),
      ]);
      f.clock.advance(55_000);
      expect((await s.run()).status).toBe(202);
    });

    it('refuses past the per-hour limit until the hour ends', async () => {
      alignTo(HOUR);
      const s = await setup('t-hour', {}, { rateLimitPerHour: 2 });
      expect((await s.run()).status).toBe(202);
      f.clock.advance(30 * MINUTE);
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.retryAfter).toBe(30 * 60 - 5);
      expect(res.headers.get('retry-after')).toBe(String(30 * 60 - 5));
      f.clock.advance(30 * MINUTE);
      expect((await s.run()).status).toBe(202);
    });

    it('refuses past the per-day limit until the UTC day ends', async () => {
      alignTo(DAY);
      const s = await setup('t-day', {}, { rateLimitPerDay: 1 });
      expect((await s.run()).status).toBe(202);
      f.clock.advance(12 * HOUR);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.retryAfter).toBe(12 * 3600 - 5);
      expect(res.body.message).toContain('for the day');
      f.clock.advance(12 * HOUR);
      expect((await s.run()).status).toBe(202);
    });
  });

  describe('together', () => {
    it('refuses with the workflow body when only the workflow limit is reached', async () => {
      alignTo(MINUTE);
      const s = await setup('both-1', { rateLimitPerMinute: 2 }, { rateLimitPerMinute: 5 });
      await s.run();
      await s.run();
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.window).toBe('minute');
      expect(res.body.retryAfter).toBeUndefined();
    });

    it('refuses with the token body when only the token limit is reached', async () => {
      alignTo(MINUTE);
      const s = await setup('both-2', { rateLimitPerMinute: 5 }, { rateLimitPerMinute: 2 });
      await s.run();
      await s.run();
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.retryAfter).toBe(55);
      expect(res.body.window).toBeUndefined();
    });

    it('does not count refused calls against either limit', async () => {
      alignTo(HOUR);
      const s = await setup('both-3', { rateLimitPerMinute: 2 }, { rateLimitPerHour: 3 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).body.window).toBe('minute');
      f.clock.advance(MINUTE);
      expect((await s.run()).status).toBe(202);
      const res = await s.run();
      expect(res.status).toBe(429);
      expect(res.body.message).toContain('3 jobs this hour (limit 3)');
      expect((await f.jobsOf(s.trigger.id)).map((j) => j.status)).toEqual([
        'pending',
        'pending',
        'rejected',
        'pending',
        'rejected',
      ]);
    });
  });

  describe('force', () => {
    it("bypasses the workflow limit for an owner's token, and still counts the run", async () => {
      alignTo(MINUTE);
      const s = await setup('force-1', { rateLimitPerMinute: 1 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run()).status).toBe(429);
      const forced = await s.run({ force: true, forceReason: 'release blocker' });
      expect(forced.status, forced.text).toBe(202);
      expect(await f.job(forced.body.jobId)).toMatchObject({
        status: 'pending',
        forced: true,
        forceReason: 'release blocker',
      });
      const after = await s.run();
      expect(after.status).toBe(429);
      expect(after.body.message).toContain('2 runs this minute (limit 1)');
    });

    it('does not bypass the token limit, and stores the refused forced call', async () => {
      alignTo(MINUTE);
      const s = await setup('force-2', { rateLimitPerMinute: 1 }, { rateLimitPerMinute: 2 });
      expect((await s.run()).status).toBe(202);
      expect((await s.run({ force: true, forceReason: 'r' })).status).toBe(202);
      const res = await s.run({ force: true, forceReason: 'r' });
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ code: 'rate_limited', retryAfter: 55 });
      expect(await lastJob(s.trigger.id)).toMatchObject({ status: 'rejected', forced: true, forceReason: 'r' });
      const forceRuns = await auditEntries(await f.owner(), f.t.orgId, 'trigger.force_run');
      expect(forceRuns.filter((e) => e.targetId === s.trigger.id)).toHaveLength(1);
    });
  });
});
