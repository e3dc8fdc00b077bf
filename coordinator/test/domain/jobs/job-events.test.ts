import { describe, expect, it } from 'vitest';
import { AgentEvents } from '../../../src/domain/agents/agent-events.js';
import { JobEvents } from '../../../src/domain/jobs/job-events.js';
import { FakeRelay } from '../fake-relay.js';

/**
 * Job and agent events between coordinators: what is committed here is published to the relay;
 * what another coordinator committed reaches the listeners that hear `anywhere` (streams, sync
 * waits), never those that act once per event (`here`: metrics, OTA settling, chat notices).
 */
describe('JobEvents with a cluster relay', () => {
  it('publishes creations, cancels and ends made here, and tells every listener of them', () => {
    const relay = new FakeRelay();
    const events = new JobEvents(relay);
    const heard: string[] = [];
    events.onJobCreated((agentId, jobId) => heard.push(`created ${agentId} ${jobId}`));
    events.onCancelRequested((agentId, jobId) => heard.push(`cancel ${agentId} ${jobId}`));
    events.onJobFinished((jobId) => heard.push(`finished here ${jobId}`));
    events.onJobFinished((jobId) => heard.push(`finished anywhere ${jobId}`), 'anywhere');
    events.jobCreated('a1', 'j1');
    events.cancelRequested('a1', 'j1');
    events.jobFinished('j1');
    expect(heard).toEqual(['created a1 j1', 'cancel a1 j1', 'finished here j1', 'finished anywhere j1']);
    expect(relay.published).toEqual([
      { type: 'job_created', agentId: 'a1', jobId: 'j1' },
      { type: 'cancel_requested', agentId: 'a1', jobId: 'j1' },
      { type: 'job_finished', jobId: 'j1' },
    ]);
  });

  it("hears another coordinator's events where they concern what this process holds", async () => {
    const relay = new FakeRelay();
    const events = new JobEvents(relay);
    const heard: string[] = [];
    events.onJobCreated((agentId, jobId) => heard.push(`created ${agentId} ${jobId}`));
    events.onCancelRequested((agentId, jobId) => heard.push(`cancel ${agentId} ${jobId}`));
    events.onJobFinished((jobId) => heard.push(`finished here ${jobId}`));
    events.onJobFinished((jobId) => heard.push(`finished anywhere ${jobId}`), 'anywhere');
    const wait = events.waitForFinish('j2', 5_000);
    relay.deliver({ type: 'job_created', agentId: 'a1', jobId: 'j2' });
    relay.deliver({ type: 'cancel_requested', agentId: 'a1', jobId: 'j2' });
    relay.deliver({ type: 'job_finished', jobId: 'j2' });
    expect(await wait.done).toBe(true);
    expect(heard).toEqual(['created a1 j2', 'cancel a1 j2', 'finished anywhere j2']);
    expect(relay.published).toEqual([]);
  });

  it('wakes sync waits after a gap in the events, so that they read the job again', async () => {
    const relay = new FakeRelay();
    const events = new JobEvents(relay);
    let gaps = 0;
    events.onGap(() => (gaps += 1));
    const wait = events.waitForFinish('j3', 5_000);
    relay.gap();
    expect(await wait.done).toBe(true);
    expect(gaps).toBe(1);
  });

  it('ends a wait at once whose signal was aborted before it began (the caller left during the admission)', async () => {
    const events = new JobEvents();
    const gone = new AbortController();
    gone.abort();
    const started = performance.now();
    expect(await events.waitForFinish('j5', 5_000, gone.signal).done).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('works alone, without a relay (SQLite)', async () => {
    const events = new JobEvents();
    const wait = events.waitForFinish('j4', 5_000);
    events.jobFinished('j4');
    expect(await wait.done).toBe(true);
  });
});

describe('AgentEvents with a cluster relay', () => {
  it('publishes revocations and stream openings, and hears revocations elsewhere only where asked', () => {
    const relay = new FakeRelay();
    const events = new AgentEvents();
    const detach = events.attach(relay);
    const heard: string[] = [];
    events.onRevoked((a) => heard.push(`here ${a.id}`));
    events.onRevoked((a) => heard.push(`anywhere ${a.id}`), 'anywhere');
    events.onStreamOpenedElsewhere((agentId) => heard.push(`opened elsewhere ${agentId}`));
    events.revoked({ id: 'a1' });
    events.streamOpened('a1');
    relay.deliver({ type: 'agent_revoked', agentId: 'a2' });
    relay.deliver({ type: 'stream_opened', agentId: 'a3' });
    expect(heard).toEqual(['here a1', 'anywhere a1', 'anywhere a2', 'opened elsewhere a3']);
    expect(relay.published).toEqual([
      { type: 'agent_revoked', agentId: 'a1' },
      { type: 'stream_opened', agentId: 'a1' },
    ]);
    detach();
    events.revoked({ id: 'a4' });
    expect(relay.published).toHaveLength(2);
  });
});
