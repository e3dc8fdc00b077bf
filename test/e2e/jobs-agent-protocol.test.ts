import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { openAgentStream } from '../helpers/sse.js';

const JOB_FIELDS = [
  'agentId',
  'applicationId',
  'batchId',
  'cancelRequestedAt',
  'chatOrigin',
  'createdAt',
  'debug',
  'errorMessage',
  'exitCode',
  'finishedAt',
  'forceReason',
  'forced',
  'id',
  'kind',
  'logs',
  'logsDropped',
  'logsMore',
  'logsTotal',
  'notifications',
  'number',
  'orgId',
  'output',
  'params',
  'queuedAt',
  'ref',
  'source',
  'startedAt',
  'status',
  'triggerId',
  'userId',
  'workflowId',
  'workflowName',
];

describe('agent job endpoints', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let other: TestAgent;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '100' } });
    agent = await enrollTestAgent(t.owner, t.orgId);
    other = await enrollTestAgent(t.owner, t.orgId);
  });
  afterAll(() => t?.close());

  const post = (jobId: string, move: string, body?: unknown, who: TestAgent = agent) =>
    who.request('POST', `/v1/agent/jobs/${jobId}/${move}`, body);
  const detail = async (jobId: string) => (await t.owner.get(`/jobs/${jobId}`)).body;

  it('runs the whole flow: stream, accept, start, logs, finish, then the job detail shows it all', async () => {
    const stream = await openAgentStream(t.url, agent);
    await stream.next((e) => e.event === 'ping');
    const job = await createTestJob(t, agent, { params: { env: 'prod', replicas: 2 }, ref: 'v1.2.0' });
    const assignment = await stream.nextJob();
    expect(assignment.jobId).toBe(job.id);
    stream.close();

    const accepted = await post(job.id, 'accept');
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ jobId: job.id, status: 'queued' });
    expect(await detail(job.id)).toMatchObject({ status: 'queued', startedAt: null, finishedAt: null });
    expect((await detail(job.id)).queuedAt).not.toBeNull();

    expect((await post(job.id, 'start')).body).toEqual({ jobId: job.id, status: 'running' });
    const at = new Date().toISOString();
    const logs = await post(job.id, 'logs', {
      lines: [
        { seq: 1, at, stream: 'system', step: null, text: 'job started' },
        { seq: 2, at, stream: 'stdout', step: 0, text: 'hello' },
      ],
    });
    expect(logs.body).toEqual({ jobId: job.id, status: 'running', accepted: 2 });
    // A resend with one new line stores only the new one.
    const again = await post(job.id, 'logs', {
      lines: [
        { seq: 2, at, stream: 'stdout', step: 0, text: 'hello' },
        { seq: 3, at, stream: 'stderr', step: 0, text: 'warning: x' },
      ],
    });
    expect(again.body.accepted).toBe(1);

    const finished = await post(job.id, 'finish', finishBody({ output: { version: '1.2.0', count: 3 } }));
    expect(finished.status).toBe(200);
    expect(finished.body).toEqual({ jobId: job.id, status: 'success' });

    const res = await t.owner.get(`/jobs/${job.id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(JOB_FIELDS);
    expect(res.body).toMatchObject({
      id: job.id,
      kind: 'trigger',
      source: 'webhook',
      status: 'success',
      triggerId: job.triggerId,
      agentId: agent.agentId,
      workflowName: 'deploy',
      ref: 'v1.2.0',
      debug: false,
      params: { env: 'prod', replicas: 2 },
      output: { version: '1.2.0', count: 3 },
      exitCode: 0,
      errorMessage: null,
      forced: false,
      forceReason: null,
      applicationId: null,
    });
    const times = ['createdAt', 'queuedAt', 'startedAt', 'finishedAt'].map((k) => Date.parse(res.body[k]));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The agent sends the step's index (from 0); the API numbers steps from 1, as people do.
    expect(res.body.logs).toEqual([
      { seq: 1, at, stream: 'system', step: null, text: 'job started' },
      { seq: 2, at, stream: 'stdout', step: 1, text: 'hello' },
      { seq: 3, at, stream: 'stderr', step: 1, text: 'warning: x' },
    ]);
    expect(res.body).toMatchObject({ logsMore: false, logsTotal: 3, logsDropped: 0 });
  });

  it('pages log lines in the detail: 500 by default, logsAfter and logsLimit, about 1 MiB at most', async () => {
    const job = await createTestJob(t, agent);
    const at = new Date().toISOString();
    const line = (seq: number, text = `l${seq}`) => ({ seq, at, stream: 'stdout', text });
    for (let from = 1; from <= 600; from += 200) {
      const lines = Array.from({ length: 200 }, (_, i) => line(from + i));
      expect((await post(job.id, 'logs', { lines })).body.accepted).toBe(200);
    }
    const first = (await t.owner.get(`/jobs/${job.id}`)).body;
    expect(first.logs.map((l: { seq: number }) => l.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(first).toMatchObject({ logsMore: true, logsTotal: 600, logsDropped: 0 });
    const next = (await t.owner.get(`/jobs/${job.id}?logsAfter=500&logsLimit=5000`)).body;
    expect(next.logs).toHaveLength(100);
    expect(next.logsMore).toBe(false);
    const page = (await t.owner.get(`/jobs/${job.id}?logsAfter=2&logsLimit=2`)).body;
    expect(page.logs.map((l: { seq: number }) => l.seq)).toEqual([3, 4]);
    // The job alone: no line, whether any follow.
    expect((await t.owner.get(`/jobs/${job.id}?logsLimit=0`)).body).toMatchObject({ logs: [], logsMore: true });
    expect((await t.owner.get(`/jobs/${job.id}?logsAfter=600&logsLimit=0`)).body.logsMore).toBe(false);
    for (const query of ['logsLimit=5001', 'logsLimit=-1', 'logsAfter=-1']) {
      const refused = await t.owner.get(`/jobs/${job.id}?${query}`);
      expect(refused.status, query).toBe(422);
    }
    // Lines of 16 KiB: a page stops at about 1 MiB of text, however many lines were asked for.
    const big = await createTestJob(t, agent);
    for (let from = 1; from <= 100; from += 50) {
      const lines = Array.from({ length: 50 }, (_, i) => line(from + i, 'x'.repeat(16_384)));
      expect((await post(big.id, 'logs', { lines })).status).toBe(200);
    }
    const capped = (await t.owner.get(`/jobs/${big.id}?logsLimit=5000`)).body;
    expect(capped.logs).toHaveLength(64);
    expect(capped).toMatchObject({ logsMore: true, logsTotal: 100 });
  });

  it('stores a line holding a NUL character (binary output) with U+FFFD in its place, on every database', async () => {
    const job = await createTestJob(t, agent);
    const at = new Date().toISOString();
    const sent = await post(job.id, 'logs', { lines: [{ seq: 1, at, stream: 'stdout', text: 'bin\u0000ary' }] });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.accepted).toBe(1);
    expect((await detail(job.id)).logs).toEqual([{ seq: 1, at, stream: 'stdout', step: null, text: 'bin\uFFFDary' }]);
  });

  it('stores an error message holding a NUL character with U+FFFD in its place; a resend of the same result is a repeat', async () => {
    for (const [move, body, stored] of [
      [
        'finish',
        { status: 'failed', exitCode: 1, errorMessage: 'step failed: \u0000junk', output: {} },
        'step failed: \uFFFDjunk',
      ],
      ['reject', { reason: 'invalid_params', message: 'bad \u0000value' }, 'bad \uFFFDvalue'],
    ] as const) {
      const job = await createTestJob(t, agent);
      const sent = await post(job.id, move, body);
      expect(sent.status, sent.text).toBe(200);
      expect((await detail(job.id)).errorMessage).toContain(stored);
      expect((await post(job.id, move, body)).status).toBe(200);
    }
  });

  it("stores a line's time in UTC whatever offset or spelling the agent sent, and refuses one no database can keep", async () => {
    const job = await createTestJob(t, agent);
    const sent = [
      '2026-01-01T12:00:00+14:00',
      '2026-01-01t12:00:00z',
      '2026-01-01 12:00:00.123456789Z',
      '2026-01-01T12:00:00-23:59',
      '0001-01-01T00:00:00Z',
    ];
    const lines = sent.map((at, i) => ({ seq: i + 1, at, stream: 'stdout', text: `l${i + 1}` }));
    const res = await post(job.id, 'logs', { lines });
    expect(res.status, res.text).toBe(200);
    expect((await detail(job.id)).logs.map((l: { at: string }) => l.at)).toEqual([
      '2025-12-31T22:00:00.000Z',
      '2026-01-01T12:00:00.000Z',
      '2026-01-01T12:00:00.123Z',
      '2026-01-02T11:59:00.000Z',
      '0001-01-01T00:00:00.000Z',
    ]);
    // The year 0 (PostgreSQL has none) and a leap second (a Date cannot hold one): 422 naming the
    // line, and nothing of the batch is stored.
    const late = [
      { seq: 6, at: '2026-01-01T12:00:00Z', stream: 'stdout', text: 'fine' },
      { seq: 7, at: '0000-12-31T23:59:59Z', stream: 'stdout', text: 'year 0' },
      { seq: 8, at: '2026-06-30T23:59:60Z', stream: 'stdout', text: 'leap second' },
    ];
    const refused = await post(job.id, 'logs', { lines: late });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'validation_failed',
      details: [
        { path: 'body.lines.1.at', message: expect.stringMatching(/between the years 0001 and 9999/) },
        { path: 'body.lines.2.at', message: expect.stringMatching(/between the years 0001 and 9999/) },
      ],
    });
    expect(await detail(job.id)).toMatchObject({ status: 'pending', logsTotal: 5 });
  });

  it('keeps a line ending in half of an emoji (an older agent cut it there), U+FFFD for the half, and the lines beside it', async () => {
    const job = await createTestJob(t, agent);
    const at = new Date().toISOString();
    const lines = [
      { seq: 1, at, stream: 'stdout', text: 'before' },
      { seq: 2, at, stream: 'stdout', text: 'cut \ud83d' },
      { seq: 3, at, stream: 'stdout', text: 'after' },
    ];
    const sent = await post(job.id, 'logs', { lines });
    expect(sent.status, sent.text).toBe(200);
    expect((await detail(job.id)).logs.map((l: { text: string }) => l.text)).toEqual(['before', 'cut \uFFFD', 'after']);
  });

  it('answers a repeated move with 200 and the current status, and an impossible one with 409', async () => {
    const job = await createTestJob(t, agent);
    expect((await post(job.id, 'accept')).body.status).toBe('queued');
    expect((await post(job.id, 'accept')).body).toEqual({ jobId: job.id, status: 'queued' });
    expect((await post(job.id, 'start')).body.status).toBe('running');
    expect((await post(job.id, 'accept')).body).toEqual({ jobId: job.id, status: 'running' });
    expect((await post(job.id, 'start')).body).toEqual({ jobId: job.id, status: 'running' });
    const rejected = await post(job.id, 'reject', { reason: 'queue_full' });
    expect(rejected.status).toBe(409);
    expect(rejected.body).toMatchObject({
      statusCode: 409,
      code: 'conflict',
      details: { jobId: job.id, status: 'running' },
    });
    expect(rejected.body.message).toMatch(/running/);

    const failed = finishBody({ status: 'failed', exitCode: 3, errorMessage: 'step 1 (build) exited with code 3' });
    expect((await post(job.id, 'finish', failed)).status).toBe(200);
    expect((await post(job.id, 'finish', failed)).body).toEqual({ jobId: job.id, status: 'failed' });
    const different = await post(job.id, 'finish', finishBody());
    expect(different.status).toBe(409);
    expect(different.body.details).toEqual({ jobId: job.id, status: 'failed' });
    for (const move of ['accept', 'start']) expect((await post(job.id, move)).status).toBe(409);
    expect(await detail(job.id)).toMatchObject({ status: 'failed', exitCode: 3 });
  });

  it('rejects a pending job with a worded message, and refuses to run it afterwards', async () => {
    const job = await createTestJob(t, agent);
    const res = await post(job.id, 'reject', { reason: 'queue_full', message: 'job queue full; rejecting' });
    expect(res.body).toEqual({ jobId: job.id, status: 'rejected' });
    expect((await post(job.id, 'reject', { reason: 'queue_full' })).status).toBe(200);
    expect(await detail(job.id)).toMatchObject({
      status: 'rejected',
      errorMessage: "the agent's job queue is full: job queue full; rejecting",
    });
    expect((await post(job.id, 'start')).status).toBe(409);
    expect((await post(job.id, 'finish', finishBody())).status).toBe(409);
  });

  it('finishes a job that never started (the agent lost it) and refuses log lines sent after it ended', async () => {
    const job = await createTestJob(t, agent);
    const lost = finishBody({ status: 'failed', exitCode: null, errorMessage: 'lost in an agent restart' });
    expect((await post(job.id, 'finish', lost)).body.status).toBe('failed');
    const late = await post(job.id, 'logs', {
      lines: [{ seq: 1, at: new Date().toISOString(), stream: 'system', text: 'late' }],
    });
    expect(late.status).toBe(409);
    expect(late.body).toEqual({
      statusCode: 409,
      code: 'conflict',
      message: 'The job is failed; a job that ended takes no more log lines',
      details: { jobId: job.id, status: 'failed' },
    });
    expect(await detail(job.id)).toMatchObject({ logs: [], logsTotal: 0 });
  });

  it('refuses with 422 an output nested too deep or holding a number JSON cannot keep, on an open job and on a resend', async () => {
    const job = await createTestJob(t, agent);
    const finish = (output: string) =>
      agent.request('POST', `/v1/agent/jobs/${job.id}/finish`, undefined, {
        rawBody: `{"status":"success","exitCode":0,"errorMessage":null,"output":${output}}`,
      });
    const deep = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

    for (const levels of [33, 10_000]) {
      const res = await finish(`{"version":"1.0","tree":${deep(levels)}}`);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        code: 'validation_failed',
        details: [{ path: 'body.output.tree', message: 'is nested more than 32 levels deep' }],
      });
    }
    const huge = await finish('{"n":1e400}');
    expect(huge.status).toBe(422);
    expect(huge.body.details).toEqual([{ path: 'body.output.n', message: expect.stringMatching(/finite number/) }]);
    // An exit code past 32 bits: PostgreSQL's column cannot hold it, SQLite's could; refused on both.
    const windowsCode = await agent.request('POST', `/v1/agent/jobs/${job.id}/finish`, undefined, {
      rawBody: '{"status":"failed","exitCode":3221225477,"errorMessage":null,"output":{}}',
    });
    expect(windowsCode.status).toBe(422);
    expect(windowsCode.body.details).toEqual([{ path: 'body.exitCode', message: 'must be at most 2147483647' }]);
    expect(await detail(job.id)).toMatchObject({ status: 'pending', output: null });

    expect((await finish(`{"tree":${deep(31)}}`)).status).toBe(200);
    // A different result sent again (too deep to compare) is refused the same way, not a 500.
    expect((await finish(`{"tree":${deep(10_000)}}`)).status).toBe(422);
    expect((await detail(job.id)).status).toBe('success');
  });

  it('records the terminal status exactly once and wakes a waiter once, under conflicting concurrent finishes', async () => {
    const job = await createTestJob(t, agent);
    await post(job.id, 'start');
    const events = t.coordinator.ctx.jobEvents;
    const wait = events.waitForFinish(job.id, 5_000);
    let finishedEvents = 0;
    const original = events.jobFinished.bind(events);
    events.jobFinished = (id: string) => {
      if (id === job.id) finishedEvents++;
      original(id);
    };
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          post(job.id, 'finish', finishBody({ status: i % 2 ? 'failed' : 'success', exitCode: i })),
        ),
      );
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.status === 409)).toHaveLength(11);
      expect(await wait.done).toBe(true);
      const winner = answers.find((a) => a.status === 200)!.body.status;
      expect((await detail(job.id)).status).toBe(winner);
      // Resending the winning result is harmless and does not finish it again.
      const stored = await detail(job.id);
      const resend = await post(
        job.id,
        'finish',
        finishBody({ status: stored.status, exitCode: stored.exitCode, output: stored.output }),
      );
      expect(resend.status).toBe(200);
      expect(finishedEvents).toBe(1);
    } finally {
      events.jobFinished = original;
    }
  });

  it("answers 404 for another agent's job and an unknown one, and leaves the job as it was", async () => {
    const job = await createTestJob(t, agent);
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const [move, body] of [
      ['accept', undefined],
      ['reject', { reason: 'queue_full' }],
      ['start', undefined],
      ['logs', { lines: [{ seq: 1, at: new Date().toISOString(), stream: 'stdout', text: 'x' }] }],
      ['finish', finishBody()],
    ] as const) {
      const res = await post(job.id, move, body, other);
      expect(res.status, move).toBe(404);
      expect(res.body).toMatchObject({ statusCode: 404, code: 'not_found', message: 'Job not found' });
      expect((await post(unknown, move, body)).status, move).toBe(404);
    }
    expect(await detail(job.id)).toMatchObject({ status: 'pending', logs: [] });
  });

  it('refuses unsigned reports with 401 before validating the body', async () => {
    const job = await createTestJob(t, agent);
    const res = await fetch(`${t.baseUrl}/agent/jobs/${job.id}/finish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"bad": true}',
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'unauthorized' });
  });

  it('answers every malformed report with a 4xx in the error shape, never a 500', async () => {
    const job = await createTestJob(t, agent);
    const at = new Date().toISOString();
    const line = { seq: 1, at, stream: 'stdout', text: 'x' };
    const cases: [string, string, unknown, string?][] = [
      ['bad-id', 'accept', undefined],
      [job.id, 'accept', { unexpected: true }],
      [job.id, 'start', [1]],
      [job.id, 'reject', {}],
      [job.id, 'reject', { reason: 'bored' }],
      [job.id, 'reject', { reason: 'queue_full', message: 'x'.repeat(2001) }],
      [job.id, 'reject', { reason: 'queue_full', extra: 1 }],
      [job.id, 'logs', {}],
      [job.id, 'logs', { lines: [] }],
      [job.id, 'logs', { lines: [{ ...line, seq: 0 }] }],
      [job.id, 'logs', { lines: [{ ...line, seq: 1.5 }] }],
      [job.id, 'logs', { lines: [{ ...line, seq: '1' }] }],
      [job.id, 'logs', { lines: [{ ...line, stream: 'stdin' }] }],
      [job.id, 'logs', { lines: [{ ...line, at: 'yesterday' }] }],
      [job.id, 'logs', { lines: [{ ...line, step: -1 }] }],
      // Past 2^53 a number is no longer exact (two lines would share a seq); past a bigint, PostgreSQL refuses it.
      [job.id, 'logs', { lines: [{ ...line, seq: 2 ** 53 }] }],
      [job.id, 'logs', { lines: [{ ...line, seq: 1e308 }] }],
      [job.id, 'logs', { lines: [{ ...line, step: 1e300 }] }],
      [job.id, 'logs', { lines: [{ ...line, text: 'x'.repeat(16_385) }] }],
      [job.id, 'logs', { lines: [{ ...line, colour: 'red' }] }],
      [job.id, 'logs', { lines: Array.from({ length: 1001 }, (_, i) => ({ ...line, seq: i + 1 })) }],
      [job.id, 'finish', {}],
      [job.id, 'finish', finishBody({ status: 'rejected' })],
      [job.id, 'finish', finishBody({ status: 'pending' })],
      [job.id, 'finish', finishBody({ exitCode: '0' })],
      [job.id, 'finish', finishBody({ exitCode: 1.5 })],
      [job.id, 'finish', finishBody({ output: [] })],
      [job.id, 'finish', finishBody({ output: null })],
      [job.id, 'finish', finishBody({ errorMessage: 'x'.repeat(8193) })],
      [job.id, 'finish', finishBody({ finishedAt: 'soon' })],
      [job.id, 'finish', finishBody({ extra: true })],
      [job.id, 'finish', { status: 'success', exitCode: 0, errorMessage: null }],
      [job.id, 'finish', 'not json', 'raw'],
      [job.id, 'finish', 'x'.repeat(2 * 1024 * 1024), 'raw'],
    ];
    for (const [id, move, body, raw] of cases) {
      const res = raw
        ? await agent.request('POST', `/v1/agent/jobs/${id}/${move}`, undefined, {
            rawBody: body as string,
            headers: { 'content-type': 'application/json' },
          })
        : await post(id, move, body);
      const label = `${move} ${JSON.stringify(body)?.slice(0, 80)}`;
      expect(res.status, label).toBeGreaterThanOrEqual(400);
      expect(res.status, label).toBeLessThan(500);
      expect(res.body, label).toMatchObject({ statusCode: res.status, code: expect.any(String) });
    }
    expect(await detail(job.id)).toMatchObject({ status: 'pending', logs: [] });
  });

  it('fails the open jobs of a revoked agent and wakes their waiters', async () => {
    const doomed = await enrollTestAgent(t.owner, t.orgId);
    const pending = await createTestJob(t, doomed);
    const running = await createTestJob(t, doomed);
    expect((await post(running.id, 'start', undefined, doomed)).status).toBe(200);
    const done = await createTestJob(t, doomed);
    expect((await post(done.id, 'finish', finishBody(), doomed)).status).toBe(200);
    const wait = t.coordinator.ctx.jobEvents.waitForFinish(running.id, 5_000);
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${doomed.agentId}`)).status).toBe(200);
    expect(await wait.done).toBe(true);
    await eventually(async () => (await detail(pending.id)).status === 'failed');
    expect(await detail(running.id)).toMatchObject({
      status: 'failed',
      errorMessage: 'the agent was revoked before the job finished',
    });
    expect((await detail(done.id)).status).toBe('success');
  });
});
