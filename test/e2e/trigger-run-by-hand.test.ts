import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient, ApiResponse } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';
import { issueApiToken } from '../helpers/tokens.js';
import { MINUTE, startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/**
 * A run by hand, `POST /v1/orgs/:orgId/triggers/:triggerId/run`: the public run's body and answers
 * for a signed-in member; an owner may force; the workflow's limits apply, a token's do not; the
 * job says it was started by hand and by whom, and the audit log has the run.
 */

const expectError = (res: ApiResponse, status: number, code: string) => {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toMatchObject({ statusCode: status, code, message: expect.any(String) });
};

describe('running a trigger by hand', () => {
  let f: RunFixture;
  let member: { userId: string; client: ApiClient };
  let asyncTrigger: { id: string };
  let syncTrigger: { id: string };
  const runByHand = (client: ApiClient, triggerId: string, body?: unknown, headers?: Record<string, string>) =>
    client.post(`/orgs/${f.t.orgId}/triggers/${triggerId}/run`, {
      ...(body === undefined ? {} : { body }),
      ...(headers ? { headers } : {}),
    });
  const auditOf = async (action: string) => {
    const res = await (await f.owner()).get(`/orgs/${f.t.orgId}/audit?action=${action}`);
    expect(res.status, res.text).toBe(200);
    return res.body as Array<Record<string, any>>;
  };

  beforeAll(async () => {
    f = await startRunFixture();
    member = await addUser(await f.owner(), f.t.orgId, 'hand@example.com');
    asyncTrigger = await f.createTrigger({ workflowName: 'deploy' });
    syncTrigger = await f.createTrigger({ workflowName: 'build', responseMode: 'sync', responseTimeoutMs: 10_000 });
  });
  afterAll(() => f?.close());

  it('answers a member with 202 and a job that records the source, the user and the defaults, audited', async () => {
    const created = f.nextJob();
    const res = await runByHand(member.client, asyncTrigger.id, { ref: 'main', params: { env: 'prod' } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      jobId: expect.any(String),
      status: 'pending',
      statusUrl: `/api/jobs/${res.body.jobId}`,
    });
    expect(await created).toBe(res.body.jobId);

    const job = await member.client.get(`/jobs/${res.body.jobId}`);
    expect(job.status, job.text).toBe(200);
    expect(job.body).toMatchObject({
      kind: 'trigger',
      source: 'manual',
      userId: member.userId,
      triggerId: asyncTrigger.id,
      workflowName: 'deploy',
      status: 'pending',
      ref: 'main',
      params: { env: 'prod', replicas: 2 },
      forced: false,
    });
    expect(await auditOf('trigger.run')).toContainEqual(
      expect.objectContaining({
        actorType: 'user',
        actorId: member.userId,
        targetType: 'trigger',
        targetId: asyncTrigger.id,
        metadata: { jobId: res.body.jobId, source: 'manual', workflowName: 'deploy', forced: false },
      }),
    );
  });

  it('records a public run as a webhook run, without a run entry in the audit log', async () => {
    const token = await f.token([asyncTrigger.id]);
    const res = await f.run(token, asyncTrigger.id, { params: { env: 'staging' } });
    expect(res.status, res.text).toBe(202);
    expect((await member.client.get(`/jobs/${res.body.jobId}`)).body).toMatchObject({ source: 'webhook' });
    expect((await auditOf('trigger.run')).map((e) => e.metadata.jobId)).not.toContain(res.body.jobId);
  });

  it('waits for a sync trigger and answers 200 with the result', async () => {
    const created = f.nextJob();
    const pending = runByHand(member.client, syncTrigger.id);
    const jobId = await created;
    await f.finish(jobId, { status: 'success', exitCode: 0, output: { built: true } });
    const res = await pending;
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      jobId,
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { built: true },
      statusUrl: `/api/jobs/${jobId}`,
    });
  });

  it('runs a cron trigger by hand (the API refuses it to a token): a manual job, the schedule untouched', async () => {
    const cron = await f.createTrigger({
      type: 'cron',
      workflowName: 'build',
      cronExpression: '0 3 * * *',
      cronTimezone: 'Europe/Paris',
    });
    // No token may be granted it (nor run it: trigger-run.test.ts).
    await expect(f.token([cron.id])).rejects.toThrow(/is the cron trigger/);

    const res = await runByHand(member.client, cron.id);
    expect(res.status, res.text).toBe(202);
    expect((await member.client.get(`/jobs/${res.body.jobId}`)).body).toMatchObject({
      source: 'manual',
      triggerId: cron.id,
      userId: member.userId,
    });
    const after = await member.client.get(`/orgs/${f.t.orgId}/triggers/${cron.id}`);
    expect(after.body).toMatchObject({ cronEnabled: true, nextRunAt: cron.nextRunAt });
  });

  it('refuses bad input with 422 naming the body field, and stores no job', async () => {
    const before = (await f.jobsOf(asyncTrigger.id)).length;
    const missing = await runByHand(member.client, asyncTrigger.id, { params: {} });
    expectError(missing, 422, 'validation_failed');
    expect(missing.body.details).toContainEqual(expect.objectContaining({ path: 'body.params.env' }));
    const unknownField = await runByHand(member.client, asyncTrigger.id, { params: { env: 'prod' }, colour: 'red' });
    expectError(unknownField, 422, 'validation_failed');
    const notJson = await member.client.post(`/orgs/${f.t.orgId}/triggers/${asyncTrigger.id}/run`, {
      rawBody: '{"params": ',
      headers: { 'content-type': 'application/json' },
    });
    expectError(notJson, 422, 'validation_failed');
    expect(await f.jobsOf(asyncTrigger.id)).toHaveLength(before);
  });

  it('lets only an owner force past the workflow limit; the force is audited', async () => {
    alignToMinute();
    const trigger = await f.createTrigger({ workflowName: 'lint' });
    await f.setWorkflowLimits(await f.workflowId('lint'), { rateLimitPerMinute: 1 });
    try {
      expect((await runByHand(member.client, trigger.id)).status).toBe(202);

      const limited = await runByHand(member.client, trigger.id);
      expect(limited.status, limited.text).toBe(429);
      expect(limited.body).toMatchObject({ code: 'rate_limited', window: 'minute' });
      expect(limited.headers.get('retry-after')).toEqual(expect.any(String));
      const blocks = await auditOf('rate_limit.block');
      expect(blocks).toContainEqual(
        expect.objectContaining({ actorType: 'user', actorId: member.userId, targetType: 'workflow' }),
      );

      const memberForce = await runByHand(member.client, trigger.id, { force: true, forceReason: 'hotfix' });
      expectError(memberForce, 403, 'forbidden');
      expect(memberForce.body.message).toMatch(/owner/);

      const owner = await f.owner();
      const forced = await runByHand(owner, trigger.id, { force: true, forceReason: 'hotfix' });
      expect(forced.status, forced.text).toBe(202);
      expect((await owner.get(`/jobs/${forced.body.jobId}`)).body).toMatchObject({
        source: 'manual',
        forced: true,
        forceReason: 'hotfix',
      });
      expect(await auditOf('trigger.force_run')).toContainEqual(
        expect.objectContaining({
          actorType: 'user',
          targetId: trigger.id,
          metadata: expect.objectContaining({ jobId: forced.body.jobId }),
        }),
      );
    } finally {
      await f.setWorkflowLimits(await f.workflowId('lint'), { rateLimitPerMinute: null });
    }
  });

  it('applies no token limit: a member runs past what a limited token may', async () => {
    alignToMinute();
    const trigger = await f.createTrigger({ workflowName: 'build' });
    const token = await f.token([trigger.id], { rateLimitPerMinute: 1 });
    expect((await f.run(token, trigger.id)).status).toBe(202);
    expect((await f.run(token, trigger.id)).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await runByHand(member.client, trigger.id)).status).toBe(202);
  });

  it('answers a repeated Idempotency-Key with the first run', async () => {
    const key = { 'idempotency-key': randomUUID() };
    const first = await runByHand(member.client, asyncTrigger.id, { params: { env: 'prod' } }, key);
    expect(first.status, first.text).toBe(202);
    const again = await runByHand(member.client, asyncTrigger.id, { params: { env: 'prod' } }, key);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ ...first.body, idempotent: true });
    const changed = await runByHand(member.client, asyncTrigger.id, { params: { env: 'staging' } }, key);
    expectError(changed, 409, 'idempotency_conflict');
  });

  it('refuses callers who are not members, API tokens and unknown triggers', async () => {
    const anonymous = await f.t.api.post(`/orgs/${f.t.orgId}/triggers/${asyncTrigger.id}/run`, { body: {} });
    expectError(anonymous, 401, 'unauthorized');
    const { token } = await issueApiToken(await f.owner(), f.t.orgId, [
      { type: 'trigger', triggerIds: [asyncTrigger.id] },
    ]);
    const withToken = await f.t.api.post(`/orgs/${f.t.orgId}/triggers/${asyncTrigger.id}/run`, { token, body: {} });
    expectError(withToken, 401, 'unauthorized');

    const other = await outsider(await f.owner(), f.t.orgId, 'stranger@example.com');
    expectError(await runByHand(other.client, asyncTrigger.id), 404, 'not_found');
    // Their own organization does not hold this trigger either.
    const viaOwnOrg = await other.client.post(`/orgs/${other.orgId}/triggers/${asyncTrigger.id}/run`, { body: {} });
    expectError(viaOwnOrg, 404, 'not_found');
    expectError(await runByHand(member.client, randomUUID()), 404, 'not_found');
    expectError(await runByHand(member.client, 'not-a-uuid'), 404, 'not_found');
  });

  /** Moves the fixture's clock to 5 s past the start of the next minute: a fresh limit window. */
  function alignToMinute() {
    const now = f.clock.now();
    f.clock.advance(now - (now % MINUTE) + MINUTE + 5000 - now);
  }
});
