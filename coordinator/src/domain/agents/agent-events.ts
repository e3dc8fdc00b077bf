import type { Agent } from '../model/agents.js';
import type { ClusterRelay } from '../model/cluster-relay.js';
import type { EventScope } from '../jobs/job-events.js';

/** What a revocation listener is told: the agent (its id only, when another coordinator revoked it). */
export type RevokedAgent = Pick<Agent, 'id'>;
export type AgentRevokedListener = (agent: RevokedAgent) => void;

/**
 * Notifications about agents, so that the parts holding live resources for an agent (its event
 * stream) can react to management changes without the routes knowing about them: revocation
 * (`onRevoked`), and, between coordinators on one database, "the agent's stream opened on
 * another instance" (`onStreamOpenedElsewhere`).
 *
 * A revocation listener hears those made `here` (the default: work done once, such as failing
 * the agent's open jobs) or `anywhere`, through the cluster relay (what this process holds: the
 * agent's stream).
 */
export class AgentEvents {
  private readonly revokedListeners = new Map<AgentRevokedListener, EventScope>();
  private readonly streamListeners = new Set<(agentId: string) => void>();
  private relay: ClusterRelay | null = null;

  /** Sends revocations and stream openings to the other coordinators, and hears theirs. */
  attach(relay: ClusterRelay): () => void {
    this.relay = relay;
    const off = relay.subscribe({
      event: (event) => {
        if (event.type === 'agent_revoked') this.tell({ id: event.agentId }, 'anywhere');
        else if (event.type === 'stream_opened') for (const listener of this.streamListeners) listener(event.agentId);
      },
      gap: () => undefined,
    });
    return () => {
      off();
      this.relay = null;
    };
  }

  /** Subscribes; returns the function that unsubscribes. */
  onRevoked(listener: AgentRevokedListener, scope: EventScope = 'here'): () => void {
    this.revokedListeners.set(listener, scope);
    return () => this.revokedListeners.delete(listener);
  }

  /**
   * Tells every listener that the agent was revoked. A listener that throws does not stop the
   * others nor the revocation (already committed); its errors are returned for logging.
   */
  revoked(agent: RevokedAgent): unknown[] {
    this.relay?.publish({ type: 'agent_revoked', agentId: agent.id });
    return this.tell(agent, 'here');
  }

  /** The agent's stream opened on this coordinator: the others hear it. */
  streamOpened(agentId: string): void {
    this.relay?.publish({ type: 'stream_opened', agentId });
  }

  /** The agent's stream opened on another coordinator of the database. */
  onStreamOpenedElsewhere(listener: (agentId: string) => void): () => void {
    this.streamListeners.add(listener);
    return () => this.streamListeners.delete(listener);
  }

  /** Calls the listeners of `scope` and wider: `here` calls all of them, `anywhere` those listening anywhere. */
  private tell(agent: RevokedAgent, from: EventScope): unknown[] {
    const errors: unknown[] = [];
    for (const [listener, scope] of this.revokedListeners) {
      if (from === 'anywhere' && scope === 'here') continue;
      try {
        listener(agent);
      } catch (error) {
        errors.push(error);
      }
    }
    return errors;
  }
}
