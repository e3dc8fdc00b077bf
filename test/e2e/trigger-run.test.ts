import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent } from '../helpers/agent.js';
import { outsider } from '../helpers/members.js';
import { issueApiToken } from '../helpers/tokens.js';
import { startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';
import { eventually } from '../helpers/poll.js';

/** `POST /v1/triggers/:id/run`: response shapes, sync waits, access rules and bad input. */

const expectError = (res: { status: number; body: any; text: string }, status: number, code: string) => {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toMatchObject({ statusCode: status, code, message: expect.any(String) });
};

describe('running a trigger', () => {
  let f: RunFixture;
  let asyncTrigger: { id: string };
  let token: string;

  beforeAll(async () => {
    f = await startRunFixture();
    asyncTrigger = await f.createTrigger({ workflowName: 'deploy' });
    token = await f.token([asyncTrigger.id]);
  });
  afterAll(() => f?.close());

  it('answers an async trigger with 202, the job id, pending and the status URL, and stores the job', async () => {
    const created = f.nextJob();
    const res = await f.run(token, asyncTrigger.id, { ref: 'main', params: { env: 'prod', dryRun: true } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      jobId: expect.any(String),
      status: 'pending',
      statusUrl: `/api/jobs/${res.body.jobId}`,
    });
    expect(await created).toBe(res.body.jobId);
    const job = await f.job(res.body.jobId);
    expect(job).toMatchObject({
      status: 'pending',
      triggerId: asyncTrigger.id,
      agentId: f.agent.agentId,
      workflowId: await f.workflowId('deploy'),
      workflowName: 'deploy',
      ref: 'main',
      debug: false,
      forced: false,
      forceReason: null,
      finishedAt: null,
    });
    // Defaults applied.
    expect(job.params).toEqual({ env: 'prod', replicas: 2, dryRun: true });
    expect(job.userId).toEqual(expect.any(String));
    // The token that started it is not in the API.
    const startedBy = await f.t.sql.get<{ api_token_id: string | null }>(
      'SELECT api_token_id FROM jobs WHERE id = ?',
      job.id,
    );
    expect(startedBy!.api_token_id).toEqual(expect.any(String));
  });

  it('accepts a call without a body when the workflow needs no parameter', async () => {
    const trigger = await f.createTrigger({ workflowName: 'build' });
    const tok = await f.token([trigger.id]);
    const res = await f.t.api.post(`/triggers/${trigger.id}/run`, { token: tok });
    expect(res.status, res.text).toBe(202);
    expect((await f.job(res.body.jobId)).ref).toBeNull();
  });

  describe('in sync mode', () => {
    let syncTrigger: { id: string };
    let syncToken: string;
    beforeAll(async () => {
      syncTrigger = await f.createTrigger({ workflowName: 'build', responseMode: 'sync', responseTimeoutMs: 10_000 });
      syncToken = await f.token([syncTrigger.id]);
    });

    it('waits for the job and answers 200 with its result', async () => {
      const created = f.nextJob();
      const pending = f.run(syncToken, syncTrigger.id, {});
      const jobId = await created;
      await f.finish(jobId, { status: 'success', exitCode: 0, output: { version: '1.2.3' } });
      const res = await pending;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        jobId,
        status: 'success',
        exitCode: 0,
        errorMessage: null,
        output: { version: '1.2.3' },
        statusUrl: `/api/jobs/${jobId}`,
      });
    });

    it('answers a failed job with its exit code and error message', async () => {
      const created = f.nextJob();
      const pending = f.run(syncToken, syncTrigger.id);
      const jobId = await created;
      await f.finish(jobId, { status: 'failed', exitCode: 3, errorMessage: 'step 1 (build) exited with code 3' });
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        jobId,
        status: 'failed',
        exitCode: 3,
        errorMessage: 'step 1 (build) exited with code 3',
        output: {},
        statusUrl: `/api/jobs/${jobId}`,
      });
    });

    it('answers a job the agent refused with status rejected and its message', async () => {
      const created = f.nextJob();
      const pending = f.run(syncToken, syncTrigger.id);
      const jobId = await created;
      await f.reject(jobId, 'queue full (4 jobs)');
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        jobId,
        status: 'rejected',
        exitCode: null,
        errorMessage: expect.stringContaining('queue full'),
      });
      expect(res.body.timedOut).toBeUndefined();
    });

    it('answers timedOut with the current status after responseTimeoutMs, and the job runs on', async () => {
      const trigger = await f.createTrigger({ workflowName: 'build', responseMode: 'sync', responseTimeoutMs: 1000 });
      const tok = await f.token([trigger.id]);
      const started = Date.now();
      const res = await f.run(tok, trigger.id);
      const waited = Date.now() - started;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        jobId: expect.any(String),
        status: 'pending',
        exitCode: null,
        errorMessage: null,
        output: {},
        statusUrl: `/api/jobs/${res.body.jobId}`,
        timedOut: true,
      });
      expect(waited).toBeGreaterThanOrEqual(950);
      expect(waited).toBeLessThan(5000);
      expect((await f.job(res.body.jobId)).status).toBe('pending');
      await f.finish(res.body.jobId, { status: 'success', exitCode: 0 });
      expect((await f.job(res.body.jobId)).status).toBe('success');
    });

    it('answers at once when the client repeats a call whose job already finished', async () => {
      const created = f.nextJob();
      const headers = { 'idempotency-key': `sync-${randomUUID()}` };
      const first = f.run(syncToken, syncTrigger.id, {}, headers);
      const jobId = await created;
      await f.finish(jobId, { status: 'success', exitCode: 0, output: { n: 1 } });
      expect((await first).body.status).toBe('success');
      const again = await f.run(syncToken, syncTrigger.id, {}, headers);
      expect(again.status).toBe(200);
      expect(again.body).toEqual({
        jobId,
        status: 'success',
        exitCode: 0,
        errorMessage: null,
        output: { n: 1 },
        statusUrl: `/api/jobs/${jobId}`,
        idempotent: true,
      });
    });

    it('stops waiting when the client goes away', async () => {
      const created = f.nextJob();
      // node:http with its own socket: destroying the request closes the connection at once.
      const url = new URL(`${f.t.baseUrl}/triggers/${syncTrigger.id}/run`);
      const call = http.request(url, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${syncToken}`, 'content-type': 'application/json' },
      });
      const failed = new Promise((resolve) => call.on('error', resolve));
      call.end('{}');
      const jobId = await created;
      // The wait subscribes to the job's end; once the client has gone, nothing listens any more.
      const emitter = (f.t.coordinator.ctx.jobEvents as unknown as { emitter: import('node:events').EventEmitter })
        .emitter;
      const listeners = () => emitter.listenerCount(`finished:${jobId}`);
      await eventually(() => listeners() === 1);
      call.destroy();
      expect(await failed).toBeInstanceOf(Error);
      await eventually(() => listeners() === 0);
      await f.finish(jobId, { status: 'success', exitCode: 0 });
      expect((await f.job(jobId)).status).toBe('success');
    });

    it('stops waiting at once when the client left while its job was admitted, not after responseTimeoutMs', async () => {
      const runs = f.t.coordinator.ctx.runs;
      const admit = runs.run.bind(runs);
      const wait = runs.waitForResult.bind(runs);
      // A slow admission (a PostgreSQL lock wait, a busy group commit): the client leaves meanwhile.
      runs.run = async (...args) => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return admit(...args);
      };
      let waited!: (ms: number) => void;
      const waitEnded = new Promise<number>((resolve) => (waited = resolve));
      runs.waitForResult = async (...args) => {
        const started = Date.now();
        const result = await wait(...args);
        waited(Date.now() - started);
        return result;
      };
      try {
        const created = f.nextJob();
        const url = new URL(`${f.t.baseUrl}/triggers/${syncTrigger.id}/run`);
        const call = http.request(url, {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${syncToken}`, 'content-type': 'application/json' },
        });
        const failed = new Promise((resolve) => call.on('error', resolve));
        call.end('{}');
        setTimeout(() => call.destroy(), 100);
        expect(await failed).toBeInstanceOf(Error);
        const jobId = await created;
        const emitter = (f.t.coordinator.ctx.jobEvents as unknown as { emitter: import('node:events').EventEmitter })
          .emitter;
        // Without the check the wait would hold on for the trigger's 10 s.
        expect(await waitEnded).toBeLessThan(2_000);
        expect(emitter.listenerCount(`finished:${jobId}`)).toBe(0);
        await f.finish(jobId, { status: 'success', exitCode: 0 });
      } finally {
        runs.run = admit;
        runs.waitForResult = wait;
      }
    });
  });

  describe('access', () => {
    it('answers 401 without a token, with an unknown token and with a revoked one', async () => {
      expectError(await f.run(null, asyncTrigger.id), 401, 'unauthorized');
      expectError(await f.run('drv_unknownunknownunknownunknownunknown', asyncTrigger.id), 401, 'unauthorized');
      expectError(await f.run('not-a-token', asyncTrigger.id, { nonsense: true }), 401, 'unauthorized');
      const owner = await f.owner();
      const issued = await issueApiToken(owner, f.t.orgId, [{ type: 'trigger', triggerIds: [asyncTrigger.id] }]);
      expect((await owner.delete(`/orgs/${f.t.orgId}/api-tokens/${issued.id}`)).status).toBe(200);
      expectError(await f.run(issued.token, asyncTrigger.id), 401, 'unauthorized');
    });

    it('answers 403 to a token without a trigger grant, even before checking the body', async () => {
      const owner = await f.owner();
      const agentOnly = await issueApiToken(owner, f.t.orgId, [{ type: 'agent', agentIds: [f.agent.agentId] }]);
      expectError(await f.run(agentOnly.token, asyncTrigger.id), 403, 'forbidden');
      expectError(await f.run(agentOnly.token, asyncTrigger.id, { unknown: 1 }), 403, 'forbidden');
      const none = await issueApiToken(owner, f.t.orgId, []);
      expectError(await f.run(none.token, randomUUID()), 403, 'forbidden');
    });

    it('answers 403 for a trigger of the organization outside the token grant', async () => {
      const other = await f.createTrigger({ name: 'other' });
      expectError(await f.run(token, other.id), 403, 'forbidden');
      expect(await f.jobsOf(other.id)).toEqual([]);
    });

    it('answers 404 for an unknown, malformed, deleted or foreign trigger id', async () => {
      expectError(await f.run(token, randomUUID()), 404, 'not_found');
      expectError(await f.run(token, 'not-a-uuid'), 404, 'not_found');
      const doomed = await f.createTrigger({ name: 'doomed' });
      const tok = await f.token([doomed.id, asyncTrigger.id]);
      expect((await f.run(tok, doomed.id)).status).toBe(202);
      expect((await (await f.owner()).delete(`/orgs/${f.t.orgId}/triggers/${doomed.id}`)).status).toBe(200);
      expectError(await f.run(tok, doomed.id), 404, 'not_found');

      const stranger = await outsider(await f.owner(), f.t.orgId, 'run-outsider@example.test');
      const strangerAgent = await enrollTestAgent(stranger.client, stranger.orgId);
      const foreign = await stranger.client.post(`/orgs/${stranger.orgId}/triggers`, {
        body: {
          name: 'x',
          agentId: strangerAgent.agentId,
          scopeType: 'workflow',
          workflowName: 'build',
          responseMode: 'async',
        },
      });
      expect(foreign.status).toBe(201);
      expectError(await f.run(token, foreign.body.id), 404, 'not_found');
    });

    it('refuses to run cron and chat triggers through the API (403), and to grant runs of them (422)', async () => {
      const cron = await f.createTrigger({ name: 'nightly', type: 'cron', cronExpression: '0 3 * * *' });
      await expect(f.token([cron.id])).rejects.toThrow(/is the cron trigger `nightly`; an API token runs only webhook/);
      // A webhook trigger granted to a token, turned into a cron trigger since.
      const turned = await f.createTrigger({ name: 'turned' });
      const tok = await f.token([turned.id]);
      const owner = await f.owner();
      const patch = await owner.patch(`/orgs/${f.t.orgId}/triggers/${turned.id}`, {
        body: { type: 'cron', cronExpression: '0 3 * * *' },
      });
      expect(patch.status, patch.text).toBe(200);
      const res = await f.run(tok, turned.id);
      expectError(res, 403, 'forbidden');
      expect(res.body.message).toContain('webhook');
      expect(await f.jobsOf(turned.id)).toEqual([]);
    });

    it("answers 409 when the trigger's agent has been revoked", async () => {
      const doomedAgent = await enrollTestAgent(await f.owner(), f.t.orgId);
      await f.putWorkflows(doomedAgent, [
        {
          name: 'build',
          description: null,
          version: null,
          paramsSchema: null,
          secretsKeys: [],
          steps: [{ run: 'true' }],
        },
      ]);
      const trigger = await f.createTrigger({ name: 'on doomed agent' }, doomedAgent);
      const tok = await f.token([trigger.id]);
      expect((await f.run(tok, trigger.id)).status).toBe(202);
      expect((await (await f.owner()).delete(`/orgs/${f.t.orgId}/agents/${doomedAgent.agentId}`)).status).toBe(200);
      expectError(await f.run(tok, trigger.id), 409, 'conflict');
    });
  });

  describe('bad input', () => {
    const bad: [string, unknown][] = [
      ['an unknown field', { env: 'prod' }],
      ['a ref of the wrong type', { ref: 42 }],
      ['an empty ref', { ref: '' }],
      ['a ref over 255 characters', { ref: 'r'.repeat(256) }],
      ['a ref with a NUL character (no step could get it)', { ref: 'ma\u0000in' }],
      ['a ref with a line break', { ref: 'main\nevil' }],
      ['a param holding a NUL character', { params: { env: 'prod', note: 'a\u0000b' } }],
      ['debug as a string', { debug: 'true' }],
      ['params as an array', { params: ['a'] }],
      ['params as a string', { params: 'env=prod' }],
      ['force as a number', { force: 1 }],
      ['a huge forceReason', { force: true, forceReason: 'x'.repeat(100_000) }],
      ['a huge workflowName', { workflowName: 'w'.repeat(10_000) }],
      ['an array body', [1, 2]],
      ['a string body', 'run'],
      ['a null body', null],
    ];
    it.each(bad)('answers 422 to %s', async (_name, body) => {
      const res = await f.t.api.post(`/triggers/${asyncTrigger.id}/run`, {
        token,
        rawBody: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^body/) })]),
      );
    });

    it('accepts a ref of exactly 255 characters', async () => {
      const res = await f.run(token, asyncTrigger.id, { ref: 'r'.repeat(255), params: { env: 'staging' } });
      expect(res.status, res.text).toBe(202);
    });

    it('answers malformed JSON, a form body and a query string with 4xx, never 500', async () => {
      const post = (init: { body: string; type?: string; path?: string }) =>
        f.t.api.post(init.path ?? `/triggers/${asyncTrigger.id}/run`, {
          token,
          rawBody: init.body,
          headers: { 'content-type': init.type ?? 'application/json' },
        });
      expectError(await post({ body: '{"ref": ' }), 422, 'validation_failed');
      // Any content type is read as JSON: `ref=main` is not JSON, `{}` is.
      expectError(
        await post({ body: 'ref=main', type: 'application/x-www-form-urlencoded' }),
        422,
        'validation_failed',
      );
      const typed = await post({ body: '{"params": {"env": "prod"}}', type: 'application/x-www-form-urlencoded' });
      expect(typed.status, typed.text).toBe(202);
      expectError(
        await post({ body: '{}', path: `/triggers/${asyncTrigger.id}/run?debug=1` }),
        422,
        'validation_failed',
      );
      expectError(await post({ body: '{"params": {"__proto__": {"x": 1}}}' }), 422, 'validation_failed');
      const deep = `{"params": {"env": "prod", "x": ${'['.repeat(5000)}${']'.repeat(5000)}}}`;
      const res = await post({ body: deep });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details).toEqual([{ path: 'body.params.x', message: expect.stringContaining('nested') }]);
      const infinite = await post({ body: '{"params": {"env": "prod", "big": 1e400}}' });
      expectError(infinite, 422, 'validation_failed');
      expect(infinite.body.details).toEqual([{ path: 'body.params.big', message: expect.stringContaining('finite') }]);
    });
  });
});

describe('a sync run when the coordinator shuts down', () => {
  let f: RunFixture;
  beforeAll(async () => {
    f = await startRunFixture();
  });
  afterAll(() => f?.close());

  it('answers timedOut with the current status at once instead of holding the shutdown', async () => {
    const trigger = await f.createTrigger({ responseMode: 'sync', responseTimeoutMs: 60_000 });
    const token = await f.token([trigger.id]);
    const created = f.nextJob();
    const pending = f.run(token, trigger.id);
    const jobId = await created;
    const started = Date.now();
    const closing = f.close();
    const res = await pending;
    await closing;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jobId, status: 'pending', timedOut: true });
  });
});
