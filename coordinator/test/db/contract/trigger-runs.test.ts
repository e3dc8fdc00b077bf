import { beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../../src/domain/model/trigger-runs.js';
import { newId } from '../../../src/util/ids.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { orgWithAgent } from './fixture.js';

const NOW = Date.UTC(2030, 0, 1, 10, 0, 5);
const none = { perMinute: null, perHour: null, perDay: null };
const databases = databasesOfThisFile();

describe.each(DATABASES)('trigger-run admission (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, new Date(NOW).toISOString()));
  });

  const request = (over: Partial<AdmissionRequest> & { forced?: boolean; now?: number } = {}): AdmissionRequest => {
    const now = over.now ?? NOW;
    return {
      job: {
        id: newId(),
        orgId,
        kind: 'trigger',
        source: 'webhook',
        triggerId: 'trigger-1',
        agentId,
        workflowId: 'workflow-1',
        workflowName: 'build',
        ref: null,
        debug: false,
        params: {},
        forced: over.forced ?? false,
        forceReason: over.forced ? 'why' : null,
        apiTokenId: 'token-1',
        userId: null,
        timeoutMs: null,
        createdAt: new Date(now).toISOString(),
      },
      now,
      idempotency: null,
      token: { id: 'token-1', limits: none },
      workflowLimits: none,
      ...over,
    };
  };
  const statuses = async () =>
    (await t.rows<{ status: string }>('SELECT status FROM jobs ORDER BY seq')).map((r) => r.status);
  const count = async (sql: string) => Number((await t.rows<{ n: number }>(sql))[0]!.n);

  it('makes one job from many admissions with one key at once, from two coordinators', async () => {
    const idempotency = { key: 'k', requestHash: 'h', ttlMs: 86_400_000 };
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 ? t.other : t.repos).triggerRuns.admit(request({ idempotency }))),
    );
    const admitted = outcomes.filter((o) => o.outcome === 'admitted');
    expect(admitted).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'repeated')).toHaveLength(49);
    expect(
      new Set(outcomes.map((o) => (o.outcome === 'admitted' || o.outcome === 'repeated' ? o.jobId : null))).size,
    ).toBe(1);
    expect(await statuses()).toEqual(['pending']);
    const conflict = await t.repos.triggerRuns.admit(
      request({ idempotency: { ...idempotency, requestHash: 'other' } }),
    );
    expect(conflict).toEqual({ outcome: 'idempotency_conflict' });
    expect(await statuses()).toEqual(['pending']);
  });

  it('refuses calls made at once past the limit, from two coordinators, storing rejected jobs and block rows', async () => {
    const workflowLimits = { ...none, perMinute: 3 };
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) => (i % 2 ? t.other : t.repos).triggerRuns.admit(request({ workflowLimits }))),
    );
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['admitted', 'admitted', 'admitted', 'refused', 'refused']);
    expect((await statuses()).sort()).toEqual(['pending', 'pending', 'pending', 'rejected', 'rejected']);
    const blocks = await t.rows('SELECT "window", limit_value, observed FROM rate_limit_blocks');
    expect(blocks).toEqual([
      { window: 'minute', limit_value: 3, observed: 3 },
      { window: 'minute', limit_value: 3, observed: 3 },
    ]);
  });

  it("keeps a chat delivery's key for the call a limit refused: its deliveries at once, from two coordinators, and later ones make one rejected job", async () => {
    const workflowLimits = { ...none, perMinute: 1 };
    expect((await t.repos.triggerRuns.admit(request({ workflowLimits }))).outcome).toBe('admitted');
    const idempotency = { key: 'discord:1180000000000042002', requestHash: 'h', ttlMs: 86_400_000, keepRefused: true };
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? t.other : t.repos).triggerRuns.admit(request({ idempotency, workflowLimits })),
      ),
    );
    const refused = outcomes.filter((o) => o.outcome === 'refused');
    expect(refused).toHaveLength(1);
    const jobId = refused[0]!.jobId;
    expect(outcomes.filter((o) => o.outcome === 'repeated' && o.jobId === jobId)).toHaveLength(5);
    // The next minute, when the limit would let a new call through, the message is still the refused one.
    const later = await t.repos.triggerRuns.admit(request({ idempotency, workflowLimits, now: NOW + 60_000 }));
    expect(later).toEqual({ outcome: 'repeated', jobId });
    expect(await statuses()).toEqual(['pending', 'rejected']);
    expect(await count('SELECT count(*) AS n FROM rate_limit_blocks')).toBe(1);
    // An Idempotency-Key of the public API is not kept: the call may be made again once the window allows it.
    const apiKey = { key: 'k', requestHash: 'h', ttlMs: 86_400_000 };
    expect((await t.repos.triggerRuns.admit(request({ idempotency: apiKey, workflowLimits }))).outcome).toBe('refused');
    const retried = await t.repos.triggerRuns.admit(
      request({ idempotency: apiKey, workflowLimits, now: NOW + 60_000 }),
    );
    expect(retried.outcome).toBe('admitted');
  });

  it('checks the token before the workflow, and lets force bypass only the workflow', async () => {
    const token = { id: 'token-1', limits: { ...none, perHour: 2 } };
    const workflowLimits = { ...none, perMinute: 1 };
    expect((await t.repos.triggerRuns.admit(request({ token, workflowLimits }))).outcome).toBe('admitted');
    const refused = await t.repos.triggerRuns.admit(request({ token, workflowLimits }));
    expect(refused).toMatchObject({ outcome: 'refused', scope: 'workflow' });
    expect((await t.repos.triggerRuns.admit(request({ token, workflowLimits, forced: true }))).outcome).toBe(
      'admitted',
    );
    const tokenRefused = await t.repos.triggerRuns.admit(request({ token, workflowLimits, forced: true }));
    expect(tokenRefused).toMatchObject({
      outcome: 'refused',
      scope: 'token',
      refusal: { window: 'hour', observed: 2 },
    });
    expect(await count('SELECT COUNT(*) AS n FROM rate_limit_blocks')).toBe(1);
  });

  it('purges expired keys and past counters', async () => {
    const idempotency = { key: 'k', requestHash: 'h', ttlMs: 60_000 };
    const workflowLimits = { ...none, perDay: 100 };
    await t.repos.triggerRuns.admit(request({ idempotency, workflowLimits }));
    expect(await count('SELECT COUNT(*) AS n FROM rate_counters')).toBe(3);
    const later = NOW + 2 * 86_400_000;
    const again = await t.repos.triggerRuns.admit(request({ idempotency, workflowLimits, now: later }));
    expect(again.outcome).toBe('admitted');
    expect(await count('SELECT COUNT(*) AS n FROM idempotency_keys')).toBe(1);
    // Only the new call's three windows are left.
    expect(await count('SELECT COUNT(*) AS n FROM rate_counters')).toBe(3);
  });

  it('keeps the counters of a minute another coordinator, whose clock is a little behind, still counts in', async () => {
    // An hour after the other tests: `t.repos` reads 11:00:59.5; `t.other`, 1.5 s ahead, is at
    // 11:01:01 and purges what is past for it. The limit of 11:00 must still hold on `t.repos`.
    // (On SQLite both are one coordinator, with one clock.)
    const workflowLimits = { ...none, perMinute: 3 };
    const call = (now: number) => {
      const r = request({ workflowLimits, now });
      return { ...r, job: { ...r.job, workflowId: 'workflow-skewed' } };
    };
    const [behind, ahead] = [NOW + 3_600_000 + 54_500, NOW + 3_600_000 + 56_000];
    expect((await t.repos.triggerRuns.admit(call(behind))).outcome).toBe('admitted');
    expect((await t.repos.triggerRuns.admit(call(behind))).outcome).toBe('admitted');
    expect((await t.other.triggerRuns.admit(call(ahead))).outcome).toBe('admitted');
    expect((await t.repos.triggerRuns.admit(call(behind))).outcome).toBe('admitted');
    expect((await t.repos.triggerRuns.admit(call(behind))).outcome).toBe('refused');
  });

  it('counts only the scopes that have a limit', async () => {
    await t.repos.triggerRuns.admit(request());
    expect(await count('SELECT COUNT(*) AS n FROM rate_counters')).toBe(0);
    await t.repos.triggerRuns.admit(request({ token: { id: 'token-1', limits: { ...none, perDay: 5 } } }));
    expect(await t.rows('SELECT DISTINCT scope FROM rate_counters')).toEqual([{ scope: 'token' }]);
  });

  it('reads the result of a job', async () => {
    const outcome = await t.repos.triggerRuns.admit(request());
    const jobId = outcome.outcome === 'admitted' ? outcome.jobId : '';
    expect(await t.repos.triggerRuns.jobResult(jobId)).toEqual({
      status: 'pending',
      exitCode: null,
      errorMessage: null,
      output: null,
    });
    expect(await t.repos.triggerRuns.jobResult(newId())).toBeNull();
  });

  it('claims a scheduled occurrence once, and skips one whose previous scheduled job is still open', async () => {
    const scheduledAt = '2030-01-01T10:00:00.000Z';
    const cron = (at: string, overlap: 'skip' | 'queue' = 'skip') =>
      request({ job: { ...request().job, source: 'cron' }, occurrence: { scheduledAt: at, overlap }, token: null });
    const outcomes = await Promise.all([
      t.repos.triggerRuns.admit(cron(scheduledAt)),
      t.other.triggerRuns.admit(cron(scheduledAt)),
    ]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['admitted', 'claimed_before']);
    const next = '2030-01-01T10:01:00.000Z';
    expect(await t.repos.triggerRuns.admit(cron(next))).toEqual({ outcome: 'skipped_overlap' });
    expect((await t.repos.triggerRuns.admit(cron('2030-01-01T10:02:00.000Z', 'queue'))).outcome).toBe('admitted');
    const occurrences = await t.repos.cronOccurrences.list('trigger-1', { limit: 10 });
    expect(occurrences.map((o) => [o.scheduledAt, o.outcome, o.reason, o.jobStatus])).toEqual([
      ['2030-01-01T10:02:00.000Z', 'job_created', null, 'pending'],
      [next, 'skipped', 'overlap', null],
      [scheduledAt, 'job_created', null, 'pending'],
    ]);
    expect(await t.repos.cronOccurrences.latestScheduledAt('trigger-1')).toBe('2030-01-01T10:02:00.000Z');
    expect(
      (await t.repos.cronOccurrences.list('trigger-1', { limit: 1, before: next })).map((o) => o.scheduledAt),
    ).toEqual([scheduledAt]);
  });

  it('stores a call refused by a rule, or for a workflow it does not know, as rejected without counting it', async () => {
    const rejected = await t.repos.triggerRuns.admit(
      request({ rejection: 'The params no longer validate', workflowLimits: { ...none, perMinute: 1 } }),
    );
    expect(rejected.outcome).toBe('rejected');
    const unknown = await t.repos.triggerRuns.admit(request({ job: { ...request().job, workflowId: null } }));
    expect(unknown.outcome).toBe('rejected');
    const jobs = await t.repos.jobs.listTriggerJobs(orgId, { limit: 10 });
    expect(jobs.map((j) => [j.status, j.errorMessage])).toEqual([
      ['rejected', 'The workflow is unknown'],
      ['rejected', 'The params no longer validate'],
    ]);
    expect(jobs[0]!.finishedAt).toBe(jobs[0]!.createdAt);
    expect(await count('SELECT COUNT(*) AS n FROM rate_counters')).toBe(0);
  });
});
