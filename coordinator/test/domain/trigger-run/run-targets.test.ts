import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/domain/model/agents.js';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import type { Workflow } from '../../../src/domain/model/workflows.js';
import { RunTargets } from '../../../src/domain/trigger-run/run-targets.js';

function fakeRepos() {
  const state = {
    generation: 1,
    reads: 0,
    agentReads: 0,
    trigger: { id: 't1', orgId: 'o1', agentId: 'a1' } as Trigger | null,
    /** A second trigger of the same agent. */
    sibling: { id: 't2', orgId: 'o1', agentId: 'a1' } as Trigger,
    agentStatus: 'connected' as Agent['status'],
    workflow: { id: 'w1', name: 'build' } as Workflow | null,
  };
  const repos = {
    changeCounter: { generation: async () => state.generation },
    triggers: {
      findInOrg: async (orgId: string, id: string) => {
        state.reads++;
        const found = [state.trigger, state.sibling].find((t) => t && t.orgId === orgId && t.id === id);
        return found ?? null;
      },
    },
    agents: {
      findById: async () => {
        state.agentReads++;
        return { status: state.agentStatus } as Agent;
      },
    },
    workflows: {
      findActiveByAgentAndName: async () => {
        state.reads++;
        return state.workflow;
      },
    },
  };
  return { state, targets: new RunTargets(repos) };
}

describe('RunTargets', () => {
  it('reads a trigger once per generation, with its agent revocation', async () => {
    const { state, targets } = fakeRepos();
    expect(await targets.trigger('o1', 't1')).toMatchObject({ trigger: state.trigger, agentRevoked: false });
    await targets.trigger('o1', 't1');
    expect(state.reads).toBe(1);
    state.agentStatus = 'revoked';
    state.generation++;
    expect((await targets.trigger('o1', 't1'))?.agentRevoked).toBe(true);
    expect(state.reads).toBe(2);
  });

  it('finds no trigger of another organization, and does not remember misses', async () => {
    const { state, targets } = fakeRepos();
    expect(await targets.trigger('o2', 't1')).toBeNull();
    expect(await targets.trigger('o2', 't1')).toBeNull();
    expect(state.reads).toBe(2);
  });

  it('remembers the workflows of a trigger until the generation moves', async () => {
    const { state, targets } = fakeRepos();
    const target = (await targets.trigger('o1', 't1'))!;
    expect((await target.workflow('build'))?.id).toBe('w1');
    state.workflow = null;
    expect((await (await targets.trigger('o1', 't1'))!.workflow('build'))?.id).toBe('w1');
    expect(state.reads).toBe(2);
    state.generation++;
    expect(await (await targets.trigger('o1', 't1'))!.workflow('build')).toBeNull();
  });

  it('remembers a missing workflow too, but only a bounded number of names', async () => {
    const { state, targets } = fakeRepos();
    state.workflow = null;
    const target = (await targets.trigger('o1', 't1'))!;
    for (let i = 0; i < 300; i++) await target.workflow(`w${i}`);
    const reads = state.reads;
    await target.workflow('w0');
    await target.workflow('w299');
    expect(state.reads).toBe(reads + 1);
  });

  it('reads an agent and its workflows once per generation for all its triggers', async () => {
    const { state, targets } = fakeRepos();
    const first = (await targets.trigger('o1', 't1'))!;
    const second = (await targets.trigger('o1', 't2'))!;
    expect((await first.workflow('build'))?.id).toBe('w1');
    expect((await second.workflow('build'))?.id).toBe('w1');
    expect(state.agentReads).toBe(1);
    expect(state.reads).toBe(3); // two triggers, one workflow
    state.generation++;
    await (await targets.trigger('o1', 't2'))!.workflow('build');
    expect(state.agentReads).toBe(2);
  });

  it('shares lookups in flight: triggers of one agent looked up at once read the agent and a workflow once', async () => {
    const { state, targets } = fakeRepos();
    const [first, second] = await Promise.all([targets.trigger('o1', 't1'), targets.trigger('o1', 't2')]);
    await Promise.all([first!.workflow('build'), second!.workflow('build'), first!.workflow('build')]);
    expect(state.agentReads).toBe(1);
    expect(state.reads).toBe(3); // two triggers, one workflow
  });
});
