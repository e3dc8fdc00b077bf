import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Agent, AgentRepository } from '../../../src/domain/model/agents.js';
import type { Job, JobRepository, OpenJobSummary } from '../../../src/domain/model/jobs.js';
import { AgentEvents } from '../../../src/domain/agents/agent-events.js';
import { JobEvents } from '../../../src/domain/jobs/job-events.js';
import { StreamRegistry, type StreamPools, type StreamSink } from '../../../src/domain/agents/stream-registry.js';
import { FakeRelay } from '../fake-relay.js';

const AT = '2026-01-02T03:04:05.000Z';

function job(id: string, agentId = 'a1', status: Job['status'] = 'pending'): Job {
  return {
    id,
    orgId: 'o',
    kind: 'trigger',
    source: 'webhook',
    triggerId: 't',
    agentId,
    batchId: null,
    held: false,
    workflowId: null,
    workflowName: 'wf',
    status,
    ref: null,
    debug: false,
    params: {},
    output: null,
    exitCode: null,
    errorMessage: null,
    forced: false,
    forceReason: null,
    apiTokenId: null,
    userId: null,
    timeoutMs: null,
    createdAt: AT,
    queuedAt: null,
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    cancelRequestedAt: null,
    cancelAckedAt: null,
    seq: 1,
    number: 1,
    chatOrigin: null,
  };
}

/** An open job as `listOpenOfAgents` gives it, created well before the registry's clock. */
function summary(id: string, status: OpenJobSummary['status'] = 'pending', cancelUnconfirmed = false): OpenJobSummary {
  return { id, agentId: 'a1', status, createdAt: '2026-01-01T00:00:00.000Z', cancelUnconfirmed };
}

class FakeSink implements StreamSink {
  chunks: string[] = [];
  ended = false;
  private listeners: (() => void)[] = [];
  write(chunk: string) {
    if (this.ended) return false;
    this.chunks.push(chunk);
    return true;
  }
  end() {
    if (this.ended) return;
    this.ended = true;
    for (const l of this.listeners.splice(0)) l();
  }
  onClose(listener: () => void) {
    this.listeners.push(listener);
  }
  /** The client went away. */
  drop() {
    this.end();
  }
  jobIds() {
    return this.chunks.filter((c) => c.startsWith('event: job')).map((c) => /\nid: (.*)\n/.exec(c)![1]);
  }
  /** `job:<id>` and `cancel:<id>` in the order they were written. */
  events() {
    return this.chunks
      .filter((c) => c.startsWith('event: job') || c.startsWith('event: cancel'))
      .map((c) => {
        const event = /^event: (\w+)/.exec(c)![1];
        const data = JSON.parse(/\ndata: (.*)\n/.exec(c)![1]!) as { jobId: string };
        return `${event}:${data.jobId}`;
      });
  }
}

const tick = () => new Promise((r) => setImmediate(r));

function setup(
  options: {
    graceMs?: number;
    connected?: string[];
    shared?: boolean;
    pingMs?: number;
    pools?: StreamPools;
  } = {},
) {
  const calls = { connected: [] as string[], disconnected: [] as string[], touched: [] as string[][] };
  /** The agents the database holds as revoked, as a read of the agents finds them. */
  const revoked = new Set<string>();
  const jobs = new Map<string, Job>();
  /** The jobs whose cancel the agent has not confirmed, as the next connect reads them. */
  const unconfirmedCancels: string[] = [];
  let open = Promise.withResolvers<Job[]>();
  /** What the database holds as the agents' open jobs, as a check between coordinators reads it. */
  const summaries: OpenJobSummary[] = [];
  /** The check between coordinators fails while set (the database is away). */
  const openOfAgents = { failing: false };
  /** The pings' updates of lastSeenAt wait for it, when set (a slow database). */
  let touchGate: Promise<void> | undefined;
  /** The reads of jobs for their send wait for it, when set (a slow database). */
  let readGate: Promise<void> | undefined;
  /** The answers of those reads, read already, wait for it on their way back, when set. */
  let answerGate: Promise<void> | undefined;
  const agents = {
    async markConnected(id: string) {
      calls.connected.push(id);
      return true;
    },
    async touch(ids: readonly string[]) {
      await touchGate;
      calls.touched.push([...ids]);
    },
    async markDisconnected(id: string) {
      calls.disconnected.push(id);
      return true;
    },
    async listConnectedIds() {
      return options.connected ?? [];
    },
    async listByIds(_orgId: string, ids: readonly string[]) {
      return ids.map((id) => ({ id, status: revoked.has(id) ? 'revoked' : 'connected' }) as Agent);
    },
  } as unknown as AgentRepository;
  const jobRepo = {
    listOpenForAgent: async () => ({ jobs: await open.promise, damaged: [] }),
    async listUnconfirmedCancels() {
      return [...unconfirmedCancels];
    },
    async listOpenOfAgents(ids: readonly string[]) {
      if (openOfAgents.failing) throw new Error('database unreachable');
      return summaries.filter((j) => ids.includes(j.agentId));
    },
    async findByIds(ids: readonly string[]) {
      await readGate;
      const found = ids.flatMap((id) => jobs.get(id) ?? []);
      await answerGate;
      return { jobs: found, damaged: [] };
    },
  } as unknown as JobRepository;
  // The other coordinators on the database, as the cluster relay would bring their events.
  const relay = new FakeRelay();
  const jobEvents = new JobEvents(relay);
  const agentEvents = new AgentEvents();
  agentEvents.attach(relay);
  const logs: string[] = [];
  const log = (_: object, msg: string) => void logs.push(msg);
  const registry = new StreamRegistry({
    agents,
    jobs: jobRepo,
    clock: { now: () => Date.parse(AT) },
    jobEvents,
    agentEvents,
    logger: { info: log, warn: log, error: log },
    pingMs: options.pingMs ?? 60_000,
    disconnectGraceMs: options.graceMs ?? 30,
    shared: options.shared ?? false,
    ...(options.pools ? { pools: options.pools } : {}),
  });
  registry.start();
  return {
    registry,
    calls,
    revoked,
    jobs,
    unconfirmedCancels,
    summaries,
    openOfAgents,
    jobEvents,
    agentEvents,
    relay,
    logs,
    /** The open-jobs answer of the next connect. */
    openJobs(list: Job[]) {
      open.resolve(list);
    },
    resetOpen() {
      open = Promise.withResolvers<Job[]>();
    },
    /** Holds the pings' updates of lastSeenAt until `release` is called. */
    holdTouches() {
      const gate = Promise.withResolvers<void>();
      touchGate = gate.promise;
      return { release: () => gate.resolve() };
    },
    /** Holds the answers of the reads of jobs for their send, as read, until `release` is called. */
    holdAnswers() {
      const gate = Promise.withResolvers<void>();
      answerGate = gate.promise;
      return {
        release: () => {
          answerGate = undefined;
          gate.resolve();
        },
      };
    },
    /** Holds the reads of jobs for their send until `release` is called. */
    holdReads() {
      const gate = Promise.withResolvers<void>();
      readGate = gate.promise;
      return {
        release: () => {
          readGate = undefined;
          gate.resolve();
        },
      };
    },
  };
}

describe('StreamRegistry between coordinators', () => {
  let cleanup: (() => void) | undefined;
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] }));
  afterEach(() => {
    cleanup?.();
    vi.useRealTimers();
  });

  it('sends jobs and cancels committed on another coordinator, and frees the places of jobs ended there', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    for (const id of ['p1', 'p2', 'j1']) s.jobs.set(id, job(id));
    s.openJobs([job('p1'), job('p2')]);
    const sink = new FakeSink();
    // A queue of one: p2 waits until p1 ends, wherever that end is committed.
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    expect(sink.events()).toEqual(['job:p1']);
    s.relay.deliver({ type: 'cancel_requested', agentId: 'a1', jobId: 'j0' });
    s.relay.deliver({ type: 'job_finished', jobId: 'p1' });
    await tick();
    await tick();
    s.relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j1' });
    await tick();
    await tick();
    expect(sink.events()).toEqual(['job:p1', 'cancel:j0', 'job:p2', 'job:j1']);
    expect(s.relay.published).toContainEqual({ type: 'stream_opened', agentId: 'a1' });
  });

  it("reads its agents' jobs again after a gap in the other coordinators' events", async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.jobs.set('j1', job('j1'));
    s.openJobs([job('j1')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    expect(sink.jobIds()).toEqual(['j1']);
    // Missed: j1 ended and j2 was created on another coordinator; a cancel of j3 was asked for.
    s.jobs.set('j2', job('j2'));
    s.summaries.push(summary('j2'), summary('j3', 'running', true));
    s.relay.gap();
    await tick();
    await tick();
    await tick();
    expect(sink.events()).toEqual(['job:j1', 'cancel:j3', 'job:j2']);
  });

  it("sends the cancel of a queued job cancelled on another coordinator whose event was missed, which takes it out of the agent's queue", async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    for (const id of ['q1', 'q2']) s.jobs.set(id, job(id));
    s.openJobs([job('q1'), job('q2')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 2);
    expect(sink.jobIds()).toEqual(['q1', 'q2']);
    // Missed: q1, queued on the agent, was cancelled on another coordinator (it ended there, its
    // cancel not confirmed); q2 finished there. j3 waits.
    s.jobs.set('q1', { ...job('q1', 'a1', 'cancelled'), cancelRequestedAt: AT });
    s.jobs.set('q2', job('q2', 'a1', 'success'));
    s.jobs.set('j3', job('j3'));
    s.summaries.push(summary('j3'));
    s.relay.gap();
    for (let i = 0; i < 5; i++) await tick();
    expect(sink.events()).toEqual(['job:q1', 'job:q2', 'cancel:q1', 'job:j3']);
  });

  it('checks its streams against the database at each ping, for the events a killed coordinator never sent', async () => {
    const s = setup({ shared: true, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.jobs.set('j1', job('j1'));
    s.openJobs([job('j1')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    // j1 ended and j2 was created on a coordinator killed before it could say so; j4 was created
    // a moment ago (its event may still be on its way): it is left to its event.
    s.jobs.set('j2', job('j2'));
    s.jobs.set('j4', job('j4'));
    s.summaries.push(summary('j2'), { ...summary('j4'), createdAt: new Date(Date.parse(AT) - 100).toISOString() });
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    await tick();
    expect(sink.jobIds()).toEqual(['j1', 'j2']);
  });

  it('says once that the check at each ping fails while the database is away, and when it works again', async () => {
    const s = setup({ shared: true, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, new FakeSink(), 1);
    s.openOfAgents.failing = true;
    await vi.advanceTimersByTimeAsync(3_000);
    s.openOfAgents.failing = false;
    await vi.advanceTimersByTimeAsync(1_000);
    const check = s.logs.filter((l) => l.startsWith('could not check the agents streaming here'));
    expect(check).toEqual([
      'could not check the agents streaming here against their jobs',
      'could not check the agents streaming here against their jobs: works again after 3 failed turns',
    ]);
  });

  it('sends a job taken from a pool once, though the check at a ping finds it before its claim answers', async () => {
    const claims: { room: number; answer: PromiseWithResolvers<string[]> }[] = [];
    const s = setup({
      shared: true,
      pingMs: 1_000,
      pools: {
        claim: (_, room) => {
          const answer = Promise.withResolvers<string[]>();
          claims.push({ room, answer });
          return answer.promise;
        },
        waitingOrgs: async () => ['o1'],
        release: async () => [],
      },
    });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 2);
    expect(claims.map((c) => c.room)).toEqual([2]);
    // The claim took p1 (committed, created long ago in the pool); the ping's check reads it as
    // the agent's before the claim's answer comes back.
    s.jobs.set('p1', job('p1'));
    s.summaries.push(summary('p1'));
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    expect(sink.jobIds()).toEqual(['p1']);
    claims[0]!.answer.resolve(['p1']);
    await tick();
    await tick();
    expect(sink.jobIds()).toEqual(['p1']);
  });

  it('sends a job taken from a pool once, though its claim answers while the check at a ping is sending it', async () => {
    const claims: PromiseWithResolvers<string[]>[] = [];
    const s = setup({
      shared: true,
      pingMs: 1_000,
      pools: {
        claim: () => {
          claims.push(Promise.withResolvers<string[]>());
          return claims.at(-1)!.promise;
        },
        waitingOrgs: async () => [],
        release: async () => [],
      },
    });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 2);
    // The claim took p1; the ping's check finds it first, and is reading it for its send (a slow
    // database) when the claim's answer comes back.
    s.jobs.set('p1', job('p1'));
    s.summaries.push(summary('p1'));
    const reads = s.holdReads();
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    claims[0]!.resolve(['p1']);
    await tick();
    reads.release();
    for (let i = 0; i < 5; i++) await tick();
    expect(sink.jobIds()).toEqual(['p1']);
  });

  it('sends a job once when the check at a ping finds it while its event waits for its turn', async () => {
    const s = setup({ shared: true, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.jobs.set('j1', job('j1'));
    s.openJobs([job('j1')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 4);
    // While j0's send is held (a slow database), the ping's check reads j2 (created long ago, its
    // event late), and j2's event arrives before the check's turn comes.
    const reads = s.holdReads();
    s.jobs.set('j0', job('j0'));
    s.relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j0' });
    await tick();
    s.jobs.set('j2', job('j2'));
    s.summaries.push(summary('j1', 'queued'), summary('j2'));
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    s.relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j2' });
    await tick();
    reads.release();
    for (let i = 0; i < 5; i++) await tick();
    expect(sink.jobIds()).toEqual(['j1', 'j0', 'j2']);
  });

  it('sends a job once when its event comes after the check at a ping sent it (the event late, the job running)', async () => {
    const s = setup({ shared: true, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.jobs.set('j1', job('j1'));
    s.openJobs([job('j1')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 4);
    // j2's event is late (a slow relay): the check at the ping finds it and sends it.
    s.jobs.set('j2', job('j2'));
    s.summaries.push(summary('j1', 'queued'), summary('j2'));
    await vi.advanceTimersByTimeAsync(1_000);
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j1', 'j2']);
    // The agent runs it; then its event arrives: the agent holds it already, nothing is sent again.
    s.jobs.set('j2', job('j2', 'a1', 'running'));
    s.relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j2' });
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j1', 'j2']);
  });

  it('sends a job once when its late event reads it still pending (its accept on its way through another coordinator), again only when asked', async () => {
    const s = setup({ shared: true, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 4);
    s.jobs.set('j2', job('j2'));
    s.summaries.push(summary('j2'));
    await vi.advanceTimersByTimeAsync(1_000);
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j2']);
    // The event comes while the agent's accept is still on its way: the job reads pending.
    s.relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j2' });
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j2']);
    // Its device reported without it (an update job): it goes again, and only while pending.
    s.relay.deliver({ type: 'job_resent', agentId: 'a1', jobId: 'j2' });
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j2', 'j2']);
    s.jobs.set('j2', job('j2', 'a1', 'running'));
    s.relay.deliver({ type: 'job_resent', agentId: 'a1', jobId: 'j2' });
    for (let i = 0; i < 3; i++) await tick();
    expect(sink.jobIds()).toEqual(['j2', 'j2']);
  });

  it('asks a stream with room for pool jobs when a job of its organization waits in a pool, or at a ping while some wait', async () => {
    const claims: string[] = [];
    let waitingOrgs: string[] = [];
    const s = setup({
      pingMs: 1_000,
      pools: {
        claim: async (agent) => {
          claims.push(agent.id);
          return [];
        },
        waitingOrgs: async () => waitingOrgs,
        release: async () => [],
      },
    });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, new FakeSink(), 2);
    s.openJobs([]);
    await s.registry.connect({ id: 'b1', orgId: 'o2' }, new FakeSink(), 2);
    await tick();
    claims.length = 0;
    // A job put in a pool of o2 on another coordinator: only o2's agent asks.
    s.relay.deliver({ type: 'job_pooled', orgId: 'o2', jobId: 'p1' });
    await tick();
    expect(claims).toEqual(['b1']);
    // A ping while nothing waits asks nobody; while o1 has jobs waiting, o1's agent asks.
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    expect(claims).toEqual(['b1']);
    waitingOrgs = ['o1'];
    await vi.advanceTimersByTimeAsync(1_000);
    await tick();
    expect(claims).toEqual(['b1', 'a1']);
  });

  it('stops counting down to disconnected when the agent came back through another coordinator', async () => {
    const s = setup({ graceMs: 30 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    sink.drop();
    s.relay.deliver({ type: 'stream_opened', agentId: 'a1' });
    await vi.advanceTimersByTimeAsync(100);
    expect(s.calls.disconnected).toEqual([]);
  });

  it('closes the stream of an agent revoked on another coordinator', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    s.relay.deliver({ type: 'agent_revoked', agentId: 'a1' });
    expect(sink.ended).toBe(true);
    expect(s.registry.isConnected('a1')).toBe(false);
  });

  it('closes the stream of an agent revoked on another coordinator while its events were missed', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const [kept, closed] = [new FakeSink(), new FakeSink()];
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, kept);
    s.resetOpen();
    s.openJobs([]);
    await s.registry.connect({ id: 'a2', orgId: 'o1' }, closed);
    s.revoked.add('a2');
    s.relay.gap();
    await tick();
    expect([kept.ended, closed.ended]).toEqual([false, true]);
    expect(s.registry.isConnected('a2')).toBe(false);
  });
});

describe('StreamRegistry', () => {
  let cleanup: (() => void) | undefined;
  // The disconnect grace and the pings run on fake timers; `tick` (setImmediate) stays real.
  beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] }));
  afterEach(() => {
    cleanup?.();
    vi.useRealTimers();
  });

  it('sends each job once when jobs are created while the open jobs are being read', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    for (const id of ['j1', 'j2', 'j3']) s.jobs.set(id, job(id));
    const sink = new FakeSink();
    const connecting = s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    await tick();
    // j2 was committed before the read and announced after it started; j3 after.
    s.jobEvents.jobCreated('a1', 'j2');
    s.jobEvents.jobCreated('a1', 'j3');
    s.openJobs([job('j1'), job('j2')]);
    await connecting;
    expect(sink.jobIds()).toEqual(['j1', 'j2', 'j3']);
    s.jobs.set('j4', job('j4'));
    s.jobEvents.jobCreated('a1', 'j4');
    await tick();
    expect(sink.jobIds()).toEqual(['j1', 'j2', 'j3', 'j4']);
  });

  it('hands a backlog over no faster than the agent queue frees, oldest first', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    const backlog = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    for (const id of backlog) s.jobs.set(id, job(id));
    s.jobs.set('q1', job('q1', 'a1', 'queued'));
    s.openJobs([job('q1', 'a1', 'queued'), ...backlog.map((id) => job(id))]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 4);
    // The queued job fills one place: three of the backlog go out, in creation order.
    expect(sink.jobIds()).toEqual(['q1', 'p1', 'p2', 'p3']);
    // A new job waits behind the backlog instead of being refused by a full queue.
    s.jobs.set('live', job('live'));
    s.jobEvents.jobCreated('a1', 'live');
    await tick();
    expect(sink.jobIds()).toEqual(['q1', 'p1', 'p2', 'p3']);
    s.jobEvents.jobFinished('q1');
    await tick();
    expect(sink.jobIds()).toEqual(['q1', 'p1', 'p2', 'p3', 'p4']);
    for (const id of ['p1', 'p2', 'p3', 'p4']) s.jobEvents.jobFinished(id);
    await tick();
    await tick();
    expect(sink.jobIds()).toEqual(['q1', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'live']);
  });

  it('does not count a job that ended while it was read for its send: its place goes to the next one', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    for (const id of ['p1', 'p2', 'p3']) s.jobs.set(id, job(id));
    s.openJobs(['p1', 'p2', 'p3'].map((id) => job(id)));
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    expect(sink.jobIds()).toEqual(['p1']);
    // p1 ends: p2 is read for its send (a slow database), read pending, and cancelled before
    // the answer comes back.
    const answers = s.holdAnswers();
    s.jobEvents.jobFinished('p1');
    await tick();
    s.jobs.set('p2', job('p2', 'a1', 'cancelled'));
    s.jobEvents.jobFinished('p2');
    answers.release();
    for (let i = 0; i < 5; i++) await tick();
    expect(sink.jobIds()).toEqual(['p1', 'p3']);
  });

  it('does not count a job that ended while the open jobs were read at the connect', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.jobs.set('p2', job('p2'));
    const sink = new FakeSink();
    const connecting = s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    await tick();
    // r1 was read running, and its result (sent again at the reconnect) was stored meanwhile.
    s.jobEvents.jobFinished('r1');
    s.openJobs([job('r1', 'a1', 'running'), job('p2')]);
    await connecting;
    expect(sink.jobIds()).toEqual(['p2']);
  });

  it('sends a new job at once when nothing waits, even to a full queue, which refuses it', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    const held = ['r1', 'q1', 'q2'];
    s.openJobs(held.map((id, i) => job(id, 'a1', i === 0 ? 'running' : 'queued')));
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 2);
    expect(sink.jobIds()).toEqual(held);
    s.jobs.set('n1', job('n1'));
    s.jobEvents.jobCreated('a1', 'n1');
    await tick();
    expect(sink.jobIds()).toEqual([...held, 'n1']);
  });

  it('takes the capacity the agent announces, four when it announces none', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    const ids = Array.from({ length: 6 }, (_, i) => `p${i}`);
    for (const id of ids) s.jobs.set(id, job(id));
    s.openJobs(ids.map((id) => job(id)));
    const four = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, four);
    expect(four.jobIds()).toEqual(ids.slice(0, 4));
    const one = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, one, 1);
    expect(one.jobIds()).toEqual(['p0']);
  });

  it('ignores job events of other agents and jobs no longer open', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    s.jobs.set('x', job('x', 'a2'));
    s.jobs.set('done', job('done', 'a1', 'success'));
    s.jobEvents.jobCreated('a2', 'x');
    s.jobEvents.jobCreated('a1', 'done');
    s.jobEvents.jobCreated('a1', 'unknown');
    await tick();
    expect(sink.jobIds()).toEqual([]);
  });

  it('closes the previous stream of an agent when a new one connects, without a disconnect', async () => {
    const s = setup({ graceMs: 10 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const first = new FakeSink();
    const second = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, first, 4, undefined, '10.0.0.7');
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, second, 4, undefined, '10.0.0.8');
    expect(first.ended).toBe(true);
    expect(second.ended).toBe(false);
    // Its last event says which connection took its place.
    expect(first.chunks.at(-1)).toMatch(/^event: replaced\nid: replaced-\d+\ndata: \{"by":"10\.0\.0\.8"\}\n\n$/);
    await vi.advanceTimersByTimeAsync(1000);
    expect(s.calls.disconnected).toEqual([]);
    expect(s.registry.isConnected('a1')).toBe(true);
  });

  it('warns when the streams of an agent replace each other again and again (two machines, one identity)', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const twin = "agent stream replaced again and again: two machines may be using this agent's identity";
    for (const peer of ['10.0.0.7', '10.0.0.8', '10.0.0.7']) {
      await s.registry.connect({ id: 'a1', orgId: 'o1' }, new FakeSink(), 4, undefined, peer);
    }
    expect(s.logs.filter((l) => l.startsWith(twin))).toEqual([]);
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, new FakeSink(), 4, undefined, '10.0.0.8');
    expect(s.logs.filter((l) => l.startsWith(twin))).toHaveLength(1);
  });

  it('marks an agent disconnected only when its dropped stream is not replaced within the grace', async () => {
    const s = setup({ graceMs: 30 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    sink.drop();
    await vi.advanceTimersByTimeAsync(29);
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, new FakeSink()); // back in time
    await vi.advanceTimersByTimeAsync(1000);
    expect(s.calls.disconnected).toEqual([]);

    const b = new FakeSink();
    await s.registry.connect({ id: 'b1', orgId: 'o1' }, b);
    b.drop();
    await vi.advanceTimersByTimeAsync(29);
    expect(s.calls.disconnected).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.calls.disconnected).toEqual(['b1']);
  });

  it("marks a dropped agent disconnected only after the ping's update in flight, which marks it connected", async () => {
    // Without the wait, the ping's late update would mark the agent connected again after its
    // disconnect, with no stream anywhere: a pool would hand it jobs.
    const s = setup({ graceMs: 0, pingMs: 1_000 });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    const touches = s.holdTouches();
    await vi.advanceTimersByTimeAsync(1_000);
    sink.drop();
    await vi.advanceTimersByTimeAsync(100);
    expect(s.calls.touched).toEqual([]);
    expect(s.calls.disconnected).toEqual([]);
    touches.release();
    await tick();
    await tick();
    expect(s.calls.touched).toEqual([['a1']]);
    expect(s.calls.disconnected).toEqual(['a1']);
  });

  it("closes a revoked agent's stream at once", async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.openJobs([]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    s.agentEvents.revoked({ id: 'a1' } as Agent);
    expect(sink.ended).toBe(true);
    expect(s.registry.isConnected('a1')).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    expect(s.calls.disconnected).toEqual([]);
  });

  it('gives agents left connected by a previous run the grace period to come back', async () => {
    const s = setup({ graceMs: 20, connected: ['gone', 'back'] });
    cleanup = () => s.registry.close();
    s.openJobs([]);
    await tick();
    await s.registry.connect({ id: 'back', orgId: 'o1' }, new FakeSink());
    await vi.advanceTimersByTimeAsync(19);
    expect(s.calls.disconnected).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.calls.disconnected).toEqual(['gone']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(s.calls.disconnected).toEqual(['gone']);
  });

  it('sends the cancels the agent has not confirmed before any job, and no job event for a running job being cancelled', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.unconfirmedCancels.push('gone', 'r1');
    const running = { ...job('r1', 'a1', 'running'), cancelRequestedAt: AT };
    for (const id of ['p1', 'p2']) s.jobs.set(id, job(id));
    s.openJobs([running, job('p1'), job('p2')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 2);
    // r1 still fills a place in the agent's queue: one pending job goes out, the other waits.
    expect(sink.events()).toEqual(['cancel:gone', 'cancel:r1', 'job:p1']);
    s.jobEvents.jobFinished('r1');
    await tick();
    expect(sink.events()).toEqual(['cancel:gone', 'cancel:r1', 'job:p1', 'job:p2']);
  });

  it('sends a live cancel in turn, before the job that takes the place it frees', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    for (const id of ['q1', 'p1']) s.jobs.set(id, job(id));
    s.openJobs([job('q1', 'a1', 'queued'), job('p1')]);
    const sink = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, sink, 1);
    expect(sink.events()).toEqual(['job:q1']);
    // The cancel service: the cancel event first, then the end of the job.
    s.jobs.set('q1', { ...job('q1', 'a1', 'cancelled'), cancelRequestedAt: AT });
    s.jobEvents.cancelRequested('a1', 'q1');
    s.jobEvents.jobFinished('q1');
    await tick();
    await tick();
    expect(sink.events()).toEqual(['job:q1', 'cancel:q1', 'job:p1']);
    s.jobEvents.cancelRequested('a2', 'other');
    await tick();
    expect(sink.events()).toEqual(['job:q1', 'cancel:q1', 'job:p1']);
  });

  it('keeps a cancel that arrives while the stream starts, and sends it once the open jobs are out', async () => {
    const s = setup();
    cleanup = () => s.registry.close();
    s.jobs.set('p1', job('p1'));
    const sink = new FakeSink();
    const connecting = s.registry.connect({ id: 'a1', orgId: 'o1' }, sink);
    await tick();
    s.jobEvents.cancelRequested('a1', 'p1');
    s.openJobs([job('p1')]);
    await connecting;
    expect(sink.events()).toEqual(['job:p1', 'cancel:p1']);
  });

  it('ends every stream and refuses new ones once closed', async () => {
    const s = setup();
    s.openJobs([]);
    const a = new FakeSink();
    const b = new FakeSink();
    await s.registry.connect({ id: 'a1', orgId: 'o1' }, a);
    await s.registry.connect({ id: 'b1', orgId: 'o1' }, b);
    s.registry.close();
    expect([a.ended, b.ended]).toEqual([true, true]);
    expect(s.registry.size).toBe(0);
    const late = new FakeSink();
    await s.registry.connect({ id: 'c1', orgId: 'o1' }, late);
    expect(late.ended).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(s.calls.disconnected).toEqual([]);
  });
});
