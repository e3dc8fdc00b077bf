import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { openAgentStream } from '../helpers/sse.js';

const GRACE_MS = 200;
const DEADLINE_MESSAGE = "no result from the agent before the job's deadline";

describe('job deadline sweep', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: {
        DROVER_JOB_DEADLINE_GRACE_MS: String(GRACE_MS),
        DROVER_STREAM_PING_MS: '100',
        DROVER_AGENT_DISCONNECT_GRACE_MS: '100',
      },
    });
    agent = await enrollTestAgent(t.owner, t.orgId);
  });
  afterAll(() => t?.close());

  const post = (jobId: string, move: string, body?: unknown) =>
    agent.request('POST', `/v1/agent/jobs/${jobId}/${move}`, body);
  const detail = async (jobId: string) => (await t.owner.get(`/jobs/${jobId}`)).body;

  it('fails a running job without a result past its timeout plus the grace, once, and refuses a late result', async () => {
    const job = createTestJob(t, agent, { timeoutMs: 300 });
    const wait = t.coordinator.ctx.jobEvents.waitForFinish(job.id, 10_000);
    const started = Date.now();
    expect((await post(job.id, 'start')).status).toBe(200);
    expect(await wait.done).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300 + GRACE_MS - 20);
    expect(await detail(job.id)).toMatchObject({ status: 'failed', errorMessage: DEADLINE_MESSAGE, exitCode: null });
    const late = await post(job.id, 'finish', finishBody());
    expect(late.status).toBe(409);
    expect(late.body.details).toEqual({ jobId: job.id, status: 'failed' });
  });

  it('leaves a job that reports in time alone', async () => {
    const job = createTestJob(t, agent, { timeoutMs: 300 });
    await post(job.id, 'start');
    expect((await post(job.id, 'finish', finishBody())).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300 + GRACE_MS * 3));
    expect((await detail(job.id)).status).toBe('success');
  });

  it('never sweeps a job without a timeout nor a pending one', async () => {
    const noTimeout = createTestJob(t, agent, { timeoutMs: null });
    await post(noTimeout.id, 'start');
    const pending = createTestJob(t, agent, { timeoutMs: 100 });
    await new Promise((r) => setTimeout(r, 100 + GRACE_MS * 4));
    expect((await detail(noTimeout.id)).status).toBe('running');
    expect((await detail(pending.id)).status).toBe('pending');
  });

  it('spares a queued job while its agent is connected and fails it once the agent is disconnected', async () => {
    const job = createTestJob(t, agent, { timeoutMs: 100 });
    const stream = await openAgentStream(t.url, agent);
    try {
      await stream.next((e) => e.event === 'ping');
      expect((await post(job.id, 'accept')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100 + GRACE_MS * 4));
      expect((await detail(job.id)).status).toBe('queued');
    } finally {
      stream.close();
    }
    await eventually(async () => (await detail(job.id)).status === 'failed');
    expect((await detail(job.id)).errorMessage).toBe(DEADLINE_MESSAGE);
  });
});
