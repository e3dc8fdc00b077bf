import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/domain/model/agents.js';
import { AgentEvents } from '../../../src/domain/agents/agent-events.js';

const agent = { id: 'a1', status: 'revoked' } as Agent;

describe('AgentEvents', () => {
  it('tells every revocation listener until it unsubscribes', () => {
    const events = new AgentEvents();
    const seen: string[] = [];
    const off = events.onRevoked((a) => seen.push(`one:${a.id}`));
    events.onRevoked((a) => seen.push(`two:${a.id}`));
    events.revoked(agent);
    off();
    events.revoked(agent);
    expect(seen).toEqual(['one:a1', 'two:a1', 'two:a1']);
  });

  it('keeps calling listeners after one throws and returns the errors', () => {
    const events = new AgentEvents();
    const seen: string[] = [];
    events.onRevoked(() => {
      throw new Error('stream already closed');
    });
    events.onRevoked((a) => seen.push(a.id));
    const errors = events.revoked(agent);
    expect(seen).toEqual(['a1']);
    expect(errors).toHaveLength(1);
  });
});
