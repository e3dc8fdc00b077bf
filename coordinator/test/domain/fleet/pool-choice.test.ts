import { describe, expect, it } from 'vitest';
import { choosePoolAgent } from '../../../src/domain/fleet/pool-choice.js';

const load = (agentId: string, open: number, capacity = 4) => ({
  agentId,
  workflowId: `w-${agentId}`,
  capacity,
  params: { of: agentId },
  timeoutMs: null,
  open,
});

describe("a pool's choice of agent", () => {
  it('takes the least busy agent with room, then the one with the most room left', () => {
    expect(choosePoolAgent([load('a', 2), load('b', 1), load('c', 3)])?.agentId).toBe('b');
    expect(choosePoolAgent([load('a', 1, 2), load('b', 1, 8)])?.agentId).toBe('b');
    expect(choosePoolAgent([load('a', 1), load('b', 0, 0)])?.agentId).toBe('a');
    // The chosen one with its version's params and timeout, without its load.
    expect(choosePoolAgent([load('a', 1)])).toEqual({
      agentId: 'a',
      workflowId: 'w-a',
      capacity: 4,
      params: { of: 'a' },
      timeoutMs: null,
    });
  });

  it('spreads ties at random, and answers null when every queue is full (the job waits in the pool)', () => {
    const tied = [load('a', 0), load('b', 0), load('c', 0)];
    expect(choosePoolAgent(tied, () => 0)?.agentId).toBe('a');
    expect(choosePoolAgent(tied, () => 0.99)?.agentId).toBe('c');
    expect(choosePoolAgent([load('a', 4), load('b', 5)])).toBeNull();
    expect(choosePoolAgent([])).toBeNull();
  });
});
