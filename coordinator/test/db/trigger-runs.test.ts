import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import type { AdmissionRequest } from '../../src/domain/model/trigger-runs.js';
import { GroupCommitExecutor } from '../../src/db/writer/executor.js';
import { newId } from '../../src/util/ids.js';
import { seedOrgWithAgent } from './fixture.js';

const NOW = Date.UTC(2030, 0, 1, 10, 0, 5);
const none = { perMinute: null, perHour: null, perDay: null };

describe('trigger-run admission', () => {
  let db: Db;
  let repos: Repositories;
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db, new GroupCommitExecutor(db));
    ({ orgId, agentId } = await seedOrgWithAgent(db, repos));
  });
  afterEach(() => db.close());

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
  const statuses = () => db.prepare('SELECT status FROM jobs ORDER BY seq').pluck().all() as string[];

  it('makes one job from many admissions with one key in the same batch', async () => {
    const idempotency = { key: 'k', requestHash: 'h', ttlMs: 86_400_000 };
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () => repos.triggerRuns.admit(request({ idempotency }))),
    );
    const admitted = outcomes.filter((o) => o.outcome === 'admitted');
    expect(admitted).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'repeated')).toHaveLength(49);
    expect(
      new Set(outcomes.map((o) => (o.outcome === 'admitted' || o.outcome === 'repeated' ? o.jobId : null))).size,
    ).toBe(1);
    expect(statuses()).toEqual(['pending']);
    const conflict = await repos.triggerRuns.admit(request({ idempotency: { ...idempotency, requestHash: 'other' } }));
    expect(conflict).toEqual({ outcome: 'idempotency_conflict' });
    expect(statuses()).toEqual(['pending']);
  });

  it('refuses in the same batch once the limit is reached, storing rejected jobs and block rows', async () => {
    const workflowLimits = { ...none, perMinute: 3 };
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () => repos.triggerRuns.admit(request({ workflowLimits }))),
    );
    expect(outcomes.map((o) => o.outcome)).toEqual(['admitted', 'admitted', 'admitted', 'refused', 'refused']);
    expect(statuses()).toEqual(['pending', 'pending', 'pending', 'rejected', 'rejected']);
    const blocks = db.prepare('SELECT window, limit_value, observed FROM rate_limit_blocks').all();
    expect(blocks).toEqual([
      { window: 'minute', limit_value: 3, observed: 3 },
      { window: 'minute', limit_value: 3, observed: 3 },
    ]);
  });

  it('checks the token before the workflow, and lets force bypass only the workflow', async () => {
    const token = { id: 'token-1', limits: { ...none, perHour: 2 } };
    const workflowLimits = { ...none, perMinute: 1 };
    expect((await repos.triggerRuns.admit(request({ token, workflowLimits }))).outcome).toBe('admitted');
    const refused = await repos.triggerRuns.admit(request({ token, workflowLimits }));
    expect(refused).toMatchObject({ outcome: 'refused', scope: 'workflow' });
    expect((await repos.triggerRuns.admit(request({ token, workflowLimits, forced: true }))).outcome).toBe('admitted');
    const tokenRefused = await repos.triggerRuns.admit(request({ token, workflowLimits, forced: true }));
    expect(tokenRefused).toMatchObject({
      outcome: 'refused',
      scope: 'token',
      refusal: { window: 'hour', observed: 2 },
    });
    expect(db.prepare('SELECT COUNT(*) FROM rate_limit_blocks').pluck().get()).toBe(1);
  });

  it('purges expired keys and past counters', async () => {
    const idempotency = { key: 'k', requestHash: 'h', ttlMs: 60_000 };
    const workflowLimits = { ...none, perDay: 100 };
    await repos.triggerRuns.admit(request({ idempotency, workflowLimits }));
    expect(db.prepare('SELECT COUNT(*) FROM rate_counters').pluck().get()).toBe(3);
    const later = NOW + 2 * 86_400_000;
    const again = await repos.triggerRuns.admit(request({ idempotency, workflowLimits, now: later }));
    expect(again.outcome).toBe('admitted');
    expect(db.prepare('SELECT COUNT(*) FROM idempotency_keys').pluck().get()).toBe(1);
    // Only the new call's three windows are left.
    expect(db.prepare('SELECT COUNT(*) FROM rate_counters').pluck().get()).toBe(3);
  });

  it('counts only the scopes that have a limit', async () => {
    await repos.triggerRuns.admit(request());
    expect(db.prepare('SELECT COUNT(*) FROM rate_counters').pluck().get()).toBe(0);
    await repos.triggerRuns.admit(request({ token: { id: 'token-1', limits: { ...none, perDay: 5 } } }));
    expect(db.prepare('SELECT DISTINCT scope FROM rate_counters').pluck().all()).toEqual(['token']);
  });

  it('reads the result of a job', async () => {
    const outcome = await repos.triggerRuns.admit(request());
    const jobId = outcome.outcome === 'admitted' ? outcome.jobId : '';
    expect(await repos.triggerRuns.jobResult(jobId)).toEqual({
      status: 'pending',
      exitCode: null,
      errorMessage: null,
      output: null,
    });
    expect(await repos.triggerRuns.jobResult(newId())).toBeNull();
  });
});
