import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob, finishBody } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { openAgentStream } from '../helpers/sse.js';

const GRACE_MS = 200;
const DEADLINE_MESSAGE = "no result from the agent before the job's deadline";

/**
 * Deadlines are passed by moving an injected clock, not by waiting. The sweep runs every 100 ms;
 * that a sweep found a job not due is shown by a witness: a job started after it, with a
 * deadline no earlier, that only the moved clock makes due; once the witness has failed, a
 * sweep has judged the job at that time.
 */
describe('job deadline sweep', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let offsetMs = 0;
  beforeAll(async () => {
    t = await startTestCoordinator({
      env: {
        DROVER_JOB_DEADLINE_GRACE_MS: String(GRACE_MS),
        DROVER_STREAM_PING_MS: '100',
        DROVER_AGENT_DISCONNECT_GRACE_MS: '100',
      },
      clock: { now: () => Date.now() + offsetMs },
    });
    agent = await enrollTestAgent(t.owner, t.orgId);
  });
  afterAll(() => t?.close());

  const post = (jobId: string, move: string, body?: unknown) =>
    agent.request('POST', `/v1/agent/jobs/${jobId}/${move}`, body);
  const detail = async (jobId: string) => (await t.owner.get(`/jobs/${jobId}`)).body;
  /** A running job, the witness that a sweep ran once the clock moved past its deadline. */
  async function witness(timeoutMs: number): Promise<string> {
    const job = await createTestJob(t, agent, { timeoutMs });
    expect((await post(job.id, 'start')).status).toBe(200);
    return job.id;
  }
  async function failedByDeadline(jobId: string): Promise<void> {
    await eventually(async () => (await detail(jobId)).status === 'failed', 5_000, `job ${jobId} to fail`);
    expect((await detail(jobId)).errorMessage).toBe(DEADLINE_MESSAGE);
  }

  it('fails a running job without a result past its timeout plus the grace, once, and refuses a late result', async () => {
    const job = await createTestJob(t, agent, { timeoutMs: 30_000 });
    const wait = t.coordinator.ctx.jobEvents.waitForFinish(job.id, 10_000);
    expect((await post(job.id, 'start')).status).toBe(200);
    const early = await witness(15_000);
    offsetMs += 30_000 + GRACE_MS - 10_000; // 10 s before the job's deadline, 5 s past the witness's
    await failedByDeadline(early);
    expect((await detail(job.id)).status).toBe('running');

    offsetMs += 10_001;
    expect(await wait.done).toBe(true);
    expect(await detail(job.id)).toMatchObject({ status: 'failed', errorMessage: DEADLINE_MESSAGE, exitCode: null });
    const late = await post(job.id, 'finish', finishBody());
    expect(late.status).toBe(409);
    expect(late.body.details).toEqual({ jobId: job.id, status: 'failed' });
  });

  it('leaves a job that reports in time alone', async () => {
    const job = await createTestJob(t, agent, { timeoutMs: 5_000 });
    await post(job.id, 'start');
    expect((await post(job.id, 'finish', finishBody())).status).toBe(200);
    const after = await witness(5_000);
    offsetMs += 6_000;
    await failedByDeadline(after);
    expect((await detail(job.id)).status).toBe('success');
  });

  it('never sweeps a job without a timeout nor a pending one', async () => {
    const noTimeout = await createTestJob(t, agent, { timeoutMs: null });
    await post(noTimeout.id, 'start');
    const pending = await createTestJob(t, agent, { timeoutMs: 5_000 });
    const after = await witness(5_000);
    offsetMs += 6_000;
    await failedByDeadline(after);
    expect((await detail(noTimeout.id)).status).toBe('running');
    expect((await detail(pending.id)).status).toBe('pending');
  });

  it('spares a queued job while its agent is connected and fails it once the agent is disconnected', async () => {
    const job = await createTestJob(t, agent, { timeoutMs: 5_000 });
    const stream = await openAgentStream(t.url, agent);
    try {
      await stream.next((e) => e.event === 'ping');
      expect((await post(job.id, 'accept')).status).toBe(200);
      const after = await witness(5_000);
      offsetMs += 6_000;
      await failedByDeadline(after);
      expect((await detail(job.id)).status).toBe('queued');
    } finally {
      stream.close();
    }
    await failedByDeadline(job.id);
  });
});
